package ecn_test

import (
	"encoding/binary"
	"github.com/gswitch/gswitch/config"
	"strings"
	"testing"
	"time"

	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/mech/bfc"
	"github.com/gswitch/gswitch/mech/ecn"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/units"
)

var ip1, ip2 = [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}

// ECN field values.
const (
	notECT = 0
	ect1   = 1
	ect0   = 2
	ce     = 3
)

// harness: port in (host 1) sends to port out (host 2), shaped to 1 B/us
// with a one-frame burst, so a burst of arrivals queues whole.
func harness(t *testing.T, sched string, queues int, ms ...config.Mechanism) *dptest.Harness {
	t.Helper()
	cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{{Name: "in"},
		{Name: "out", Scheduler: sched, Queues: queues, Rate: 8e6, Burst: 1538, Buffer: 1 << 20, Mechanisms: ms}}}}
	h := dptest.New(t, cfg, 4096)
	h.Links[1].Inject(pkttest.ARP(pkttest.MAC(2), ip2, ip1)) // the switch learns host 2 on out
	h.Settle()
	h.Links[1].Record = true
	return h
}

func ecnOn(c *ecn.Config) config.Mechanism {
	return config.Mechanism{Name: ecn.Name, Config: c}
}

// frame is a 1000-byte TCP segment of flow sport with ECN field f.
func frame(sport uint16, f uint8) []byte {
	return pkttest.TCP4(pkttest.MAC(2), pkttest.MAC(1), ip1, ip2, sport, 80, f, make([]byte, 946))
}

func inst(h *dptest.Harness) *ecn.ECN { return h.SW.Mechanisms()[ecn.Name].(*ecn.ECN) }

// sent returns the ECN field of each frame port out sent, in order, by
// flow, checking every IPv4 header checksum.
func sent(t *testing.T, h *dptest.Harness) (fields []uint8, flows []uint16) {
	t.Helper()
	for _, f := range h.Links[1].Sent {
		if len(f) < 54 || binary.BigEndian.Uint16(f[12:]) != 0x0800 {
			continue
		}
		if pkttest.Checksum(f[14:34]) != 0 {
			t.Errorf("frame %d: bad IPv4 checksum after marking", len(fields))
		}
		fields = append(fields, f[15]&3)
		flows = append(flows, binary.BigEndian.Uint16(f[34:]))
	}
	return fields, flows
}

// TestMarksAboveK: ten 1000-byte frames arrive at once at an empty queue,
// so frame i finds i x 1000 bytes; with K = 3000 B, frames 4 to 9 find
// more than K. Of those, the ECN-capable ones are marked CE (checksum
// updated), the not-ECT one goes on unmarked and is counted, the one
// already CE stays so; frames 0 to 3 are not touched. Nothing is dropped.
func TestMarksAboveK(t *testing.T) {
	h := harness(t, "fifo", 1, ecnOn(&ecn.Config{K: 3000}))
	in := []uint8{ect0, ect0, ect1, ect0, ect0, notECT, ect0, ect1, ect0, ce}
	want := []uint8{ect0, ect0, ect1, ect0, ce, notECT, ce, ce, ce, ce}
	for i, f := range in {
		h.Links[0].Inject(frame(uint16(i), f))
	}
	h.Settle()
	h.Advance(20e6, 100e3)
	got, _ := sent(t, h)
	if len(got) != len(want) {
		t.Fatalf("sent %d frames, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("frame %d (found %d B): ECN %02b, want %02b", i, 1000*i, got[i], want[i])
		}
	}
	e := inst(h)
	var drops uint64
	for _, n := range h.SW.Counters(1).Drops {
		drops += n
	}
	if e.Marked(1) != 4 || e.NotCapable(1) != 1 || drops != 0 {
		t.Errorf("marked %d, not capable %d, %d drops", e.Marked(1), e.NotCapable(1), drops)
	}
	h.CheckFrames(t)
}

// TestMarksAboveKPackets: with k_packets 2, frame i finds i packets, and
// frames 3 to 9 are marked.
func TestMarksAboveKPackets(t *testing.T) {
	h := harness(t, "fifo", 1, ecnOn(&ecn.Config{KPackets: 2}))
	for i := 0; i < 10; i++ {
		h.Links[0].Inject(frame(uint16(i), ect0))
	}
	h.Settle()
	h.Advance(20e6, 100e3)
	got, _ := sent(t, h)
	for i, f := range got {
		if (f == ce) != (i >= 3) {
			t.Errorf("frame %d (found %d packets): ECN %02b", i, i, f)
		}
	}
	if len(got) != 10 || inst(h).Marked(1) != 7 {
		t.Fatalf("sent %d, marked %d; want 10 and 7", len(got), inst(h).Marked(1))
	}
}

// TestReadsTheQueueBFCAssigned: on a drr port with BFC, which gives flow 1
// (five frames) queue 0 and flow 2, arriving after them, an empty queue of
// its own, ecn reads the queue BFC assigned: flow 2's frame finds its
// queue empty and is not marked, though it arrives behind 5000 bytes of
// flow 1 (whose frames 2 to 4 find more than K = 1500 B). The config lists
// ecn first: the order is what ecn declares (after the queue setter).
func TestReadsTheQueueBFCAssigned(t *testing.T) {
	h := harness(t, "drr", 8, ecnOn(&ecn.Config{K: 1500}), config.Mechanism{Name: "bfc", Config: &bfc.Config{}})
	if got := h.SW.Ports()[1].Mechanisms(); len(got) != 2 || got[0] != "bfc" || got[1] != ecn.Name {
		t.Fatalf("hook order %v, want [bfc ecn]", got)
	}
	for i := 0; i < 5; i++ {
		h.Links[0].Inject(frame(1, ect0))
	}
	h.Links[0].Inject(frame(2, ect0))
	h.Settle()
	h.Advance(20e6, 100e3)
	got, flows := sent(t, h)
	var marks []bool
	for i, f := range got {
		if flows[i] == 2 {
			if f != ect0 {
				t.Errorf("flow 2's frame was marked (ECN %02b): ecn read another queue than BFC's", f)
			}
			continue
		}
		marks = append(marks, f == ce)
	}
	if len(marks) != 5 || marks[0] || marks[1] || !marks[2] || !marks[3] || !marks[4] {
		t.Errorf("flow 1's marks %v, want [false false true true true]", marks)
	}
	if inst(h).Marked(1) != 3 {
		t.Errorf("marked %d, want 3", inst(h).Marked(1))
	}
}

// queuer is a test mechanism that assigns queues and declares it runs
// after ecn, which runs after whatever assigns the queues: they cannot
// share a port.
func init() {
	mech.Register(mech.Spec{Name: "test-ecn-queuer", SetsQueue: true, After: []string{ecn.Name},
		Config: func() any { return &struct{}{} },
		New:    func(mech.Switch, []mech.Port) (mech.Instance, error) { return struct{}{}, nil }})
}

// TestWrongOrderIsRefused: the config check and the switch both refuse a
// port with ecn and a queue setter that must run after it, naming both and
// the fix.
func TestWrongOrderIsRefused(t *testing.T) {
	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: accepted", what)
		}
		for _, s := range []string{"ecn", "test-ecn-queuer", "ecn runs after the mechanism that assigns the queues",
			"test-ecn-queuer runs after ecn", "enable only some of them on the port"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q does not say %q", what, err, s)
			}
		}
	}
	check("mech.Check", mech.Check([]string{ecn.Name, "test-ecn-queuer"}, "drr"))
	cfg := config.Config{Workers: 1, Ports: []config.Port{{Name: "in"},
		{Name: "out", Scheduler: "drr", Queues: 8, Mechanisms: config.Mechanisms{{Name: "test-ecn-queuer", Config: &struct{}{}}, ecnOn(&ecn.Config{K: 3000})}}}}
	// The switch's config refuses it before a switch is built (config.Parse
	// and Complete run mech.Check), naming the port's key.
	err := cfg.Complete()
	check("the switch's config", err)
	if err != nil && !strings.HasPrefix(err.Error(), "ports[1].mechanisms: ") {
		t.Errorf("the switch's error does not name the port: %v", err)
	}
}

// TestConfigErrorsNameTheKey: each refused value is named with its key and
// the fix; the default K follows the port's rtt.
func TestConfigErrorsNameTheKey(t *testing.T) {
	port := mech.PortInfo{Name: "p", RateBits: 1e9, BufferBytes: 1 << 20}
	for want, c := range map[string]*ecn.Config{
		"k: 3KB and k_packets: 4 are both set":           {K: 3000, KPackets: 4},
		"k: 1MiB is not below the port's buffer (1MiB)":  {K: 1 << 20},
		"k_packets: -1 out of range":                     {KPackets: -1},
		"rtt: 2s out of range":                           {RTT: units.Duration(2 * time.Second)},
		"the port has no rate, so no default K":          nil,
		"set k (bytes) or k_packets, or the port's rate": nil,
	} {
		p := port
		if c == nil {
			c, p.RateBits = &ecn.Config{}, 0
		}
		err := c.Validate(p)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v; want %q", c, err, want)
		}
	}
	c := &ecn.Config{}
	p := port
	p.RTTNs = 1e6
	if err := c.Validate(p); err != nil || c.RTT.D() != time.Millisecond {
		t.Errorf("rtt from the port: %v, %v", c.RTT, err)
	}
	c = &ecn.Config{}
	if err := c.Validate(port); err != nil || c.RTT.D() != ecn.DefaultRTT {
		t.Errorf("rtt of a port without one: %v, %v", c.RTT, err)
	}
	if k := ecn.DefaultK(1e9, 200*time.Microsecond); k != 3571 {
		t.Errorf("default K at 1 Gbit/s and 200 us: %d B, want 3571", k)
	}
	if k := ecn.DefaultK(8e6, 200*time.Microsecond); k != ecn.MinDefaultK {
		t.Errorf("default K at 8 Mbit/s: %d B, want the floor %d", k, ecn.MinDefaultK)
	}
}

// TestRateChangedAndView: a K derived from the rate follows a rate change
// (and an unlimited rate is refused); a K the config sets stays.
func TestRateChangedAndView(t *testing.T) {
	cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{
		{Name: "a", Rate: 8e6, Mechanisms: config.Mechanisms{ecnOn(&ecn.Config{})}},
		{Name: "b", Rate: 8e6, Mechanisms: config.Mechanisms{ecnOn(&ecn.Config{K: 5000})}},
		{Name: "c"}}}}
	h := dptest.New(t, cfg, 4096)
	e := inst(h)
	if v := e.View(0); v["k_bytes"] != uint64(ecn.MinDefaultK) || v["k_from_rate"] != true || v["rtt_us"] != int64(200) {
		t.Errorf("port a: %v", v)
	}
	if err := e.RateChanged(0, 1e9); err != nil {
		t.Fatal(err)
	}
	if err := e.RateChanged(1, 1e9); err != nil {
		t.Fatal(err)
	}
	if v := e.View(0); v["k_bytes"] != uint64(3571) {
		t.Errorf("port a after 1 Gbit/s: %v", v)
	}
	if v := e.View(1); v["k_bytes"] != uint64(5000) || v["k_from_rate"] != false {
		t.Errorf("port b after 1 Gbit/s: %v", v)
	}
	if err := e.RateChanged(0, 0); err == nil || !strings.Contains(err.Error(), "set k or k_packets") {
		t.Errorf("unlimited rate: %v", err)
	}
	if e.View(2) != nil {
		t.Error("port c has no ecn but shows some")
	}
}

// TestAdmitDoesNotAllocate: marking allocates nothing.
func TestAdmitDoesNotAllocate(t *testing.T) {
	h := harness(t, "fifo", 1, ecnOn(&ecn.Config{KPackets: 1}))
	h.Links[1].Record = false
	f := frame(1, ect0)
	if a := testing.AllocsPerRun(100, func() {
		for i := 0; i < 8; i++ {
			h.Links[0].Inject(f)
		}
		h.Settle()
		h.Advance(10e6, 1e6)
	}); a != 0 {
		t.Errorf("%v allocations per burst", a)
	}
	if inst(h).Marked(1) == 0 {
		t.Fatal("nothing marked")
	}
}

// TestRTTBoundIsTheFabrics: rtt reaches Validate on this machine's clock
// (x K, as a port's rtt it defaults to): at timescale 10000 the 200 us of
// a fabric is 2 s here and is taken; the bound is a second of the
// fabric's time, and a rtt above it is refused, named in the fabric's
// units.
func TestRTTBoundIsTheFabrics(t *testing.T) {
	k := units.Timescale(10000)
	c := ecn.Config{K: 125000, RTT: units.Duration(k.Wall(200 * time.Microsecond))}
	if err := c.Validate(mech.PortInfo{Name: "p", BufferBytes: 8 << 20, Timescale: k}); err != nil {
		t.Fatalf("200us of the fabric at K 10000 refused: %v", err)
	}
	c = ecn.Config{K: 125000, RTT: units.Duration(k.Wall(2 * time.Second))}
	if err := c.Validate(mech.PortInfo{Name: "p", BufferBytes: 8 << 20, Timescale: k}); err == nil || !strings.Contains(err.Error(), "rtt: 2s out of range") {
		t.Fatalf("2s of the fabric: %v", err)
	}
	c = ecn.Config{K: 125000, RTT: units.Duration(2 * time.Second)}
	if err := c.Validate(mech.PortInfo{Name: "p", BufferBytes: 8 << 20}); err == nil {
		t.Fatal("2s at timescale 1 taken")
	}
}
