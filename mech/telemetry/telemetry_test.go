package telemetry_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gswitch/gswitch/mech/telemetry"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/wire/gsperf"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// earlier is the hop seg writes in front of the slots a test fills.
func earlier(i int) gsperf.INTHop {
	return gsperf.INTHop{TS: uint64(100 + i), TxBytes: uint64(200 + i), QLen: uint32(300 + i), RateKbps: uint32(400+i) * 1e3}
}

// TestWritesTheNextSlot: in one batch at 1 Gbit/s (8 ns a byte), data
// segments with an INT option of 1, 2 and 3 slots, over IPv4 and IPv6,
// get the port's record in their next free slot: the line's time, the
// bytes sent before them, the bytes that stay queued behind them (here
// the batch's later frames), 1 Gbit/s; earlier hops stay; the checksum
// is right from scratch (a zero one stays zero). A segment whose slots
// are full, acks and probes with an option, other UDP and TCP are left
// byte for byte as they were. Every frame counts in the tx bytes.
func TestWritesTheNextSlot(t *testing.T) {
	const now = 5000
	frames := [][]byte{
		v4(seg(gsperf.TypeData, 1, 0, 100), true),                                   // 0: hop 0 of 1
		v4(seg(gsperf.TypeData, 2, 1, 300), true),                                   // 1: hop 1 of 2
		v4(seg(gsperf.TypeData, 2, 2, 100), true),                                   // 2: full
		v4(seg(gsperf.TypeAck, 1, 0, 0), true),                                      // 3: an ack with an option
		v4(seg(gsperf.TypeProbe, 2, 0, 1), true),                                    // 4: a probe with one
		v4(seg(gsperf.TypeCNP, 2, 0, 0), true),                                      // 5: a CNP with one
		v4(bytes.Repeat([]byte("not gsperf "), 20), true),                           // 6
		pkttest.TCP4(mac2, mac1, ip1, ip2, 1, 2, 0, seg(gsperf.TypeData, 1, 0, 10)), // 7: gsperf bytes in TCP
		v6(seg(gsperf.TypeData, 3, 0, 200)),                                         // 8: hop 0 of 3, IPv6
		v4(seg(gsperf.TypeData, 1, 0, 50), false),                                   // 9: hop 0, no checksum
	}
	written := map[int]int{0: 0, 1: 1, 8: 0, 9: 0} // frame: the hop it gets
	r := newRig(t, 1e9)
	r.load(frames...)
	r.egress(now)
	var tx, total uint64
	for _, f := range frames {
		total += wire(len(f))
	}
	for i, f := range frames {
		got := r.frame(i)
		hop, ok := written[i]
		if !ok {
			if !bytes.Equal(got, f) {
				t.Errorf("frame %d was changed", i)
			}
			tx += wire(len(f))
			continue
		}
		o := optionOf(got)
		if o.Hops() != hop+1 {
			t.Fatalf("frame %d: %d hops, want %d", i, o.Hops(), hop+1)
		}
		for h := 0; h < hop; h++ {
			if o.Hop(h) != earlier(h) {
				t.Errorf("frame %d: hop %d became %+v", i, h, o.Hop(h))
			}
		}
		want := gsperf.INTHop{TS: now + 8*tx, TxBytes: tx, QLen: uint32(total - tx - wire(len(f))), RateKbps: 1e6}
		if o.Hop(hop) != want {
			t.Errorf("frame %d: hop %d %+v, want %+v", i, hop, o.Hop(hop), want)
		}
		if i == 9 {
			if udpCk(got) != 0 {
				t.Errorf("frame %d: a zero checksum became %#x", i, udpCk(got))
			}
		} else if udpSum(got) != 0 {
			t.Errorf("frame %d: UDP checksum %#x is wrong after the write", i, udpCk(got))
		}
		tx += wire(len(f))
	}
	if r.in.HopsWritten(0) != 4 || r.in.SlotsFull(0) != 1 || r.in.TxBytes(0) != total {
		t.Errorf("written %d, full %d, tx %d; want 4, 1, %d", r.in.HopsWritten(0), r.in.SlotsFull(0), r.in.TxBytes(0), total)
	}
	if v := r.in.View(0); v["hops_written"] != uint64(4) || v["slots_full"] != uint64(1) || v["tx_bytes"] != total {
		t.Errorf("view %v", v)
	}
	if r.in.View(1) != nil || r.in.HopsWritten(-1) != 0 {
		t.Error("a port without int shows some")
	}
}

// TestQLenIsWhatTheSegmentLeavesBehind: with three 1000-byte frames
// queued at the port, a batch of two segments (and a frame an earlier
// stage dropped between them) gives the first the queue plus the second
// segment, the second the queue alone: the port's exact depth (Total)
// in wire bytes, itself excluded. The dropped frame counts nowhere.
func TestQLenIsWhatTheSegmentLeavesBehind(t *testing.T) {
	r := newRig(t, 1e9)
	r.fill(3, 1000)
	a, b := v4(seg(gsperf.TypeData, 1, 0, 400), true), v6(seg(gsperf.TypeData, 1, 0, 700))
	r.load(a, v4(seg(gsperf.TypeData, 1, 0, 10), true), b)
	r.pkts[1].DropWith(pkt.ReasonBufferFull)
	r.egress(1)
	bytes, pkts := r.v.Total()
	queued := bytes + 24*uint64(pkts)
	if queued != 3*1024 {
		t.Fatalf("the rig's depth is %d B in %d frames", bytes, pkts)
	}
	if q := optionOf(r.frame(0)).Hop(0).QLen; uint64(q) != queued+wire(len(b)) {
		t.Errorf("first segment: qlen %d, want %d", q, queued+wire(len(b)))
	}
	if q := optionOf(r.frame(2)).Hop(0).QLen; uint64(q) != queued {
		t.Errorf("second segment: qlen %d, want %d", q, queued)
	}
	if h := optionOf(r.frame(1)).Hops(); h != 0 {
		t.Errorf("the dropped frame got %d hops", h)
	}
	if tx := optionOf(r.frame(2)).Hop(0).TxBytes; tx != wire(len(a)) {
		t.Errorf("second segment: tx %d, want %d (the dropped frame is not sent)", tx, wire(len(a)))
	}
}

// TestTxBytesAcrossBatches: the tx bytes a segment carries are the wire
// bytes of every frame sent before it, INT or not, over batches, and
// wrap at 2^64.
func TestTxBytesAcrossBatches(t *testing.T) {
	r := newRig(t, 1e9)
	other := pkttest.TCP4(mac2, mac1, ip1, ip2, 1, 2, 0, make([]byte, 900))
	small := v4([]byte("x"), true) // padded to 60 on the wire
	var sent uint64
	now := int64(1)
	for batch := 0; batch < 5; batch++ {
		s := v4(seg(gsperf.TypeData, 1, 0, 100*batch), true)
		r.load(other, s, small)
		r.egress(now)
		if tx := optionOf(r.frame(1)).Hop(0).TxBytes; tx != sent+wire(len(other)) {
			t.Fatalf("batch %d: tx %d, want %d", batch, tx, sent+wire(len(other)))
		}
		sent += wire(len(other)) + wire(len(s)) + 84
		now += 1e6
	}
	if r.in.TxBytes(0) != sent {
		t.Errorf("tx %d, want %d", r.in.TxBytes(0), sent)
	}
	telemetry.SetTxBytes(r.in, 0, math.MaxUint64-9)
	s := v4(seg(gsperf.TypeData, 1, 0, 0), true)
	r.load(s, s)
	r.egress(now)
	if a, b := optionOf(r.frame(0)).Hop(0).TxBytes, optionOf(r.frame(1)).Hop(0).TxBytes; a != math.MaxUint64-9 || b != wire(len(s))-10 {
		t.Errorf("across the wrap: %d then %d, want %d then %d", a, b, uint64(math.MaxUint64-9), wire(len(s))-10)
	}
}

// TestTimestampsFollowTheLine: at 3 Gbit/s (8/3 ns a byte), the frames
// of a batch are stamped as a line sends them back to back, exactly to
// the ns (no drift over many frames); a batch released while the line is
// still busy goes on from where it ends; after an idle line, the batch's
// own time. Two segments back to back show the port's rate. A port with
// no rate stamps the batch's time and writes rate 0.
func TestTimestampsFollowTheLine(t *testing.T) {
	r := newRig(t, 3e9)
	var frames [][]byte
	for i := 0; i < 40; i++ {
		frames = append(frames, v4(seg(gsperf.TypeData, 1, 0, 37*i), true))
	}
	var line uint64 // bits sent since the line was last idle
	check := func(now, start int64) {
		t.Helper()
		for i := range frames {
			h := optionOf(r.frame(i)).Hop(0)
			if want := uint64(start) + line/3; h.TS != want || h.RateKbps != 3e6 {
				t.Fatalf("at %d, frame %d: ts %d rate %d, want %d and 3e6", now, i, h.TS, h.RateKbps, want)
			}
			line += 8 * wire(len(frames[i]))
		}
	}
	r.load(frames...)
	r.egress(1000)
	check(1000, 1000)
	r.load(frames...)
	r.egress(1001) // the line is busy until 1000 + line/3
	check(1001, 1000)
	a, b := optionOf(r.frame(0)).Hop(0), optionOf(r.frame(1)).Hop(0)
	if rate := float64(b.TxBytes-a.TxBytes) * 8 / float64(b.TS-a.TS); math.Abs(rate-3) > 0.01 {
		t.Errorf("back to back: %.3f Gbit/s from the records, want 3", rate)
	}
	line = 0
	r.load(frames...)
	r.egress(1e9)
	check(1e9, 1e9)

	u := newRig(t, 0)
	u.load(frames[:3]...)
	u.egress(77)
	for i := 0; i < 3; i++ {
		if h := optionOf(u.frame(i)).Hop(0); h.TS != 77 || h.RateKbps != 0 {
			t.Errorf("unlimited port, frame %d: %+v", i, h)
		}
	}
	// A rate set later is written from the next batch on.
	u.v.SetRate(2e9)
	u.load(frames[0])
	u.egress(100)
	if h := optionOf(u.frame(0)).Hop(0); h.TS != 100 || h.RateKbps != 2e6 {
		t.Errorf("after set rate: %+v", h)
	}
}

// TestChecksumsStayRight: random segments (IPv4 and IPv6, slots, hops
// already written, sizes, odd ones included) through ports of random
// rates and depths keep a UDP checksum that is right from scratch; a
// write whose checksum comes to 0 sends 0xffff.
func TestChecksumsStayRight(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		slots := 1 + rng.IntN(gsperf.MaxINTHops)
		p := seg(gsperf.TypeData, slots, rng.IntN(slots), rng.IntN(1200))
		for j := gsperf.Len + gsperf.INTLen(slots); j < len(p); j++ {
			p[j] = byte(rng.Uint32())
		}
		f := v4(p, true)
		if i%2 == 1 {
			f = v6(p)
		}
		r := newRig(t, rng.Uint64N(400e9))
		r.fill(rng.IntN(5), uint32(60+rng.IntN(1400)))
		telemetry.SetTxBytes(r.in, 0, rng.Uint64())
		r.load(f)
		r.egress(rng.Int64N(1 << 62))
		if optionOf(r.frame(0)).Hops() != optionOf(f).Hops()+1 || udpSum(r.frame(0)) != 0 {
			t.Fatalf("segment %d: hops %d, checksum %#x wrong", i, optionOf(r.frame(0)).Hops(), udpCk(r.frame(0)))
		}
	}

	// A segment whose checksum after the write is 0: learn where the
	// write takes it, then change a payload word by that much.
	base := v4(seg(gsperf.TypeData, 1, 0, 100), true)
	r := newRig(t, 1e9)
	r.load(base)
	r.egress(1000)
	c := udpCk(r.frame(0))
	w := udpOff(base) + gsperf.UDPHeaderLen + gsperf.Len + gsperf.INTLen(1) // a payload word, at an even offset
	s := uint32(binary.BigEndian.Uint16(base[w:])) + uint32(c)
	binary.BigEndian.PutUint16(base[w:], uint16(s&0xffff+s>>16))
	setUDPSum(base)
	r = newRig(t, 1e9)
	r.load(base)
	r.egress(1000)
	if udpCk(r.frame(0)) != 0xffff || udpSum(r.frame(0)) != 0 {
		t.Errorf("a checksum that comes to 0: %#x, want 0xffff", udpCk(r.frame(0)))
	}
}

// TestLeavesBrokenFramesAlone: a segment cut anywhere before the end of
// its datagram, a header length past the frame, a UDP length that does
// not cover the option, a fragment that is not the first, a first
// fragment, non-IP: nothing is written and nothing panics; every frame
// still counts in the tx bytes.
func TestLeavesBrokenFramesAlone(t *testing.T) {
	whole := v4(seg(gsperf.TypeData, 2, 0, 40), true)
	r := newRig(t, 1e9)
	for cut := 14; cut < len(whole); cut++ {
		r.load(whole)
		r.pkts[0].Len = uint32(cut) // the descriptor as parsed, the frame shorter
		r.egress(1)
		if !bytes.Equal(r.mem[headroom:headroom+len(whole)], whole) {
			t.Fatalf("the frame cut at %d was written", cut)
		}
	}
	long := v4(seg(gsperf.TypeData, 2, 0, 0), true)
	binary.BigEndian.PutUint16(long[udpOff(long)+8+gsperf.OffHdrLen:], uint16(gsperf.Len+gsperf.INTLen(2)+1))
	setUDPSum(long)
	short := v4(seg(gsperf.TypeData, 2, 0, 0), true)
	binary.BigEndian.PutUint16(short[udpOff(short)+4:], uint16(8+gsperf.Len+gsperf.INTLen(2)-1))
	setUDPSum(short)
	later := v4(seg(gsperf.TypeData, 2, 0, 0), true)
	later[14+6], later[14+7] = 0, 10 // fragment offset 80
	first := v4(seg(gsperf.TypeData, 2, 0, 0), true)
	first[14+6] = 0x20                                                                      // more fragments
	binary.BigEndian.PutUint16(first[udpOff(first)+4:], uint16(len(first)-udpOff(first)+8)) // the rest in the next fragment
	arp := pkttest.ARP(mac1, ip1, ip2)
	frames := [][]byte{long, short, later, first, arp}
	r = newRig(t, 1e9)
	r.load(frames...)
	r.egress(1)
	var tx uint64
	for i, f := range frames {
		if !bytes.Equal(r.frame(i), f) {
			t.Errorf("frame %d was changed", i)
		}
		tx += wire(len(f))
	}
	if r.in.HopsWritten(0) != 0 || r.in.SlotsFull(0) != 0 || r.in.TxBytes(0) != tx {
		t.Errorf("written %d, full %d, tx %d (want 0, 0, %d)", r.in.HopsWritten(0), r.in.SlotsFull(0), r.in.TxBytes(0), tx)
	}
}

// TestTwoSwitchesInSequence: a segment with two slots crosses two
// switches (two instances, each its own port, clock and depth): it
// carries hop 0 from the first and hop 1 from the second, in order, and
// a third switch finds its slots full, leaves it alone and counts it.
func TestTwoSwitchesInSequence(t *testing.T) {
	for _, f := range [][]byte{v4(seg(gsperf.TypeData, 2, 0, 500), true), v6(seg(gsperf.TypeData, 2, 0, 500))} {
		a, b, c := newRig(t, 10e9), newRig(t, 400e6), newRig(t, 1e9)
		b.fill(2, 500)
		a.load(f)
		a.egress(1000)
		b.load(a.frame(0))
		b.egress(3000)
		o := optionOf(b.frame(0))
		want0 := gsperf.INTHop{TS: 1000, RateKbps: 10e6}
		want1 := gsperf.INTHop{TS: 3000, QLen: 2 * 524, RateKbps: 400e3}
		if o.Hops() != 2 || o.Hop(0) != want0 || o.Hop(1) != want1 || udpSum(b.frame(0)) != 0 {
			t.Fatalf("after two switches: %d hops %+v %+v, checksum %#x", o.Hops(), o.Hop(0), o.Hop(1), udpCk(b.frame(0)))
		}
		out := bytes.Clone(b.frame(0))
		c.load(out)
		c.egress(5000)
		if !bytes.Equal(c.frame(0), out) || c.in.SlotsFull(0) != 1 || c.in.HopsWritten(0) != 0 {
			t.Errorf("a third switch: changed %v, full %d, written %d", !bytes.Equal(c.frame(0), out), c.in.SlotsFull(0), c.in.HopsWritten(0))
		}
	}
}

// TestEgressDoesNotAllocate: a batch of segments, acks and other frames
// through the stage allocates nothing.
func TestEgressDoesNotAllocate(t *testing.T) {
	frames := [][]byte{v4(seg(gsperf.TypeData, 2, 0, 100), true), v6(seg(gsperf.TypeData, 1, 0, 1000)),
		v4(seg(gsperf.TypeAck, 1, 0, 0), true), v4(seg(gsperf.TypeData, 1, 1, 10), true), v4([]byte("plain"), true),
		pkttest.TCP4(mac2, mac1, ip1, ip2, 1, 2, 0, nil)}
	r := newRig(t, 1e9)
	r.fill(3, 1000)
	r.load(frames...)
	now := int64(1)
	run := func() {
		for i, f := range frames { // the segments get their slots back
			copy(r.mem[i*slotSize+headroom:], f)
		}
		now += 1000
		r.egress(now)
	}
	if a := testing.AllocsPerRun(200, run); a != 0 {
		t.Errorf("%v allocations per batch", a)
	}
	if r.in.HopsWritten(0) == 0 || r.in.SlotsFull(0) == 0 {
		t.Fatalf("written %d, full %d: the run missed a path", r.in.HopsWritten(0), r.in.SlotsFull(0))
	}
}

// TestMetrics: both counters per port, and names promtool accepts.
func TestMetrics(t *testing.T) {
	r := newRig(t, 1e9)
	r.load(v4(seg(gsperf.TypeData, 1, 0, 0), true), v4(seg(gsperf.TypeData, 1, 1, 0), true))
	r.egress(1)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(r.in)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != 1 || m.GetLabel()[0].GetValue() != "p" {
				t.Errorf("%s: labels %v", mf.GetName(), m.GetLabel())
			}
			got[mf.GetName()] = m.GetCounter().GetValue()
		}
	}
	if got["gswitch_int_hops_written_total"] != 1 || got["gswitch_int_slots_full_total"] != 1 || len(got) != 2 {
		t.Errorf("metrics %v", got)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// BenchmarkEgress: a batch of 32 full-size segments, each getting a hop
// (the slots given back between batches), over IPv4.
func BenchmarkEgress(b *testing.B) {
	f := v4(seg(gsperf.TypeData, 4, 0, 1400), true)
	frames := make([][]byte, 32)
	for i := range frames {
		frames[i] = f
	}
	r := newRig(b, 100e9)
	r.load(frames...)
	b.SetBytes(int64(len(f) * len(frames)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range frames {
			r.mem[k*slotSize+headroom+udpOff(f)+gsperf.UDPHeaderLen+gsperf.Len+1] = 0 // hops back to 0
		}
		r.egress(int64(i) * 1e4)
	}
}
