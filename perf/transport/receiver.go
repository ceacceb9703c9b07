package transport

import (
	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/wire/gsperf"
)

// MaxFlowSize is the largest flow size a receiver accepts: 2^50 bytes (a
// pebibyte). A header announcing more, or 0, is not from a gsperf sender;
// with sizes this small no offset + length within a flow can wrap.
const MaxFlowSize = 1 << 50

// ValidSize reports whether a header's flow size is one a receiver accepts.
func ValidSize(size uint64) bool { return size > 0 && size <= MaxFlowSize }

// DefaultFlowPending is how many out-of-order bytes a receiver holds unless
// told otherwise (Limits.FlowPending): twice the sender's largest window
// (Config.MaxWindow's default), since a sender may have up to about two
// windows beyond a hole after a timeout.
const DefaultFlowPending = 8 << 20

// SegmentOverhead is what each buffered out-of-order segment is charged
// beyond its payload's allocation: its slot in the receiver's map, with the
// slack a map has after it grows (about 90 bytes measured on amd64). It
// makes many tiny segments cost what they hold, so a cap on bytes is a cap
// on memory.
const SegmentOverhead = 96

// Budget is a number of out-of-order bytes shared by the receivers of one
// server. Receivers charge it as they buffer segments and refund it as they
// deliver or release them; a segment that would take it past Max is
// refused. A Budget is used by the goroutine that uses its receivers.
type Budget struct {
	Max  int64 // bytes; 0: no limit
	used int64
	peak int64
}

// Used is the bytes charged now.
func (b *Budget) Used() int64 { return b.used }

// Peak is the most bytes charged at once.
func (b *Budget) Peak() int64 { return b.peak }

// Limits bound what one receiver buffers.
type Limits struct {
	FlowPending int64   // out-of-order bytes this receiver holds (0: DefaultFlowPending)
	Shared      *Budget // charged too, if not nil
}

// Receiver reassembles one flow and acknowledges every segment it keeps.
//
// Out-of-order segments are buffered up to Limits.FlowPending bytes,
// counting each segment's allocation plus SegmentOverhead for every slot of
// the map that holds them (the map's high-water mark: a map keeps its
// memory until it is rebuilt, which happens when it empties or falls to a
// quarter of its peak). A segment beyond the limit, or beyond the shared
// Budget, is refused and not acknowledged, so the sender sends it again
// later: a receive window, which also bounds what forged segments can make
// a server keep.
//
// A segment whose header disagrees with the flow (a size other than the
// first segment's, bytes past the end, no payload) is invalid: counted,
// neither kept nor acknowledged. The first segment's size must be
// ValidSize, or the receiver ignores it and stays unstarted.
//
// A Receiver is used by one goroutine.
type Receiver struct {
	flow    uint64
	size    uint64
	started bool
	inOrder uint64            // bytes delivered in order
	pending map[uint64][]byte // out-of-order segments by offset (nil when empty)
	pendB   int64             // allocated bytes in pending
	pendHW  int               // most entries pending has held since it was made
	held    int64             // charged: pendB + SegmentOverhead*pendHW
	lim     Limits
	buf     []byte     // the ack: header, and room for an echoed INT option
	echo    gsperf.INT // the INT option of the segment being answered (OnPacketINT), nil if none
	cnp     cnpState   // DCQCN's notification point (SendCNPs)

	First    int64 // arrival of the first segment
	Last     int64 // when the last byte was delivered in order
	Corrupt  uint64
	Dups     uint64
	Refused  uint64 // segments not kept: Limits.FlowPending reached
	Starved  uint64 // segments not kept: the shared Budget reached
	Invalid  uint64 // segments whose header disagrees with the flow
	Segments uint64
	Marked   uint64 // data segments that arrived CE-marked (their acks echo it: FlagECE)
	Echoed   uint64 // acks that echoed their segment's INT option (HPCC)
	CNPs     uint64 // CNPs sent (SendCNPs)
}

// cnpState is DCQCN's notification point for one flow.
type cnpState struct {
	every int64 // least spacing of CNPs, ns (0: none sent)
	last  int64 // when the last CNP was sent
	sent  bool  // whether one was
	// pending: a segment arrived marked less than every after the last
	// CNP, and its CNP is owed once the interval ends; seq and ts are the
	// latest such segment's offset and timestamp, which that CNP names.
	pending bool
	seq, ts uint64
}

// SendCNPs makes the receiver DCQCN's notification point (Zhu et al.,
// SIGCOMM 2015, section 3.1), which "generates at most one CNP packet
// every N microseconds for the flow, if any packet that arrives within
// that time window was marked" (N is every ns: DefaultCNPInterval, a
// fabric time). When a data segment of the flow arrives CE-marked
// (OnPacketCE), the receiver sends the flow's sender a CNP (a gsperf
// header of type proto.TypeCNP with the flow's id, the marked segment's
// offset and timestamp, through the same out as the acks, before the
// segment's ack), unless it sent one less than every ns ago. A mark
// within that interval is remembered, and its CNP (naming the latest
// segment marked in the interval) goes with the first data segment of
// the flow, marked or not, that arrives once the interval has ended: no
// timer runs, so a flow whose segments stop gets no deferred CNP, which
// cannot matter, since its sender sends nothing more for the rate to
// slow. Every segment counts, also one that is a duplicate or finds the
// buffer full: its mark is congestion on the path all the same. every <= 0
// turns CNPs off (the default: a receiver only echoes marks on acks).
func (r *Receiver) SendCNPs(every int64) { r.cnp.every = max(every, 0) }

// notify handles data segment h arriving at now, CE-marked if ce (called
// for a marked segment, or an unmarked one while a CNP is pending): it
// sends the CNP due, or remembers a mark within the interval.
func (r *Receiver) notify(h proto.Header, ce bool, now int64, out func([]byte)) {
	c := &r.cnp
	if c.every <= 0 || !ce && !c.pending {
		return
	}
	if c.sent && now-c.last < c.every {
		if ce {
			c.pending, c.seq, c.ts = true, h.Seq, h.Timestamp
		}
		return
	}
	seq, ts := h.Seq, h.Timestamp
	if !ce { // the deferred CNP names the segment that was marked
		seq, ts = c.seq, c.ts
	}
	c.last, c.sent, c.pending = now, true, false
	r.CNPs++
	cnp := proto.Header{Type: proto.TypeCNP, Flow: r.flow, Seq: seq, Size: r.size, Timestamp: ts}
	cnp.Encode(r.buf)
	out(r.buf[:proto.HeaderLen])
}

// NewReceiver returns a receiver for flow that holds up to
// DefaultFlowPending out-of-order bytes.
func NewReceiver(flow uint64) *Receiver { return NewLimitedReceiver(flow, Limits{}) }

// NewLimitedReceiver returns a receiver for flow bounded by l.
func NewLimitedReceiver(flow uint64, l Limits) *Receiver {
	if l.FlowPending <= 0 {
		l.FlowPending = DefaultFlowPending
	}
	return &Receiver{flow: flow, lim: l, buf: make([]byte, proto.HeaderLen+gsperf.INTLen(gsperf.MaxINTHops))}
}

// Delivered is the number of bytes delivered in order.
func (r *Receiver) Delivered() uint64 { return r.inOrder }

// Size is the flow size the sender announced (0 before the first segment).
func (r *Receiver) Size() uint64 { return r.size }

// Started reports whether a segment with a valid size has arrived.
func (r *Receiver) Started() bool { return r.started }

// Complete reports whether every byte of the flow was delivered.
func (r *Receiver) Complete() bool { return r.started && r.inOrder >= r.size }

// Held is the out-of-order bytes the receiver is charged for now.
func (r *Receiver) Held() int64 { return r.held }

// PendingSegments is the number of out-of-order segments buffered.
func (r *Receiver) PendingSegments() int { return len(r.pending) }

// Release drops every buffered segment and refunds the shared budget. The
// receiver's owner calls it when it forgets the receiver.
func (r *Receiver) Release() {
	r.pending, r.pendB, r.pendHW = nil, 0, 0
	r.recharge()
}

// OnPacket handles a data segment or probe that did not arrive CE-marked
// and sends the ack through out.
func (r *Receiver) OnPacket(h proto.Header, payload []byte, now int64, out func([]byte)) {
	r.OnPacketCE(h, payload, false, now, out)
}

// OnPacketCE is OnPacket for a datagram whose IP ECN field was CE
// (congestion experienced) if ce: the ack it sends for the segment then
// carries FlagECE. Each segment's ack echoes that segment's own mark,
// which is DCTCP's receiver (section 3.1) with an ack for every segment.
func (r *Receiver) OnPacketCE(h proto.Header, payload []byte, ce bool, now int64, out func([]byte)) {
	if h.Flow != r.flow {
		return
	}
	if !r.started {
		if !ValidSize(h.Size) {
			r.Invalid++
			return
		}
		r.started, r.First, r.size = true, now, h.Size
	} else if h.Size != r.size {
		r.Invalid++
		return
	}
	ack := proto.Header{Type: proto.TypeAck, Flow: r.flow, Seq: h.Seq, Size: r.size, Timestamp: h.Timestamp}
	if ce {
		ack.Flags = proto.FlagECE
	}
	if h.Type == proto.TypeProbe {
		ack.Type = proto.TypeProbeAck
	} else if h.Type == proto.TypeData {
		r.Segments++
		if ce {
			r.Marked++
		}
		if ce || r.cnp.pending {
			r.notify(h, ce, now, out)
		}
		if !r.accept(h.Seq, payload, now) {
			return
		}
	} else {
		return
	}
	ack.Ack = r.inOrder
	out(r.encodeAck(&ack))
}

// inFlow reports whether n bytes at off lie within a flow of size bytes
// (size <= MaxFlowSize, so nothing here wraps).
func inFlow(off uint64, n int, size uint64) bool {
	return n > 0 && off < size && uint64(n) <= size-off
}

// accept takes a data segment and reports whether to acknowledge it.
func (r *Receiver) accept(off uint64, payload []byte, now int64) bool {
	if !inFlow(off, len(payload), r.size) {
		r.Invalid++
		return false
	}
	end := off + uint64(len(payload))
	if end <= r.inOrder {
		r.Dups++
		return true
	}
	if off > r.inOrder {
		if _, dup := r.pending[off]; dup {
			r.Dups++
			return true
		}
		return r.stash(off, payload)
	}
	r.deliver(off, payload)
	drained := false
	for {
		p, ok := r.pending[r.inOrder]
		if !ok {
			break
		}
		delete(r.pending, r.inOrder)
		r.pendB -= int64(cap(p))
		r.deliver(r.inOrder, p)
		drained = true
	}
	if r.Complete() {
		if r.Last == 0 {
			r.Last = now
		}
		r.Release() // segments that overlapped others and were passed over
	} else if drained {
		r.shrink()
	}
	return true
}

// stash buffers an out-of-order segment if the limits allow it.
func (r *Receiver) stash(off uint64, payload []byte) bool {
	hw := max(r.pendHW, len(r.pending)+1)
	if !r.fits(int64(len(payload)), hw) {
		return false
	}
	p := append([]byte(nil), payload...)
	if !r.fits(int64(cap(p)), hw) { // the allocation was rounded up past a limit
		return false
	}
	if r.pending == nil {
		r.pending = make(map[uint64][]byte)
	}
	r.pending[off] = p
	r.pendB += int64(cap(p))
	r.pendHW = hw
	r.recharge()
	return true
}

// fits reports whether n more bytes with a map of hw entries stay within the
// limits, counting a refusal when not.
func (r *Receiver) fits(n int64, hw int) bool {
	held := r.pendB + n + SegmentOverhead*int64(hw)
	if held > r.lim.FlowPending {
		r.Refused++
		return false
	}
	if b := r.lim.Shared; b != nil && b.Max > 0 && b.used+held-r.held > b.Max {
		r.Starved++
		return false
	}
	return true
}

// shrink gives back the map's memory once it holds few of the entries it
// once did.
func (r *Receiver) shrink() {
	switch n := len(r.pending); {
	case n == 0:
		r.pending, r.pendHW = nil, 0
	case n < r.pendHW/4:
		m := make(map[uint64][]byte, n)
		for k, v := range r.pending {
			m[k] = v
		}
		r.pending, r.pendHW = m, n
	}
	r.recharge()
}

// recharge sets held from the buffered segments and moves the difference to
// the shared budget.
func (r *Receiver) recharge() {
	held := r.pendB + SegmentOverhead*int64(r.pendHW)
	if b := r.lim.Shared; b != nil {
		b.used += held - r.held
		b.peak = max(b.peak, b.used)
	}
	r.held = held
}

// deliver checks the bytes from off (which may start below inOrder) and moves inOrder.
func (r *Receiver) deliver(off uint64, p []byte) {
	skip := r.inOrder - off
	for i := skip; i < uint64(len(p)); i++ {
		if p[i] != pattern(r.flow, off+i) {
			r.Corrupt++
			break
		}
	}
	r.inOrder = off + uint64(len(p))
}

// CompletedAck encodes into b (at least proto.HeaderLen bytes) the ack a
// receiver sends for h once its flow completed with size bytes: every
// byte acknowledged. A server that forgets a completed flow's receiver
// keeps only its size and answers late retransmissions with this. It
// reports false, leaving b alone, for a segment no sender of that flow
// sends (another size, data outside the flow, not data or a probe).
func CompletedAck(h proto.Header, payload []byte, size uint64, b []byte) bool {
	if h.Size != size {
		return false
	}
	ack := proto.Header{Type: proto.TypeAck, Flow: h.Flow, Seq: h.Seq, Ack: size, Size: size, Timestamp: h.Timestamp}
	switch h.Type {
	case proto.TypeProbe:
		ack.Type = proto.TypeProbeAck
	case proto.TypeData:
		if !inFlow(h.Seq, len(payload), size) {
			return false
		}
	default:
		return false
	}
	ack.Encode(b)
	return true
}
