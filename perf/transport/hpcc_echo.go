package transport

import (
	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/wire/gsperf"
)

// HPCC's receiver (Li et al., section 3.2): the ack of a data segment
// carries the segment's INT option back to the sender, as the switches
// wrote it. A receiver does so for any flow whose segments carry the
// option, whatever the sender's mode: a plain server serves HPCC senders.

// OnPacketINT is OnPacketCE for a segment that carries the INT option o
// (the view gsperf.Header(b).INT() of the datagram b; nil if it carries
// none): the ack it sends for the segment, if any, carries a copy of the
// option, byte for byte as it arrived (its kind, hop count, slots and
// every slot, written or not), after the fixed header, the ack's header
// length covering it. o is read before OnPacketINT returns and not kept.
func (r *Receiver) OnPacketINT(h proto.Header, payload []byte, o gsperf.INT, ce bool, now int64, out func([]byte)) {
	r.echo = o
	r.OnPacketCE(h, payload, ce, now, out)
	r.echo = nil
}

// encodeAck writes ack into the receiver's buffer, followed by the INT
// option being echoed if any, and returns the bytes to send.
func (r *Receiver) encodeAck(ack *proto.Header) []byte {
	ack.Encode(r.buf)
	if len(r.echo) == 0 || proto.HeaderLen+len(r.echo) > len(r.buf) {
		return r.buf[:proto.HeaderLen]
	}
	n := proto.HeaderLen + copy(r.buf[proto.HeaderLen:], r.echo)
	gsperf.Header(r.buf).SetHdrLen(uint16(n))
	r.Echoed++
	return r.buf[:n]
}
