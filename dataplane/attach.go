package dataplane

import "fmt"

// Ports going down and up, and interfaces going away and coming back. The
// goroutine that learns of it (gswitchd's netlink watcher, a worker whose
// socket polls with an error) marks the port and bumps the switch's state
// generation; each worker acts on it at its next pass (linkState), so the
// forwarding path checks nothing new per packet.

// SetPortDown marks port down (the interface went down or away) or up
// again (any goroutine). While a port is down, its queues are flushed
// (each frame counted as a port_down drop), frames for it are dropped, and
// no frame is emitted on it.
func (s *Switch) SetPortDown(port int, down bool) {
	if s.ports[port].link.down.Swap(down) != down {
		if down {
			s.mac.Flush(uint16(port)) // hosts behind it are gone or will be learnt again
		}
		s.stateGen.Add(1)
		for _, w := range s.workers {
			w.nap.wake()
		}
	}
}

// DetachPort takes port's links away from the workers because its
// interface is gone: the port goes down, and each worker that owns one of
// its links reclaims the frames on the link's rings (they come back to the
// free lists; frames the kernel kept are counted as lost) and never touches
// the link again. Detached reports when all of them have; then the links'
// sockets may be closed. Any goroutine.
func (s *Switch) DetachPort(port int) {
	l := &s.ports[port].link
	l.detachAcks.Store(0)
	l.newLinks.Store(nil)
	l.detachReq.Store(true)
	l.down.Store(true)
	s.stateGen.Add(1)
	for _, w := range s.workers {
		w.nap.wake()
	}
}

// Detached reports whether every link of port has been reclaimed since the
// last DetachPort.
func (s *Switch) Detached(port int) bool {
	p := s.ports[port]
	return p.link.detachReq.Load() && int(p.link.detachAcks.Load()) == len(p.Links())
}

// AttachPort gives a detached port new links (one per rx queue, as many as
// it had) and brings it up: the workers that owned the old links take the
// new ones. Any goroutine, after Detached(port).
func (s *Switch) AttachPort(port int, links []Link) error {
	p := s.ports[port]
	if !s.Detached(port) {
		return fmt.Errorf("port %s is not detached", p.Name)
	}
	if len(links) != len(p.Links()) {
		return fmt.Errorf("port %s had %d queues, not %d", p.Name, len(p.Links()), len(links))
	}
	l := append([]Link(nil), links...)
	p.link.attachAcks.Store(0)
	p.link.newLinks.Store(&l)
	s.stateGen.Add(1)
	for _, w := range s.workers {
		w.nap.wake()
	}
	return nil
}

// linkState acts on ports whose interfaces went away (DetachPort) or came
// back (AttachPort) for the links this worker owns: it reclaims a gone
// link's frames (and, for the port's first link, the transmit side, which
// this worker owns as the port's egress worker), and takes up new links.
func (w *worker) linkState() {
	for _, q := range w.rx.queues {
		p := w.s.ports[q.port]
		l := &p.link
		if l.detachReq.Load() && !q.detached {
			w.tmp.reclaim = q.link.Reclaim(w.tmp.reclaim[:0])
			for _, a := range w.tmp.reclaim {
				if !w.s.chainTail(a) { // a chain on the tx or completion ring is one frame, its first buffer
					w.pool.release(a)
				}
			}
			w.endSlot(q, false)
			rx, tx := q.link.Outstanding()
			l.lost.Add(int64(rx + tx))
			for q.dly != nil && q.dly.Len() > 0 {
				w.pool.release(q.dly.Pop().Addr)
			}
			if q.dly != nil {
				q.dly.Publish()
			}
			if q.queue == 0 {
				l.txDetached = true
				l.txOutstanding.Store(0)
			}
			q.inFill = 0
			q.detached = true
			l.detachAcks.Add(1)
		}
		if nl := l.newLinks.Load(); q.detached && nl != nil {
			q.link = (*nl)[q.queue]
			q.detached = false
			if q.queue == 0 {
				l.tx = q.link
				l.txDetached = false
			}
			if int(l.attachAcks.Add(1)) == len(*nl) {
				l.links.Store(nl)
				l.newLinks.Store(nil)
				l.detachReq.Store(false)
			}
		}
	}
}
