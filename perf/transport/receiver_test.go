package transport

import (
	"math/rand"
	"runtime"
	"testing"

	"github.com/gswitch/gswitch/perf/proto"
)

func data(flow, seq, size uint64) proto.Header {
	return proto.Header{Type: proto.TypeData, Flow: flow, Seq: seq, Size: size}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A receiver holds out-of-order segments up to its limit, counting each
// segment's allocation and map slot; a segment beyond is refused and not
// acknowledged, so the sender will send it again.
func TestReceiverBoundsOutOfOrderBytes(t *testing.T) {
	const seg, limit = 1000, 1 << 20
	r := NewLimitedReceiver(5, Limits{FlowPending: limit})
	p := make([]byte, seg)
	acks := 0
	out := func([]byte) { acks++ }
	size := uint64(4 * limit)
	sent := 0
	// Offsets from seg on: every one out of order (byte 0 never arrives).
	for off := uint64(seg); off+seg <= size; off += seg {
		Fill(p, 5, off)
		r.OnPacket(data(5, off, size), p, 1, out)
		sent++
	}
	kept := r.PendingSegments()
	if r.Held() > limit || r.Held() < limit-2*(seg+SegmentOverhead+seg/8) {
		t.Fatalf("holds %d bytes, limit %d: the limit should be reached and kept", r.Held(), limit)
	}
	if kept >= limit/seg || acks != kept || r.Refused != uint64(sent-kept) {
		t.Fatalf("%d segments: %d kept, %d acked, %d refused", sent, kept, acks, r.Refused)
	}
	// The missing first segment drains what was kept and frees it.
	Fill(p, 5, 0)
	r.OnPacket(data(5, 0, size), p, 2, out)
	if r.Delivered() != uint64(kept+1)*seg || r.Corrupt != 0 || r.Held() != 0 || r.PendingSegments() != 0 {
		t.Fatalf("delivered %d (want %d), corrupt %d, still holds %d bytes in %d segments", r.Delivered(), (kept+1)*seg, r.Corrupt, r.Held(), r.PendingSegments())
	}
}

// Receivers sharing a budget hold no more than it together; a receiver's
// release refunds it.
func TestReceiversShareABudget(t *testing.T) {
	const seg = 1400
	b := &Budget{Max: 1 << 20}
	rs := make([]*Receiver, 4)
	p := make([]byte, seg)
	for i := range rs {
		flow := uint64(i + 1)
		rs[i] = NewLimitedReceiver(flow, Limits{FlowPending: 512 << 10, Shared: b})
		for off := uint64(seg); off < 1000*seg; off += seg {
			Fill(p, flow, off)
			rs[i].OnPacket(data(flow, off, 1<<30), p, 1, func([]byte) {})
		}
	}
	var sum int64
	var refused, starved uint64
	for _, r := range rs {
		sum += r.Held()
		refused += r.Refused
		starved += r.Starved
	}
	if sum != b.Used() || b.Used() > b.Max || b.Peak() > b.Max || b.Used() < b.Max-2*(seg+SegmentOverhead+seg/8) {
		t.Fatalf("receivers hold %d, budget used %d, peak %d, max %d", sum, b.Used(), b.Peak(), b.Max)
	}
	if refused == 0 || starved == 0 || rs[0].Starved != 0 || rs[3].Refused != 0 {
		t.Fatalf("refused %d for the flow limit, %d for the budget (%d and %d by the first and last flows)", refused, starved, rs[0].Starved, rs[3].Refused)
	}
	before := b.Used()
	held := rs[0].Held()
	rs[0].Release()
	if b.Used() != before-held || rs[0].Held() != 0 || rs[0].PendingSegments() != 0 {
		t.Fatalf("release of %d bytes: budget %d -> %d", held, before, b.Used())
	}
	for _, r := range rs {
		r.Release()
	}
	if b.Used() != 0 {
		t.Fatalf("budget %d after every receiver released", b.Used())
	}
}

// Forged segments at offsets up to 2^40, one byte each, cost the map slots
// they take: the receiver's charge, and the heap, stay near its limit.
func TestReceiverTinySegmentsAtHugeOffsets(t *testing.T) {
	const limit = 4 << 20
	rng := rand.New(rand.NewSource(1))
	before := heapInUse()
	r := NewLimitedReceiver(7, Limits{FlowPending: limit})
	p := []byte{0}
	const n = 200_000
	for i := 0; i < n; i++ {
		off := 1 + uint64(rng.Int63n(1<<40))
		r.OnPacket(data(7, off, MaxFlowSize), p, 1, func([]byte) {})
	}
	grew := int64(heapInUse()) - int64(before)
	t.Logf("%d one-byte segments at offsets below 2^40: %d kept, %d bytes charged, heap grew %d bytes", n, r.PendingSegments(), r.Held(), grew)
	if r.Held() > limit || r.Refused != uint64(n-r.PendingSegments()) || r.PendingSegments() > limit/SegmentOverhead {
		t.Fatalf("held %d (limit %d) in %d segments, %d refused", r.Held(), limit, r.PendingSegments(), r.Refused)
	}
	if grew > 3*limit/2 {
		t.Fatalf("heap grew %d bytes holding %d charged (limit %d)", grew, r.Held(), limit)
	}
	runtime.KeepAlive(r)
}

// When most of a large map of pending segments drains, the receiver
// rebuilds the map, so what it is charged (and holds) falls with it.
func TestReceiverShrinksItsMap(t *testing.T) {
	const seg = 100
	r := NewReceiver(2)
	p := make([]byte, seg)
	size := uint64(1 << 30)
	// 1000 segments from offset seg on, then a hole, then 100 more.
	for i := uint64(1); i <= 1000; i++ {
		Fill(p, 2, i*seg)
		r.OnPacket(data(2, i*seg, size), p, 1, func([]byte) {})
	}
	for i := uint64(1002); i < 1102; i++ {
		Fill(p, 2, i*seg)
		r.OnPacket(data(2, i*seg, size), p, 1, func([]byte) {})
	}
	full := r.Held()
	Fill(p, 2, 0)
	r.OnPacket(data(2, 0, size), p, 2, func([]byte) {})
	if r.Delivered() != 1001*seg || r.PendingSegments() != 100 {
		t.Fatalf("delivered %d, %d pending", r.Delivered(), r.PendingSegments())
	}
	if r.Held() > full/8 {
		t.Fatalf("holds %d bytes for 100 segments after holding %d for 1100: the map was not rebuilt", r.Held(), full)
	}
}

// Headers that do not fit the flow are counted as invalid, neither kept
// nor acknowledged, and never panic.
func TestReceiverRejectsAbsurdHeaders(t *testing.T) {
	p := make([]byte, 100)
	for _, c := range []struct {
		name  string
		first proto.Header // first segment, to start the flow (zero: none)
		h     proto.Header
		n     int // payload bytes
	}{
		{name: "size 0", h: data(1, 0, 0), n: 100},
		{name: "size over 2^50", h: data(1, 0, MaxFlowSize+1), n: 100},
		{name: "size 2^64-1", h: data(1, 0, ^uint64(0)), n: 100},
		{name: "probe of size 0", h: proto.Header{Type: proto.TypeProbe, Flow: 1}, n: 1},
		{name: "offset+len wraps", first: data(1, 0, 1000), h: data(1, ^uint64(0)-10, 1000), n: 100},
		{name: "offset past the end", first: data(1, 0, 1000), h: data(1, 1<<40, 1000), n: 100},
		{name: "end past the end", first: data(1, 0, 1000), h: data(1, 950, 1000), n: 100},
		{name: "no payload", first: data(1, 0, 1000), h: data(1, 500, 1000), n: 0},
		{name: "another size", first: data(1, 0, 1000), h: data(1, 100, 2000), n: 100},
		{name: "probe of another size", first: data(1, 0, 1000), h: proto.Header{Type: proto.TypeProbe, Flow: 1, Size: 5}, n: 1},
		{name: "largest size, offset+len wraps", first: data(1, 0, MaxFlowSize), h: data(1, ^uint64(0)-50, MaxFlowSize), n: 100},
	} {
		r := NewReceiver(1)
		acks := 0
		if c.first.Type != 0 {
			Fill(p, 1, 0)
			r.OnPacket(c.first, p[:10], 1, func([]byte) {})
		}
		started, delivered := r.Started(), r.Delivered()
		r.OnPacket(c.h, p[:c.n], 2, func([]byte) { acks++ })
		if r.Invalid != 1 || acks != 0 || r.Held() != 0 || r.Delivered() != delivered || r.Started() != started || r.Corrupt != 0 {
			t.Errorf("%s: invalid %d, %d acks, holds %d, delivered %d, started %v", c.name, r.Invalid, acks, r.Held(), r.Delivered(), r.Started())
		}
	}
}

// A later segment cannot change the size the first one announced: it is
// invalid, and the flow completes with the right segment.
func TestReceiverSizeFromTheFirstSegment(t *testing.T) {
	r := NewReceiver(1)
	p := make([]byte, 10)
	Fill(p, 1, 0)
	r.OnPacket(proto.Header{Type: proto.TypeData, Flow: 1, Seq: 0, Size: 20}, p, 1, func([]byte) {})
	Fill(p, 1, 10)
	r.OnPacket(proto.Header{Type: proto.TypeData, Flow: 1, Seq: 10, Size: 1 << 40}, p, 2, func([]byte) {})
	if r.Size() != 20 || r.Complete() || r.Invalid != 1 {
		t.Fatalf("size %d, complete %v, invalid %d", r.Size(), r.Complete(), r.Invalid)
	}
	r.OnPacket(proto.Header{Type: proto.TypeData, Flow: 1, Seq: 10, Size: 20}, p, 3, func([]byte) {})
	if !r.Complete() || r.Corrupt != 0 {
		t.Fatalf("complete %v, corrupt %d", r.Complete(), r.Corrupt)
	}
}

// Receiving in order allocates nothing.
func TestReceiverInOrderAllocatesNothing(t *testing.T) {
	const seg = 1400
	r := NewReceiver(4)
	p := make([]byte, seg)
	off := uint64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		Fill(p, 4, off)
		r.OnPacket(data(4, off, 1<<40), p, 1, func([]byte) {})
		off += seg
	})
	if allocs != 0 || r.Delivered() != off {
		t.Fatalf("%.1f allocations per segment, delivered %d of %d", allocs, r.Delivered(), off)
	}
}

// A completed flow's ack acknowledges everything, and only for segments
// of that flow.
func TestCompletedAck(t *testing.T) {
	b := make([]byte, proto.HeaderLen)
	if !CompletedAck(proto.Header{Type: proto.TypeData, Flow: 3, Seq: 1000, Size: 2000, Timestamp: 77}, make([]byte, 1000), 2000, b) {
		t.Fatal("no ack for the last segment")
	}
	h, _, err := proto.Decode(b)
	if err != nil || h.Type != proto.TypeAck || h.Flow != 3 || h.Seq != 1000 || h.Ack != 2000 || h.Size != 2000 || h.Timestamp != 77 {
		t.Fatalf("ack %+v, %v", h, err)
	}
	if !CompletedAck(proto.Header{Type: proto.TypeProbe, Flow: 3, Size: 2000}, []byte{0}, 2000, b) {
		t.Fatal("no probe ack")
	}
	if h, _, _ = proto.Decode(b); h.Type != proto.TypeProbeAck || h.Ack != 2000 {
		t.Fatalf("probe ack %+v", h)
	}
	for _, c := range []struct {
		h proto.Header
		n int
	}{
		{proto.Header{Type: proto.TypeData, Flow: 3, Seq: 1000, Size: 3000}, 1000},
		{proto.Header{Type: proto.TypeData, Flow: 3, Seq: 1500, Size: 2000}, 1000},
		{proto.Header{Type: proto.TypeData, Flow: 3, Seq: ^uint64(0), Size: 2000}, 2},
		{proto.Header{Type: proto.TypeData, Flow: 3, Seq: 0, Size: 2000}, 0},
		{proto.Header{Type: proto.TypeAck, Flow: 3, Size: 2000}, 0},
	} {
		if CompletedAck(c.h, make([]byte, c.n), 2000, b) {
			t.Errorf("acked %+v with %d bytes", c.h, c.n)
		}
	}
}
