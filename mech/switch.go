package mech

import (
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/sched"
)

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
