package main

import (
	"encoding/json"
	"github.com/gswitch/gswitch/units"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/control"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/pkt/pkttest"
)

// lateFrames sends five frames from p1 to p2, which leave p2's delay
// line 250 µs late.
func lateFrames(h *dptest.Harness) {
	a, b := pkttest.MAC(0xa), pkttest.MAC(0xb)
	ipA, ipB := [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}
	for i := 0; i < 5; i++ {
		h.Links[0].Inject(pkttest.UDP4(b, a, ipA, ipB, 1, 2, make([]byte, 100)))
	}
	h.Settle()
	h.Clock.T += 100e3 + 250e3
	h.Settle()
}

// fidelitySwitch runs a control server over an in-memory switch of two
// ports, p2 shaped to 100 Mbit/s with a 100 µs delay, through which five
// frames left the delay line 250 µs late (two frame times at 100 Mbit/s),
// and returns its socket.
func fidelitySwitch(t *testing.T) (string, *dptest.Harness) {
	t.Helper()
	h := dptest.New(t, dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{{Name: "p1"}, {Name: "p2", Rate: 100e6, Delay: units.Duration(100 * time.Microsecond)}}}}, 4096)
	a, b := pkttest.MAC(0xa), pkttest.MAC(0xb)
	h.Links[1].Inject(pkttest.UDP4(a, b, [4]byte{10, 0, 0, 2}, [4]byte{10, 0, 0, 1}, 1, 2, make([]byte, 10))) // B is behind p2
	h.Settle()
	lateFrames(h)

	sock := filepath.Join(t.TempDir(), "fid.sock")
	srv := control.NewServer(h.SW, control.Options{Config: &config.Config{}, Logf: t.Logf})
	if err := srv.Listen(sock); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return sock, h
}

// TestFidelityCommand: gswitchctl fidelity against a switch in memory:
// since start it shows each worker's and port's figures and the verdict
// (INVALID: the delay line's error is two frame times), exit 1; with
// -bounds that allow it, VALID, exit 0; over an interval, only what
// happened in it (-o json gives the report): nothing, VALID; five frames
// more, of the ten since start, INVALID.
func TestFidelityCommand(t *testing.T) {
	sock, h := fidelitySwitch(t)

	code, out, errs := capture(t, func() int { return dispatch([]string{"fidelity", "-s", sock}) })
	t.Logf("gswitchctl fidelity:\n%s", out)
	for _, want := range []string{"switch fid, timescale 1, since start", "WORKER", "LATE WAKE-UPS", "GAP p50", "TICK p99",
		"PORT", "LOST DATA", "DELAY ERR p50", "p2    100.0Mbit", "fidelity: INVALID", "delay error p99 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if code != 1 || errs != "" {
		t.Fatalf("exit %d, stderr %q; want 1 (INVALID)", code, errs)
	}
	// p1 has no rate, no credit lane, no delay.
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "p1 ") && strings.Count(l, " - ") < 3 {
			t.Errorf("p1's row shows figures it has none of: %q", l)
		}
	}

	code, out, _ = capture(t, func() int {
		return dispatch([]string{"fidelity", "-s", sock, "-bounds", "lateness=1000,delay=3"})
	})
	if code != 0 || !strings.Contains(out, "fidelity: VALID") || !strings.Contains(out, "[bounds: 1000 frame, 1%, 3 frame]") {
		t.Fatalf("with looser bounds: exit %d\n%s", code, out)
	}

	interval := func() (int, FidelityReport) {
		t.Helper()
		code, out, errs := capture(t, func() int { return dispatch([]string{"fidelity", "-s", sock, "-interval", "200ms", "-o", "json"}) })
		var r FidelityReport
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("-o json: %v\n%s%s", err, out, errs)
		}
		if r.Since == "start" || r.Window < 0.2 || r.Switch != "fid" || len(r.Workers) != 1 || len(r.Ports) != 2 {
			t.Fatalf("over 200ms: exit %d, %+v", code, r)
		}
		if p := r.Ports[1]; p.Port != "p2" || p.DelayError == nil || r.Ports[0].DelayError != nil || p.CreditLostPercent != nil {
			t.Fatalf("ports over 200ms: %+v %+v", r.Ports[0], p)
		}
		return code, r
	}
	code, r := interval()
	if code != 0 || !r.Verdict.Valid || r.Workers[0].PassGap.Count != 0 || r.Ports[1].DelayError.Count != 0 {
		t.Fatalf("something measured in a window where the switch did nothing: exit %d, %+v", code, r)
	}
	// The switch works during the interval (the server reads it meanwhile,
	// as it does a running switch).
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(50 * time.Millisecond)
		lateFrames(h)
	}()
	code, r = interval()
	<-done
	if code != 1 || r.Verdict.Valid || r.Workers[0].PassGap.Count == 0 || r.Ports[1].DelayError.Count != 5 || r.Verdict.DelayErrorCount != 5 {
		t.Fatalf("five frames late in the window: exit %d, %+v", code, r)
	}

	if code, _, errs := capture(t, func() int { return dispatch([]string{"fidelity", "-s", sock, "-bounds", "late=2"}) }); code != 2 || !strings.Contains(errs, "unknown bound") {
		t.Fatalf("bad -bounds: exit %d, %q", code, errs)
	}
}
