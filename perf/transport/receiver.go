package transport

import "github.com/gswitch/gswitch/perf/proto"

// MaxPending bounds the out-of-order bytes a receiver holds. A segment
// beyond it is refused and not acknowledged, so the sender sends it again
// later: a receive window, which also bounds what forged segments can
// make a server keep.
const MaxPending = 64 << 20

// Receiver reassembles one flow and acknowledges every segment it keeps.
type Receiver struct {
	flow     uint64
	size     uint64
	inOrder  uint64            // bytes delivered in order
	pending  map[uint64][]byte // out-of-order segments by offset
	pendingB int               // bytes in pending
	buf      []byte
	First    int64 // arrival of the first segment
	Last     int64 // when the last byte was delivered in order
	Corrupt  uint64
	Dups     uint64
	Refused  uint64 // segments not kept: MaxPending reached
	Segments uint64
}

// NewReceiver returns a receiver for flow.
func NewReceiver(flow uint64) *Receiver {
	return &Receiver{flow: flow, pending: map[uint64][]byte{}, buf: make([]byte, proto.HeaderLen)}
}

// Delivered is the number of bytes delivered in order.
func (r *Receiver) Delivered() uint64 { return r.inOrder }

// Size is the flow size the sender announced (0 before the first segment).
func (r *Receiver) Size() uint64 { return r.size }

// Complete reports whether every byte of the flow was delivered.
func (r *Receiver) Complete() bool {
	return r.size > 0 && r.inOrder >= r.size || r.size == 0 && r.Segments > 0
}

// OnPacket handles a data segment or probe and sends the ack through out.
func (r *Receiver) OnPacket(h proto.Header, payload []byte, now int64, out func([]byte)) {
	if h.Flow != r.flow {
		return
	}
	if r.First == 0 {
		r.First = now
		r.size = h.Size // the first segment announces the size; later ones cannot change it
	}
	ack := proto.Header{Type: proto.TypeAck, Flow: r.flow, Seq: h.Seq, Size: r.size, Timestamp: h.Timestamp}
	if h.Type == proto.TypeProbe {
		ack.Type = proto.TypeProbeAck
	} else if h.Type == proto.TypeData {
		r.Segments++
		if !r.accept(h.Seq, payload, now) {
			return
		}
	}
	ack.Ack = r.inOrder
	ack.Encode(r.buf)
	out(r.buf)
}

// accept takes a data segment and reports whether to acknowledge it.
func (r *Receiver) accept(off uint64, payload []byte, now int64) bool {
	end := off + uint64(len(payload))
	if end <= r.inOrder || r.pending[off] != nil {
		r.Dups++
		return true
	}
	if end > r.size && r.size > 0 || end < off {
		r.Corrupt++
		return true
	}
	if off > r.inOrder {
		if r.pendingB+len(payload) > MaxPending {
			r.Refused++
			return false
		}
		r.pending[off] = append([]byte(nil), payload...)
		r.pendingB += len(payload)
		return true
	}
	r.deliver(off, payload)
	for {
		p, ok := r.pending[r.inOrder]
		if !ok {
			break
		}
		delete(r.pending, r.inOrder)
		r.pendingB -= len(p)
		r.deliver(r.inOrder, p)
	}
	if r.Complete() && r.Last == 0 {
		r.Last = now
	}
	return true
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
