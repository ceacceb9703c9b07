package dataplane

import (
	"github.com/gswitch/gswitch/dataplane/afxdp"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/tm"
)

// The egress pass over one port the worker owns, by phase:
//
//	drain     what other workers handed over (emit rings, handoff rings) goes to the port's traffic manager
//	flush     a port that is down drops what it holds (once), and sends nothing
//	send      the traffic manager gives what may leave now: the lanes, the scheduler, the shaper,
//	          the mechanisms' Dequeued and Egress hooks, the delay line (tm.Port.Send)
//	transmit  capture, jumbo chains, the tx ring and the port's counters
//	kick      the device is told to send
//
// The traffic manager decides; the worker moves the frames.

// serve runs the egress pass over port p at now and reports whether it
// did any work.
func (w *worker) serve(p *Port, now int64) bool {
	work := w.drain(p, now)
	if p.link.down.Load() || p.link.txDetached {
		return p.tm.Flush(now) || work
	}
	n, moved := p.tm.Send(w.eg.out[:w.txRoom(p)], now)
	if moved {
		work = true
	}
	if n > 0 {
		w.transmit(p, w.eg.out[:n], now)
		work = true
	}
	if n > 0 || p.link.txOutstanding.Load() > 0 {
		p.link.tx.Kick()
	}
	p.tm.Publish(now)
	return work
}

// drain hands the port's traffic manager what other workers handed over
// since the last pass: frames they emitted, to their lanes, then data, to
// admission. On a port that is down both are dropped (port_down).
func (w *worker) drain(p *Port, now int64) bool {
	work := false
	buf := w.eg.in[:]
	for _, r := range p.eg.emitIn {
		if r == nil {
			continue
		}
		for n := r.Pop(buf); n > 0; n = r.Pop(buf) {
			if p.link.down.Load() {
				w.dropAll(p, buf[:n], pkt.ReasonPortDown)
			} else {
				p.tm.ToLanes(buf[:n], now)
			}
			work = true
		}
	}
	for _, r := range p.eg.in {
		if r == nil {
			continue
		}
		for n := r.Pop(buf); n > 0; n = r.Pop(buf) {
			w.admit(p, buf[:n], now)
			work = true
		}
	}
	return work
}

// admit hands packets for port p, which this worker serves, to its traffic
// manager's admission, or drops them (port_down) when the port is down.
func (w *worker) admit(p *Port, pkts []pkt.Packet, now int64) {
	if p.link.down.Load() {
		w.dropAll(p, pkts, pkt.ReasonPortDown)
		return
	}
	p.tm.Admit(pkts, now)
}

// txRoom is how many frames port p's tx ring takes now, at most a batch: a
// frame may take a descriptor per UMEM frame of a jumbo slot.
func (w *worker) txRoom(p *Port) int {
	room := min(p.link.tx.TxFree(), BatchSize)
	if w.s.sg {
		room = min(p.link.tx.TxFree()/int(w.s.slotChunks), BatchSize)
	}
	return room
}

// transmit puts the frames the traffic manager sent on port p's tx ring:
// mirrored to a capture on the port, cut into chains where they span UMEM
// frames, and counted. The ring has room for them all (txRoom).
func (w *worker) transmit(p *Port, out []pkt.Packet, now int64) {
	descs := w.eg.descs[:len(out)]
	var bytes uint64
	for i := range out {
		descs[i] = afxdp.Desc{Addr: out[i].Addr, Len: out[i].Len}
		bytes += uint64(out[i].Len)
	}
	if c := w.s.captures[p.Index].Load(); c != nil {
		for _, d := range descs {
			c.record(w.id, CaptureTx, w.s.mem[d.Addr:d.Addr+uint64(d.Len)], now)
		}
	}
	if w.s.sg {
		p.link.tx.Transmit(w.splitTx(descs)) // takes them all: room was checked for whole slots
	} else {
		p.link.tx.Transmit(descs) // takes them all: room was checked
	}
	p.link.txOutstanding.Add(int64(len(descs)))
	c := &w.ctr[p.Index]
	c.txPackets.Add(uint64(len(descs)))
	c.txBytes.Add(bytes)
}

var _ tm.Sink = (*worker)(nil)

// Drop frees the frames the traffic manager of the worker's ports gave up,
// counting each reason on its port (tm.Sink).
func (w *worker) Drop(ds []tm.Drop) {
	for i := range ds {
		d := &ds[i]
		if !d.Free {
			w.ctr[d.OutPort].drops[d.Reason].Add(1)
		}
		w.pool.release(d.Addr)
	}
}

// dropAll frees pkts, which were for port p, counting reason r on p.
func (w *worker) dropAll(p *Port, pkts []pkt.Packet, r pkt.Reason) {
	c := &w.ctr[p.Index].drops[r]
	for i := range pkts {
		c.Add(1)
		w.pool.release(pkts[i].Addr)
	}
}
