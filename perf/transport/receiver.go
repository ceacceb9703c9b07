package transport

import "github.com/gswitch/gswitch/perf/proto"

// Receiver reassembles one flow and acknowledges every segment.
type Receiver struct {
	flow     uint64
	size     uint64
	inOrder  uint64            // bytes delivered in order
	pending  map[uint64][]byte // out-of-order segments by offset
	buf      []byte
	First    int64 // arrival of the first segment
	Last     int64 // when the last byte was delivered in order
	Corrupt  uint64
	Dups     uint64
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
	}
	r.size = h.Size
	ack := proto.Header{Type: proto.TypeAck, Flow: r.flow, Seq: h.Seq, Size: h.Size, Timestamp: h.Timestamp}
	if h.Type == proto.TypeProbe {
		ack.Type = proto.TypeProbeAck
	} else if h.Type == proto.TypeData {
		r.Segments++
		r.accept(h.Seq, payload, now)
	}
	ack.Ack = r.inOrder
	ack.Encode(r.buf)
	out(r.buf)
}

func (r *Receiver) accept(off uint64, payload []byte, now int64) {
	end := off + uint64(len(payload))
	if end <= r.inOrder || r.pending[off] != nil {
		r.Dups++
		return
	}
	if end > r.size && r.size > 0 {
		r.Corrupt++
		return
	}
	if off > r.inOrder {
		r.pending[off] = append([]byte(nil), payload...)
		return
	}
	r.deliver(off, payload)
	for {
		p, ok := r.pending[r.inOrder]
		if !ok {
			break
		}
		delete(r.pending, r.inOrder)
		r.deliver(r.inOrder, p)
	}
	if r.Complete() && r.Last == 0 {
		r.Last = now
	}
}

// deliver checks the bytes from off (which may start below inOrder) and moves inOrder.
func (r *Receiver) deliver(off uint64, p []byte) {
	skip := r.inOrder - off
	var want [1]byte
	for i := skip; i < uint64(len(p)); i++ {
		Fill(want[:], r.flow, off+i)
		if p[i] != want[0] {
			r.Corrupt++
			break
		}
	}
	r.inOrder = off + uint64(len(p))
}
