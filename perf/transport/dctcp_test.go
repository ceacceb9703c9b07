package transport

import (
	"container/heap"
	"math"
	"math/rand"
	"testing"

	"github.com/gswitch/gswitch/perf/proto"
)

// The tests below drive a DCTCP sender of 1000-byte segments by hand on a
// fake clock: poll a flight, then acknowledge its segments one by one in
// order, each with or without an echoed mark.

const dcMSS = 1000

func newDC(window int) *Sender {
	return NewSender(Config{Mode: DCTCP, MSS: dcMSS, InitWindow: window * dcMSS}, 1, 1<<30, 1)
}

// flight polls s and returns the offsets of the segments it sent.
func flight(t *testing.T, s *Sender, now int64) []uint64 {
	t.Helper()
	var seqs []uint64
	s.Poll(now, func(b []byte) {
		h, _, err := proto.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, h.Seq)
	})
	return seqs
}

// ackIn acknowledges the segment at seq, every byte before it received.
func ackIn(s *Sender, seq uint64, ece bool, now int64) {
	h := proto.Header{Type: proto.TypeAck, Flow: 1, Seq: seq, Ack: seq + dcMSS, Size: 1 << 30}
	if ece {
		h.Flags = proto.FlagECE
	}
	s.OnAck(h, now)
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestDCTCPModeName(t *testing.T) {
	if m, err := ParseMode("dctcp"); err != nil || m != DCTCP || m.String() != "dctcp" {
		t.Fatalf("%v %v", m, err)
	}
	if _, err := ParseMode("reno"); err == nil {
		t.Fatal("an unknown mode parsed")
	}
	if s := NewSender(Config{}, 1, 1000, 1); s.Alpha() != 0 || s.dc != nil {
		t.Fatal("a plain sender has DCTCP state")
	}
	if s := newDC(10); s.Alpha() != 1 || s.dc.g != 1.0/16 {
		t.Fatalf("alpha %v, g %v: want 1 and 1/16", s.Alpha(), s.dc.g)
	}
	if s := NewSender(Config{Mode: DCTCP, DCTCPG: 0.25}, 1, 1000, 1); s.dc.g != 0.25 {
		t.Fatalf("g %v", s.dc.g)
	}
}

// Alpha = (1-g) alpha + g F once per window, by hand: the state machine
// alone, windows of given marked and acknowledged bytes.
func TestDCTCPAlphaByHand(t *testing.T) {
	d := newDCTCP(1.0 / 16)
	una := uint64(0)
	for i, w := range []struct {
		acked, marked uint64
		alpha         float64
	}{
		{4000, 1000, 0.953125},               // F 1/4: 15/16 + 1/64
		{4000, 2000, 0.9248046875},           // F 1/2: 0.953125 x 15/16 + 1/32
		{8000, 0, 0.86700439453125},          // F 0: x 15/16
		{2000, 2000, 0.875316619873046875},   // F 1: x 15/16 + 1/16
		{1000, 1000, 0.88310933113098144531}, // F 1 again
	} {
		// The window's bytes come in two acks: the first leaves una at the
		// window's end (not past it), the second passes it.
		d.observe(w.acked/2, w.marked/2, d.windowEnd, una+w.acked)
		if d.alpha != []float64{1, 0.953125, 0.9248046875, 0.86700439453125, 0.875316619873046875}[i] {
			t.Fatalf("window %d: alpha moved to %v before the window ended", i+1, d.alpha)
		}
		una += w.acked
		d.observe(w.acked-w.acked/2, w.marked-w.marked/2, d.windowEnd+1, una)
		if !near(d.alpha, w.alpha) || d.acked != 0 || d.marked != 0 || d.windowEnd != una {
			t.Fatalf("window %d: alpha %.20f, want %.20f; counts %d %d, window end %d", i+1, d.alpha, w.alpha, d.acked, d.marked, d.windowEnd)
		}
	}
}

// Every byte marked from alpha 1: alpha stays 1, window after window.
func TestDCTCPAlphaStaysOneUnderFullMarking(t *testing.T) {
	s := newDC(10)
	now := int64(1)
	for round := 1; round <= 6; round++ {
		for _, seq := range flight(t, s, now) {
			now += 1000
			ackIn(s, seq, true, now)
			if s.Alpha() != 1 {
				t.Fatalf("round %d: alpha %v", round, s.Alpha())
			}
		}
	}
}

// No marks: alpha decays by 15/16 per window. A window ends with the first
// ack of the flight after it (the first byte sent after the window began),
// so after r flights acknowledged in turn, r windows have ended.
func TestDCTCPAlphaDecaysWithoutMarks(t *testing.T) {
	s := newDC(10)
	now := int64(1)
	want := 1.0
	for round := 1; round <= 8; round++ {
		for i, seq := range flight(t, s, now) {
			now += 1000
			ackIn(s, seq, false, now)
			if i == 0 {
				want *= 15.0 / 16
			}
			if s.Alpha() != want {
				t.Fatalf("round %d, ack %d: alpha %v, want %v", round, i, s.Alpha(), want)
			}
		}
	}
	if s.Reductions != 0 || s.ECEAcks != 0 {
		t.Fatalf("%d reductions, %d ECE acks without marks", s.Reductions, s.ECEAcks)
	}
}

// Marks on some segments: the window's fraction is of the bytes acknowledged
// within it, and the cut takes the alpha of the ack that brings it.
func TestDCTCPMixedMarksAndTheCut(t *testing.T) {
	s := newDC(10)
	now := int64(1)
	if f := flight(t, s, now); len(f) != 10 {
		t.Fatalf("first flight %v", f)
	}
	// Window 1 is segment 0 alone (the first ack ends it): unmarked.
	ackIn(s, 0, false, now)
	if s.Alpha() != 0.9375 || s.Window() != 11000 {
		t.Fatalf("alpha %v, window %d", s.Alpha(), s.Window())
	}
	// Segments 1 and 2 marked: the first echo cuts, with alpha 15/16:
	// 11000 x (1 - 15/32) = 5843.75; the ack that cuts does not grow.
	ackIn(s, 1000, true, now)
	if s.cwnd != 5843.75 || s.ssthresh != 5843.75 || s.Reductions != 1 {
		t.Fatalf("after the first echo: cwnd %v, ssthresh %v, %d reductions", s.cwnd, s.ssthresh, s.Reductions)
	}
	// The second echo is in the same window of data: no cut, and the
	// window grows as in congestion avoidance (slow start ended).
	cw := s.cwnd
	ackIn(s, 2000, true, now)
	if cw += dcMSS * dcMSS / cw; s.cwnd != cw || s.Reductions != 1 || s.ECEAcks != 2 {
		t.Fatalf("after the second echo: cwnd %v, want %v; %d reductions", s.cwnd, cw, s.Reductions)
	}
	for seq := uint64(3000); seq < 10000; seq += dcMSS {
		ackIn(s, seq, false, now)
		cw += dcMSS * dcMSS / cw
	}
	if s.cwnd != cw || s.Alpha() != 0.9375 {
		t.Fatalf("cwnd %v, want %v; alpha %v", s.cwnd, cw, s.Alpha())
	}
	// Window 2 is segments 1 to 10 (10000 bytes, 2000 marked): it ends
	// with the ack of segment 10, the first byte sent after it began.
	now += 100e3
	f := flight(t, s, now)
	if f[0] != 10000 {
		t.Fatalf("second flight %v", f)
	}
	ackIn(s, 10000, false, now)
	want := 0.9375*0.9375 + 0.2/16
	if !near(s.Alpha(), want) {
		t.Fatalf("alpha %v after window 2, want %v", s.Alpha(), want)
	}
	// An echo now is in a new window of data: it cuts, by the new alpha.
	cw = s.cwnd
	ackIn(s, 11000, true, now)
	if cw *= 1 - want/2; !near(s.cwnd, cw) || s.ssthresh != s.cwnd || s.Reductions != 2 || s.ECEAcks != 3 {
		t.Fatalf("second cut: cwnd %v, want %v; ssthresh %v; %d reductions, %d ECE acks", s.cwnd, cw, s.ssthresh, s.Reductions, s.ECEAcks)
	}
}

// The cut is cwnd x (1 - alpha/2), and it ends slow start.
func TestDCTCPCutSizeEndsSlowStart(t *testing.T) {
	s := newDC(10)
	now := int64(1)
	for _, seq := range flight(t, s, now) { // window 1: segment 0; alpha 15/16
		ackIn(s, seq, false, now)
	}
	if s.cwnd != 20000 || s.cwnd >= s.ssthresh {
		t.Fatalf("slow start: cwnd %v, ssthresh %v", s.cwnd, s.ssthresh)
	}
	now += 100e3
	if f := flight(t, s, now); len(f) != 20 {
		t.Fatalf("second flight of %d segments", len(f))
	}
	// Window 2 (segments 1 to 10, segment 10 marked: F 1/10) ends with the
	// marked ack, which then cuts by the alpha it updated.
	ackIn(s, 10000, true, now)
	alpha := 0.9375*0.9375 + 0.1/16 // 0.88515625
	cut := 20000 * (1 - alpha/2)    // 11148.4375
	if !near(s.Alpha(), alpha) || !near(s.cwnd, cut) || s.ssthresh != s.cwnd {
		t.Fatalf("alpha %v (want %v), cwnd %v (want %v), ssthresh %v", s.Alpha(), alpha, s.cwnd, cut, s.ssthresh)
	}
	// Slow start is over: the next ack adds MSS^2/cwnd, not an MSS.
	cw := s.cwnd
	ackIn(s, 11000, false, now)
	if !near(s.cwnd, cw+dcMSS*dcMSS/cw) {
		t.Fatalf("after the cut an ack grew the window from %v to %v", cw, s.cwnd)
	}
}

// Many echoes in one window of data cut once; the next window's first
// echo cuts again, once.
func TestDCTCPOneCutPerWindow(t *testing.T) {
	s := newDC(10)
	now := int64(1)
	cw := 10000.0
	for round := 1; round <= 5; round++ {
		now += 100e3
		f := flight(t, s, now)
		for i, seq := range f {
			ackIn(s, seq, true, now)
			if i == 0 { // alpha stays 1: a halving, with no growth
				cw = max(cw/2, 2*dcMSS)
			} else {
				cw += dcMSS * dcMSS / cw
			}
			if !near(s.cwnd, cw) {
				t.Fatalf("round %d, ack %d: cwnd %v, want %v", round, i, s.cwnd, cw)
			}
		}
		if s.Reductions != uint64(round) {
			t.Fatalf("round %d (%d echoes): %d reductions", round, len(f), s.Reductions)
		}
	}
	if s.ECEAcks < 20 {
		t.Fatalf("%d ECE acks", s.ECEAcks)
	}
}

// The cut never takes the window below two segments, nor raises one
// already below.
func TestDCTCPCutFloor(t *testing.T) {
	for _, c := range []struct {
		window int
		want   float64
	}{{2, 2000}, {3, 2000}, {5, 2500}} {
		s := newDC(c.window)
		flight(t, s, 1)
		ackIn(s, 0, true, 2)
		if s.cwnd != c.want || s.ssthresh != c.want || s.Reductions != 1 {
			t.Fatalf("window of %d segments: cut to %v (ssthresh %v), want %v", c.window, s.cwnd, s.ssthresh, c.want)
		}
	}
	s := newDC(10)
	flight(t, s, 1)
	s.cwnd = 1000 // as after a timeout
	ackIn(s, 0, true, 2)
	if s.cwnd != 1000 || s.ssthresh != 1000 {
		t.Fatalf("a window of one segment became %v", s.cwnd)
	}
}

// Without marks a DCTCP sender is the plain sender, loss recovery and
// timers included: over the same lossy, duplicating, reordering link it
// sends the same segments at the same times.
func TestDCTCPWithoutMarksIsPlain(t *testing.T) {
	for _, size := range []uint64{1, 1401, 100_000, 1_000_000} {
		var runs [2]struct {
			sent, retx, timeouts uint64
			end                  int64
		}
		for i, mode := range []Mode{Plain, DCTCP} {
			l := &link{rng: rand.New(rand.NewSource(int64(size) + 7)), delay: 50e3, drop: 0.05, dup: 0.02, reorder: 0.1}
			s, r, end := transfer(t, Config{Mode: mode, RTO: 300e3}, size, l)
			if !s.Done() || r.Delivered() != size || r.Corrupt != 0 {
				t.Fatalf("%v %d B: done %v delivered %d", mode, size, s.Done(), r.Delivered())
			}
			runs[i].sent, runs[i].retx, runs[i].timeouts, runs[i].end = s.Sent, s.Retransmits, s.Timeouts, end
		}
		if runs[0] != runs[1] {
			t.Fatalf("%d B: plain %+v, dctcp %+v", size, runs[0], runs[1])
		}
		if size == 1_000_000 && (runs[0].retx == 0 || runs[0].timeouts == 0) {
			t.Fatalf("1 MB over a link losing 5%%: %+v, no loss recovery to compare", runs[0])
		}
	}
}

// After marks, loss is answered as TCP answers it: three duplicate acks
// halve the window (not by alpha), a timeout restarts it at one segment
// and backs the timer off; an echo in the window of data the loss cut
// does not cut it again.
func TestDCTCPLossResponseAfterMarks(t *testing.T) {
	s := newDC(10)
	now := int64(1)
	for _, seq := range flight(t, s, now) {
		ackIn(s, seq, true, now)
	}
	now += 100e3
	f := flight(t, s, now) // segment 10 is lost: acks of 11, 12, 13 say 10000
	if len(f) < 5 || f[0] != 10000 {
		t.Fatalf("flight %v", f)
	}
	dup := func(seq uint64, ece bool) {
		h := proto.Header{Type: proto.TypeAck, Flow: 1, Seq: seq, Ack: 10000, Size: 1 << 30}
		if ece {
			h.Flags = proto.FlagECE
		}
		s.OnAck(h, now)
	}
	dup(11000, false)
	dup(12000, false)
	cw := s.cwnd + dcMSS*dcMSS/s.cwnd // the third dup's own segment grows it, then the halving
	reductions := s.Reductions
	dup(13000, false)
	if want := max(cw/2, 2*dcMSS); !near(s.cwnd, want) || s.ssthresh != s.cwnd || s.Reductions != reductions {
		t.Fatalf("fast retransmit: cwnd %v, want %v (ssthresh %v, %d reductions)", s.cwnd, want, s.ssthresh, s.Reductions-reductions)
	}
	cw = s.cwnd
	dup(14000, true) // same window of data as the loss: no second cut
	if s.Reductions != reductions || s.cwnd < cw {
		t.Fatalf("an echo after the loss cut again: cwnd %v -> %v", cw, s.cwnd)
	}
	// A timeout: one segment, the timer doubled, as the plain sender does.
	rto := s.rto
	now = s.timer
	s.Poll(now, func([]byte) {})
	if s.Timeouts != 1 || s.rto != 2*rto {
		t.Fatalf("timeout: %d timeouts, rto %d (was %d)", s.Timeouts, s.rto, rto)
	}
}

// TestDCTCPMarkThenLossOneCut: a mark cuts the window, then three
// duplicate acks report a hole in the same window of data (sent before
// the cut): the segment is retransmitted, the window is not cut again
// (RFC 3168 section 6.1.2: at most one reduction per window).
func TestDCTCPMarkThenLossOneCut(t *testing.T) {
	s := newDC(10)
	now := int64(1)
	f := flight(t, s, now) // segments 0 .. 9; segment 0 is lost
	if len(f) != 10 {
		t.Fatalf("flight %v", f)
	}
	dup := func(seq, ack uint64, ece bool) {
		h := proto.Header{Type: proto.TypeAck, Flow: 1, Seq: seq, Ack: ack, Size: 1 << 30}
		if ece {
			h.Flags = proto.FlagECE
		}
		s.OnAck(h, now)
	}
	now += 100e3
	dup(1000, 0, true) // marked: the first window ends (alpha 1), cut by half
	if s.Reductions != 1 || !near(s.cwnd, 5*dcMSS) {
		t.Fatalf("the mark: cwnd %v, %d reductions", s.cwnd, s.Reductions)
	}
	cw := s.cwnd
	dup(2000, 0, false)
	dup(3000, 0, false) // the third duplicate ack: the hole at 0 is pre-cut data
	if s.cwnd < cw || s.ssthresh < cw || s.Reductions != 1 {
		t.Fatalf("a loss in the window the mark cut cut again: cwnd %v -> %v, ssthresh %v", cw, s.cwnd, s.ssthresh)
	}
	if s.segs[0] != segUnsent {
		t.Fatalf("segment 0 not queued for retransmission (state %d)", s.segs[0])
	}
}

// The receiver echoes each segment's own mark on its ack, and counts the
// marked segments.
func TestReceiverEchoesCE(t *testing.T) {
	r := NewReceiver(4)
	p := make([]byte, 100)
	var got []uint16
	out := func(b []byte) {
		h, _, err := proto.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h.Flags)
	}
	for i, ce := range []bool{false, true, true, false} {
		Fill(p, 4, uint64(i*100))
		r.OnPacketCE(proto.Header{Type: proto.TypeData, Flow: 4, Seq: uint64(i * 100), Size: 1000}, p, ce, 1, out)
	}
	Fill(p, 4, 400)
	r.OnPacket(proto.Header{Type: proto.TypeData, Flow: 4, Seq: 400, Size: 1000}, p, 1, out)
	r.OnPacketCE(proto.Header{Type: proto.TypeProbe, Flow: 4, Seq: 500, Size: 1000}, p[:1], true, 1, out)
	want := []uint16{0, proto.FlagECE, proto.FlagECE, 0, 0, proto.FlagECE}
	if len(got) != len(want) || r.Marked != 2 {
		t.Fatalf("ack flags %v, want %v; %d marked", got, want, r.Marked)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ack flags %v, want %v", got, want)
		}
	}
}

// markingLink is a switch between a sender and its receiver on a fake
// clock: a FIFO drained at rate that marks CE on every ECN-capable
// datagram arriving to find more than k bytes queued (DCTCP's step
// marking, as mech/ecn does), drops one that would take it past buf
// bytes, and a propagation delay each way after it. Acks take the delay
// alone.
type markingLink struct {
	rate                float64 // bytes per ns
	k, buf              float64 // bytes
	delay               int64
	ect                 bool // the sender's datagrams are ECN-capable
	busy                float64
	q                   events
	seq                 int
	sent, marked, drops int
	warm                int64   // arrivals from here on are sampled
	minQ, maxQ          float64 // depth an arrival found, after warm
}

func (l *markingLink) push(at int64, toRecv, ce bool, b []byte) {
	l.seq++
	heap.Push(&l.q, event{at: at, seq: l.seq, toRecv: toRecv, ce: ce, payload: append([]byte(nil), b...)})
}

func (l *markingLink) toReceiver(now int64, b []byte) {
	l.sent++
	depth := max(0, l.busy-float64(now)) * l.rate
	if now >= l.warm {
		l.minQ, l.maxQ = min(l.minQ, depth), max(l.maxQ, depth)
	}
	if depth+float64(len(b)) > l.buf {
		l.drops++
		return
	}
	ce := l.ect && depth > l.k
	if ce {
		l.marked++
	}
	l.busy = max(l.busy, float64(now)) + float64(len(b))/l.rate
	l.push(int64(l.busy)+l.delay, true, ce, b)
}

// runMarked sends size bytes in mode through a marking link and samples
// the window after warm.
func runMarked(t *testing.T, mode Mode, size uint64, l *markingLink) (s *Sender, cwnd []float64, end int64) {
	t.Helper()
	now := int64(1)
	s = NewSender(Config{Mode: mode, MSS: 1400, RTO: 1e6}, 9, size, now)
	r := NewReceiver(9)
	l.minQ = math.Inf(1)
	toRecv := func(b []byte) { l.toReceiver(now, b) }
	toSend := func(b []byte) { l.push(now+l.delay, false, false, b) }
	next := s.Poll(now, toRecv)
	for !s.Done() {
		at := next
		if l.q.Len() > 0 && (at == 0 || l.q[0].at < at) {
			at = l.q[0].at
		}
		if at == 0 {
			t.Fatalf("%v stalled at %d of %d bytes", mode, s.una, size)
		}
		now = max(now, at)
		for l.q.Len() > 0 && l.q[0].at <= now {
			e := heap.Pop(&l.q).(event)
			h, p, err := proto.Decode(e.payload)
			if err != nil {
				t.Fatal(err)
			}
			if e.toRecv {
				r.OnPacketCE(h, p, e.ce, now, toSend)
			} else {
				s.OnAck(h, now)
				if now >= l.warm {
					cwnd = append(cwnd, s.cwnd)
				}
			}
		}
		next = s.Poll(now, toRecv)
	}
	if r.Delivered() != size || r.Corrupt != 0 || r.Marked != uint64(l.marked) {
		t.Fatalf("%v: delivered %d of %d, %d corrupt, %d marked segments received of %d marked", mode, r.Delivered(), size, r.Corrupt, r.Marked, l.marked)
	}
	return s, cwnd, now
}

// One DCTCP flow through a switch that marks above K, at 10 Gbit/s with a
// 100 us round trip (the paper's K = 65 packets at 10 Gbit/s): once slow
// start is over the window settles around C x RTT + K and the queue around
// K, nothing is lost, and the link stays busy. The plain sender, whose
// datagrams are not ECN-capable, fills the same buffer until it drops.
func TestDCTCPSettlesBehindAMarkingSwitch(t *testing.T) {
	const (
		rate  = 1.25 // bytes per ns: 10 Gbit/s
		delay = 50e3 // ns each way: a 100 us round trip
		frame = 1400 + proto.HeaderLen
		k     = 65 * frame
		size  = 100 << 20
	)
	bdp := rate * 2 * delay
	l := &markingLink{rate: rate, k: k, buf: 1 << 20, delay: delay, ect: true, warm: 10e6}
	s, cwnd, end := runMarked(t, DCTCP, size, l)
	lo, hi, sum := math.Inf(1), 0.0, 0.0
	for _, c := range cwnd {
		lo, hi, sum = min(lo, c), max(hi, c), sum+c
	}
	// Payload and header bytes over the time the flow took, against the rate.
	util := float64(size) * frame / 1400 / (float64(end) - 2*delay) / rate
	t.Logf("DCTCP: %.1f ms for %d MB, link %.1f%% busy; window %.0f to %.0f B (mean %.0f; C x RTT + K = %.0f); "+
		"queue %.0f to %.0f B after 10 ms (K = %d); alpha %.3f; %d marks, %d ECE acks, %d reductions",
		float64(end)/1e6, size>>20, 100*util, lo, hi, sum/float64(len(cwnd)), bdp+k, l.minQ, l.maxQ, k, s.Alpha(),
		l.marked, s.ECEAcks, s.Reductions)
	if l.drops != 0 || s.Timeouts != 0 || s.Retransmits != 0 {
		t.Fatalf("DCTCP lost segments: %d drops, %d timeouts, %d retransmits", l.drops, s.Timeouts, s.Retransmits)
	}
	if lo < 0.8*(bdp+k) || hi > 1.1*(bdp+k) {
		t.Fatalf("the window did not settle: %.0f to %.0f B, C x RTT + K = %.0f", lo, hi, bdp+k)
	}
	if l.maxQ > k+3*frame || l.minQ < k/2 {
		t.Fatalf("the queue did not settle at K: %.0f to %.0f B, K = %d", l.minQ, l.maxQ, k)
	}
	if util < 0.97 {
		t.Fatalf("the link was busy %.1f%% of the time", 100*util)
	}
	if s.Alpha() <= 0 || s.Alpha() > 0.5 || s.Reductions < 50 {
		t.Fatalf("alpha %v, %d reductions", s.Alpha(), s.Reductions)
	}

	lp := &markingLink{rate: rate, k: k, buf: 1 << 20, delay: delay, warm: 10e6}
	p, _, _ := runMarked(t, Plain, size, lp)
	t.Logf("plain: %d drops, %d retransmits, %d timeouts; queue up to %.0f B after 10 ms", lp.drops, p.Retransmits, p.Timeouts, lp.maxQ)
	if lp.drops == 0 || lp.marked != 0 {
		t.Fatalf("the plain sender: %d drops, %d marks", lp.drops, lp.marked)
	}
}
