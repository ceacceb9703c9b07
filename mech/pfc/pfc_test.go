package pfc_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"strings"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/mech/pfc"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/units"
	"github.com/gswitch/gswitch/wire"
)

var ip1, ip3 = [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 3}

// neighbour is the MAC of the switch (or NIC) at the other end of a port.
var neighbour = [6]byte{0x02, 0x99, 0, 0, 0, 9}

const (
	rate     = 100e6 // every port's rate
	hostRate = 1e9   // port h's
	frameLen = 1000
	dscp3    = 24 << 2 // TOS of DSCP 24: priority 3 (DSCP >> 3)
	dscp5    = 40 << 2 // priority 5
)

// data is a frameLen UDP frame from host 1 (behind port up) to host 3
// (behind port out) with TOS tos.
func data(tos uint8, sport uint16) []byte {
	l4 := pkttest.UDP(sport, 9, make([]byte, frameLen-42))
	f := pkttest.Eth(pkttest.MAC(3), pkttest.MAC(1), 0x0800, 0, 0)
	f = append(f, pkttest.IPv4(ip1, ip3, 17, tos, len(l4))...)
	return append(f, l4...)
}

// back is a frame from host 3 to host 1 (toward port up).
func back(tos uint8) []byte {
	l4 := pkttest.UDP(9, 1, make([]byte, frameLen-42))
	f := pkttest.Eth(pkttest.MAC(1), pkttest.MAC(3), 0x0800, 0, 0)
	f = append(f, pkttest.IPv4(ip3, ip1, 17, tos, len(l4))...)
	return append(f, l4...)
}

// pfcFrame is a PFC frame from the neighbour.
func pfcFrame(enable uint8, times map[int]uint16) []byte {
	m := wire.PFC{Enable: enable}
	for p, t := range times {
		m.Time[p] = t
	}
	b := make([]byte, wire.MinFrameLen)
	if _, err := wire.BuildPFC(b, neighbour, m); err != nil {
		panic(err)
	}
	return b
}

// defaults returns PFC's default config with f applied.
func defaults(f func(c *pfc.Config)) *pfc.Config {
	spec, _ := mech.Lookup(pfc.Name)
	c := spec.Config().(*pfc.Config)
	if f != nil {
		f(c)
	}
	return c
}

func mechs(c *pfc.Config) config.Mechanisms {
	if c == nil {
		return nil
	}
	return config.Mechanisms{{Name: pfc.Name, Config: c}}
}

func inst(h *dptest.Harness) *pfc.PFC { return h.SW.Mechanisms()[pfc.Name].(*pfc.PFC) }

// Ports of the test switch.
const (
	pUp    = iota // faces a switch (fabric), PFC
	pHost         // faces a host's NIC, PFC, at hostRate
	pOut          // the receivers' port, PFC
	pPlain        // a port without PFC
)

// newSwitch builds the test switch: ports up, h, out with PFC (configs
// up, host, out; nil leaves PFC off the port), plain without, every port
// drr with 8 queues.
func newSwitch(t testing.TB, up, host, out *pfc.Config) *dptest.Harness {
	t.Helper()
	return newSwitchW(t, 1, up, host, out)
}

// newSwitchW is newSwitch with workers workers (the ports' egress go to
// them round-robin: up and out to worker 0, h and plain to worker 1).
func newSwitchW(t testing.TB, workers int, up, host, out *pfc.Config) *dptest.Harness {
	t.Helper()
	cfg := dataplane.Config{Config: config.Config{Workers: workers, SwitchID: 7, Ports: []config.Port{
		{Name: "up", Role: mech.RoleFabric, Scheduler: "drr", Queues: 8, Rate: rate, Burst: 1538, Mechanisms: mechs(up)},
		{Name: "h", Scheduler: "drr", Queues: 8, Rate: hostRate, Burst: 1538, Mechanisms: mechs(host)},
		{Name: "out", Scheduler: "drr", Queues: 8, Rate: rate, Burst: 1538, Buffer: 1 << 20, Mechanisms: mechs(out)},
		{Name: "plain", Role: mech.RoleFabric, Scheduler: "drr", Queues: 8, Rate: rate},
	}}}
	h := dptest.New(t, cfg, 8192)
	h.Links[pOut].Inject(pkttest.ARP(pkttest.MAC(3), ip3, ip1)) // host 3 behind out
	h.Links[pUp].Inject(pkttest.ARP(pkttest.MAC(1), ip1, ip3))  // host 1 behind up
	h.Settle()
	h.Record()
	for _, l := range h.Links {
		l.Sent = nil
	}
	return h
}

// pfcSent returns the PFC frames among sent, checking each is one.
func pfcSent(t *testing.T, sent [][]byte) [][]byte {
	t.Helper()
	var out [][]byte
	for _, f := range sent {
		if len(f) >= 14 && binary.BigEndian.Uint16(f[12:]) == wire.EtherTypeMACControl {
			out = append(out, f)
		}
	}
	return out
}

// wantPFC checks every byte of a PFC frame the switch sent out of port
// (whose MAC is src): destination, source, EtherType, opcode, vector,
// the eight times, the padding.
func wantPFC(t *testing.T, f []byte, src [6]byte, enable uint8, times map[int]uint16) {
	t.Helper()
	want := make([]byte, 60)
	copy(want, []byte{0x01, 0x80, 0xc2, 0, 0, 0x01})
	copy(want[6:], src[:])
	want[12], want[13] = 0x88, 0x08
	want[14], want[15] = 0x01, 0x01
	want[16], want[17] = 0, enable
	for p, v := range times {
		binary.BigEndian.PutUint16(want[18+2*p:], v)
	}
	if !bytes.Equal(f, want) {
		t.Fatalf("PFC frame\n got  % x\n want % x", f, want)
	}
}

func mac(h *dptest.Harness, port int) [6]byte { return [6]byte(h.SW.Ports()[port].MAC) }

// TestXOFFRefreshXON: bytes of priority 3 from port up held in out's
// queue 3 (paused by the test, so it holds them) cross XOFF: exactly one
// PFC frame goes out of up, pausing priority 3 for pause_quanta; it is
// refreshed at half the pause time while above XON, and resumed with a
// zero time when the queue drains to XON; nothing more follows.
func TestXOFFRefreshXON(t *testing.T) {
	const quanta = 1000 // 5.12 ms at 100 Mbit/s
	up := defaults(func(c *pfc.Config) { c.XOFF, c.XON, c.PauseQuanta = 4*frameLen, 2*frameLen, quanta })
	h := newSwitch(t, up, defaults(nil), defaults(nil))
	b := inst(h)
	h.SW.Scheduler(pOut).Pause(3) // hold out's queue 3
	for i := 0; i < 4; i++ {
		h.Links[pUp].Inject(data(dscp3, 1))
	}
	h.Settle()
	if got := pfcSent(t, h.Links[pUp].Sent); len(got) != 0 || b.Stats(pUp).Held[3] != 4*frameLen {
		t.Fatalf("at XOFF exactly (held %d): %d PFC frames", b.Stats(pUp).Held[3], len(got))
	}
	h.Links[pUp].Inject(data(dscp3, 1)) // above XOFF
	h.Links[pUp].Inject(data(dscp3, 1))
	h.Settle()
	got := pfcSent(t, h.Links[pUp].Sent)
	if len(got) != 1 {
		t.Fatalf("above XOFF: %d PFC frames out of up, want 1", len(got))
	}
	wantPFC(t, got[0], mac(h, pUp), 1<<3, map[int]uint16{3: quanta})
	if len(pfcSent(t, h.Links[pHost].Sent))+len(pfcSent(t, h.Links[pOut].Sent)) != 0 {
		t.Fatal("PFC frames out of other ports")
	}
	if s := b.Stats(pUp); s.PausesSent[3] != 1 || s.UpstreamPaused != 1<<3 || s.Held[3] != 6*frameLen {
		t.Fatalf("stats after XOFF: %+v", s)
	}
	// Refresh at half the pause time (2.56 ms), not before.
	h.Links[pUp].Sent = nil
	h.Advance(2_550_000, 50_000)
	if got := pfcSent(t, h.Links[pUp].Sent); len(got) != 0 {
		t.Fatalf("%d frames before the refresh is due", len(got))
	}
	h.Advance(20_000, 5_000)
	got = pfcSent(t, h.Links[pUp].Sent)
	if len(got) != 1 {
		t.Fatalf("%d frames at the refresh, want 1", len(got))
	}
	wantPFC(t, got[0], mac(h, pUp), 1<<3, map[int]uint16{3: quanta})
	if s := b.Stats(pUp); s.RefreshesSent[3] != 1 || s.PausesSent[3] != 1 {
		t.Fatalf("after the refresh: %+v", s)
	}
	// Drain: XON (2 frames held) sends a zero time for priority 3.
	h.Links[pUp].Sent = nil
	h.SW.ResumeQueue(pOut, 3)
	resumed := false
	for step := 0; step < 200 && !resumed; step++ {
		h.Advance(10_000, 10_000)
		got = pfcSent(t, h.Links[pUp].Sent)
		held := b.Stats(pUp).Held[3]
		switch {
		case len(got) == 0 && held <= 2*frameLen:
			t.Fatalf("held %d, at XON, and no resume", held)
		case len(got) == 1:
			if held > 2*frameLen {
				t.Fatalf("resumed with %d held, above XON", held)
			}
			wantPFC(t, got[0], mac(h, pUp), 1<<3, nil)
			resumed = true
		case len(got) > 1:
			t.Fatalf("%d frames while draining", len(got))
		}
	}
	if !resumed {
		t.Fatal("never resumed")
	}
	h.Links[pUp].Sent = nil
	h.Advance(20e6, 100_000)
	if got := pfcSent(t, h.Links[pUp].Sent); len(got) != 0 {
		t.Fatalf("%d frames after the resume", len(got))
	}
	if s := b.Stats(pUp); s.ResumesSent[3] != 1 || s.UpstreamPaused != 0 || s.Held != [8]int64{} || s.Underflow != 0 {
		t.Fatalf("after draining: %+v", s)
	}
	h.CheckFrames(t)
}

// TestCountsPerIngressAndPriority: bytes are counted per ingress port and
// priority, wherever they are queued, only for lossless priorities and
// only for ports that run PFC; a priority's pause names it alone; the
// queue follows the priority (default p mod queues, or queue_map).
func TestCountsPerIngressAndPriority(t *testing.T) {
	up := defaults(func(c *pfc.Config) {
		c.XOFF, c.XON, c.Priorities = 2*frameLen, frameLen, []int{3, 5}
	})
	out := defaults(func(c *pfc.Config) { c.QueueMap = map[int]int{5: 1} })
	h := newSwitch(t, up, defaults(nil), out)
	b := inst(h)
	sch := h.SW.Scheduler(pOut)
	for q := 0; q < 8; q++ {
		sch.Pause(q)
	}
	for i := 0; i < 3; i++ {
		h.Links[pUp].Inject(data(dscp5, 1))
		h.Links[pUp].Inject(data(0, 1))        // priority 0: not lossless on up
		h.Links[pPlain].Inject(data(dscp3, 1)) // no PFC on plain: not counted
	}
	h.Settle()
	s := b.Stats(pUp)
	if s.Held != [8]int64{5: 3 * frameLen} {
		t.Fatalf("held %v, want 3 frames of priority 5", s.Held)
	}
	for q, want := range map[int]uint32{0: 3, 1: 3, 3: 3} { // queue_map 5 -> 1 on out; priority 0 -> 0, 3 -> 3
		if _, n := sch.Depth(q); n != want {
			t.Fatalf("out queue %d holds %d, want %d", q, n, want)
		}
	}
	got := pfcSent(t, h.Links[pUp].Sent)
	if len(got) != 1 {
		t.Fatalf("%d PFC frames", len(got))
	}
	wantPFC(t, got[0], mac(h, pUp), 1<<5, map[int]uint16{5: 0xffff})
	if len(pfcSent(t, h.Links[pPlain].Sent)) != 0 {
		t.Fatal("a port without PFC paused its neighbour")
	}
	// Flushed when the port goes down: the counts come back to zero.
	h.SW.SetPortDown(pOut, true)
	h.Settle()
	h.SW.SetPortDown(pOut, false)
	h.Settle()
	if s := b.Stats(pUp); s.Held != [8]int64{} || s.Underflow != 0 || s.UpstreamPaused != 0 || s.ResumesSent[5] != 1 {
		t.Fatalf("after the flush: %+v", s)
	}
	h.CheckFrames(t)
}

// TestPriorityFromPCP: priority_from: pcp reads the 802.1Q tag's PCP.
func TestPriorityFromPCP(t *testing.T) {
	up := defaults(func(c *pfc.Config) { c.PriorityFrom, c.XOFF, c.XON = pfc.FromPCP, frameLen, 1 })
	h := newSwitch(t, up, defaults(nil), defaults(nil))
	h.SW.Scheduler(pOut).Pause(6)
	f := data(dscp3, 1) // DSCP says 3, the tag says 6
	tagged := append(pkttest.Eth(pkttest.MAC(3), pkttest.MAC(1), 0x0800, 0, 6), f[14:]...)
	h.Links[pUp].Inject(tagged)
	h.Links[pUp].Inject(tagged)
	h.Settle()
	if s := inst(h).Stats(pUp); s.Held != [8]int64{6: 2 * int64(len(tagged))} || s.UpstreamPaused != 1<<6 {
		t.Fatalf("pcp 6: %+v", s)
	}
}

// TestConfigErrors: each refused value names its key, the value and the
// fix; errors through the config name the port's path.
func TestConfigErrors(t *testing.T) {
	port := mech.PortInfo{Name: "p", RateBits: 1e9, Queues: 8, BufferBytes: 1 << 20, DelayNs: 1000}
	for _, c := range []struct {
		f    func(c *pfc.Config)
		p    func(p *mech.PortInfo)
		want []string
	}{
		{func(c *pfc.Config) { c.PriorityFrom = "tos" }, nil, []string{"priority_from:", `"tos"`, "dscp or pcp"}},
		{func(c *pfc.Config) { c.DSCPMap = map[int]int{64: 1} }, nil, []string{"dscp_map:", "64", "0..63"}},
		{func(c *pfc.Config) { c.DSCPMap = map[int]int{46: 8} }, nil, []string{"dscp_map:", "46", "priority 8", "0..7"}},
		{func(c *pfc.Config) { c.QueueMap = map[int]int{3: 8} }, nil, []string{"queue_map:", "priority 3 -> queue 8", "8 queues", "0..7", "raise the port's queues"}},
		{func(c *pfc.Config) { c.QueueMap = map[int]int{9: 0} }, nil, []string{"queue_map:", "9 is not a priority"}},
		{func(c *pfc.Config) { c.Priorities = []int{} }, nil, []string{"priorities:", "no priority", "leave the key out"}},
		{func(c *pfc.Config) { c.Priorities = []int{3, 8} }, nil, []string{"priorities:", "8 is not a priority"}},
		{func(c *pfc.Config) { c.PauseQuanta = 0 }, nil, []string{"pause_quanta:", "0", "1..65535"}},
		{func(c *pfc.Config) { c.PauseQuanta = 65536 }, nil, []string{"pause_quanta:", "65536"}},
		// 100 quanta at 1 Gbit/s: 51.2 us, under 4 x (25 us + 1 us + 12.1 us).
		{func(c *pfc.Config) { c.PauseQuanta = 100 }, nil, []string{"pause_quanta:", "100 quanta last 51.2 us", "1 Gbit/s", "4 x the 38.1 us", "raise pause_quanta to at least 298"}},
		{nil, func(p *mech.PortInfo) { p.RateBits = 1e12 }, []string{"pause_quanta:", "65535 quanta", "1 Tbit/s", "no pause_quanta lasts long enough", "lower response"}},
		{func(c *pfc.Config) { c.XOFF = 100 << 20 }, nil, []string{"xoff:", "100MiB", "64MiB"}},
		{func(c *pfc.Config) { c.XOFF, c.XON = 10000, 20000 }, nil, []string{"xon:", "20KB", "above xoff", "10KB", "lower xon"}},
		{func(c *pfc.Config) { c.XON = 1 << 20 }, nil, []string{"xon:", "above xoff"}},
		{func(c *pfc.Config) { c.XOFF = 1020 << 10 }, nil, []string{"xoff:", "1020KiB", "headroom", "port's buffer", "raise the port's buffer"}},
		{func(c *pfc.Config) { c.Response = units.Duration(2e9) }, nil, []string{"response:", "2s", "0..1s"}},
		{func(c *pfc.Config) { c.Watchdog = units.Duration(61e9) }, nil, []string{"watchdog:", "1m1s", "0 = off"}},
		{func(c *pfc.Config) { c.WatchdogRestore = 0 }, nil, []string{"watchdog_restore:", "above 0"}},
		{func(c *pfc.Config) { c.WatchdogAction = "alert" }, nil, []string{"watchdog_action:", `"alert"`, "drop or forward"}},
		{nil, func(p *mech.PortInfo) { p.RateBits = 0 }, []string{"pause_quanta:", "no rate", "set the port's rate"}},
	} {
		cfg := defaults(c.f)
		p := port
		if c.p != nil {
			c.p(&p)
		}
		err := cfg.Validate(p)
		if err == nil {
			t.Errorf("no error for %+v on %+v, want %q", cfg, p, c.want)
			continue
		}
		for _, w := range c.want {
			if !bytes.Contains([]byte(err.Error()), []byte(w)) {
				t.Errorf("error %q does not say %q", err, w)
			}
		}
	}
	// The defaults are valid on a port with a rate, and without (a tool
	// checking the defaults passes no port).
	if err := defaults(nil).Validate(port); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if err := defaults(nil).Validate(mech.PortInfo{}); err != nil {
		t.Errorf("defaults, no port: %v", err)
	}
	// Through the config: the error names the port's key.
	cfg := config.Config{Workers: 1, Ports: []config.Port{{Name: "a", Rate: 1e9, Scheduler: "drr", Queues: 8,
		Mechanisms: mechs(defaults(func(c *pfc.Config) { c.WatchdogAction = "alert" }))}, {Name: "b"}}}
	if err := cfg.Complete(); err == nil || !bytes.HasPrefix([]byte(err.Error()), []byte("ports[0].mechanisms.pfc.watchdog_action:")) {
		t.Errorf("through the config: %v", err)
	}
	// PFC assigns the queues: the port classifies by queue, and BFC (which
	// does too) cannot share the port; sfq is refused.
	cfg = config.Config{Workers: 1, Ports: []config.Port{{Name: "a", Rate: 1e9, Scheduler: "sfq", Queues: 8, Mechanisms: mechs(defaults(nil))}, {Name: "b"}}}
	if err := cfg.Complete(); err == nil || !bytes.Contains([]byte(err.Error()), []byte("scheduler")) {
		t.Errorf("pfc on sfq: %v", err)
	}
}

// TestDefaultThresholds: headroom = 2 x delay x rate + 2 x MTU +
// response x rate; xoff = headroom; xon = xoff - 2 x MTU; they follow
// the port's rate.
func TestDefaultThresholds(t *testing.T) {
	cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{
		{Name: "a", Rate: 1e9, Delay: units.Duration(10e3), Scheduler: "drr", Queues: 8, Mechanisms: mechs(defaults(nil))},
		{Name: "b", Rate: 1e9}}}}
	h := dptest.New(t, cfg, 1024)
	b := inst(h)
	// 1 Gbit/s = 0.125 B/ns: 2 x 10us = 2500 B, 2 x 1514, 25us = 3125 B.
	want := uint64(2500 + 3028 + 3125)
	if s := b.Stats(0); s.Headroom != want || s.XOFF != want || s.XON != want-3028 {
		t.Fatalf("headroom %d xoff %d xon %d, want %d %d %d", s.Headroom, s.XOFF, s.XON, want, want, want-3028)
	}
	if err := b.RateChanged(0, 2e9); err != nil {
		t.Fatal(err)
	}
	want = 5000 + 3028 + 6250
	if s := b.Stats(0); s.Headroom != want || s.XOFF != want {
		t.Fatalf("at 2 Gbit/s: headroom %d xoff %d, want %d", s.Headroom, s.XOFF, want)
	}
	if err := b.RateChanged(0, 0); err == nil {
		t.Fatal("an unlimited rate was accepted")
	}
	// At 1 Tbit/s 65535 quanta are 33.6 us: a pause would lapse before its
	// refresh acts.
	if err := b.RateChanged(0, 1e12); err == nil || !bytes.Contains([]byte(err.Error()), []byte("pause_quanta:")) {
		t.Fatalf("a rate too high for pause_quanta: %v", err)
	}
	if s := b.Stats(0); s.XOFF != want {
		t.Fatalf("a refused rate changed xoff to %d", s.XOFF)
	}
	if v := b.View(0); v["xoff_bytes"] != want || v["priority_from"] != "dscp" {
		t.Fatalf("view %v", v)
	}
	if b.View(1) != nil {
		t.Fatal("a view of a port without PFC")
	}
}

// TestCrossingOnAnotherWorker: the egress worker of out (worker 0) sees
// the bytes from host port h (worker 1) cross XOFF and XON; h's own worker
// sends the pause and the resume, at its next pass.
func TestCrossingOnAnotherWorker(t *testing.T) {
	host := defaults(func(c *pfc.Config) { c.XOFF, c.XON = 2*frameLen, frameLen })
	h := newSwitchW(t, 2, defaults(nil), host, defaults(nil))
	if h.SW.EgressWorker(pHost) == h.SW.EgressWorker(pOut) {
		t.Fatal("h and out on one worker: the test needs them apart")
	}
	h.SW.Scheduler(pOut).Pause(3)
	for i := 0; i < 3; i++ {
		h.Links[pHost].Inject(data(dscp3, 1))
	}
	h.Settle()
	got := pfcSent(t, h.Links[pHost].Sent)
	if len(got) != 1 {
		t.Fatalf("%d PFC frames to the host", len(got))
	}
	wantPFC(t, got[0], mac(h, pHost), 1<<3, map[int]uint16{3: 0xffff})
	h.Links[pHost].Sent = nil
	h.SW.ResumeQueue(pOut, 3)
	h.Advance(1e6, 10_000)
	got = pfcSent(t, h.Links[pHost].Sent)
	if len(got) != 1 {
		t.Fatalf("%d PFC frames to the host after draining", len(got))
	}
	wantPFC(t, got[0], mac(h, pHost), 1<<3, nil)
	if s := inst(h).Stats(pHost); s.Held != [8]int64{} || s.UpstreamPaused != 0 {
		t.Fatalf("after: %+v", s)
	}
	h.CheckFrames(t)
}

// TestHeadroomCap: an upstream that ignores its pause goes on sending; a
// lossless priority of one ingress port holds at most xoff + headroom in
// the switch, and what would pass it is dropped (pfc_headroom) and
// counted for that port and priority. A priority that is not lossless is
// not capped (nor counted), and the priority's packets are taken again
// once it drains.
func TestHeadroomCap(t *testing.T) {
	up := defaults(func(c *pfc.Config) {
		c.XOFF, c.XON, c.Headroom, c.Priorities = 4*frameLen, 2*frameLen, 3*frameLen, []int{3}
	})
	h := newSwitch(t, up, defaults(nil), defaults(nil))
	b := inst(h)
	sch := h.SW.Scheduler(pOut)
	sch.Pause(3) // out holds priority 3 (and 5: not lossless on up)
	sch.Pause(5)
	for i := 0; i < 20; i++ {
		h.Links[pUp].Inject(data(dscp3, 1))
		h.Links[pUp].Inject(data(dscp5, 2))
	}
	h.Settle()
	s := b.Stats(pUp)
	if s.Held[3] != 7*frameLen || s.HeadroomDrops[3] != 13 || s.HeadroomDrops[5] != 0 || s.UpstreamPaused != 1<<3 {
		t.Fatalf("held %v, headroom drops %v, upstream paused %08b: want 7 frames held and 13 dropped of priority 3", s.Held, s.HeadroomDrops, s.UpstreamPaused)
	}
	if _, n := sch.Depth(5); n != 20 {
		t.Fatalf("out's queue 5 holds %d packets, want all 20 (priority 5 is not lossless on up)", n)
	}
	if c := h.SW.Counters(pOut); c.Drops[pfc.ReasonHeadroom] != 13 {
		t.Fatalf("pfc_headroom drops counted %d, want 13", c.Drops[pfc.ReasonHeadroom])
	}
	// Drained, the priority is taken again.
	h.SW.ResumeQueue(pOut, 3)
	h.SW.ResumeQueue(pOut, 5)
	h.Advance(10e6, 100_000)
	h.Links[pUp].Inject(data(dscp3, 1))
	h.Advance(1e6, 100_000)
	if s := b.Stats(pUp); s.HeadroomDrops[3] != 13 || s.Held != [8]int64{} || s.UpstreamPaused != 0 {
		t.Fatalf("after draining: %+v", s)
	}
	h.CheckFrames(t)
}

// TestDefaultsAtTheFabricsTimescales: the defaults validate at the
// timescales the shipped fabrics run (the watchdog's 200 ms of fabric time
// is 33 minutes of this machine at K 10000), and the watchdog's bound is a
// minute of the fabric's time whatever K.
func TestDefaultsAtTheFabricsTimescales(t *testing.T) {
	for _, k := range []string{"1", "1000", "10000"} {
		y := "timescale: " + k + "\nports: [{interface: a, rate: 100Gbit, delay: 1us, scheduler: drr, queues: 8, buffer: 8MB, mechanisms: {pfc: {}}}]"
		if _, err := config.Parse([]byte(y)); err != nil {
			t.Errorf("timescale %s, pfc's defaults: %v", k, err)
		}
	}
	y := "timescale: 10000\nports: [{interface: a, rate: 100Gbit, delay: 1us, scheduler: drr, queues: 8, buffer: 8MB, mechanisms: {pfc: {watchdog: 2m}}}]"
	if _, err := config.Parse([]byte(y)); err == nil || !strings.Contains(err.Error(), "watchdog: 2m0s out of range") {
		t.Errorf("a watchdog of 2 minutes of the fabric at K 10000: %v", err)
	}
}
