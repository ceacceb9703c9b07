package dataplane

import (
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
)

// emitter is a worker's mech.Emitter: frames the switch builds itself. They
// come from the worker's free frames, the emit reserve included (received
// frames and flooded copies never take the last emitReserve frames), are
// built at pkt.Headroom into the frame, and go to the egress port's control
// or credit lane: directly when this worker owns the port's egress, else
// over the port's emit ring for this worker (never the data handoff ring).
// The lanes are never paused. Only the worker's goroutine uses it.
type emitter struct {
	w    *worker
	addr uint64 // the frame taken by the last Frame call (0: none)
	port int
	kind uint8
}

var _ mech.Emitter = (*emitter)(nil)

func (e *emitter) Frame(port int, kind uint8) []byte {
	w := e.w
	if e.addr != 0 {
		e.Abort()
	}
	if port < 0 || port >= len(w.s.ports) {
		return nil
	}
	c := &w.ctr[port]
	if w.s.ports[port].down.Load() {
		c.emitFailed[kind].Add(1)
		return nil
	}
	base, ok := w.alloc(0)
	if !ok {
		c.emitFailed[kind].Add(1)
		return nil
	}
	e.addr, e.port, e.kind = base+pkt.Headroom, port, kind
	return w.s.mem[e.addr : base+w.s.frameSize]
}

func (e *emitter) Abort() {
	if e.addr != 0 {
		e.w.release(e.addr)
		e.addr = 0
	}
}

func (e *emitter) Send(n int, lane pkt.Lane) bool {
	w := e.w
	if e.addr == 0 {
		return false
	}
	addr := e.addr
	e.addr = 0
	c := &w.ctr[e.port]
	if n < pkt.EthHeaderLen || uint64(n) > w.s.frameSize-pkt.Headroom {
		c.emitFailed[e.kind].Add(1)
		w.release(addr)
		return false
	}
	if lane == pkt.LaneData {
		lane = pkt.LaneControl
	}
	p := &w.pk
	*p = pkt.Packet{Addr: addr, Len: uint32(n), TS: w.s.clock.Now(), InPort: uint16(e.port), OutPort: uint16(e.port),
		Lane: lane, Ctl: e.kind, Flags: pkt.FlagControl}
	port := w.s.ports[e.port]
	if port.egress == w.id {
		if !w.toLane(port, p, p.TS) {
			c.emitFailed[e.kind].Add(1)
			return false
		}
	} else if port.emitIn[w.id].Push(w.pk1(p)) == 1 {
		w.s.workers[port.egress].wakeIfSleeping()
	} else {
		c.emitFailed[e.kind].Add(1)
		w.release(addr)
		return false
	}
	c.emitted[e.kind].Add(1)
	return true
}

// pk1 returns p as a one-element slice of the worker's scratch.
func (w *worker) pk1(p *pkt.Packet) []pkt.Packet {
	w.one[0] = *p
	return w.one[:]
}
