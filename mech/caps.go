package mech

import "net/netip"

// Capabilities. Besides its hooks, an instance may implement any of these
// interfaces; this is the whole list, and what the switch does when one
// is missing:
//
//   - prometheus.Collector: gswitchd registers it, so the mechanism's
//     metrics (gswitch_NAME_...) are exported. Missing: no metrics.
//   - Viewer: gswitchctl queues and gswitchctl flows show its state on a
//     port. Missing: they show nothing for it.
//   - FlowLister: gswitchctl flows lists the flows it keeps state for.
//     Missing: they say the mechanism lists none.
//   - RateFollower: an operator may change the line rate of a port where
//     it runs while the switch runs (gswitchctl set rate). Missing: the
//     mechanism pins the rate of its ports, because it may have derived
//     state from the rate at New (ExpressPass's credit rate, for one), and
//     the change is refused, naming the mechanism.
//
// These run on the control server's goroutine, at an operator's request,
// while the workers forward: they may read only what any goroutine may read
// (atomics, values fixed at New) and must never block or lock a worker.
// State owned by an egress worker (a sketch, a flow table written without
// atomics) is not for them; publish a copy or a counter atomically instead.

// Viewer is implemented by mechanisms that show their state on a port to
// operators.
type Viewer interface {
	// View returns the mechanism's state on port as a small map of
	// JSON-encodable values keyed by snake_case names (its settings,
	// counters, the state of its queues: "round", "paused_queues", ...),
	// or nil if it is not enabled there. Any goroutine. (Not Describe:
	// that name is prometheus.Collector's.)
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
	State    map[string]any // the mechanism's state for the flow ("queue", "paused", "pause_left_us", ...)
}

// RateFollower is implemented by mechanisms that accept a change of a
// port's line rate while the switch runs.
type RateFollower interface {
	// RateChanged is told the port's new rate in bit/s (0: unlimited)
	// before the switch applies it; an error refuses the change and is
	// shown to the operator. Any goroutine. The hooks see the new rate in
	// PortView.RateBits once the port's egress worker has installed it.
	RateChanged(port int, rateBits uint64) error
}
