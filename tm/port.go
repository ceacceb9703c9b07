package tm

import (
	"fmt"
	"sync/atomic"

	"github.com/gswitch/gswitch/fidelity"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/queues"
	"github.com/gswitch/gswitch/sched"
	"github.com/gswitch/gswitch/tm/shaper"
)

// Port is one switch port's egress: its lanes, scheduler, shaper, delay
// line and the hooks of its mechanisms. Its methods run on the port's
// egress worker unless they say any goroutine. The zero value is set up
// with Init.
type Port struct {
	index    int
	w        *Worker // the egress worker's part (Serve)
	sched    sched.Scheduler
	evictor  sched.Evictor // the scheduler, when one arrival can evict several packets (nil otherwise)
	ctrl     *queues.FIFO  // control lane: frames the switch emits, served first, never paused
	credit   *Lane         // credit lane (nil until a mechanism sets one up)
	shaper   *shaper.Bucket
	dline    *DelayLine // frames on the wire (nil without a delay)
	delayNs  int64
	maxFrame uint32 // longest data frame the link takes (no limit: the largest uint32)

	frames  int64 // frames in the data queues
	idle    bool  // the last Send found nothing eligible (queues empty or paused)
	flushed bool  // Flush dropped what the port held since it went down
	late    atomic.Uint64

	// The hooks of the port's mechanisms, in the port's hook order
	// (mech.Order), and the view every one of them gets.
	view     mech.PortView
	admitH   []mech.AdmitHook
	enqH     []mech.EnqueuedHook
	dropH    []mech.DroppedHook
	dequeueH []mech.DequeuedHook
	egressH  []mech.EgressHook
}

// Config is what a port's traffic manager is built from.
type Config struct {
	Index     int          // the port's index: the port hooks are told
	Scheduler string       // a registered scheduler's name
	Params    sched.Params // its parameters
	RateBits  uint64       // the shaper's rate in bit/s (0: unlimited)
	Burst     int64        // its burst in bytes (0: the default)
	CatchUp   int64        // line time (ns) the shaper may make up after its worker ran late
	MaxFrame  uint32       // longer data frames are dropped as too_long (0: no limit)
	Now       int64
}

// ControlLen is how many frames a control lane holds.
const ControlLen = 256

// Init sets the port up from c (before the switch runs). An error names
// the part at fault, not the port.
func (p *Port) Init(c Config) error {
	s, err := sched.New(c.Scheduler, c.Params)
	if err != nil {
		return err
	}
	p.index, p.sched, p.maxFrame = c.Index, s, ^uint32(0)
	p.evictor, _ = s.(sched.Evictor)
	pkts := c.Params.PortPackets
	if pkts <= 0 {
		pkts = int(min(c.Params.PortBytes/64, 1<<16)) // the schedulers' default
	}
	p.view = mech.NewPortView(c.Index, s, c.Params.PortBytes, pkts)
	p.view.SetRate(c.RateBits)
	if c.MaxFrame > 0 {
		p.maxFrame = c.MaxFrame
	}
	if p.ctrl, err = queues.NewFIFO(ControlLen<<10, ControlLen); err != nil {
		return err
	}
	p.shaper, err = NewShaper(c.RateBits, c.Burst, c.CatchUp, c.Now)
	return err
}

// NewShaper returns a port shaper of bits per second (0: unlimited) with
// a bucket of burst bytes (0: the default) that makes up at most catchUp
// ns of line time its worker missed.
func NewShaper(bits uint64, burst, catchUp, now int64) (*shaper.Bucket, error) {
	b, err := shaper.New(bits, burst, now)
	if err != nil {
		return nil, err
	}
	if err := b.SetCatchUp(catchUp); err != nil {
		return nil, fmt.Errorf("catchup: %w", err)
	}
	return b, nil
}

// SetDelay gives the port a link delay of ns (0: none): frames leave ns
// after the shaper released them. The line has room for the delay at
// rateBits (10 Gbit/s if 0) in minimum frames, bounded.
func (p *Port) SetDelay(ns int64, rateBits uint64) {
	p.view.SetDelay(max(ns, 0))
	if p.delayNs = ns; ns <= 0 {
		return
	}
	rate := int64(rateBits)
	if rate == 0 {
		rate = 10e9
	}
	p.dline = NewDelayLine(int(min(ns*(rate/8)/84/1e9+4*MaxBatch, 1<<16)))
}

// SetCredit gives the port its credit lane (before the switch runs).
func (p *Port) SetCredit(l *Lane) { p.credit = l }

// Serve makes w the worker that serves the port's egress (before the
// switch runs).
func (p *Port) Serve(w *Worker) { p.w = w }

// Hook adds the hooks inst implements among Admit, Enqueued, Dropped,
// Dequeued and Egress to the port's lists, after those already there:
// call it for the port's mechanisms in the port's hook order (mech.Order),
// before the switch runs.
func (p *Port) Hook(inst mech.Instance) {
	if h, ok := inst.(mech.AdmitHook); ok {
		p.admitH = append(p.admitH, h)
	}
	if h, ok := inst.(mech.EnqueuedHook); ok {
		p.enqH = append(p.enqH, h)
	}
	if h, ok := inst.(mech.DroppedHook); ok {
		p.dropH = append(p.dropH, h)
	}
	if h, ok := inst.(mech.DequeuedHook); ok {
		p.dequeueH = append(p.dequeueH, h)
	}
	if h, ok := inst.(mech.EgressHook); ok {
		p.egressH = append(p.egressH, h)
	}
}

// View is the port's view for its mechanisms (mech.PortView): the one its
// hooks get, for the port's life.
func (p *Port) View() *mech.PortView { return &p.view }

// SetShaper installs a new shaper (a rate change; egress worker, or any
// goroutine before the switch runs).
func (p *Port) SetShaper(b *shaper.Bucket) {
	p.shaper = b
	p.view.SetRate(b.RateBits())
}

// Shaper is the port's shaper (egress worker, or before the switch runs).
func (p *Port) Shaper() *shaper.Bucket { return p.shaper }

// Scheduler is the port's data scheduler. Other goroutines may call only
// Depth, Pause and Paused; resume a queue with Resume.
func (p *Port) Scheduler() sched.Scheduler { return p.sched }

// Pause stops data queue q; its packets stay (any goroutine).
func (p *Port) Pause(q int) { p.sched.Pause(q) }

// Resume serves data queue q again (any goroutine). The caller wakes the
// egress worker: a worker whose ports hold only paused frames sleeps.
func (p *Port) Resume(q int) { p.sched.Resume(q) }

// Paused reports whether data queue q is paused (any goroutine).
func (p *Port) Paused(q int) bool { return p.sched.Paused(q) }

// DelayNs is the link's delay.
func (p *Port) DelayNs() int64 { return p.delayNs }

// ControlDepth is the control lane's depth as of the egress worker's last
// pass (any goroutine).
func (p *Port) ControlDepth() (uint64, uint32) { return p.ctrl.Depth() }

// CreditDepth is the credit lane's depth as of the egress worker's last
// pass, and whether the port has one (any goroutine).
func (p *Port) CreditDepth() (uint64, uint32, bool) {
	if p.credit == nil {
		return 0, 0, false
	}
	b, n := p.credit.Depth()
	return b, n, true
}

// CreditLane returns the counters of the port's credit lane, and whether
// it has one (any goroutine).
func (p *Port) CreditLane() (mech.CreditLaneStats, bool) {
	if p.credit == nil {
		return mech.CreditLaneStats{}, false
	}
	return p.credit.Stats(), true
}

// Credit is the port's credit lane, nil if it has none.
func (p *Port) Credit() *Lane { return p.credit }

// LateNs is the line time (ns) the shaped port lost while frames waited,
// its worker running later than the shaper's catch-up allows (any goroutine).
func (p *Port) LateNs() uint64 { return p.late.Load() }

// CreditLateNs is the line time (ns) the port's credit lane's meter lost
// while credits waited (Lane.LateNs; 0 without a credit lane; any
// goroutine).
func (p *Port) CreditLateNs() uint64 {
	if p.credit == nil {
		return 0
	}
	return p.credit.LateNs()
}

// DelayErrors adds the error histogram of the port's delay line to dst
// (DelayLine.Errors) and reports whether the port has one (any goroutine).
func (p *Port) DelayErrors(dst *fidelity.Counts) bool {
	if p.dline == nil {
		return false
	}
	p.dline.Errors(dst)
	return true
}

// Held counts the frames in the port's lanes and data queues as of the
// egress worker's last pass (any goroutine).
func (p *Port) Held() uint64 {
	var h uint64
	for q := 0; q < p.sched.NumQueues(); q++ {
		_, n := p.sched.Depth(q)
		h += uint64(n)
	}
	_, n := p.ctrl.Depth()
	h += uint64(n)
	if p.credit != nil {
		_, n := p.credit.Depth()
		h += uint64(n)
	}
	return h
}

// Delayed counts the frames on the port's delay line as of the egress
// worker's last pass (any goroutine).
func (p *Port) Delayed() uint64 {
	if p.dline == nil {
		return 0
	}
	return uint64(p.dline.Published())
}

// Queued reports whether the port holds frames in a lane or a data queue
// as of the egress worker's last pass.
func (p *Port) Queued() bool {
	if !p.ctrl.Empty() || (p.credit != nil && !p.credit.Empty()) {
		return true
	}
	for q := 0; q < p.sched.NumQueues(); q++ {
		if _, n := p.sched.Depth(q); n > 0 {
			return true
		}
	}
	return false
}

// Idle reports whether the last Send found nothing eligible to send: the
// lanes empty, the data queues empty or paused.
func (p *Port) Idle() bool { return p.idle }

// Publish makes the depths of the port's lanes and queues, and the credit
// lane's tokens, visible to other goroutines (end of the egress worker's
// pass over the port).
func (p *Port) Publish(now int64) {
	p.sched.Publish()
	p.ctrl.Publish()
	if p.credit != nil {
		p.credit.publish(now)
	}
}
