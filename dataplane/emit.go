package dataplane

import (
	"encoding/binary"

	"github.com/gswitch/gswitch/dataplane/l3"
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
	if port < mech.Routed || port >= len(w.s.ports) {
		return nil
	}
	if port != mech.Routed && w.s.ports[port].down.Load() {
		w.emitFail(port, kind)
		return nil
	}
	base, ok := w.alloc(0)
	if !ok {
		w.emitFail(port, kind)
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
	if n < pkt.EthHeaderLen || uint64(n) > w.s.frameSize-pkt.Headroom {
		w.emitFail(e.port, e.kind)
		w.release(addr)
		return false
	}
	if e.port == mech.Routed {
		port, ok := w.routeEmitted(w.s.mem[addr : addr+uint64(n)])
		if !ok || w.s.ports[port].down.Load() {
			w.emitFail(mech.Routed, e.kind)
			w.release(addr)
			return false
		}
		e.port = port
	}
	c := &w.ctr[e.port]
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

// emitFail counts a failed emission of kind on port (or, for a frame that
// was to be routed, on no port).
func (w *worker) emitFail(port int, kind uint8) {
	if port == mech.Routed {
		w.unrouted[kind].Add(1)
		return
	}
	w.ctr[port].emitFailed[kind].Add(1)
}

// routeEmitted chooses the port for a frame the switch built to be routed
// like any packet (a frame back toward a sender): on an L3 switch by its
// IPv4 destination (route, next hop, neighbour; the frame's MACs are set
// for the hop), else by its destination MAC in the learning table. A frame
// with no known way out is not flooded.
func (w *worker) routeEmitted(frame []byte) (int, bool) {
	s := w.s
	if s.router != nil && len(frame) >= 34 && binary.BigEndian.Uint16(frame[12:]) == pkt.EtherTypeIPv4 {
		r := s.router
		h := frame[14:]
		src, dst := binary.BigEndian.Uint32(h[12:]), binary.BigEndian.Uint32(h[16:])
		nhs, ok := r.routes.Lookup4(dst)
		if !ok {
			return 0, false
		}
		var sport, dport uint16
		ihl := int(h[0]&0x0f) * 4
		if len(h) >= ihl+4 && (h[9] == pkt.ProtoUDP || h[9] == pkt.ProtoTCP) {
			sport, dport = binary.BigEndian.Uint16(h[ihl:]), binary.BigEndian.Uint16(h[ihl+2:])
		}
		nh := l3.Pick(nhs, l3.SymHash4(src, dst, sport, dport, h[9]))
		target := dst
		if nh.IP.IsValid() {
			target = be32(nh.IP.As4())
		}
		mac, port, ok := r.nbrs.Lookup4(target, s.clock.Now())
		if !ok || port != nh.Port {
			if r.nbrs.ShouldRequest4(target, s.clock.Now(), r.retry) {
				w.arpRequest(int(nh.Port), target)
			}
			return 0, false
		}
		copy(frame[0:6], mac[:])
		copy(frame[6:12], s.ports[port].MAC)
		return int(port), true
	}
	port, ok := s.mac.Lookup(pkt.DstMAC(frame), s.clock.Now())
	return int(port), ok
}
