package transport

import (
	"math"
	"math/rand"
	"testing"

	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/wire/gsperf"
)

// The tests below check DCQCN's rate machine against steps of the paper's
// algorithm computed by hand, on a fake clock: line rate L = 10 Gbit/s,
// the paper's constants (g = 1/256, K = T = 55 us, F = 5, R_AI = 40
// Mbit/s, R_HAI = 400 Mbit/s, a 100 Mbit/s floor) unless a test says.

const (
	qL   = 10e9 // line rate, bit/s
	qMSS = 1000
)

func newQ(c DCQCNConfig, now int64) *dcqcn {
	if c.LineRate == 0 {
		c.LineRate = qL
	}
	return newDCQCN(c, qMSS, now)
}

func TestDCQCNModeName(t *testing.T) {
	if m, err := ParseMode("dcqcn"); err != nil || m != DCQCN || m.String() != "dcqcn" {
		t.Fatalf("%v %v", m, err)
	}
	if s := NewSender(Config{}, 1, 1000, 1); s.rp != nil || s.Rate() != 0 || s.LineRate() != 0 {
		t.Fatal("a plain sender has DCQCN state")
	}
	s := NewSender(Config{Mode: DCQCN, DCQCN: DCQCNConfig{LineRate: qL}}, 1, 1000, 1)
	c := s.rp.c
	if s.Rate() != qL || s.TargetRate() != qL || s.RateAlpha() != 1 || c.G != 1.0/256 || c.RAI != 40e6 || c.RHAI != 400e6 ||
		c.Timer != 55e3 || c.AlphaTimer != 55e3 || c.Bytes != 10e6 || c.F != 5 || c.MinRate != 100e6 {
		t.Fatalf("rate %v target %v alpha %v config %+v", s.Rate(), s.TargetRate(), s.RateAlpha(), c)
	}
}

// A CNP at line rate with alpha = 1 (no decay yet): Rt = L, Rc = L/2,
// alpha = (1-g) 1 + g = 1. A second one at once: Rt = L/2, Rc = L/4.
func TestDCQCNCutFromLineRate(t *testing.T) {
	d := newQ(DCQCNConfig{}, 0)
	d.onCNP(10e3) // 10 us: before alpha's first decay at 55 us
	if d.rt != qL || d.rc != qL/2 || d.alpha != 1 || d.cnps != 1 || d.cuts != 1 {
		t.Fatalf("Rt %v Rc %v alpha %v cnps %d cuts %d", d.rt, d.rc, d.alpha, d.cnps, d.cuts)
	}
	d.onCNP(10e3)
	if d.rt != qL/2 || d.rc != qL/4 || d.alpha != 1 {
		t.Fatalf("second CNP: Rt %v Rc %v alpha %v", d.rt, d.rc, d.alpha)
	}
}

// Alpha decays by (1-g) once every K without a CNP: from the start, and
// again from each CNP, which adds g first.
func TestDCQCNAlphaDecay(t *testing.T) {
	const g, K = 1.0 / 256, 55e3
	d := newQ(DCQCNConfig{}, 0)
	for k := 1; k <= 7; k++ {
		d.advance(int64(k)*K - 1)
		if want := math.Pow(1-g, float64(k-1)); !near(d.alpha, want) {
			t.Fatalf("just before %d periods: alpha %v, want %v", k, d.alpha, want)
		}
		d.advance(int64(k) * K)
		if want := math.Pow(1-g, float64(k)); !near(d.alpha, want) {
			t.Fatalf("after %d periods: alpha %v, want %v", k, d.alpha, want)
		}
	}
	// A CNP at 400 us (alpha decayed 7 times): alpha = (1-g) a + g, and
	// the timer restarts: 40 periods later, (1-g)^40 of that.
	a7 := math.Pow(1-g, 7)
	d.onCNP(400e3)
	a := (1-g)*a7 + g
	if !near(d.alpha, a) {
		t.Fatalf("after the CNP: alpha %v, want %v", d.alpha, a)
	}
	d.advance(400e3 + 40*K - 1)
	if want := a * math.Pow(1-g, 39); !near(d.alpha, want) {
		t.Fatalf("39 periods after the CNP: alpha %v, want %v", d.alpha, want)
	}
	d.advance(400e3 + 40*K) // one call, several periods' worth of time: the same
	if want := a * math.Pow(1-g, 40); !near(d.alpha, want) {
		t.Fatalf("40 periods after the CNP: alpha %v, want %v", d.alpha, want)
	}
}

// Fast recovery: after a cut to L/2 (Rt = L), each of the first F = 5
// timer events halves the distance to Rt: Rc = L - (L/2)/2^i.
func TestDCQCNFastRecovery(t *testing.T) {
	const T = 55e3
	d := newQ(DCQCNConfig{}, 0)
	d.onCNP(1e3)
	for i := 1; i <= 5; i++ {
		d.advance(1e3 + int64(i)*T - 1)
		if want := qL - qL/2/math.Pow(2, float64(i-1)); d.rc != want || d.t != int64(i-1) {
			t.Fatalf("before event %d: Rc %v, want %v (T %d)", i, d.rc, want, d.t)
		}
		d.advance(1e3 + int64(i)*T)
		if want := qL - qL/2/math.Pow(2, float64(i)); d.rc != want || d.rt != qL || d.t != int64(i) {
			t.Fatalf("event %d: Rc %v Rt %v T %d, want Rc %v Rt %v", i, d.rc, d.rt, d.t, want, float64(qL))
		}
	}
}

// Additive then hyper increase. Two cuts at once leave Rt = L/2 and
// Rc = L/4. The byte counter's 6 events (B = 10 KB, sent at the cut's
// instant) are 5 of fast recovery and one additive increase; the timer's
// events 1 to 5 then find max(T, BC) = 6 > F but min(T, BC) = T <= F:
// additive, Rt += R_AI; events 6 and 7 find min = 6 > F: hyper,
// Rt += i R_HAI with i = min(T, BC) - F = 1; a seventh byte-counter event
// makes min = 7: i = 2. Each event sets Rc = (Rt + Rc)/2.
func TestDCQCNAdditiveThenHyperIncrease(t *testing.T) {
	const T, B = 55e3, 10e3
	const rai, rhai = 40e6, 400e6
	d := newQ(DCQCNConfig{Bytes: B}, 0)
	d.onCNP(1e3)
	d.onCNP(1e3)
	rt, rc := qL/2, qL/4
	if d.rt != rt || d.rc != rc {
		t.Fatalf("after two cuts: Rt %v Rc %v", d.rt, d.rc)
	}
	step := func(what string, drt float64) {
		t.Helper()
		rt += drt
		rc = (rt + rc) / 2
		if !near(d.rt, rt) || !near(d.rc, rc) {
			t.Fatalf("%s (T %d, BC %d): Rt %v Rc %v, want %v %v", what, d.t, d.bc, d.rt, d.rc, rt, rc)
		}
	}
	for i := 1; i <= 6; i++ {
		for range int(B / qMSS) {
			d.sent(1e3, qMSS)
		}
		if d.bc != int64(i) || d.t != 0 {
			t.Fatalf("byte counter: BC %d T %d after %d x B", d.bc, d.t, i)
		}
		if i <= 5 {
			step("byte counter, fast recovery", 0)
		} else {
			step("byte counter, additive", rai)
		}
	}
	for i := 1; i <= 7; i++ {
		d.advance(1e3 + int64(i)*T)
		switch {
		case i <= 5:
			step("timer, additive", rai)
		default: // i = min(T, BC) - F = 1: BC is 6
			step("timer, hyper", rhai)
		}
	}
	for range int(B / qMSS) { // BC 7, T 7: i = 2
		d.sent(1e3+7*T, qMSS)
	}
	step("byte counter, hyper", 2*rhai)
	// Rt reaches the line: capped there, Rc follows and never passes it.
	for i := 8; i < 200; i++ {
		d.advance(1e3 + int64(i)*T)
		if d.rt > qL || d.rc > d.rt {
			t.Fatalf("event %d: Rt %v Rc %v above the line %v", i, d.rt, d.rc, float64(qL))
		}
	}
	if d.rt != qL || d.rc != qL {
		t.Fatalf("after 200 events: Rt %v Rc %v, want the line rate", d.rt, d.rc)
	}
}

// The byte counter fires once per B bytes on the wire (payload and
// overhead), counts nothing before the first cut, and restarts at a CNP.
func TestDCQCNByteCounter(t *testing.T) {
	const B, ov = 10_000, 100 // 1100 bytes a segment on the wire
	d := newQ(DCQCNConfig{Bytes: B, Overhead: ov}, 0)
	for range 20 {
		d.sent(1e3, qMSS)
	}
	if d.bc != 0 || d.bytes != 0 {
		t.Fatalf("before any cut: BC %d, %d bytes counted", d.bc, d.bytes)
	}
	d.onCNP(2e3)
	d.sent(2e3, qMSS)
	d.onCNP(2e3) // restarts the count: Rt = L/2, Rc = L/4
	rc := qL / 4.0
	for i := 1; i <= 9; i++ { // 9 x 1100 = 9900 < B
		d.sent(2e3, qMSS)
	}
	if d.bc != 0 || d.rc != rc || d.bytes != 9900 {
		t.Fatalf("9900 bytes: BC %d Rc %v bytes %d", d.bc, d.rc, d.bytes)
	}
	d.sent(2e3, qMSS) // 11000: one event, 1000 bytes carried over
	rc = (qL/2 + rc) / 2
	if d.bc != 1 || d.rc != rc || d.bytes != 1000 {
		t.Fatalf("11000 bytes: BC %d Rc %v (want %v) bytes %d", d.bc, d.rc, rc, d.bytes)
	}
	for i := 0; i < 9; i++ { // 1000 + 9 x 1100 = 10900: the second event
		d.sent(2e3, qMSS)
	}
	if d.bc != 2 || d.bytes != 900 {
		t.Fatalf("21900 bytes: BC %d bytes %d", d.bc, d.bytes)
	}
}

// A cut never takes the rate below the floor; a CNP at the floor counts
// as received, not as a cut.
func TestDCQCNFloor(t *testing.T) {
	d := newQ(DCQCNConfig{MinRate: 1e9}, 0)
	for i := range 10 {
		d.onCNP(int64(i) * 1e3)
		if d.rc < 1e9 {
			t.Fatalf("CNP %d: Rc %v below the floor", i+1, d.rc)
		}
	}
	// 10 -> 5 -> 2.5 -> 1.25 -> 1 (floored): four cuts.
	if d.rc != 1e9 || d.cnps != 10 || d.cuts != 4 {
		t.Fatalf("Rc %v, %d CNPs, %d cuts", d.rc, d.cnps, d.cuts)
	}
}

// A sender polled every microsecond puts on the wire what its rate
// allows: line rate, then half of it after a CNP; its window does not
// change on timeouts.
func TestDCQCNSenderFollowsItsRate(t *testing.T) {
	const ov = 100
	// Polls 1 us apart are late for most 8.8 us segments: a burst of four
	// segments lets the sender catch up.
	s := NewSender(Config{Mode: DCQCN, MSS: qMSS, InitWindow: 1 << 30, RTO: 1e12,
		DCQCN: DCQCNConfig{LineRate: 1e9, Overhead: ov, Burst: 4 * (qMSS + ov), Timer: 1e12, AlphaTimer: 1e12}}, 1, 1<<30, 0)
	wire := 0
	count := func(b []byte) { wire += len(b) - proto.HeaderLen + ov }
	for now := int64(0); now < 10e6; now += 1e3 {
		s.Poll(now, count)
	}
	if got := float64(wire) * 8 / 10e-3; got < 0.995e9 || got > 1.005e9 {
		t.Fatalf("line rate: %.4g bit/s on the wire, want 1e9", got)
	}
	s.OnAck(proto.Header{Type: proto.TypeCNP, Flow: 1}, 10e6)
	if s.CNPs != 1 || s.RateCuts != 1 || s.Rate() != 0.5e9 {
		t.Fatalf("after a CNP: %d CNPs %d cuts rate %v", s.CNPs, s.RateCuts, s.Rate())
	}
	s.OnAck(proto.Header{Type: proto.TypeCNP, Flow: 2}, 10e6) // another flow's: ignored
	wire = 0
	for now := int64(10e6); now < 20e6; now += 1e3 {
		s.Poll(now, count)
	}
	if got := float64(wire) * 8 / 10e-3; got < 0.495e9 || got > 0.505e9 || s.CNPs != 1 {
		t.Fatalf("half rate: %.4g bit/s on the wire, want 5e8 (%d CNPs)", got, s.CNPs)
	}
	w := s.Window()
	s.onTimeout(20e6, func([]byte) {})
	if s.Window() != w || s.Timeouts != 1 {
		t.Fatalf("window %d after a timeout, was %d", s.Window(), w)
	}
	// A plain sender ignores CNPs.
	p := NewSender(Config{}, 1, 1<<20, 0)
	p.OnAck(proto.Header{Type: proto.TypeCNP, Flow: 1}, 1)
	if p.CNPs != 0 || p.Window() != 10*1400 {
		t.Fatalf("plain sender: %d CNPs, window %d", p.CNPs, p.Window())
	}
}

// The window bound: lineBits/8 x (rtt + cnp) + Kmax, at least 10 segments.
func TestDCQCNWindow(t *testing.T) {
	if w := DCQCNWindow(10e9, 200e3, 50e3, 1408); w != 312500+200000 {
		t.Fatalf("10 Gbit/s, 200 us: %d", w)
	}
	if w := DCQCNWindow(1e6, 1e3, 1e3, 1408); w != 200000 {
		t.Fatalf("1 Mbit/s: %d", w)
	}
	if w := DCQCNWindow(1e6, 1e3, 1e3, 100e3); w != 1e6 {
		t.Fatalf("huge segments: %d", w)
	}
}

// The notification point: a CE data segment gets its flow a CNP unless
// one went less than 50 us ago; two CE segments 10 us apart give one, 60
// us apart two. Segments that are not CE get none, and a receiver not
// told to send CNPs (a plain server's) sends none: only acks, as before.
func TestReceiverCNPSpacing(t *testing.T) {
	p := make([]byte, qMSS)
	type sent struct{ cnps, acks int }
	run := func(every int64, arrivals []int64, ce bool) (sent, []proto.Header) {
		r := NewReceiver(3)
		r.SendCNPs(every)
		var got sent
		var hs []proto.Header
		for i, at := range arrivals {
			off := uint64(i * qMSS)
			Fill(p, 3, off)
			h := data(3, off, 1<<20)
			h.Timestamp = uint64(at) - 5
			r.OnPacketCE(h, p, ce, at, func(b []byte) {
				h, _, err := proto.Decode(b)
				if err != nil {
					t.Fatal(err)
				}
				switch h.Type {
				case proto.TypeCNP:
					got.cnps++
					hs = append(hs, h)
				case proto.TypeAck:
					got.acks++
				}
			})
		}
		if int(r.CNPs) != got.cnps {
			t.Fatalf("CNPs counted %d, sent %d", r.CNPs, got.cnps)
		}
		return got, hs
	}
	const us = 1e3
	if got, hs := run(DefaultCNPInterval, []int64{100 * us, 110 * us}, true); got != (sent{1, 2}) {
		t.Errorf("10 us apart: %+v, want one CNP and two acks", got)
	} else if h := hs[0]; h.Flow != 3 || h.Seq != 0 || h.Size != 1<<20 || h.Timestamp != 100*us-5 {
		t.Errorf("the CNP: %+v", h)
	}
	if got, _ := run(DefaultCNPInterval, []int64{100 * us, 160 * us}, true); got != (sent{2, 2}) {
		t.Errorf("60 us apart: %+v, want two CNPs", got)
	}
	// Exactly 50 us apart: due again; 49 us: not.
	if got, _ := run(DefaultCNPInterval, []int64{0, 50 * us, 99 * us, 100 * us}, true); got != (sent{3, 4}) {
		t.Errorf("0, 50, 99, 100 us: %+v, want CNPs at 0, 50 and 100", got)
	}
	if got, _ := run(DefaultCNPInterval, []int64{100 * us, 160 * us}, false); got != (sent{0, 2}) {
		t.Errorf("not CE: %+v", got)
	}
	if got, _ := run(0, []int64{100 * us, 160 * us}, true); got != (sent{0, 2}) {
		t.Errorf("CNPs off: %+v", got)
	}
}

// The CNP path (a CE segment in order, a CNP and an ack) allocates nothing.
func TestReceiverCNPAllocatesNothing(t *testing.T) {
	r := NewReceiver(4)
	r.SendCNPs(1) // a CNP for every segment: each run takes the CNP path
	p := make([]byte, 1400)
	off := uint64(0)
	now := int64(0)
	out := func([]byte) {}
	allocs := testing.AllocsPerRun(1000, func() {
		Fill(p, 4, off)
		now += 10
		r.OnPacketCE(data(4, off, 1<<40), p, true, now, out)
		off += 1400
	})
	if allocs != 0 || r.CNPs < 1000 || r.Delivered() != off {
		t.Fatalf("%.1f allocations per segment, %d CNPs, delivered %d of %d", allocs, r.CNPs, r.Delivered(), off)
	}
}

// FuzzDCQCNSender feeds a DCQCN sender arbitrary polls, acks, CNPs and
// times (forward jumps up to centuries, backward steps): it never panics,
// its rate stays within [floor, target] and its target within the line
// rate, alpha within [0, 1], and its window never changes.
func FuzzDCQCNSender(f *testing.F) {
	f.Add([]byte{0, 10, 2, 0, 1, 3, 0, 2, 0, 50, 1, 7, 9})
	f.Add([]byte{2, 2, 2, 2, 2, 3, 200, 0, 255, 1, 0, 0, 4, 255})
	f.Add([]byte{0, 1, 0, 1, 0, 1, 1, 0, 1, 1, 1, 2, 5, 9, 2, 0, 255})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const size = 200 * qMSS
		c := DCQCNConfig{LineRate: 1e9, Overhead: 100, Bytes: 20_000, Burst: 3 * 1100}
		s := NewSender(Config{Mode: DCQCN, MSS: qMSS, InitWindow: 40 * qMSS, DCQCN: c}, 1, size, 0)
		w := s.Window()
		now := int64(0)
		var sent []uint64
		out := func(b []byte) {
			h, _, err := proto.Decode(b)
			if err != nil || h.Type != proto.TypeData {
				t.Fatalf("sent %v %+v", err, h)
			}
			sent = append(sent, h.Seq)
		}
		for i := 0; i < len(ops); i++ {
			arg := func() byte {
				if i+1 < len(ops) {
					i++
					return ops[i]
				}
				return 0
			}
			switch ops[i] % 5 {
			case 0: // time passes, up to 2.5 ms, then a poll
				now += int64(arg()) * 10e3
				s.Poll(now, out)
			case 1: // an ack of a segment sent, some echoing a mark
				a := arg()
				if len(sent) > 0 {
					seq := sent[int(a)%len(sent)]
					h := proto.Header{Type: proto.TypeAck, Flow: 1, Seq: seq, Ack: seq * uint64(a&1), Size: size}
					if a&2 != 0 {
						h.Flags = proto.FlagECE
					}
					s.OnAck(h, now)
				}
			case 2: // a CNP
				s.OnAck(proto.Header{Type: proto.TypeCNP, Flow: 1, Size: size}, now)
			case 3: // a jump: 2^arg ns, up to far beyond any run
				now += 1 << (arg() % 63)
				now = max(now, 0) // wrapped: start again
			case 4: // the clock goes back a little
				now -= int64(arg()) * 1e3
			}
			d := s.rp
			if !(d.c.MinRate <= d.rc && d.rc <= d.rt && d.rt <= d.c.LineRate) || !(d.alpha >= 0 && d.alpha <= 1) || s.Window() != w {
				t.Fatalf("op %d: Rc %v Rt %v (floor %v, line %v) alpha %v window %d (was %d)", i, d.rc, d.rt, d.c.MinRate, d.c.LineRate, d.alpha, s.Window(), w)
			}
		}
	})
}

// Random CNPs, sends and timer events, with a byte counter small enough
// to reach hyper increase: the rate stays within [floor, Rt] and Rt
// within the line rate, and a DCQCN sender's window defaults to
// MaxWindow's.
func TestDCQCNRateBounds(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	d := newQ(DCQCNConfig{Bytes: 5 * qMSS, MinRate: 0.5e9}, 0)
	now := int64(0)
	hyper := false
	for i := 0; i < 100_000; i++ {
		now += rng.Int63n(20e3)
		switch rng.Intn(10) {
		case 0:
			d.onCNP(now)
		default:
			d.sent(now, qMSS)
			d.advance(now)
		}
		hyper = hyper || min(d.t, d.bc) > 5
		if !(0.5e9 <= d.rc && d.rc <= d.rt && d.rt <= qL) || !(d.alpha >= 0 && d.alpha <= 1) {
			t.Fatalf("step %d: Rc %v Rt %v alpha %v", i, d.rc, d.rt, d.alpha)
		}
	}
	if !hyper || d.cuts == 0 {
		t.Fatalf("hyper increase never reached (%v) or no cut (%d)", hyper, d.cuts)
	}
	if s := NewSender(Config{Mode: DCQCN}, 1, 1000, 0); s.Window() != 4<<20 {
		t.Fatalf("default window %d", s.Window())
	}
	if s := NewSender(Config{Mode: DCQCN, MaxWindow: 1 << 20}, 1, 1000, 0); s.Window() != 1<<20 {
		t.Fatalf("window %d with MaxWindow 1 MB", s.Window())
	}
}

// A DCQCN window above MaxWindow's default stays as set: the rate is the
// control, and an ack does not cut the window to MaxWindow.
func TestDCQCNWindowAboveMaxWindow(t *testing.T) {
	s := NewSender(Config{Mode: DCQCN, MSS: qMSS, InitWindow: 8 << 20, DCQCN: DCQCNConfig{LineRate: qL}}, 1, 1<<30, 0)
	s.Poll(0, func([]byte) {})
	s.OnAck(proto.Header{Type: proto.TypeAck, Flow: 1, Seq: 0, Ack: qMSS, Size: 1 << 30}, 10e3)
	if s.Acked() != qMSS || s.Window() != 8<<20 {
		t.Fatalf("acked %d, window %d after an ack, want %d", s.Acked(), s.Window(), 8<<20)
	}
}

// The notification point remembers a mark inside the CNP interval: CE at
// 0 and 10 us and an unmarked segment at 60 us give two CNPs, the second
// at 60 us for the segment marked at 10 us; a segment after it sends none
// (nothing pending). A segment inside the window sends no deferred CNP.
func TestReceiverDeferredCNP(t *testing.T) {
	const us = 1e3
	r := NewReceiver(3)
	r.SendCNPs(DefaultCNPInterval)
	p := make([]byte, qMSS)
	var cnps []proto.Header
	var at []int64
	for i, a := range []struct {
		at int64
		ce bool
	}{{0, true}, {10 * us, true}, {40 * us, false}, {60 * us, false}, {70 * us, false}, {200 * us, false}} {
		off := uint64(i * qMSS)
		Fill(p, 3, off)
		h := data(3, off, 1<<20)
		h.Timestamp = uint64(a.at) + 7
		r.OnPacketCE(h, p, a.ce, a.at, func(b []byte) {
			if h, _, err := proto.Decode(b); err == nil && h.Type == proto.TypeCNP {
				cnps = append(cnps, h)
				at = append(at, a.at)
			}
		})
	}
	if len(cnps) != 2 || r.CNPs != 2 || at[0] != 0 || at[1] != 60*us {
		t.Fatalf("%d CNPs (%d counted) at %v, want 2 at 0 and 60 us", len(cnps), r.CNPs, at)
	}
	if h := cnps[1]; h.Flow != 3 || h.Seq != qMSS || h.Timestamp != 10*us+7 || h.Size != 1<<20 {
		t.Fatalf("the deferred CNP: %+v, want the segment marked at 10 us", h)
	}
}

// The deferred CNP's path (a mark within the interval, then an unmarked
// segment after it that sends the CNP) allocates nothing either.
func TestReceiverDeferredCNPAllocatesNothing(t *testing.T) {
	r := NewReceiver(4)
	// Segments 10 ns apart, every other one marked, an interval of 25 ns:
	// a marked segment 20 ns after a CNP waits for the unmarked one after it
	// (one in six segments sends a deferred CNP).
	r.SendCNPs(25)
	p := make([]byte, 1400)
	off := uint64(0)
	now := int64(0)
	ce, deferred := false, 0
	out := func(b []byte) {
		if !ce && gsperf.Header(b).Type() == gsperf.TypeCNP {
			deferred++
		}
	}
	allocs := testing.AllocsPerRun(1000, func() {
		Fill(p, 4, off)
		now += 10
		ce = off/1400%2 == 0
		r.OnPacketCE(data(4, off, 1<<40), p, ce, now, out)
		off += 1400
	})
	if allocs != 0 || deferred < 150 || r.Delivered() != off {
		t.Fatalf("%.1f allocations per segment, %d CNPs (%d deferred), delivered %d of %d", allocs, r.CNPs, deferred, r.Delivered(), off)
	}
}
