// Package sched holds the egress schedulers of gswitchd's traffic manager.
//
// Schedulers only schedule: they admit a packet onto one of their queues
// (or refuse it with a reason), and pick the next packet to send. They never
// read a frame's bytes. Where a packet goes and in which order it leaves is
// decided from its descriptor (pkt.Packet) alone: Queue, Rank, Hash, TOS, PCP
// and Len, which earlier stages (classification, mechanisms such as AFQ's
// bid numbers or pFabric's ranks, in package mech) have set.
//
// # Model
//
// A scheduler is pulled, never pushes (like Click's pull elements): the
// traffic manager hands it each arriving packet with Enqueue, and the port's
// egress asks it for the next packet with Dequeue whenever the port's shaper
// lets a frame leave. A scheduler classifies packets onto its queues (a
// queues.Set, or its own structure for pFabric), decides what to drop when
// they are full, and decides the order in which they leave.
//
// Enqueue returns queues.Accepted, or a drop reason; on a drop, *p holds
// the packet the caller must free: the arriving one, or (reason
// queues.Evicted) a buffered one that the arriving packet replaced.
//
// # Goroutines
//
// A scheduler belongs to the worker that owns its port's egress and is not
// safe for concurrent use, except Depth, Pause, Resume and Paused, and the
// Round and View of the capabilities below, which any goroutine may call.
//
// # Capabilities
//
// Beyond Scheduler, a scheduler may implement named interfaces that other
// stages look for with a type assertion, once, when they are built (never
// per packet):
//
//   - Backlogger: the exact backlog of a queue now (every scheduler here;
//     mechanisms read it through mech.PortView.Backlog).
//   - Queuer: the queue a packet would take (every scheduler here;
//     mech.PortView.QueueOf).
//   - Evictor: a scheduler whose Enqueue may evict (pfabric).
//   - SetScheduler: the queues.Set the scheduler serves (the schedulers
//     over a Set; BFC watches which queues are ready).
//   - Rounder: the current round of a scheduler that serves rounds (rsp;
//     AFQ computes its bids from it).
//   - Viewer: the scheduler's own state for operators, as a View (rsp's
//     round; gswitchctl queues and the gswitch_rsp_round metric show it).
//
// # Adding a scheduler
//
// One file with a type implementing Scheduler and one Register call in its
// init function. The config's scheduler key then selects it per port.
package sched

import (
	"fmt"
	"sort"
	"time"

	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/queues"
)

// Scheduler is one port's egress scheduler.
type Scheduler interface {
	// Enqueue takes p, or returns why not with *p set to the packet to free.
	Enqueue(p *pkt.Packet) queues.Drop
	// Dequeue moves the next packet to send into p; false when nothing is eligible.
	Dequeue(p *pkt.Packet) bool
	// NumQueues is the number of queues the scheduler reports depth for.
	NumQueues() int
	// Depth is queue i's bytes and packets as of the last Publish (any goroutine).
	Depth(i int) (bytes uint64, packets uint32)
	// Publish makes Depth current; the owner calls it once per batch.
	Publish()
	// Pause stops serving queue i (any goroutine); its packets stay.
	Pause(i int)
	// Resume serves queue i again (any goroutine).
	Resume(i int)
	// Paused reports whether queue i is paused (any goroutine).
	Paused(i int) bool
}

// Backlogger is implemented by every scheduler here: the exact backlog of
// queue i right now (owner only; Depth is the value published at the last
// Publish, for other goroutines). Admission stages that compare a queue's
// depth with a threshold (BFC's pause threshold, SFC's trigger) use it.
type Backlogger interface {
	Backlog(i int) (bytes uint64, packets uint32)
}

// Queuer is implemented by every scheduler here: the queue Enqueue would
// put p on if it arrived now, or -1 if Enqueue would refuse it whatever the
// queues hold (rsp: a round too far ahead). Owner only; it changes nothing.
// Admission stages that act on the state of the packet's own queue before
// the traffic manager has classified it (SFC's trigger) use it.
type Queuer interface {
	QueueOf(p *pkt.Packet) int
}

// SetScheduler is implemented by the schedulers built over a queues.Set
// (fifo, prio, drr, sfq, rsp; not pfabric): Set returns the queues
// themselves, for a mechanism that watches them as the scheduler serves
// them (BFC reads which queues are ready to size its pause threshold) and
// for tests. The Set belongs to the scheduler's owner like the scheduler
// does; its atomic reads (Depth, Paused) are for any goroutine.
type SetScheduler interface {
	Set() *queues.Set
}

// Rounder is implemented by schedulers that serve their queues in rounds
// (rsp): Round is the current round, which a mechanism computing
// departure rounds reads at admission (AFQ's bids). Any goroutine.
type Rounder interface {
	Round() uint64
}

// View is a scheduler's own state beyond its queues, for operators
// (gswitchctl queues, the metrics). Fields a scheduler does not have are
// nil; a scheduler that gains state to show adds a field here.
type View struct {
	Round *uint64 `json:"round,omitempty"` // rsp: the current round
}

// Viewer is implemented by schedulers with state of their own to show
// (rsp: its round). View takes a snapshot; any goroutine may call it. It
// is for the control server and the metrics, never the packet path.
type Viewer interface {
	View() View
}

// Evictor is implemented by schedulers whose Enqueue may push out a
// buffered packet for an arrival (pfabric), and must be by any that returns
// queues.Evicted: the dataplane keeps the arrival aside only for them. After Enqueue returns
// queues.Evicted with the first evicted packet in *p, the caller frees the
// others as MoreEvicted hands them over, until it returns false.
type Evictor interface {
	MoreEvicted(p *pkt.Packet) bool
}

// Params configure a scheduler for one port.
type Params struct {
	Queues      int            // number of queues (default 32; pfabric ignores it)
	PortBytes   uint64         // the port's buffer limit in bytes
	PortPackets int            // the port's packet limit (0 = PortBytes/64)
	QueueBytes  uint64         // static per-queue limit (0 = PortBytes)
	Alpha       float64        // dynamic threshold factor over the shared buffer (0 = off)
	Buffer      *queues.Buffer // the switch's shared buffer (nil = the port's own)
	Quantum     int            // DRR/SFQ quantum in bytes (0: the Spec's Quantum)
	Classify    Classifier     // how prio and drr pick a queue

}

// DefaultQueues is the number of queues per port, as on Tofino2.
const DefaultQueues = 32

// DefaultScheduler is the scheduler of a port whose config names none.
const DefaultScheduler = "fifo"

// Factory builds a scheduler.
type Factory func(Params) (Scheduler, error)

// Spec describes a registered scheduler.
type Spec struct {
	Name    string
	New     Factory
	Summary string // one line for docs and errors
	// Rank says the scheduler orders packets by p.Rank, which a mechanism
	// must set (the config refuses the scheduler on a port with no
	// mechanism that sets ranks).
	Rank bool
	// OneQueue says the scheduler has a single queue whatever the config's
	// queues: key says.
	OneQueue bool
	// DefaultBuffer, if set, is the port buffer (bytes) the scheduler wants
	// when the config gives none, from the port's rate (bits/s, > 0) and
	// base RTT; a port without a rate keeps the switch's default.
	DefaultBuffer func(rateBits uint64, rtt time.Duration) uint64
	// Quantum is the scheduler's default quantum in bytes (Params.Quantum
	// 0) if it has one; 0: it has none (the config's quantum key does not
	// apply to it).
	Quantum int
}

var registry = map[string]Spec{}

// Register makes a scheduler available by name. Call it from init.
func Register(s Spec) {
	if _, dup := registry[s.Name]; dup {
		panic("sched: duplicate registration of " + s.Name)
	}
	registry[s.Name] = s
}

// Lookup returns the registered scheduler named name.
func Lookup(name string) (Spec, bool) {
	s, ok := registry[name]
	return s, ok
}

// New builds the scheduler registered under name.
func New(name string, p Params) (Scheduler, error) {
	spec, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown scheduler %q (known: %v)", name, Names())
	}
	f := spec.New
	if p.Queues == 0 {
		p.Queues = DefaultQueues
	}
	if p.Quantum == 0 {
		p.Quantum = spec.Quantum
	}
	if p.Quantum != 0 && p.Quantum < 64 {
		return nil, fmt.Errorf("quantum %d B is below 64 B", p.Quantum)
	}
	return f(p)
}

// Names lists the registered schedulers.
func Names() []string {
	var n []string
	for k := range registry {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// setSched is what the schedulers over a queues.Set share.
type setSched struct{ s *queues.Set }

func newSet(p Params, n int) (setSched, error) {
	s, err := queues.NewSet(queues.SetConfig{Queues: n, PortBytes: p.PortBytes, PortPackets: p.PortPackets,
		QueueBytes: p.QueueBytes, Alpha: p.Alpha}, p.Buffer)
	return setSched{s}, err
}

func (b setSched) NumQueues() int               { return b.s.Len() }
func (b setSched) Depth(i int) (uint64, uint32) { return b.s.Depth(i) }
func (b setSched) Pause(i int)                  { b.s.Pause(i) }
func (b setSched) Resume(i int)                 { b.s.Resume(i) }
func (b setSched) Publish()                     { b.s.Publish() }
func (b setSched) Paused(i int) bool            { return b.s.Paused(i) }
func (b setSched) Backlog(i int) (uint64, uint32) {
	q := b.s.Queue(i)
	return q.Bytes(), q.Packets()
}

// Set implements SetScheduler.
func (b setSched) Set() *queues.Set { return b.s }
