package ecn_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/mech/ecn"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/queues"
	"github.com/gswitch/gswitch/sched"
	"github.com/gswitch/gswitch/units"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// fakeSwitch is the switch New sees in the rig: only its UMEM.
type fakeSwitch struct {
	mech.Switch
	mem []byte
}

func (f fakeSwitch) Mem() []byte { return f.mem }

const rigBuffer = 1 << 20

// rig is one port with a fifo scheduler and ECN on it, whose hooks a test
// calls as the traffic manager would, on a clock of its own (now, ns).
// The arriving frame is copied to the start of mem; the packets queued
// are descriptors only (a scheduler never reads the frames).
type rig struct {
	t     testing.TB
	inst  mech.Instance
	e     *ecn.ECN
	s     sched.Scheduler
	v     *mech.PortView
	mem   []byte
	now   int64
	out   []pkt.Packet
	batch mech.Batch
	// The packets the hooks and the scheduler get pointers to, kept here
	// so that the rig itself allocates nothing per packet.
	p, q, d pkt.Packet
}

// newRig builds the rig, or returns New's error.
func newRig(t testing.TB, c *ecn.Config, rateBits uint64) (*rig, error) {
	t.Helper()
	s, err := sched.New("fifo", sched.Params{PortBytes: rigBuffer})
	if err != nil {
		t.Fatal(err)
	}
	v := mech.NewPortView(0, s, rigBuffer, 0)
	v.SetRate(rateBits)
	r := &rig{t: t, s: s, v: &v, mem: make([]byte, 4096), out: make([]pkt.Packet, 0, 64)}
	r.inst, err = ecn.New(fakeSwitch{mem: r.mem}, []mech.Port{{Name: "p", RateBits: rateBits, Queues: 1, Scheduler: "fifo",
		BufferBytes: rigBuffer, View: r.v, Config: c}})
	if err != nil {
		return nil, err
	}
	r.e = ecn.Of(r.inst)
	return r, nil
}

func mustRig(t testing.TB, c *ecn.Config, rateBits uint64) *rig {
	t.Helper()
	r, err := newRig(t, c, rateBits)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// arrive copies frame f to the UMEM and runs Admit on it; the returned
// packet has the verdict Admit left.
func (r *rig) arrive(f []byte) pkt.Packet {
	copy(r.mem, f)
	r.p = pkt.Packet{}
	if e := pkt.Parse(r.mem[:len(f)], &r.p); e != pkt.OK {
		r.t.Fatalf("parse: %v", e)
	}
	r.p.Len = uint32(len(f))
	r.inst.(mech.AdmitHook).Admit(r.v, &r.p, r.now)
	return r.p
}

// join queues p (after arrive) and tells ECN, as the traffic manager does
// when the scheduler takes it; false if the scheduler refused it.
func (r *rig) join(p pkt.Packet) bool {
	if p.Verdict != pkt.Forward {
		return false
	}
	r.p, r.q = p, p
	if r.s.Enqueue(&r.q) != queues.Accepted {
		return false
	}
	r.inst.(mech.EnqueuedHook).Enqueued(r.v, &r.p, r.now)
	return true
}

// fill queues n packets of size bytes without ECN's hooks (the depth a
// test holds steady).
func (r *rig) fill(n int, size uint32) {
	for i := 0; i < n; i++ {
		p := pkt.Packet{Addr: 2048, Len: size}
		if r.s.Enqueue(&p) != queues.Accepted {
			r.t.Fatal("the rig's queue is full")
		}
	}
}

// drain dequeues up to n packets as one batch and runs the Dequeued hook
// (if the instance has one) at now.
func (r *rig) drain(n int) int {
	r.out = r.out[:0]
	for len(r.out) < min(n, cap(r.out)) && r.s.Dequeue(&r.d) {
		r.out = append(r.out, r.d)
	}
	if h, ok := r.inst.(mech.DequeuedHook); ok && len(r.out) > 0 {
		r.batch = mech.Batch{Pkts: r.out, Mem: r.mem, Now: r.now}
		h.Dequeued(r.v, &r.batch)
	}
	return len(r.out)
}

func (r *rig) average() float64 {
	a, ok := r.e.Average(0, 0)
	if !ok {
		r.t.Fatal("no average published")
	}
	return a
}

// small is a 54-byte TCP segment with ECN field f.
func small(f uint8) []byte {
	return pkttest.TCP4(pkttest.MAC(2), pkttest.MAC(1), ip1, ip2, 1, 80, f, nil)
}

func redCfg(c ecn.Config) *ecn.Config {
	c.Mode = ecn.ModeRED
	return &c
}

// TestREDBelowKMinNeverMarks: with the queue anywhere below kmin, no
// packet is marked or dropped, whatever pmax (1 here).
func TestREDBelowKMinNeverMarks(t *testing.T) {
	r := mustRig(t, redCfg(ecn.Config{KMin: 10000, KMax: 20000, PMax: 1}), 8e6)
	for depth := 0; depth < 10; depth++ {
		for i := 0; i < 1000; i++ {
			for _, f := range []uint8{ect0, ect1, notECT} {
				p := r.arrive(small(f))
				if p.Verdict != pkt.Forward || p.TOS&3 != f {
					t.Fatalf("at %d B: ECN %02b became %02b, verdict %v", depth*1000, f, p.TOS&3, p.Verdict)
				}
				r.join(p)
				r.drain(1)
			}
		}
		r.fill(1, 1000)
	}
	if r.e.Marked(0) != 0 || r.e.REDDropped(0) != 0 || r.e.NotCapable(0) != 0 {
		t.Errorf("marked %d, dropped %d, not capable %d", r.e.Marked(0), r.e.REDDropped(0), r.e.NotCapable(0))
	}
}

// TestREDAboveKMax: end to end through a switch. Ten 1000-byte frames
// arrive at once at an empty queue (kmin 2500 B, kmax 3000 B, weight 0, a
// pmax of 1% so that a mark above kmax is no draw's luck): frames 0 to 2
// find 0, 1000 and 2000 B, below kmin, and go on untouched; every later
// one finds at least kmax: the ECN-capable ones are marked CE (checksum
// updated), the not-ECT one is dropped (reason red, counted as not capable
// and as a RED drop), the one already CE stays so and counts as marked.
func TestREDAboveKMax(t *testing.T) {
	h := harness(t, "fifo", 1, ecnOn(redCfg(ecn.Config{KMin: 2500, KMax: 3000, PMax: 0.01})))
	in := []uint8{ect0, notECT, ect1, ect0, ect0, notECT, ect0, ect1, ect0, ce}
	want := []uint8{ect0, notECT, ect1, ce, ce, ce, ce, ce, ce} // frame 5 dropped
	for i, f := range in {
		h.Links[0].Inject(frame(uint16(i), f))
	}
	h.Settle()
	h.Advance(20e6, 100e3)
	got, flows := sent(t, h)
	if len(got) != len(want) {
		t.Fatalf("sent %d frames, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("frame of flow %d: ECN %02b, want %02b", flows[i], got[i], want[i])
		}
	}
	for _, f := range flows {
		if f == 5 {
			t.Error("the not-ECT frame above kmax was sent")
		}
	}
	e := ecn.Of(h.SW.Mechanisms()[ecn.Name])
	drops := h.SW.Counters(1).Drops
	if e.Marked(1) != 6 || e.NotCapable(1) != 1 || e.REDDropped(1) != 1 || drops[ecn.ReasonRED] != 1 {
		t.Errorf("marked %d, not capable %d, RED drops %d, red drops counted %d; want 6, 1, 1, 1",
			e.Marked(1), e.NotCapable(1), e.REDDropped(1), drops[ecn.ReasonRED])
	}
	if ecn.ReasonRED.String() != "red" {
		t.Errorf("drop reason %q, want red", ecn.ReasonRED)
	}
	h.CheckFrames(t)

	// At exactly kmax the mark is certain too.
	r := mustRig(t, redCfg(ecn.Config{KMinPackets: 2, KMaxPackets: 3, PMax: 1e-9}), 8e6)
	r.fill(3, 100)
	for i := 0; i < 100; i++ {
		if p := r.arrive(small(ect1)); p.TOS&3 != ce {
			t.Fatalf("arrival %d at kmax_packets: not marked", i)
		}
		if p := r.arrive(small(notECT)); p.Verdict != pkt.Drop || p.Reason != ecn.ReasonRED {
			t.Fatalf("not-ECT arrival %d at kmax_packets: verdict %v (%v), want a red drop", i, p.Verdict, p.Reason)
		}
	}
}

// bernstein is the half-width t for which Bernstein's inequality bounds
// the chance that the fraction of successes in n Bernoulli(p) trials
// strays from p by t or more by delta:
//
//	P(|S/n - p| >= t) <= 2 exp(-n t^2 / (2 p (1-p) + 2t/3))
//
// (each trial's deviation from p is at most 1), solved for t.
func bernstein(n int, p, delta float64) float64 {
	l := math.Log(2 / delta)
	v := p * (1 - p)
	b := 2 * l / 3
	return (b + math.Sqrt(b*b+8*float64(n)*v*l)) / (2 * float64(n))
}

// TestREDMidpointFraction: with the depth held at the middle of kmin and
// kmax (weight 0), a packet is marked with probability pmax/2. Over
// 100000 packets the fraction marked is within Bernstein's bound for a
// chance of 1e-9 of failing (about 0.0063 around 0.1), with the generator
// seeded as in the switch, from crypto/rand; packets already CE count as
// marked when chosen, ECT(1) ones as ECT(0) ones.
func TestREDMidpointFraction(t *testing.T) {
	const n = 100000
	const pmax = 0.2
	r := mustRig(t, redCfg(ecn.Config{KMin: 10000, KMax: 30000, PMax: pmax}), 8e6)
	r.fill(20, 1000) // 20000 B: the midpoint
	fields := []uint8{ect0, ect1, ce}
	frames := [][]byte{small(ect0), small(ect1), small(ce)}
	marked := 0
	for i := 0; i < n; i++ {
		f := fields[i%3]
		p := r.arrive(frames[i%3])
		if p.Verdict != pkt.Forward {
			t.Fatalf("packet %d (ECN %02b) dropped", i, f)
		}
		if f != ce && p.TOS&3 == ce {
			marked++
			if pkttest.Checksum(r.mem[14:34]) != 0 {
				t.Fatal("bad IPv4 checksum after marking")
			}
		}
		r.inst.(mech.EnqueuedHook).Enqueued(r.v, &p, r.now) // taken (the rig keeps the depth)
	}
	ce0 := n / 3 // of the n packets, n/3 (rounded down) arrived CE
	frac := float64(marked) / float64(n-ce0)
	tol := bernstein(n-ce0, pmax/2, 1e-9)
	if math.Abs(frac-pmax/2) >= tol {
		t.Errorf("marked %.5f of the ECT packets at the midpoint, want %.2f +- %.5f", frac, pmax/2, tol)
	}
	// Marked counts the CE packets chosen as well: all of them, in the
	// same fraction.
	all := float64(r.e.Marked(0)) / n
	if tol := bernstein(n, pmax/2, 1e-9); math.Abs(all-pmax/2) >= tol {
		t.Errorf("Marked %d of %d, want a fraction %.2f +- %.5f", r.e.Marked(0), n, pmax/2, tol)
	}
	if r.e.Marked(0) < uint64(marked) {
		t.Errorf("Marked %d below the %d ECT packets marked", r.e.Marked(0), marked)
	}
}

// TestREDAverage: with weight 0.25 the average follows RED's update on
// each arrival (avg += w (q - avg); an arrival at an empty queue decays
// it by (1-w)^m instead), hand-computed; m is the idle time over the
// transmission time of 500 B at the port's 8 Mbit/s (500 us).
func TestREDAverage(t *testing.T) {
	r := mustRig(t, redCfg(ecn.Config{KMinPackets: 100, KMaxPackets: 200, Weight: 0.25}), 8e6)
	check := func(what string, want float64) {
		t.Helper()
		if got := r.average(); math.Abs(got-want) > 1e-12 {
			t.Errorf("%s: average %.15g, want %.15g", what, got, want)
		}
	}
	// Four arrivals, finding 0, 1, 2 and 3 packets.
	for i, want := range []float64{0, 0.25, 0.6875, 1.265625} {
		r.now = int64(i) * 1000
		r.join(r.arrive(small(ect0)))
		check("arrival "+string(rune('1'+i)), want)
	}
	// The queue drains at 10 us; an arrival 1500 us later (m = 3) finds
	// it empty: 1.265625 x 0.75^3 = 81/64 x 27/64.
	r.now = 10000
	if r.drain(10) != 4 {
		t.Fatal("the queue did not hold 4")
	}
	r.now += 1500000
	r.join(r.arrive(small(ect0)))
	check("after 1500 us idle", 81.0/64*27/64)
	// Then one finding it at 1 packet: += 0.25 x (1 - avg).
	a := 81.0 / 64 * 27 / 64
	a += 0.25 * (1 - a)
	r.join(r.arrive(small(ect0)))
	check("the next arrival", a)
	// Idle 750 us: m = 1.5, 0.75^1.5 = 3 sqrt(3) / 8.
	r.drain(10)
	r.now += 750000
	r.join(r.arrive(small(ect0)))
	b := a * 3 * math.Sqrt(3) / 8
	check("after 750 us idle", b)
	// A queue emptied without a Dequeued (its packet flushed, as when
	// the port goes down) decays from its last arrival: the one above,
	// 250 us (m = 0.5) before this one.
	var gone pkt.Packet
	if !r.s.Dequeue(&gone) {
		t.Fatal("nothing queued")
	}
	r.now += 250000
	r.arrive(small(ect0))
	check("idle since the last arrival", b*math.Sqrt(0.75))
	if r.e.Marked(0) != 0 {
		t.Errorf("marked %d below kmin", r.e.Marked(0))
	}

	// Weight 0: the average is the depth.
	r = mustRig(t, redCfg(ecn.Config{Weight: 0}), 0)
	r.fill(7, 1000)
	r.arrive(small(ect0))
	check("weight 0", 7000)
	if _, ok := r.inst.(mech.DequeuedHook); ok {
		t.Error("a switch with no port averaging has ecn's Dequeued hook")
	}
}

// TestREDConfig: mode red's defaults are DCQCN's; each refused value is
// named with its key and the fix, in the switch's config too.
func TestREDConfig(t *testing.T) {
	port := mech.PortInfo{Name: "p", RateBits: 1e9, BufferBytes: 1 << 20}
	c := redCfg(ecn.Config{})
	if err := c.Validate(port); err != nil || c.KMin != ecn.DefaultKMin || c.KMax != ecn.DefaultKMax || c.PMax != ecn.DefaultPMax || c.Weight != 0 {
		t.Errorf("defaults: %+v, %v", c, err)
	}
	if ecn.DefaultKMin != 5000 || ecn.DefaultKMax != 200000 || ecn.DefaultPMax != 0.01 {
		t.Error("the defaults are not DCQCN's 5 KB, 200 KB, 1%")
	}
	if err := c.Validate(port); err != nil {
		t.Errorf("validating the filled-in config again: %v", err)
	}
	for want, c := range map[string]*ecn.Config{
		`mode: "ramp" is not a mode (use step`:                            {Mode: "ramp"},
		"kmin: 5KB is a key of mode red (set mode: red, or remove kmin":   {KMin: 5000},
		"kmax_packets: 4 is a key of mode red":                            {KMaxPackets: 4},
		"pmax: 0.5 is a key of mode red":                                  {PMax: 0.5},
		"weight: 0.002 is a key of mode red":                              {Weight: 0.002},
		"k: 3KB is a key of mode step (mode red's thresholds are kmin":    redCfg(ecn.Config{K: 3000}),
		"k_packets: 3 is a key of mode step":                              redCfg(ecn.Config{KPackets: 3}),
		"rtt: 1ms is a key of mode step":                                  redCfg(ecn.Config{RTT: units.Duration(1e6)}),
		"kmin: 5KB and kmin_packets: 4 are both set (set one":             redCfg(ecn.Config{KMin: 5000, KMinPackets: 4}),
		"kmax: 50KB and kmax_packets: 9 are both set":                     redCfg(ecn.Config{KMax: 50000, KMaxPackets: 9}),
		"kmin: 5KB is in bytes and kmax_packets: 9 in packets":            redCfg(ecn.Config{KMin: 5000, KMaxPackets: 9}),
		"kmax: 50KB is in bytes and kmin_packets: 2 in packets":           redCfg(ecn.Config{KMax: 50000, KMinPackets: 2}),
		"kmin_packets: unset while kmax_packets: 9 is set":                redCfg(ecn.Config{KMaxPackets: 9}),
		"kmax_packets: unset while kmin_packets: 9 is set":                redCfg(ecn.Config{KMinPackets: 9}),
		"kmin_packets: 9 is not below kmax_packets: 9":                    redCfg(ecn.Config{KMinPackets: 9, KMaxPackets: 9}),
		"kmin_packets: -1 out of range":                                   redCfg(ecn.Config{KMinPackets: -1, KMaxPackets: 9}),
		"kmin: 300KB is not below kmax: 200KB (the default)":              redCfg(ecn.Config{KMin: 300000}),
		"(lower kmin, or raise kmax)":                                     redCfg(ecn.Config{KMin: 9000, KMax: 8000}),
		"kmax: 2GiB is more than 1GiB":                                    redCfg(ecn.Config{KMax: 2 << 30}),
		"kmax: 1MiB is not below the port's buffer (1MiB)":                redCfg(ecn.Config{KMax: 1 << 20}),
		"(lower kmax, or raise the port's buffer)":                        redCfg(ecn.Config{KMax: 2 << 20}),
		"pmax: 1.5 out of range (0, 1]":                                   redCfg(ecn.Config{PMax: 1.5}),
		"pmax: -0.1 out of range":                                         redCfg(ecn.Config{PMax: -0.1}),
		"pmax: NaN out of range":                                          redCfg(ecn.Config{PMax: math.NaN()}),
		"weight: 1 out of range [0, 1)":                                   redCfg(ecn.Config{Weight: 1}),
		"weight: -0.5 out of range":                                       redCfg(ecn.Config{Weight: -0.5}),
		"weight: +Inf out of range":                                       redCfg(ecn.Config{Weight: math.Inf(1)}),
		"weight: 0.002 needs the port's rate":                             nil,
		"(set the port's rate, or weight: 0 for the instantaneous depth)": nil,
	} {
		p := port
		if c == nil {
			c, p.RateBits = redCfg(ecn.Config{Weight: 0.002}), 0
		}
		err := c.Validate(p)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v; want %q", c, err, want)
		}
	}
	// A port without a rate runs weight 0; pmax 1 is allowed.
	if err := redCfg(ecn.Config{PMax: 1}).Validate(mech.PortInfo{Name: "p", BufferBytes: 1 << 20}); err != nil {
		t.Errorf("weight 0 without a rate: %v", err)
	}
	// The switch's config names the port and the key.
	_, err := config.Parse([]byte("ports: [{interface: a, rate: 1Gbit, mechanisms: {ecn: {mode: red, kmin: 300KB}}}]"))
	if err == nil || !strings.Contains(err.Error(), "ports[0].mechanisms.ecn.kmin: 300KB is not below kmax: 200KB (the default)") {
		t.Errorf("the switch's config: %v", err)
	}
	cfg, err := config.Parse([]byte("ports: [{interface: a, rate: 1Gbit, mechanisms: {ecn: {mode: red, kmin_packets: 4, kmax_packets: 40, pmax: 0.5, weight: 0.002}}}]"))
	if err != nil {
		t.Fatal(err)
	}
	if c := cfg.Ports[0].Mechanisms[0].Config.(*ecn.Config); c.KMinPackets != 4 || c.KMaxPackets != 40 || c.PMax != 0.5 || c.Weight != 0.002 || c.KMin != 0 {
		t.Errorf("parsed %+v", c)
	}
}

// TestREDRateChangedViewMetrics: a port averaging refuses an unlimited
// rate, one at weight 0 takes it; View and the metrics show the
// thresholds, the drops and the averages.
func TestREDRateChangedViewMetrics(t *testing.T) {
	r := mustRig(t, redCfg(ecn.Config{KMinPackets: 1, KMaxPackets: 2, Weight: 0.5}), 8e6)
	if err := r.e.RateChanged(0, 0); err == nil || !strings.Contains(err.Error(), "configure weight: 0") {
		t.Errorf("unlimited rate while averaging: %v", err)
	}
	if err := r.e.RateChanged(0, 1e9); err != nil {
		t.Error(err)
	}
	if v := r.e.View(0); v["mode"] != ecn.ModeRED || v["kmin_packets"] != uint64(1) || v["kmax_packets"] != uint64(2) ||
		v["pmax"] != ecn.DefaultPMax || v["weight"] != 0.5 || len(v["average_packets"].(map[string]float64)) != 0 {
		t.Errorf("view before any arrival: %v", v)
	}
	r.fill(4, 100)
	r.arrive(small(notECT)) // average 2: dropped
	if v := r.e.View(0); v["red_dropped"] != uint64(1) || v["not_capable"] != uint64(1) || v["average_packets"].(map[string]float64)["0"] != 2 {
		t.Errorf("view after a drop: %v", v)
	}
	r0 := mustRig(t, redCfg(ecn.Config{}), 0)
	if err := r0.e.RateChanged(0, 0); err != nil {
		t.Errorf("weight 0, unlimited rate: %v", err)
	}
	if v := r0.e.View(0); v["kmin_bytes"] != uint64(5000) || v["kmax_bytes"] != uint64(200000) {
		t.Errorf("defaults' view: %v", v)
	}

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(r.e)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	// The names follow the conventions (as promtool check metrics), those
	// of a port in bytes too.
	r0.arrive(small(ect0))
	lint := prometheus.NewPedanticRegistry()
	lint.MustRegister(r0.e)
	all, err := lint.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(append(all, mfs...)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	if len(all) != 7 {
		t.Errorf("%d metric families of a port in bytes, want 7 (with the queue histogram)", len(all))
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			got[mf.GetName()] = v
		}
	}
	for name, want := range map[string]float64{"gswitch_ecn_red_dropped_total": 1, "gswitch_ecn_not_capable_total": 1, "gswitch_ecn_marked_total": 0,
		"gswitch_ecn_red_kmin_packets": 1, "gswitch_ecn_red_kmax_packets": 2, "gswitch_ecn_red_average_packets": 2} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (exported: %v), want %v", name, v, ok, want)
		}
	}
	for _, name := range []string{"gswitch_ecn_threshold_bytes", "gswitch_ecn_red_kmin_bytes"} {
		if _, ok := got[name]; ok {
			t.Errorf("%s exported on a port with thresholds in packets", name)
		}
	}
}

// TestREDDoesNotAllocate: RED's Admit (a draw in the band, the average's
// update and its idle decay) and its Dequeued allocate nothing, by hand
// and in a switch.
func TestREDDoesNotAllocate(t *testing.T) {
	r := mustRig(t, redCfg(ecn.Config{KMinPackets: 1, KMaxPackets: 64, PMax: 1, Weight: 0.1}), 8e6)
	f := small(ect0)
	if a := testing.AllocsPerRun(100, func() {
		for i := 0; i < 8; i++ {
			r.join(r.arrive(f))
			r.now += 1000
		}
		r.drain(64)
		r.now += 1e6
	}); a != 0 {
		t.Errorf("%v allocations per burst, by hand", a)
	}

	h := harness(t, "fifo", 1, ecnOn(redCfg(ecn.Config{KMinPackets: 1, KMaxPackets: 6, PMax: 1, Weight: 0.5})))
	h.Links[1].Record = false
	fr := frame(1, ect0)
	if a := testing.AllocsPerRun(100, func() {
		for i := 0; i < 8; i++ {
			h.Links[0].Inject(fr)
		}
		h.Settle()
		h.Advance(10e6, 1e6)
	}); a != 0 {
		t.Errorf("%v allocations per burst, in a switch", a)
	}
	e := ecn.Of(h.SW.Mechanisms()[ecn.Name])
	if e == nil || e.Marked(1) == 0 {
		t.Fatal("nothing marked")
	}
	if _, ok := h.SW.Mechanisms()[ecn.Name].(mech.DequeuedHook); !ok {
		t.Error("a switch with a port averaging lacks ecn's Dequeued hook")
	}
}

// FuzzRED runs a sequence of arrivals (IPv4 or IPv6, any ECN field),
// departures and waits through ECN on a port built from any config values
// and rate. A config Validate refuses, New refuses too; for the others,
// nothing panics and: a packet that is not ECN-capable is never marked
// (its frame untouched) and is dropped only in mode red, as red; an
// ECN-capable one is never dropped and is left alone or marked CE (IPv4
// checksum right); CE stays CE; at weight 0 nothing below kmin is touched
// and everything at or above kmax is; the average stays within the depths
// seen; marked + dropped <= arrivals, and the counters agree with what
// the packets show.
func FuzzRED(f *testing.F) {
	f.Add(true, uint64(2000), uint64(8000), 0, 0, 0.5, 0.0, uint64(8e6), uint64(1), []byte{0, 4, 8, 12, 1, 5, 9, 13, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(true, uint64(0), uint64(0), 2, 5, 1.0, 0.25, uint64(1e9), uint64(7), []byte{0, 1, 0, 1, 0, 1, 0, 1, 0, 255, 6, 0, 0, 0, 0})
	f.Add(false, uint64(3000), uint64(0), 0, 0, 0.0, 0.0, uint64(0), uint64(3), []byte{0, 4, 8, 12, 0, 4, 8, 12, 0, 4, 8, 12})
	f.Add(true, uint64(1), uint64(2), 0, 0, math.NaN(), -1.0, uint64(0), uint64(0), []byte{})
	f.Fuzz(func(t *testing.T, red bool, kmin, kmax uint64, kminPk, kmaxPk int, pmax, weight float64, rate, seed uint64, ops []byte) {
		c := &ecn.Config{K: units.Size(kmin), KPackets: kminPk}
		if red {
			c = redCfg(ecn.Config{KMin: units.Size(kmin), KMax: units.Size(kmax), KMinPackets: kminPk, KMaxPackets: kmaxPk, PMax: pmax, Weight: weight})
		}
		check := *c
		verr := check.Validate(mech.PortInfo{Name: "p", RateBits: rate, BufferBytes: rigBuffer})
		r, err := newRig(t, c, rate)
		if (verr == nil) != (err == nil) {
			t.Fatalf("Validate says %v, New %v", verr, err)
		}
		if err != nil {
			return
		}
		if red {
			ecn.SeedPort(r.e, 0, seed, ^seed)
		}
		packets := c.KMinPackets != 0 || c.KPackets != 0
		var arrivals, drops, ectMarked, joined, ceJoined uint64
		maxDepth := 0.0
		for _, op := range ops {
			switch op & 3 {
			case 0, 1: // an arrival
				fld, v6 := op>>2&3, op&0x10 != 0
				fr := small(fld)
				if v6 {
					fr = pkttest.UDP6(pkttest.MAC(2), pkttest.MAC(1), [16]byte{0xfd, 15: 1}, [16]byte{0xfd, 15: 2}, 1, 80, make([]byte, int(op>>5)*200))
					fr[15] = fr[15]&0xcf | fld<<4
				} else if op&0x20 != 0 {
					fr = frame(1, fld)
				}
				b, n := r.v.Backlog(0)
				d := float64(b)
				if packets {
					d = float64(n)
				}
				maxDepth = max(maxDepth, d)
				arrivals++
				p := r.arrive(fr)
				got := p.TOS & 3
				if v6 && r.mem[15]>>4&3 != got {
					t.Fatalf("IPv6 traffic class %02b, descriptor %02b", r.mem[15]>>4&3, got)
				}
				if p.Verdict == pkt.Drop {
					if !red || fld != notECT || p.Reason != ecn.ReasonRED {
						t.Fatalf("dropped ECN %02b (mode red %v) as %v", fld, red, p.Reason)
					}
					drops++
				} else if p.Verdict != pkt.Forward {
					t.Fatalf("verdict %v", p.Verdict)
				}
				switch fld {
				case notECT:
					if got != notECT || string(r.mem[:len(fr)]) != string(fr) {
						t.Fatal("a packet that is not ECN-capable was marked or rewritten")
					}
				case ce:
					if got != ce {
						t.Fatal("a CE packet lost its mark")
					}
				default:
					if got != fld && got != ce {
						t.Fatalf("ECN %02b became %02b", fld, got)
					}
					if !v6 && pkttest.Checksum(r.mem[14:34]) != 0 {
						t.Fatal("bad IPv4 checksum")
					}
				}
				if red && c.Weight == 0 {
					switch {
					case d < float64(c.KMin)+float64(c.KMinPackets) && p.Verdict == pkt.Drop, d < float64(c.KMin)+float64(c.KMinPackets) && got != fld:
						t.Fatalf("touched below kmin (depth %v)", d)
					case d >= float64(c.KMax)+float64(c.KMaxPackets) && fld != notECT && got != ce,
						d >= float64(c.KMax)+float64(c.KMaxPackets) && fld == notECT && p.Verdict != pkt.Drop:
						t.Fatalf("ECN %02b left alone at or above kmax (depth %v)", fld, d)
					}
				}
				if red {
					a := r.average()
					if a < 0 || a > maxDepth*(1+1e-9) || math.IsNaN(a) {
						t.Fatalf("average %v outside [0, %v]", a, maxDepth)
					}
				}
				if r.join(p) {
					joined++
					if fld != ce && got == ce {
						ectMarked++
					}
					if fld == ce {
						ceJoined++
					}
				}
			case 2: // a batch leaves
				r.drain(int(op>>2) + 1)
			case 3: // time passes: up to 63^3 us
				d := int64(op >> 2)
				r.now += d * d * d * 1000
			}
			r.now++
		}
		m, nd, nc := r.e.Marked(0), r.e.REDDropped(0), r.e.NotCapable(0)
		if m+nd > arrivals || m > joined || m < ectMarked || nd != drops {
			t.Fatalf("marked %d, dropped %d of %d arrivals (%d queued, %d ECT marked, %d drops seen)", m, nd, arrivals, joined, ectMarked, drops)
		}
		if !red && (m != ectMarked || nd != 0) {
			t.Fatalf("step: marked %d, %d ECT marked; %d RED drops", m, ectMarked, nd)
		}
		if red && (nc != nd || m > ectMarked+ceJoined) {
			t.Fatalf("red: not capable %d, dropped %d; marked %d > %d + %d", nc, nd, m, ectMarked, ceJoined)
		}
	})
}
