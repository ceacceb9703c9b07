package dataplane

import (
	"encoding/binary"
	"net/netip"

	"github.com/gswitch/gswitch/dataplane/l3"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
)

// The emitter's methods (the type is in worker.go): frames the switch
// builds itself, and the choice of their port when it is to be routed.

var _ mech.Emitter = (*emitter)(nil)

// Frame implements mech.Emitter.
func (e *emitter) Frame(port int, kind uint8) []byte {
	w := e.w
	if e.addr != 0 {
		e.Abort()
	}
	if port < mech.Routed || port >= len(w.s.ports) {
		return nil
	}
	if port != mech.Routed && w.s.ports[port].link.down.Load() {
		w.emitFail(port, kind)
		return nil
	}
	base, ok := w.pool.alloc(0)
	if !ok {
		w.emitFail(port, kind)
		return nil
	}
	e.addr, e.port, e.kind = base+pkt.Headroom, port, kind
	return w.s.mem[e.addr : base+w.s.frameSize]
}

// Abort implements mech.Emitter.
func (e *emitter) Abort() {
	if e.addr != 0 {
		e.w.pool.release(e.addr)
		e.addr = 0
	}
}

// Send implements mech.Emitter.
func (e *emitter) Send(n int, lane pkt.Lane) bool {
	w := e.w
	if e.addr == 0 {
		return false
	}
	addr := e.addr
	e.addr = 0
	if n < pkt.EthHeaderLen || uint64(n) > w.s.frameSize-pkt.Headroom {
		w.emitFail(e.port, e.kind)
		w.pool.release(addr)
		return false
	}
	if e.port == mech.Routed {
		port, ok := w.routeEmitted(w.s.mem[addr : addr+uint64(n)])
		if !ok || w.s.ports[port].link.down.Load() {
			w.emitFail(mech.Routed, e.kind)
			w.pool.release(addr)
			return false
		}
		e.port = port
	}
	c := &w.ctr[e.port]
	if lane == pkt.LaneData {
		lane = pkt.LaneControl
	}
	p := &w.tmp.pk
	*p = pkt.Packet{Addr: addr, Len: uint32(n), TS: w.s.clock.Now(), InPort: uint16(e.port), OutPort: uint16(e.port),
		Lane: lane, Ctl: e.kind, Flags: pkt.FlagControl}
	port := w.s.ports[e.port]
	if port.eg.owner == w.id {
		if !port.tm.ToLane(p, p.TS) {
			c.emitFailed[e.kind].Add(1)
			return false
		}
	} else if port.eg.emitIn[w.id].Push(w.pk1(p)) == 1 {
		port.eg.wake.wakeIfSleeping()
	} else {
		c.emitFailed[e.kind].Add(1)
		w.pool.release(addr)
		return false
	}
	c.emitted[e.kind].Add(1)
	return true
}

// pk1 returns p as a one-element slice of the worker's scratch.
func (w *worker) pk1(p *pkt.Packet) []pkt.Packet {
	w.tmp.one[0] = *p
	return w.tmp.one[:]
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

// arpRequest asks, on port, for the MAC of ip (a next hop not yet known).
func (w *worker) arpRequest(port int, ip uint32) {
	pt := w.s.ports[port]
	var src uint32
	for _, pf := range pt.addrs {
		if pf.Addr().Is4() && pf.Contains(netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)})) {
			src = be32(pf.Addr().As4())
		}
	}
	if src == 0 {
		return
	}
	buf := w.em.Frame(port, arpKind)
	if buf == nil {
		return
	}
	for i := 0; i < 6; i++ {
		buf[i] = 0xff
	}
	copy(buf[6:12], pt.MAC)
	binary.BigEndian.PutUint16(buf[12:], pkt.EtherTypeARP)
	a := buf[14:]
	binary.BigEndian.PutUint16(a[0:], 1)
	binary.BigEndian.PutUint16(a[2:], pkt.EtherTypeIPv4)
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:], 1)
	copy(a[8:14], pt.MAC)
	binary.BigEndian.PutUint32(a[14:], src)
	clear(a[18:24])
	binary.BigEndian.PutUint32(a[24:], ip)
	clear(buf[42:60])
	w.em.Send(60, pkt.LaneControl)
}
