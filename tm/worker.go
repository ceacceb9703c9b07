package tm

import (
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
)

// MaxBatch is the most frames one call of Port.Send releases from the lanes
// and the scheduler (the workers' batch).
const MaxBatch = 64

// Drop is a frame the traffic manager gave up: the dataplane frees it and,
// unless Free, counts Reason on port OutPort.
type Drop struct {
	Addr    uint64
	OutPort uint16 // the port it was for
	Reason  pkt.Reason
	Free    bool // consumed by a mechanism, not dropped: freed, counted nowhere
}

// Sink takes the frames a worker's traffic manager drops: it frees each
// and counts its reason on its port. It is called on the worker's
// goroutine, a batch of up to MaxBatch drops at a time, at the end of the
// Port call that dropped them (or sooner, when more are dropped at once).
type Sink interface {
	Drop(d []Drop)
}

// Worker is one egress worker's part of the traffic manager, shared by the
// ports it serves: its pending share of the frame budget, the drops not
// yet handed to its Sink, and scratch. Only the worker's goroutine uses it.
type Worker struct {
	frames  *Frames
	pend    []int64 // frames this pass queued (+) and dequeued (-), per range, not yet in frames
	pendAll int64   // their sum
	sink    Sink
	drops   [MaxBatch]Drop
	nDrops  int
	batch   mech.Batch // the batch handed to Dequeued and Egress hooks

	arrival pkt.Packet           // a packet as it arrived at a scheduler that may evict
	evicted pkt.Packet           // further packets an arrival evicted
	victim  pkt.Packet           // a credit a full lane gave up for an arrival
	pk      pkt.Packet           // a packet held across an interface call (a local would escape)
	held    [MaxBatch]pkt.Packet // frames released onto a delay line
	lens    [MaxBatch]uint32     // lengths of dequeued data as the shaper charged them
}

// NewWorker returns worker id's part of the traffic manager over the UMEM
// mem, within the frame budget f, dropping into sink.
func NewWorker(id int, mem []byte, f *Frames, sink Sink) *Worker {
	w := &Worker{frames: f, pend: make([]int64, len(f.ranges)), sink: sink}
	w.batch.Mem, w.batch.Worker = mem, id
	return w
}

// EndPass adds what this pass queued and dequeued to the shared frame
// counts (end of each pass of the worker).
func (w *Worker) EndPass() {
	for i, d := range w.pend {
		if d != 0 {
			w.frames.ranges[i].queued.Add(d)
			w.pend[i] = 0
		}
	}
	if w.pendAll != 0 {
		w.frames.queued.Add(w.pendAll)
		w.pendAll = 0
	}
}

// admits reports whether the frame budget lets port, which holds held
// frames, queue one more frame of range r: the range is below its limit,
// and the port holds fewer frames than are free in all.
func (w *Worker) admits(r int, held int64) bool {
	f := w.frames
	return f.ranges[r].queued.Load()+w.pend[r] < f.ranges[r].limit && held < f.limit-f.queued.Load()-w.pendAll
}

// count counts a frame of range r into (d = 1) or out of (d = -1) the
// data queues; the shared counts take the sums at EndPass.
func (w *Worker) count(r int, d int64) {
	w.pend[r] += d
	w.pendAll += d
}

// drop hands the frame at addr to the sink, to be counted as r on port.
func (w *Worker) drop(port int, addr uint64, r pkt.Reason) {
	w.drops[w.nDrops] = Drop{Addr: addr, OutPort: uint16(port), Reason: r}
	if w.nDrops++; w.nDrops == len(w.drops) {
		w.handDrops()
	}
}

// free hands a consumed frame to the sink, to be freed without a count.
func (w *Worker) free(port int, addr uint64) {
	w.drops[w.nDrops] = Drop{Addr: addr, OutPort: uint16(port), Free: true}
	if w.nDrops++; w.nDrops == len(w.drops) {
		w.handDrops()
	}
}

// handDrops gives the drops so far to the sink.
func (w *Worker) handDrops() {
	if w.nDrops > 0 {
		n := w.nDrops
		w.nDrops = 0
		w.sink.Drop(w.drops[:n])
	}
}
