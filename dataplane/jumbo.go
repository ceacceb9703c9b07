package dataplane

import (
	"github.com/gswitch/gswitch/dataplane/afxdp"
	"github.com/gswitch/gswitch/pkt"
	"golang.org/x/sys/unix"
)

// Jumbo frames (Config.MaxFrame longer than a UMEM frame holds).
//
// The kernel hands a frame longer than one UMEM frame to an AF_XDP socket
// bound with XDP_USE_SG as a chain of descriptors, one per UMEM frame, each
// but the last flagged XDP_PKT_CONTD; it takes the same chain on the tx
// ring. Inside the switch a frame stays one contiguous run of bytes, so
// that parsing, the stages, the scheduler and capture never walk a chain:
// gather copies a received chain into a jumbo slot (slotChunks contiguous
// UMEM frames at the top of the worker's range) and gives the chain's UMEM
// frames back at once; transmit cuts a frame that spans UMEM frames into
// one descriptor per UMEM frame; completeChains counts a sent chain once,
// by its first descriptor. A frame that fits one UMEM frame takes none of
// these steps beyond a flag test. The copy costs one memmove of the frame
// on arrival (about a microsecond for 9000 bytes), and buys a pipeline in
// which a frame is an address and a length everywhere.

// gather turns the n descriptors just received on q into whole frames in
// w.rx.descs, in place, and returns how many. A chain's buffers are copied
// into a jumbo slot and freed; a chain may end in a later batch. A chain
// longer than a slot, or one that finds no free slot, is dropped and
// counted (ReasonTooLong, ReasonNoFrames) when its last buffer arrives.
func (w *worker) gather(q *rxQueue, n int) int {
	s := w.s
	k := 0
	memLen := uint64(len(s.mem))
	for i := 0; i < n; i++ {
		d := w.rx.descs[i]
		more := d.Options&unix.XDP_PKT_CONTD != 0
		if !q.inSlot && !more {
			w.rx.descs[k] = d
			k++
			continue
		}
		if d.Addr >= memLen { // not a frame of ours: drop what was gathered
			w.ctr[q.port].drops[pkt.ReasonBadDesc].Add(1)
			w.endSlot(q, false)
			continue
		}
		if !q.inSlot {
			q.inSlot, q.slotLen, q.slotBad = true, 0, false
			if pl := &w.pool; len(pl.jfree) == 0 {
				q.slotBad = true
				w.ctr[q.port].drops[pkt.ReasonNoFrames].Add(1)
			} else {
				q.slot, q.hasSlot = pl.jfree[len(pl.jfree)-1], true
				pl.jfree = pl.jfree[:len(pl.jfree)-1]
				q.slotOff = d.Addr & (s.frameSize - 1)
				pl.assembling.Add(1)
			}
		}
		end := d.Addr + uint64(d.Len)
		if !q.slotBad {
			at := q.slot + q.slotOff + uint64(q.slotLen)
			if end > (d.Addr|(s.frameSize-1))+1 || at+uint64(d.Len) > q.slot+s.slotBytes || int(q.slotLen)+int(d.Len) > s.cfg.MaxFrame {
				q.slotBad = true // a buffer that overruns its UMEM frame, or a frame longer than max_frame
				w.ctr[q.port].drops[pkt.ReasonTooLong].Add(1)
			} else {
				copy(s.mem[at:at+uint64(d.Len)], s.mem[d.Addr:end])
				q.slotLen += d.Len
			}
		}
		w.pool.release(d.Addr)
		if more {
			continue
		}
		if q.slotBad || q.slotLen == 0 {
			w.endSlot(q, false)
			continue
		}
		w.rx.descs[k] = afxdp.Desc{Addr: q.slot + q.slotOff, Len: q.slotLen}
		k++
		w.endSlot(q, true)
	}
	return k
}

// endSlot ends q's frame in progress: its slot goes on as a frame (kept)
// or back to the free list.
func (w *worker) endSlot(q *rxQueue, kept bool) {
	if !q.inSlot {
		return
	}
	if q.hasSlot {
		w.pool.assembling.Add(-1)
		if !kept {
			w.pool.jfree = append(w.pool.jfree, q.slot)
		}
	}
	q.inSlot, q.hasSlot, q.slotBad, q.slotLen, q.slot = false, false, false, 0, 0
}

// splitTx cuts frames that span UMEM frames into chains of descriptors,
// one per UMEM frame, each but the last flagged XDP_PKT_CONTD. It returns
// the descriptors to put on the tx ring.
func (w *worker) splitTx(descs []afxdp.Desc) []afxdp.Desc {
	fs := w.s.frameSize
	m := 0
	for _, d := range descs {
		a, end := d.Addr, d.Addr+uint64(d.Len)
		for {
			ce := (a | (fs - 1)) + 1
			if end <= ce {
				w.eg.split[m] = afxdp.Desc{Addr: a, Len: uint32(end - a)}
				m++
				break
			}
			w.eg.split[m] = afxdp.Desc{Addr: a, Len: uint32(ce - a), Options: unix.XDP_PKT_CONTD}
			m++
			a = ce
		}
	}
	return w.eg.split[:m]
}

// completeChains drops the later buffers of chains from the completed
// addresses in addrs, in place, and returns how many frames remain.
func (w *worker) completeChains(addrs []uint64) int {
	k := 0
	for _, a := range addrs {
		if !w.s.chainTail(a) {
			addrs[k] = a
			k++
		}
	}
	return k
}
