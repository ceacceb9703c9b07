package control

import (
	"os"
	"strings"
	"testing"
)

// TestSetOnAScaledSwitch: on a switch at timescale 1000, set and reload
// take rates in the fabric's units, as the file gives them; the port runs
// them / 1000 and the results show both clocks. A reload with another
// timescale changes nothing.
func TestSetOnAScaledSwitch(t *testing.T) {
	scaled := strings.Replace(testYAML, "rate: 100Mbit", "rate: 100Gbit", 1) + "timescale: 1000\n"
	f := newFixture(t, scaled)
	if got := f.h.SW.Ports()[1].RateBits(); got != 100e6 {
		t.Fatalf("100Gbit at timescale 1000 runs at %d bit/s", got)
	}
	var r SetResult
	f.call(t, Request{Cmd: "set", Port: "p2", Key: "rate", Value: "250Gbit"}, &r)
	if r.Old != "100Gbit fabric = 100Mbit wall" || r.New != "250Gbit fabric = 250Mbit wall" || f.h.SW.Ports()[1].RateBits() != 250e6 {
		t.Fatalf("set rate: %+v, switch %d", r, f.h.SW.Ports()[1].RateBits())
	}
	f.call(t, Request{Cmd: "set", Port: "p2", Key: "rate", Value: "unlimited"}, &r)
	if r.New != "unlimited" || f.h.SW.Ports()[1].RateBits() != 0 {
		t.Fatalf("set rate unlimited: %+v", r)
	}
	f.call(t, Request{Cmd: "set", Port: "p2", Key: "rate", Value: "100Gbit"}, &r)

	changed := strings.Replace(scaled, "rate: 100Gbit", "rate: 40Gbit", 1)
	if err := os.WriteFile(f.cfg, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	var rr ReloadResult
	f.call(t, Request{Cmd: "reload"}, &rr)
	if len(rr.Applied) != 1 || rr.Applied[0] != "ports[1].rate: 100Gbit fabric = 100Mbit wall -> 40Gbit fabric = 40Mbit wall (burst default -> default)" || f.h.SW.Ports()[1].RateBits() != 40e6 {
		t.Fatalf("reload: %+v", rr)
	}
	if err := os.WriteFile(f.cfg, []byte(strings.Replace(changed, "timescale: 1000", "timescale: 100", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	f.call(t, Request{Cmd: "reload"}, &rr)
	if len(rr.Applied) != 0 || len(rr.Refused) != 1 || !strings.HasPrefix(rr.Refused[0], "timescale: 100 instead of 1000") || f.h.SW.Ports()[1].RateBits() != 40e6 {
		t.Fatalf("a new timescale: %+v, rate %d", rr, f.h.SW.Ports()[1].RateBits())
	}
}
