package dataplane

import "github.com/gswitch/gswitch/dataplane/afxdp"

// receive is the receive phase of a pass: for each of the worker's
// sockets of a port that is up, it tops up the fill ring and takes a batch
// of received frames (whole frames, once jumbo chains are gathered) through
// the ingress stages. It reports whether it did anything.
func (w *worker) receive(now int64) bool {
	work := false
	for _, q := range w.rx.queues {
		if q.detached || w.s.ports[q.port].link.down.Load() {
			continue
		}
		w.refill(q)
		if q.dly != nil {
			if w.receiveDelayed(q, now) {
				work = true
			}
			continue
		}
		n := q.link.Receive(w.rx.descs[:])
		if n == 0 {
			continue
		}
		q.inFill -= n
		if w.s.sg {
			if n = w.gather(q, n); n == 0 {
				work = true
				continue
			}
		}
		w.ingress(q.port, n, now)
		work = true
	}
	return work
}

// refill tops the socket's fill ring up to the target from the free list,
// leaving the reserves for flooded copies and emitted frames.
func (w *worker) refill(q *rxQueue) {
	pl := &w.pool
	want := min(w.rx.fillTarget-q.inFill, len(pl.free)-pl.emitReserve-pl.floodReserve)
	if want < BatchSize/4 {
		return
	}
	top := len(pl.free)
	got := q.link.Fill(pl.free[top-want:])
	if got == 0 {
		return
	}
	// Fill took free[top-want : top-want+got]; close the gap.
	copy(pl.free[top-want:], pl.free[top-want+got:])
	pl.free = pl.free[:top-got]
	q.inFill += got
	q.link.WakeFill()
}

// receiveDelayed is reception on a port whose link delays frames toward the
// switch (rx_delay): what arrives waits on the queue's delay line and
// enters the pipeline when due, in order. A full line leaves frames on the
// rx ring (the kernel drops when that fills, as a link would).
func (w *worker) receiveDelayed(q *rxQueue, now int64) bool {
	work := false
	dl := q.dly
	if room := min(dl.Free(), BatchSize); room > 0 {
		if n := q.link.Receive(w.rx.descs[:room]); n > 0 {
			q.inFill -= n
			if w.s.sg {
				n = w.gather(q, n)
			}
			due := now + w.s.ports[q.port].link.rxDelayNs
			for _, d := range w.rx.descs[:n] {
				dl.Push(d.Addr, d.Len, due)
			}
			work = true
		}
	}
	n := 0
	for n < BatchSize {
		d, ok := dl.PopDue(now) // counts how late the frame leaves
		if !ok {
			break
		}
		w.rx.descs[n] = afxdp.Desc{Addr: d.Addr, Len: d.Len}
		n++
	}
	dl.Publish()
	if n > 0 {
		w.ingress(q.port, n, now)
		work = true
	}
	return work
}
