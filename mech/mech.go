// Package mech is how congestion-control mechanisms plug into gswitch's
// pipeline.
//
// # Model
//
// The pipeline is fixed; what runs on a port is a list, as VPP's feature
// arcs are. A mechanism (AFQ, pFabric, BFC, SFC, ExpressPass) is one package
// under mech/ that registers a Spec from its init function. The config
// enables mechanisms per port (`mechanisms: {afq: {...}}`); the switch then
// builds one Instance of each enabled mechanism, handing it the ports it is
// enabled on with each port's decoded config, and calls the hooks the
// instance implements at fixed points of the pipeline:
//
//		rx -> parse -> control -> forwarding -> Ingress -> | handoff | -> Admit -> traffic manager
//		   -> Dequeued -> Egress -> tx
//
//	  - Control(port, batch): control frames of the types the mechanism
//	    declared (Spec.Controls), received on the port, on the worker that
//	    received them. Frames of link-local types that arrive on a host port
//	    never get here: the switch drops them as forged.
//	  - Ingress(port, batch): packets received on a port where the mechanism is
//	    enabled, after forwarding chose their egress port, on the receiving
//	    worker. One call per received batch.
//	  - Admit(port, packet): each packet headed for a port where the mechanism
//	    is enabled, on the worker that owns that port's egress, just before
//	    the traffic manager admits it. Per packet, so every decision sees the
//	    queue state the previous packet left (queue assignment, ranks, bids,
//	    pause counters). Admit may set the verdict Drop.
//	  - Enqueued(port, packet), Dropped(port, packet, reason): the outcome of
//	    admission and later drops (evictions, a port going down) for packets
//	    that went through Admit on an enabled port.
//	  - Dequeued(port, batch): packets the scheduler of an enabled port has
//	    just released, before they are transmitted.
//	  - Egress(port, batch): the same packets, after Dequeued; may rewrite the
//	    frame (add or strip a tag) or drop it.
//	  - Tick(worker, now): every worker, when the time the mechanism asked for
//	    has come; returns when it wants the next tick.
//
// Hooks run on the forwarding workers: they must not block, allocate or take
// locks. Ingress and Control of different ports can run at the same time on
// different workers; Admit, Enqueued, Dropped, Dequeued and Egress of one
// port always run on that port's egress worker (Switch.EgressWorker). Data a
// mechanism shares between ports on different workers must be atomic.
//
// A mechanism sends frames of its own (pause and resume frames, BTS,
// credits) through the Emitter of the worker it runs on: they take frames
// from a reserve that data cannot exhaust and leave on the port's control or
// credit lane, never through the data handoff rings and never paused.
//
// # Writing a mechanism
//
// A package mech/NAME with doc.go (what it does, which paper section it
// follows), a config struct with yaml tags and a Validate method, the
// instance and its hooks, a prometheus.Collector for its metrics, and an init
// function calling Register. One blank import in mech/all adds it to
// gswitchd; nothing in the dataplane, the config loader or the metrics
// collector changes. docs/architecture.md walks through mech/afq.
//
// # Views for operators
//
// gswitchctl (through gswitchd's control socket) shows what each mechanism
// reports about itself. An instance opts in with any of these optional
// interfaces (docs/operations.md shows the output):
//
//   - Viewer: View(port) returns the mechanism's state on a port as a small
//     map of JSON values (its settings, counters, the state of its queues:
//     "round", "paused_queues", ...), for `gswitchctl flows` and
//     `gswitchctl queues`. (Not Describe: that name is prometheus.Collector's.)
//   - FlowLister: Flows(port, max) lists the flows the mechanism keeps state
//     for on a port (BFC's flow-to-queue assignments, SFC's cache,
//     ExpressPass's credited flows), with their state, for `gswitchctl
//     flows`.
//   - RateFollower: RateChanged(port, rate) is told when an operator changes
//     a port's line rate while the switch runs. A mechanism that does not
//     implement it pins the rate of the ports it is enabled on (gswitchctl
//     set refuses the change, naming the mechanism), because it may have
//     derived state from the rate at New (ExpressPass's credit rate, for
//     one).
//
// These run on the control server's goroutine, at an operator's request,
// while the workers forward: they may read only what any goroutine may read
// (atomics, values fixed at New) and must never block or lock a worker.
// State owned by an egress worker (a sketch, a flow table written without
// atomics) is not for them; publish a copy or a counter atomically instead.
package mech

import (
	"fmt"
	"net"
	"net/netip"
	"sort"

	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/sched"
	"github.com/gswitch/gswitch/units"
)

// Spec describes a mechanism to the switch and its config loader.
type Spec struct {
	// Name is the key under a port's mechanisms: and the prefix of its metrics.
	Name string
	// Summary is one line for docs and error messages.
	Summary string
	// Config returns a pointer to a new config value for one port, with its
	// defaults set. The port's YAML is decoded into it (unknown keys are
	// refused); if it implements Validator, Validate runs after decoding.
	Config func() any
	// Schedulers lists the schedulers the mechanism works with on its ports
	// (nil: any).
	Schedulers []string
	// SetsRank says the mechanism sets p.Rank for a rank scheduler.
	SetsRank bool
	// SetsQueue says the mechanism assigns each packet's queue (p.Queue) at
	// admission: the port's scheduler classifies by it (classify: queue),
	// and a port may have only one such mechanism.
	SetsQueue bool
	// Conflicts lists mechanisms that cannot be enabled on the same port.
	Conflicts []string
	// Controls lists the gswitch control message types (the GC header's type)
	// the mechanism handles in Control.
	Controls []uint8
	// New builds the mechanism's instance for a switch. ports holds every
	// port of the switch; Port.Config is nil where the mechanism is not
	// enabled.
	New func(sw Switch, ports []Port) (Instance, error)
}

// Validator is implemented by config values that check themselves. Errors
// should name the key (the loader prefixes the port and mechanism).
type Validator interface {
	Validate(PortInfo) error
}

// PortInfo is what a mechanism's config validation may know of the port.
type PortInfo struct {
	Name      string
	Role      Role
	RateBits  uint64
	Scheduler string
	Queues    int
	// Uplink says the port faces a higher tier of the fabric (leaf to
	// spine; the port's uplink key): mechanisms whose pauses must stay
	// up-down (BFC) take it as their default.
	Uplink bool
	// Timescale is the switch's time dilation K (its timescale key; 0 or
	// 1: none). The config loader has already put the mechanism's config
	// on this machine's clock (every units.Duration x K, every units.Rate
	// / K, except the fields tagged `timescale:"wall"`), and RateBits is
	// the machine's rate: a mechanism uses K only for the fabric times it
	// keeps as constants of its own (BFC's bitmap-period clamp). A default
	// given in the value Spec.Config returns scales with the file's
	// values; a fabric time Validate fills in must be multiplied by K.
	Timescale units.Timescale
}

// Instance is a mechanism running in a switch. It implements any of the
// hook interfaces below; the switch calls those it implements.
type Instance any

// Hook interfaces. See the package documentation for when each runs.
type (
	ControlHook interface {
		Control(port int, b *Batch)
	}
	IngressHook interface {
		Ingress(port int, b *Batch)
	}
	AdmitHook interface {
		Admit(port int, p *pkt.Packet, now int64)
	}
	ObserveHook interface {
		Enqueued(port int, p *pkt.Packet, now int64)
		Dropped(port int, p *pkt.Packet, r pkt.Reason, now int64)
		Dequeued(port int, b *Batch)
	}
	EgressHook interface {
		Egress(port int, b *Batch)
	}
	TickHook interface {
		// Tick runs on worker w at or after the time it last asked for (or
		// sooner, after Switch.TickSoon) and returns the next time it wants
		// to run (switch clock, ns).
		Tick(w int, now int64) (next int64)
	}
)

// Batch is a batch of packets at a hook. Pkts may be rewritten in place;
// packets whose Verdict is not Forward are skipped by later stages and, at
// the end of the pipeline step, freed (Drop counts Reason).
type Batch struct {
	Pkts   []pkt.Packet
	Mem    []byte // the UMEM: frame i's bytes are Mem[Pkts[i].Addr : Pkts[i].Addr+Pkts[i].Len]
	Now    int64
	Worker int // the worker running the hook: use Switch.Emitter(Worker) to send
}

// Frame returns the bytes of p's frame.
func (b *Batch) Frame(p *pkt.Packet) []byte { return b.Mem[p.Addr : p.Addr+uint64(p.Len)] }

// Role says what a port faces.
type Role uint8

// Roles.
const (
	// RoleHost faces end hosts: control frames of link-local types and BTS
	// arriving on it are forged and dropped.
	RoleHost Role = iota
	// RoleFabric faces another switch of the fabric: control frames are
	// handed to their mechanism.
	RoleFabric
)

func (r Role) String() string {
	if r == RoleFabric {
		return "fabric"
	}
	return "host"
}

// ParseRole reads host or fabric.
func ParseRole(s string) (Role, error) {
	switch s {
	case "", "host":
		return RoleHost, nil
	case "fabric":
		return RoleFabric, nil
	}
	return RoleHost, fmt.Errorf("%q is not a role (use host or fabric)", s)
}

// UnmarshalText implements encoding.TextUnmarshaler (the config's role
// key), as ParseRole.
func (r *Role) UnmarshalText(t []byte) error {
	v, err := ParseRole(string(t))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// Port is a port of the switch as a mechanism sees it when it is built.
type Port struct {
	Index     int
	Name      string
	Role      Role
	MAC       net.HardwareAddr
	RateBits  uint64 // egress line rate (0 = unlimited)
	Queues    int    // data queues of the port's scheduler
	Scheduler string
	DelayNs   int64 // the link's configured one-way delay
	Uplink    bool  // the port faces a higher tier (see PortInfo.Uplink)
	Config    any   // the mechanism's decoded config for this port; nil if not enabled here
	// Timescale is the switch's time dilation K (see PortInfo.Timescale):
	// RateBits, DelayNs and Config are already on this machine's clock.
	Timescale units.Timescale
}

// Switch is what a mechanism may use of the switch it runs in.
type Switch interface {
	// ID is the switch's id (config switch_id), carried in frames it emits.
	ID() uint16
	// NumPorts is the number of ports.
	NumPorts() int
	// Now is the switch clock in ns.
	Now() int64
	// Mem is the UMEM: a packet's frame is Mem()[p.Addr : p.Addr+p.Len].
	Mem() []byte
	// Workers is the number of forwarding workers; hooks get worker indices below it.
	Workers() int
	// EgressWorker is the worker that owns port's egress.
	EgressWorker(port int) int
	// Emitter returns worker w's emitter (use it only from worker w's hooks).
	Emitter(w int) Emitter
	// Scheduler returns port's scheduler. Only Depth, Pause and Paused
	// may be called from outside the port's egress worker; resume a queue
	// with ResumeQueue.
	Scheduler(port int) sched.Scheduler
	// ResumeQueue resumes queue q of port's scheduler and wakes the port's
	// egress worker, which sleeps while its queues hold only paused frames
	// (any goroutine, the egress worker's own ticks included).
	ResumeQueue(port, q int)
	// SetCreditLane meters port's credit lane to rateBits with a bucket of
	// burst bytes and a queue of queueLen frames; policy chooses which of
	// the credits that arrive it keeps (nil: it drops those that find it
	// full). Call it from New.
	SetCreditLane(port int, rateBits uint64, burst, queueLen int, policy LanePolicy) error
	// PortDown reports whether port is down (any goroutine).
	PortDown(port int) bool
	// TickSoon asks worker w to run h's Tick at its next pass, before the
	// time h last asked for (any goroutine; w is woken if it sleeps): for a
	// mechanism whose timers idle and that has work for them again.
	TickSoon(w int, h TickHook)
	// CreditLane returns the counters of port's credit lane, and whether
	// the port has one (any goroutine).
	CreditLane(port int) (CreditLaneStats, bool)
}

// LanePolicy decides which frames a metered lane (the credit lane,
// Switch.SetCreditLane) keeps. The lane carries the frames, a FIFO under a
// token bucket of its own; the policy, which a mechanism implements and
// hands to the switch when it sets the lane up, chooses what becomes of
// each frame that arrives. The lane calls it on the port's egress worker
// only, once per arriving frame and once per frame it sends, so a policy
// keeps its state (a random generator, averages, counts) without
// synchronization; like a hook, it must not block, allocate or take locks.
type LanePolicy interface {
	// Arrive is told of a frame arriving at the lane at now: the lane
	// holds queued frames and takes at most limit, and room says whether
	// this one fits (fewer than limit frames queued, and its bytes fit).
	// It returns what the lane does with the frame: LaneKeep queues it at
	// the tail (a lane without room drops it instead), LaneDrop and
	// LaneDropEarly drop it (LaneDropEarly counts it as dropped early, by
	// the policy's choice rather than for want of room, as random early
	// detection does), and LaneReplace(j) queues it in place of
	// the frame j places before the tail (0: the last one queued), which
	// the lane drops instead; if the lane holds no such frame, or the
	// frame would not fit in its place, it drops the arrival. Drops are
	// lane_full.
	Arrive(queued, limit uint32, room bool, now int64) LaneVerdict
	// Sent is told that the lane sent its head frame.
	Sent()
	// Reset is told that the port went down and the lane dropped every
	// frame it held.
	Reset()
}

// LaneVerdict is a LanePolicy's answer for one arriving frame: LaneKeep,
// LaneDrop, LaneDropEarly, or LaneReplace(j) (a value of 0 or more).
type LaneVerdict int32

// Lane verdicts (see LanePolicy.Arrive).
const (
	LaneKeep      LaneVerdict = -1 // queue it at the tail
	LaneDrop      LaneVerdict = -2 // drop it
	LaneDropEarly LaneVerdict = -3 // drop it, counted as an early drop: the policy's choice, not for want of room
)

// LaneReplace is the verdict that queues an arriving frame in place of the
// frame j places before the lane's tail (0: the last one queued).
func LaneReplace(j uint32) LaneVerdict { return LaneVerdict(min(j, 1<<31-1)) }

// CreditLaneStats are the counters of a port's credit lane (see
// Switch.SetCreditLane).
type CreditLaneStats struct {
	Sent       uint64 // credits that left the lane
	Dropped    uint64 // credits the lane refused (also counted as lane_full drops)
	Early      uint64 // of Dropped, those the lane's policy dropped early (LaneDropEarly: ExpressPass's credit_drop: random)
	Queued     uint32 // credits waiting now (as of the egress worker's last pass)
	TokenBytes int64  // bytes in the lane's bucket at the egress worker's last pass
	DepthBytes int64  // the bucket's depth
	RateBits   uint64 // the bucket's rate
}

// Routed, as the port of Emitter.Frame, asks the switch to choose the port
// when the frame is sent, as it would for a packet with the frame's
// destination (by route on an L3 switch, by the learning table on an L2
// one); a frame with no known way out is not sent.
const Routed = -1

// Emitter sends frames the switch builds itself. It belongs to one worker.
type Emitter interface {
	// Frame takes a frame for a message of GC type kind to be sent on port
	// (or Routed) and returns its buffer (room for a whole frame), or nil
	// when none is free or the port is down (counted as a failed emission
	// of kind on port). Build the frame in it, then call Send or Abort.
	Frame(port int, kind uint8) []byte
	// Send queues the frame from the last Frame call, n bytes long, on the
	// port's lane. It reports false (the frame freed, the failure counted)
	// when the lane is full.
	Send(n int, lane pkt.Lane) bool
	// Abort gives back the frame from the last Frame call unsent.
	Abort()
}

var registry = map[string]Spec{}

// Register makes a mechanism available by name. Call it from init.
func Register(s Spec) {
	if s.Name == "" || s.New == nil || s.Config == nil {
		panic("mech: Register needs Name, Config and New")
	}
	if _, dup := registry[s.Name]; dup {
		panic("mech: duplicate registration of " + s.Name)
	}
	for _, t := range s.Controls {
		for n, o := range registry {
			for _, u := range o.Controls {
				if u == t {
					panic(fmt.Sprintf("mech: %s and %s both claim control type %d", s.Name, n, t))
				}
			}
		}
	}
	registry[s.Name] = s
}

// Lookup returns the mechanism registered as name.
func Lookup(name string) (Spec, bool) {
	s, ok := registry[name]
	return s, ok
}

// Names lists the registered mechanisms.
func Names() []string {
	var n []string
	for k := range registry {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// SetsQueue reports whether any of the mechanisms assigns packets' queues.
func SetsQueue(names []string) bool {
	for _, n := range names {
		if registry[n].SetsQueue {
			return true
		}
	}
	return false
}

// Check says why mechanisms names cannot run together on a port with
// scheduler sched, or nil. Errors name both sides of a conflict.
func Check(names []string, scheduler string) error {
	for _, a := range names {
		sa, ok := registry[a]
		if !ok {
			return fmt.Errorf("unknown mechanism %q (known: %v)", a, Names())
		}
		if len(sa.Schedulers) > 0 && !contains(sa.Schedulers, scheduler) {
			return fmt.Errorf("mechanism %s works with scheduler %v, not with scheduler %s", a, sa.Schedulers, scheduler)
		}
	}
	for i, a := range names {
		sa := registry[a]
		for _, b := range names[i+1:] {
			sb := registry[b]
			if contains(sa.Conflicts, b) || contains(sb.Conflicts, a) {
				return fmt.Errorf("mechanisms %s and %s cannot run on the same port", a, b)
			}
			if sa.SetsRank && sb.SetsRank {
				return fmt.Errorf("mechanisms %s and %s both set the packets' rank: enable one", a, b)
			}
			if sa.SetsQueue && sb.SetsQueue {
				return fmt.Errorf("mechanisms %s and %s both assign the packets' queue: enable one", a, b)
			}
		}
	}
	if spec, ok := sched.Lookup(scheduler); ok && spec.Rank {
		for _, a := range names {
			if registry[a].SetsRank {
				return nil
			}
		}
		var setters []string
		for _, n := range Names() {
			if registry[n].SetsRank && (len(registry[n].Schedulers) == 0 || contains(registry[n].Schedulers, scheduler)) {
				setters = append(setters, n)
			}
		}
		return fmt.Errorf("scheduler %s orders packets by a rank that a mechanism sets: enable one of %v", scheduler, setters)
	}
	return nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// Viewer is implemented by mechanisms that show their state on a port to
// operators (see "Views for operators" in the package documentation).
type Viewer interface {
	// View returns the mechanism's state on port as JSON-encodable
	// values keyed by snake_case names, or nil if it is not enabled there.
	// Any goroutine; reads only atomics and values fixed at New.
	View(port int) map[string]any
}

// FlowLister is implemented by mechanisms that keep per-flow state and can
// list it for operators.
type FlowLister interface {
	// Flows returns at most max flows the mechanism knows on port (nil if
	// none or not enabled there). Any goroutine; reads only what other
	// goroutines may read.
	Flows(port, max int) []FlowInfo
}

// FlowInfo is one flow as a mechanism reports it. Fields the mechanism does
// not know stay zero.
type FlowInfo struct {
	Src, Dst netip.AddrPort // the flow's addresses and ports (zero if the mechanism keeps only a hash)
	Proto    uint8          // IP protocol
	Hash     uint32         // the switch's flow hash (pkt.Packet.Hash)
	ID       uint64         // the gsperf flow id, where the mechanism reads it
	State    map[string]any // the mechanism's state for the flow ("queue", "paused", "credits", ...)
}

// RateFollower is implemented by mechanisms that accept a change of a
// port's line rate while the switch runs.
type RateFollower interface {
	// RateChanged is told the port's new rate in bit/s (0: unlimited)
	// before the switch applies it; an error refuses the change and is
	// shown to the operator. Any goroutine.
	RateChanged(port int, rateBits uint64) error
}
