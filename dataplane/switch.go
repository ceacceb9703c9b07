package dataplane

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gswitch/gswitch/dataplane/l2"
	"github.com/gswitch/gswitch/dataplane/l3"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/queues"
	"github.com/gswitch/gswitch/sched"
	"github.com/gswitch/gswitch/tm"
)

// Switch is the forwarding engine.
type Switch struct {
	umem            // the UMEM and how it is split between the workers
	cfg      Config // the config, with the defaults New fills in for the workers
	ports    []*Port
	workers  []*worker
	mac      *l2.Table
	bind     *l2.Table      // IPv4 source -> port, for L2 ports whose source guard is binding; nil if none is
	buffer   *queues.Buffer // the buffer all egress queues share (bytes)
	frames   *tm.Frames     // the UMEM frames the data queues may hold
	clock    Clock
	mechs    []mechInstance
	router   *router                   // nil on an L2 switch
	control  [256]mech.ControlHook     // handler of each GC type, if a mechanism of this switch claims it
	captures []atomic.Pointer[Capture] // captures[i]: a capture mirroring port i, or nil
	stateGen atomic.Uint64             // bumped when a port goes down or up, or a setting is posted
	stopping atomic.Bool
	wg       sync.WaitGroup
	started  bool
}

type mechInstance struct {
	name string
	inst mech.Instance
}

var _ mech.Switch = (*Switch)(nil)

// Ports returns the switch's ports.
func (s *Switch) Ports() []*Port { return s.ports }

// Workers is the number of workers.
func (s *Switch) Workers() int { return len(s.workers) }

// MACTable is the learning table.
func (s *Switch) MACTable() *l2.Table { return s.mac }

// Buffer is the shared buffer of all egress queues.
func (s *Switch) Buffer() *queues.Buffer { return s.buffer }

// Routes exposes the L3 routing table for metrics and tools; nil on an L2
// switch.
func (s *Switch) Routes() *l3.Table {
	if s.router == nil {
		return nil
	}
	return s.router.routes
}

// Neighbors is the neighbour cache; nil on an L2 switch.
func (s *Switch) Neighbors() *l3.Neighbors {
	if s.router == nil {
		return nil
	}
	return s.router.nbrs
}

// Mechanisms returns the running mechanism instances, by name (for metrics:
// an instance that is a prometheus.Collector is registered by gswitchd).
func (s *Switch) Mechanisms() map[string]mech.Instance {
	m := map[string]mech.Instance{}
	for _, x := range s.mechs {
		m[x.name] = x.inst
	}
	return m
}

// SetClock replaces the switch's clock (tests that run several switches on
// one fake clock; before any traffic).
func (s *Switch) SetClock(c Clock) { s.clock = c; s.cfg.Clock = c }

// Now is the switch clock.
func (s *Switch) Now() int64 { return s.clock.Now() }

// Mem is the UMEM.
func (s *Switch) Mem() []byte { return s.mem }

// ID is the switch id.
func (s *Switch) ID() uint16 { return uint16(s.cfg.SwitchID) }

// NumPorts is the number of ports.
func (s *Switch) NumPorts() int { return len(s.ports) }

// EgressWorker is the worker that owns port's egress.
func (s *Switch) EgressWorker(port int) int { return s.ports[port].eg.owner }

// Emitter returns worker w's emitter.
func (s *Switch) Emitter(w int) mech.Emitter { return &s.workers[w].em }

// Scheduler returns port's scheduler.
func (s *Switch) Scheduler(port int) sched.Scheduler { return s.ports[port].tm.Scheduler() }

// ResumeQueue is Port.ResumeQueue for port (any goroutine); a port
// index out of range is ignored, as TickSoon ignores a worker's.
func (s *Switch) ResumeQueue(port, q int) {
	if port < 0 || port >= len(s.ports) {
		return
	}
	s.ports[port].ResumeQueue(q)
}

// TickSoon asks worker w to run h's Tick at its next pass (any goroutine).
func (s *Switch) TickSoon(w int, h mech.TickHook) {
	if w < 0 || w >= len(s.workers) {
		return
	}
	wk := s.workers[w]
	for i := range wk.tickers {
		if wk.tickers[i].h == h {
			wk.tickers[i].soon.Store(true)
			wk.nap.wakeIfSleeping()
			return
		}
	}
}

// PortDown reports whether port is down.
func (s *Switch) PortDown(port int) bool { return s.ports[port].link.down.Load() }

// SetCreditLane gives port a credit lane metered to rateBits with a bucket
// of burst bytes and a queue of queueLen frames, which keeps the credits
// policy says (nil: it drops those that find it full; see tm.Lane). Call
// before Start (from a mechanism's New). The bucket, like the port's
// shaper, makes up time its worker ran late, up to the switch's catchup.
// A credit the lane drops is lane_full, and counted in CreditLane.
func (s *Switch) SetCreditLane(port int, rateBits uint64, burst, queueLen int, policy mech.LanePolicy) error {
	if s.started {
		return errors.New("credit lanes are set up before the switch starts")
	}
	if port < 0 || port >= len(s.ports) {
		return fmt.Errorf("no port %d", port)
	}
	if queueLen < 1 || queueLen > 4096 {
		return fmt.Errorf("credit queue of %d frames out of range [1, 4096]", queueLen)
	}
	l, err := tm.NewLane(rateBits, int64(burst), queueLen, s.frameSize, int64(s.cfg.CatchUp), policy, s.clock.Now())
	if err != nil {
		return err
	}
	s.ports[port].tm.SetCredit(l)
	return nil
}

// CreditLane returns the counters of port's credit lane, and whether it
// has one (any goroutine).
func (s *Switch) CreditLane(port int) (mech.CreditLaneStats, bool) { return s.ports[port].CreditLane() }

// Housekeep does the switch's slow work: it retires MAC table entries
// (and source bindings) that aged out. gswitchd calls it about once a
// second from a goroutine of its own; tests call it when they like.
func (s *Switch) Housekeep() {
	now := s.clock.Now()
	s.mac.Sweep(now)
	if s.bind != nil {
		s.bind.Sweep(now)
	}
}

// Capture starts mirroring port's frames in the given directions
// (CaptureRx|CaptureTx), keeping at most snap bytes of each, into rings of
// ringBytes per worker. One capture per port at a time. Any goroutine.
func (s *Switch) Capture(port, dirs, snap, ringBytes int) (*Capture, error) {
	if port < 0 || port >= len(s.ports) {
		return nil, fmt.Errorf("no port %d", port)
	}
	if dirs&^(CaptureRx|CaptureTx) != 0 || dirs == 0 {
		return nil, errors.New("capture: direction must be rx, tx or both")
	}
	if snap <= 0 || snap > 65535 {
		snap = 65535
	}
	ringBytes = nextPow2(max(ringBytes, 1<<16))
	if ringBytes > 1<<28 {
		return nil, errors.New("capture: ring larger than 256 MiB")
	}
	c := &Capture{slot: &s.captures[port], port: port, dirs: uint32(dirs), snap: snap,
		wall: time.Now().Add(-time.Duration(s.clock.Now()))}
	for range s.workers {
		c.rings = append(c.rings, newMirrorRing(ringBytes))
	}
	if !s.captures[port].CompareAndSwap(nil, c) {
		return nil, fmt.Errorf("port %s is already being captured", s.ports[port].Name)
	}
	return c, nil
}
