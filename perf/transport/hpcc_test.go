package transport

import (
	"bytes"
	"container/heap"
	"math/rand"
	"testing"

	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/wire/gsperf"
)

// The tests below drive Algorithm 1 by hand on round numbers: a line of
// 8 Gbit/s (B = 1 byte per ns, 8e6 kbit/s in a hop) and T = 10 us, so
// W_init = B x T = 10000 bytes; eta 0.95, maxStage 5, W_AI 100 bytes.

const (
	hpT    = 10000 // ns
	hpB    = 1.0   // bytes per ns
	hpKbps = 8e6   // B in a hop's rate field
	hpWAI  = 100.0
	hpInit = hpB * hpT // W_init
)

func newHP(t *testing.T) *Sender {
	t.Helper()
	s := NewSender(Config{Mode: HPCC, MSS: 1000, HPCC: HPCCConfig{LineRate: 8e9, BaseRTT: hpT, WAI: hpWAI}}, 1, 1<<30, 1)
	if s.hp == nil || s.hp.wInit != hpInit || s.Window() != hpInit || s.hp.u != 1 {
		t.Fatalf("HPCC sender: %+v", s.hp)
	}
	return s
}

// hop is a switch's record: at ts, tx bytes sent so far, q bytes queued,
// at hpKbps unless kbps says otherwise.
func hop(ts, tx uint64, q uint32) gsperf.INTHop {
	return gsperf.INTHop{TS: ts, TxBytes: tx, QLen: q, RateKbps: hpKbps}
}

// intOpt is an INT option holding hops, in slots of its own.
func intOpt(hops ...gsperf.INTHop) gsperf.INT {
	b := make([]byte, gsperf.Len+gsperf.INTLen(gsperf.MaxINTHops))
	h := gsperf.Header(b)
	h.Init(gsperf.TypeAck)
	h.SetHdrLen(uint16(gsperf.Len + gsperf.InitINT(b[gsperf.Len:], max(1, len(hops)))))
	o := h.INT()
	for _, x := range hops {
		o.Push(x.TS, x.TxBytes, uint64(x.QLen), uint64(x.RateKbps)*1000)
	}
	return o
}

// intAck hands s an ack whose cumulative acknowledgment is ack, with the
// hops given, after setting the next byte to send to nxt (the per-RTT
// update keeps it as lastUpdateSeq).
func intAck(s *Sender, ack, nxt uint64, hops ...gsperf.INTHop) {
	s.nxt = nxt
	s.hp.onAck(s, ack, intOpt(hops...))
}

func nearly(t *testing.T, what string, got, want float64) {
	t.Helper()
	if !near(got, want) {
		t.Fatalf("%s = %.9g, want %.9g", what, got, want)
	}
}

// The first ack records its hops and changes nothing else; an ack with no
// option at all is not the first.
func TestHPCCFirstAckRecordsOnly(t *testing.T) {
	s := newHP(t)
	s.hp.onAck(s, 1000, nil)
	if s.hp.started || s.hp.st.INTAcks != 0 {
		t.Fatal("an ack without INT started the measurement")
	}
	intAck(s, 1000, 10000, hop(5000, 1<<20, 9999))
	p := s.hp
	if !p.started || p.nprev != 1 || p.prev[0] != hop(5000, 1<<20, 9999) || p.lastUpdateSeq != 10000 {
		t.Fatalf("first ack: started %v, %d hops kept %+v, lastUpdateSeq %d", p.started, p.nprev, p.prev[0], p.lastUpdateSeq)
	}
	if p.u != 1 || p.w != hpInit || p.wc != hpInit || s.Window() != hpInit || p.st.Updates != 0 || p.st.Samples != 0 {
		t.Fatalf("first ack changed U %v, W %v, Wc %v", p.u, p.w, p.wc)
	}
	// The next ack is within the window of data the first one opened: it
	// reacts (U from the two records) but does not update Wc.
	intAck(s, 2000, 11000, hop(5000+hpT, 1<<20+hpT, 9999))
	u := 9999.0/hpInit + 1
	nearly(t, "U", p.u, u)
	nearly(t, "W", p.w, hpInit/(u/0.95)+hpWAI)
	if p.wc != hpInit || p.st.Updates != 0 || p.incStage != 0 || p.lastUpdateSeq != 10000 {
		t.Fatalf("a fast reaction updated Wc %v (%d updates), incStage %d, lastUpdateSeq %d", p.wc, p.st.Updates, p.incStage, p.lastUpdateSeq)
	}
}

// One hop with a standing queue of half a BDP, sending at the line rate:
// u' = 0.5 + 1 = 1.5, and with tau = T, U = 1.5: W = Wc / (1.5/0.95) + W_AI,
// kept as Wc by the per-RTT update, and R = W / T.
func TestHPCCHalfBDPQueueAtLineRate(t *testing.T) {
	s := newHP(t)
	intAck(s, 1000, 10000, hop(1e6, 0, hpInit/2))
	intAck(s, 10001, 20000, hop(1e6+hpT, hpInit, hpInit/2))
	p := s.hp
	nearly(t, "U", p.u, 1.5)
	w := hpInit/(1.5/0.95) + hpWAI // 6433.33
	nearly(t, "W", p.w, w)
	nearly(t, "Wc", p.wc, w)
	if s.Window() != int(w) || p.incStage != 0 || p.lastUpdateSeq != 20000 || p.st.Updates != 1 || p.st.Samples != 1 {
		t.Fatalf("window %d, incStage %d, lastUpdateSeq %d, %d updates", s.Window(), p.incStage, p.lastUpdateSeq, p.st.Updates)
	}
	st, _ := s.HPCC()
	nearly(t, "rate", st.RateBits, w/hpT*8e9)
}

// An idle hop (U = 0.8, below eta): W_AI per RTT for maxStage updates,
// then the multiplicative step W = Wc / (U/eta) + W_AI, then W_AI again.
func TestHPCCIdleHopAdditiveThenMultiplicative(t *testing.T) {
	s := newHP(t)
	p := s.hp
	ts, tx, nxt := uint64(1e6), uint64(0), uint64(10000)
	step := func(rate float64, q uint32) {
		ts += hpT
		tx += uint64(rate * hpT)
		intAck(s, nxt+1, nxt+10000, hop(ts, tx, q))
		nxt += 10000
	}
	intAck(s, 1000, nxt, hop(ts, tx, 9000))
	step(1, 9000) // U = 1.9: W = 10000 x 0.95 / 1.9 + 100 = 5100
	nearly(t, "W after the cut", p.w, 5100)
	w := 5100.0
	for stage := 1; stage <= 5; stage++ {
		step(0.8, 0)
		w += hpWAI
		nearly(t, "U", p.u, 0.8)
		nearly(t, "W", p.w, w)
		if p.incStage != stage {
			t.Fatalf("stage %d: incStage %d", stage, p.incStage)
		}
	}
	step(0.8, 0) // incStage = maxStage: the multiplicative step
	w = w/(0.8/0.95) + hpWAI
	nearly(t, "W after maxStage", p.w, w) // 5600 x 0.95/0.8 + 100 = 6750
	if p.incStage != 0 {
		t.Fatalf("incStage %d after the multiplicative step", p.incStage)
	}
	step(0.8, 0)
	nearly(t, "W after it", p.w, w+hpWAI)
}

// Two hops: the first half busy and empty (u' = 0.5 over tau = T/2), the
// second, at half the rate, busy with a queue of a fifth of its B x T
// (u' = 1 + 0.2 = 1.2 over tau = 0.8 T): the second sets u and tau, and
// U = (1 - 0.8) x 1 + 0.8 x 1.2 = 1.16.
func TestHPCCTwoHopsTheSecondIsTheBottleneck(t *testing.T) {
	s := newHP(t)
	slow := func(ts, tx uint64, q uint32) gsperf.INTHop {
		h := hop(ts, tx, q)
		h.RateKbps = hpKbps / 2
		return h
	}
	intAck(s, 1000, 10000, hop(1e6, 1e9, 0), slow(3e6, 5e8, 1000))
	intAck(s, 10001, 20000, hop(1e6+hpT/2, 1e9+hpT/4, 0), slow(3e6+8000, 5e8+4000, 1000))
	nearly(t, "U", s.hp.u, 1.16)
	nearly(t, "W", s.hp.w, hpInit/(1.16/0.95)+hpWAI)
	if s.hp.st.Samples != 2 {
		t.Fatalf("%d hops measured", s.hp.st.Samples)
	}
}

// A hop measured over more than T counts as T: U takes u whole.
func TestHPCCTauClampedToT(t *testing.T) {
	s := newHP(t)
	intAck(s, 1000, 10000, hop(1e6, 0, 2000))
	intAck(s, 10001, 20000, hop(1e6+3*hpT, 3*hpInit, 2000)) // line rate over 3T, q 0.2 BDP: u' = 1.2
	nearly(t, "U", s.hp.u, 1.2)
	nearly(t, "W", s.hp.w, hpInit/(1.2/0.95)+hpWAI)
	// And a short one weighs tau/T: tau = T/4, u' = 0.2: U = 0.75 x 1.2 + 0.25 x 0.2.
	intAck(s, 20001, 30000, hop(1e6+3*hpT+hpT/4, 3*hpInit+hpT/4*0.2, 2000))
	nearly(t, "U after a short sample", s.hp.u, 0.75*1.2+0.25*(0.2+0.2))
}

// Wc is updated once per window of data: acks up to lastUpdateSeq react
// from the same Wc; the first ack past it updates Wc and moves
// lastUpdateSeq to snd_nxt.
func TestHPCCReferenceWindowOncePerRTT(t *testing.T) {
	s := newHP(t)
	p := s.hp
	ts, tx := uint64(1e6), uint64(0)
	next := func(ack, nxt uint64) {
		ts += hpT
		tx += hpT
		intAck(s, ack, nxt, hop(ts, tx, hpInit/2)) // U = 1.5 on every ack
	}
	intAck(s, 1000, 10000, hop(ts, tx, hpInit/2))
	next(10001, 20000) // update: Wc = 10000 / (1.5/0.95) + 100
	wc := hpInit/(1.5/0.95) + hpWAI
	nearly(t, "Wc", p.wc, wc)
	for i, ack := range []uint64{12000, 15000, 20000} { // within [.., lastUpdateSeq = 20000]
		next(ack, 30000+uint64(i))
		nearly(t, "Wc within the window", p.wc, wc)
		nearly(t, "W within the window", p.w, wc/(1.5/0.95)+hpWAI)
		if p.lastUpdateSeq != 20000 || p.st.Updates != 1 {
			t.Fatalf("ack %d: lastUpdateSeq %d, %d updates", ack, p.lastUpdateSeq, p.st.Updates)
		}
	}
	next(20001, 40000)
	wc = wc/(1.5/0.95) + hpWAI
	nearly(t, "Wc after the window", p.wc, wc)
	if p.lastUpdateSeq != 40000 || p.st.Updates != 2 {
		t.Fatalf("lastUpdateSeq %d, %d updates", p.lastUpdateSeq, p.st.Updates)
	}
}

// A change of the hop count: the hops the previous ack had are compared
// index by index, a new index is recorded and measured from the next ack
// on (here the new hop would read u' of about 10 against a zero record).
func TestHPCCHopCountChanges(t *testing.T) {
	s := newHP(t)
	p := s.hp
	intAck(s, 1000, 10000, hop(1e6, 0, 0), hop(2e6, 0, 0))
	intAck(s, 10001, 20000, hop(1e6+hpT, hpT/2, 0), hop(2e6+hpT, hpT/2, 0)) // u' 0.5 at both
	nearly(t, "U with 2 hops", p.u, 0.5)
	intAck(s, 20001, 30000, hop(1e6+2*hpT, hpT, 0), hop(2e6+2*hpT, hpT*3/2, 0), hop(4000, 4e4, 0))
	nearly(t, "U when a third hop appears", p.u, 1.0)
	if p.st.Samples != 4 || p.st.Skipped != 1 || p.nprev != 3 {
		t.Fatalf("%d measured, %d skipped, %d kept", p.st.Samples, p.st.Skipped, p.nprev)
	}
	intAck(s, 30001, 40000, hop(1e6+3*hpT, hpT+hpT/10, 0), hop(2e6+3*hpT, hpT*3/2+hpT/10, 0), hop(4000+hpT, 4e4+hpT*3/10, 5000))
	nearly(t, "U with the third measured", p.u, 0.3) // the third hop's 0.3 above the others' 0.1
	intAck(s, 40001, 50000, hop(1e6+4*hpT, hpT+hpT/10+hpT*6/10, 0))
	nearly(t, "U back to one hop", p.u, 0.6)
	if p.nprev != 1 || p.st.Hops != 3 {
		t.Fatalf("%d hops kept, most %d", p.nprev, p.st.Hops)
	}
}

// Hops that cannot be compared are recorded, not measured: a rate of 0,
// a ts that did not advance or went back, txBytes that went back. An ack
// with none measured leaves W alone but still ends the window of data; a
// counter that wraps is a small delta.
func TestHPCCHopsThatCannotBeCompared(t *testing.T) {
	s := newHP(t)
	p := s.hp
	intAck(s, 1000, 10000, hop(1e6, 1e6, 0))
	for i, h := range []gsperf.INTHop{
		{TS: 1e6 + hpT, TxBytes: 1e6 + hpT, RateKbps: 0},        // rate 0
		{TS: 1e6 + hpT, TxBytes: 1e6 + 2*hpT, RateKbps: hpKbps}, // ts still
		{TS: 1e6, TxBytes: 1e6 + 3*hpT, RateKbps: hpKbps},       // ts back
		{TS: 1e6 + hpT, TxBytes: 1e6, RateKbps: hpKbps},         // txBytes back
	} {
		intAck(s, 10001+uint64(i)*10000, 20000+uint64(i)*10000, h)
		if p.st.Samples != 0 || p.st.Skipped != uint64(i+1) || p.w != hpInit || p.u != 1 || p.lastUpdateSeq != 20000+uint64(i)*10000 {
			t.Fatalf("hop %+v: %d measured, %d skipped, W %v, U %v, lastUpdateSeq %d", h, p.st.Samples, p.st.Skipped, p.w, p.u, p.lastUpdateSeq)
		}
	}
	intAck(s, 60001, 70000, hop(1e6+2*hpT, ^uint64(0)-hpT/2+1, 0)) // recorded (a counter that went back from 1e6)
	intAck(s, 70001, 80000, hop(1e6+3*hpT, 0, 0))                  // wrapped to 0: hpT/2 sent over T
	nearly(t, "U over a wrapped counter", p.u, 0.5)
}

// The sender's data segments carry an empty INT option of the configured
// slots after the fixed header; the payload starts at the header length.
func TestHPCCSegmentsCarryTheOption(t *testing.T) {
	s := NewSender(Config{Mode: HPCC, MSS: 1000, HPCC: HPCCConfig{LineRate: 8e9, BaseRTT: hpT, Hops: 3}}, 5, 2500, 1)
	r := NewReceiver(5)
	var segs int
	for now := int64(1); now < 1e6 && segs < 3; now += 100 {
		s.Poll(now, func(b []byte) {
			segs++
			g := gsperf.Header(b)
			o := g.INT()
			if int(g.HdrLen()) != gsperf.Len+gsperf.INTLen(3) || o == nil || o.Slots() != 3 || o.Hops() != 0 {
				t.Fatalf("segment of %d bytes: header length %d, option %v", len(b), g.HdrLen(), o)
			}
			h, p, err := proto.Decode(b)
			if err != nil || len(p) != int(min(1000, 2500-h.Seq)) {
				t.Fatalf("decode: %v, payload %d", err, len(p))
			}
			r.OnPacketINT(h, p, o, false, now, func([]byte) {})
		})
	}
	if segs != 3 || !r.Complete() || r.Corrupt != 0 || r.Echoed != 3 {
		t.Fatalf("%d segments, complete %v, corrupt %d, %d echoed", segs, r.Complete(), r.Corrupt, r.Echoed)
	}
	if d := NewSender(Config{Mode: DCTCP}, 5, 2500, 1); d.hp != nil || d.hdrLen != proto.HeaderLen {
		t.Fatal("a DCTCP sender reserves INT slots")
	}
}

// The receiver echoes a segment's INT option into its ack byte for byte,
// and a segment without one gets a bare 64-byte ack.
func TestReceiverEchoesTheINTOption(t *testing.T) {
	b := make([]byte, gsperf.Len+gsperf.INTLen(4)+100)
	g := gsperf.Header(b)
	(&proto.Header{Type: proto.TypeData, Flow: 3, Seq: 0, Size: 200, Timestamp: 77}).Encode(b)
	g.SetHdrLen(uint16(gsperf.Len + gsperf.InitINT(b[gsperf.Len:], 4)))
	g.INT().Push(11, 22, 33, 44e9)
	g.INT().Push(1<<60, 1<<63, 1<<31, 400e9)
	Fill(b[g.HdrLen():], 3, 0)
	h, payload, err := proto.Decode(b)
	if err != nil || len(payload) != 100 {
		t.Fatalf("%v, payload %d", err, len(payload))
	}
	r := NewReceiver(3)
	var ack []byte
	r.OnPacketINT(h, payload, g.INT(), false, 5, func(a []byte) { ack = append([]byte(nil), a...) })
	opt := b[gsperf.Len:g.HdrLen()]
	if len(ack) != gsperf.Len+len(opt) || !bytes.Equal(ack[gsperf.Len:], opt) || r.Delivered() != 100 || r.Corrupt != 0 || r.Echoed != 1 {
		t.Fatalf("ack of %d bytes, option %x, want %x; delivered %d, corrupt %d", len(ack), ack[min(len(ack), gsperf.Len):], opt, r.Delivered(), r.Corrupt)
	}
	a, rest, err := proto.Decode(ack)
	if err != nil || a.Type != proto.TypeAck || a.Seq != 0 || a.Ack != 100 || a.Timestamp != 77 || int(a.HdrLen) != len(ack) || len(rest) != 0 {
		t.Fatalf("ack %+v, %d bytes after it, %v", a, len(rest), err)
	}
	if o := gsperf.Header(ack).INT(); o.Hops() != 2 || o.Hop(1) != (gsperf.INTHop{TS: 1 << 60, TxBytes: 1 << 63, QLen: 1 << 31, RateKbps: 400e6}) {
		t.Fatalf("the sender reads %d hops, %+v", o.Hops(), o.Hop(1))
	}
	// The next segment carries none: a bare ack, with no stale option.
	Fill(payload, 3, 100)
	r.OnPacketINT(proto.Header{Type: proto.TypeData, Flow: 3, Seq: 100, Size: 200}, payload, nil, false, 6, func(a []byte) { ack = append([]byte(nil), a...) })
	if len(ack) != gsperf.Len || gsperf.Header(ack).HdrLen() != gsperf.Len || !r.Complete() || r.Echoed != 1 {
		t.Fatalf("ack of %d bytes, header length %d", len(ack), gsperf.Header(ack).HdrLen())
	}
}

// Receiving in order with INT, echoing it, allocates nothing; nor does an
// HPCC sender's ack.
func TestHPCCAllocatesNothing(t *testing.T) {
	const seg = 1000
	r := NewReceiver(4)
	b := make([]byte, gsperf.Len+gsperf.INTLen(5)+seg)
	g := gsperf.Header(b)
	g.Init(gsperf.TypeData)
	g.SetHdrLen(uint16(gsperf.Len + gsperf.InitINT(b[gsperf.Len:], 5)))
	g.INT().Push(1, 2, 3, 4e9)
	off := uint64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		Fill(b[g.HdrLen():], 4, off)
		r.OnPacketINT(data(4, off, 1<<40), b[g.HdrLen():], g.INT(), false, 1, func([]byte) {})
		off += seg
	})
	if allocs != 0 || r.Delivered() != off || r.Echoed != uint64(off/seg) {
		t.Fatalf("receiver: %.1f allocations per segment, delivered %d of %d", allocs, r.Delivered(), off)
	}
	s := newHP(t)
	o := intOpt(hop(1, 0, 0), hop(1, 0, 0))
	now := int64(1)
	s.Poll(now, func([]byte) {})
	ts := uint64(1)
	allocs = testing.AllocsPerRun(1000, func() {
		ts += 1000
		for i := range 2 {
			o[gsperf.INTHeadLen+gsperf.INTHopLen*i+7] = byte(ts) // ts advances
		}
		now += 1000
		s.OnAckINT(proto.Header{Type: proto.TypeAck, Flow: 1, Seq: s.una, Ack: s.una + 1000, Size: 1 << 30}, o, now)
		s.Poll(now, func([]byte) {})
	})
	if allocs != 0 || s.hp.st.INTAcks == 0 {
		t.Fatalf("sender: %.1f allocations per ack", allocs)
	}
}

// Over a lossy, duplicating, reordering link with no INT switch (the
// receiver echoes an option with no hops), HPCC's sender delivers every
// byte: its window stays W_init and the plain sender's recovery does the
// rest.
func TestHPCCDeliversOverABadLink(t *testing.T) {
	for _, size := range []uint64{1, 1401, 1_000_000} {
		l := &link{rng: rand.New(rand.NewSource(int64(size))), delay: 50e3, drop: 0.05, dup: 0.02, reorder: 0.1}
		now := int64(1)
		s := NewSender(Config{Mode: HPCC, RTO: 300e3, HPCC: HPCCConfig{LineRate: 1e9, BaseRTT: 100e3}}, 42, size, now)
		r := NewReceiver(42)
		toRecv := func(b []byte) { l.send(now, true, b) }
		toSend := func(b []byte) { l.send(now, false, b) }
		next := s.Poll(now, toRecv)
		for step := 0; step < 1_000_000 && !s.Done(); step++ {
			at := next
			if l.q.Len() > 0 && (at == 0 || l.q[0].at < at) {
				at = l.q[0].at
			}
			if at == 0 {
				t.Fatalf("%d B: stalled at %d", size, s.una)
			}
			now = max(now, at)
			for l.q.Len() > 0 && l.q[0].at <= now {
				e := heap.Pop(&l.q).(event)
				h, p, err := proto.Decode(e.payload)
				if err != nil {
					t.Fatal(err)
				}
				if e.toRecv {
					r.OnPacketINT(h, p, gsperf.Header(e.payload).INT(), false, now, toSend)
				} else {
					s.OnAckINT(h, gsperf.Header(e.payload).INT(), now)
				}
			}
			next = s.Poll(now, toRecv)
		}
		st, _ := s.HPCC()
		if !s.Done() || r.Delivered() != size || r.Corrupt != 0 || st.Window != st.WInit || st.INTAcks == 0 || st.Hops != 0 {
			t.Fatalf("%d B: done %v, delivered %d, corrupt %d; %+v", size, s.Done(), r.Delivered(), r.Corrupt, st)
		}
		if size == 1_000_000 && s.Retransmits == 0 {
			t.Fatalf("1 MB over a link losing 5%%: %d retransmits, %d timeouts", s.Retransmits, s.Timeouts)
		}
	}
}

// FuzzHPCCAck: acks of arbitrary INT contents (zeros, wrapping counters,
// rates of 0, timestamps going back, any hop count) never panic, and the
// window stays within [floor, W_init].
func FuzzHPCCAck(f *testing.F) {
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x7a, 0x12, 0})
	f.Add(bytes.Repeat([]byte{0xff}, 200))
	f.Add(make([]byte, 300))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := NewSender(Config{Mode: HPCC, MSS: 1000, HPCC: HPCCConfig{LineRate: 8e9, BaseRTT: hpT}}, 1, 1<<24, 1)
		p := s.hp
		b := make([]byte, gsperf.Len+gsperf.INTLen(gsperf.MaxINTHops))
		g := gsperf.Header(b)
		g.Init(gsperf.TypeAck)
		g.SetHdrLen(uint16(len(b)))
		now := int64(1)
		for i := 0; len(data) > 0; i++ {
			n := int(data[0]) % (gsperf.MaxINTHops + 1)
			data = data[1:]
			gsperf.InitINT(b[gsperf.Len:], gsperf.MaxINTHops)
			b[gsperf.Len+1] = byte(n)
			k := copy(b[gsperf.Len+gsperf.INTHeadLen:gsperf.Len+gsperf.INTHeadLen+n*gsperf.INTHopLen], data)
			data = data[k:]
			now += 1000
			s.Poll(now, func([]byte) {})
			s.OnAckINT(proto.Header{Type: proto.TypeAck, Flow: 1, Seq: uint64(i) * 1000, Ack: uint64(i) * 1000, Size: 1 << 24}, g.INT(), now)
			if !(p.w >= p.wMin && p.w <= p.wMax && s.cwnd == p.w && p.wc >= p.wMin && p.wc <= p.wMax) {
				t.Fatalf("ack %d: W %v, Wc %v, cwnd %v outside [%v, %v]", i, p.w, p.wc, s.cwnd, p.wMin, p.wMax)
			}
		}
	})
}

// HPCC's rate limiter is a virtual clock: a sender polled late catches
// up within its burst instead of losing the time. With T large (W =
// W_init = B x T never binds within the run) and every poll 50 us after
// the time Poll asked for, a sender at 1 Gbit/s with a burst of 8
// segments (70 us at the rate) still puts at least 0.95 of its rate on
// the wire, and no more than the rate allows plus one burst.
func TestHPCCPacerCatchesUpLateWakeUps(t *testing.T) {
	const mss, ov, line, dur = 1000, 100, 1e9, 10e6
	s := NewSender(Config{Mode: HPCC, MSS: mss, RTO: 1e12,
		HPCC: HPCCConfig{LineRate: line, BaseRTT: 20e6, Overhead: ov, Burst: 8 * (mss + ov)}}, 1, 1<<30, 0)
	if st, _ := s.HPCC(); st.RateBits != line {
		t.Fatalf("rate %v, want the line's", st.RateBits)
	}
	wire := 0
	count := func(b []byte) { wire += len(b) - s.hdrLen + ov }
	now := int64(0)
	next := s.Poll(now, count)
	for now < dur {
		if next == 0 {
			t.Fatalf("at %d: the sender waits for acks (window %d, %d bytes in flight)", now, s.Window(), s.inflight)
		}
		now = next + 50e3
		next = s.Poll(now, count)
	}
	got := float64(wire) * 8e9 / float64(now)
	if got < 0.95*line || float64(wire) > line/8e9*float64(now)+8*(mss+ov) {
		t.Fatalf("%.4g bit/s on the wire (%d bytes in %d ns), want the line's %.4g", got, wire, now, line)
	}
}

// With the default burst of one segment, full segments polled on time
// leave one segment's time at the rate apart; a cut of the rate re-times
// the latest segment at the new rate, as the simulator's ChangeRate does.
func TestHPCCPacerSpacing(t *testing.T) {
	s := newHP(t) // B = 1 byte per ns: a segment of 1000 + overhead bytes takes as many ns
	seg := int64(1000 + s.hp.c.Overhead)
	if s.hp.c.Burst != int(seg) {
		t.Fatalf("default burst %d, want one segment of %d", s.hp.c.Burst, seg)
	}
	var at []int64
	now := int64(1)
	next := s.Poll(now, func([]byte) { at = append(at, now) })
	for len(at) < 4 {
		now = next
		next = s.Poll(now, func([]byte) { at = append(at, now) })
	}
	for i := 1; i < len(at); i++ {
		if at[i]-at[i-1] != seg {
			t.Fatalf("segments left at %v, want %d ns apart", at, seg)
		}
	}
	// U = 2 from a queue of one BDP at the line rate: W = Wc/(2/0.95) + W_AI;
	// the next segment leaves the latest's time at R = W/T after it.
	intAck(s, 1000, 10000, hop(1e6, 0, hpInit))
	s.nxt = uint64(len(at)) * 1000
	s.hp.onAck(s, 10001, intOpt(hop(1e6+hpT, hpInit, hpInit)))
	nearly(t, "W", s.hp.w, hpInit/(2/0.95)+hpWAI)
	want := at[len(at)-1] + int64(float64(seg)*hpT/s.hp.w)
	if ok, wake := s.hp.ready(at[len(at)-1]+seg, 1000); ok || wake != want {
		t.Fatalf("after the cut: ready %v, wake %d, want %d", ok, wake, want)
	}
}

// An HPCC sender whose W_init = B x T is above MaxWindow's default keeps
// W_init, and so the line rate, before and after an ack.
func TestHPCCWindowAboveMaxWindow(t *testing.T) {
	const w = 8 << 20
	s := NewSender(Config{Mode: HPCC, MSS: 1000, HPCC: HPCCConfig{LineRate: 8e9, BaseRTT: w}}, 1, 1<<30, 1) // B = 1 byte per ns
	s.Poll(1, func([]byte) {})
	for i, at := range []int64{1, 10e3} {
		if i > 0 {
			s.OnAckINT(proto.Header{Type: proto.TypeAck, Flow: 1, Seq: 0, Ack: 1000, Size: 1 << 30}, intOpt(), at)
		}
		st, _ := s.HPCC()
		if st.WInit != w || st.Window != w || s.Window() != w || st.RateBits != 8e9 {
			t.Fatalf("ack %d: W_init %v, W %v, window %d, rate %v; want %d bytes at 8 Gbit/s", i, st.WInit, st.Window, s.Window(), st.RateBits, w)
		}
	}
}
