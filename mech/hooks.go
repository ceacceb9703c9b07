package mech

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/gswitch/gswitch/pkt"
)

// Instance is a mechanism running in a switch. It implements any of the
// hook interfaces below and any of the capabilities (caps.go); the switch
// wires each hook it implements, and only those, into the lists of the
// ports where the mechanism is enabled, in the port's hook order (Order).
type Instance any

// The hooks, one interface each: a mechanism implements the ones it needs
// and nothing else. Hooks run on the forwarding workers: they must not
// block, allocate or take locks.
//
// The receiving side (Control, Ingress) runs on the worker that received
// the batch; hooks of different ports run at the same time on different
// workers. The egress side (Admit, Enqueued, Dropped, Dequeued, Egress) of
// one port always runs on that port's egress worker, one hook at a time,
// so per-port state needs no synchronization; each gets the port's
// PortView (the exact depth of its queues, the queue a packet takes, its
// rate, buffer and queue count). Data a mechanism shares between ports on
// different workers must be atomic.
//
// # The admission contract
//
// For each data packet p that arrives for a port, the egress side runs,
// before the port's next packet, what follows. (Frames for the control or
// credit lane go to their lanes without any hook, though a credit for a
// port without a credit lane is data there; a frame for a port that is
// down, or longer than the port's link takes, is dropped before any hook,
// as port_down or too_long.)
//
//  1. Admit, of every AdmitHook of the port in hook order, each seeing p
//     as the one before left it, until one sets p's verdict to Drop or
//     Consume: the hooks after it do not see p.
//  2. The outcome, exactly one of:
//     - Enqueued(p) to every EnqueuedHook of the port: the scheduler took
//     p. If p pushed packets out (an evicting scheduler, pFabric's),
//     Dropped(q, ReasonEvicted) follows for each, after p's Enqueued;
//     - Dropped(p, reason) to every DroppedHook of the port: a hook
//     dropped p (its reason), or the frame budget (frame_limit) or the
//     scheduler (buffer_full, port_limit, queue_limit, round_overflow)
//     refused it. Every DroppedHook hears it, also those of mechanisms
//     whose Admit did not see p because an earlier one dropped it;
//     - nothing, when p left the data path: a hook consumed it (Consume),
//     or moved it to the control or credit lane (p.Lane), where a full
//     lane drops it as lane_full unheard.
//
// PortView.Admitting is true throughout 1 and 2, for p; false for the
// evicted packets. So every Admit that does not consume p or move it off
// the data lane is followed by exactly one Enqueued or Dropped for p, and
// a mechanism may keep what its Admit decided for its Enqueued or Dropped
// in per-port state rather than in the packet.
//
// A packet that was Enqueued leaves the queues exactly once, and its
// mechanisms hear how: in a Dequeued batch (then the same batch goes
// through Egress, which may still drop or consume a packet: nothing more
// is heard of it), or as a Dropped with Admitting false (evicted by a
// later arrival, or flushed when the port went down: port_down). The
// packet keeps what admission set (Queue, Rank, Meta, Lane) until then.
type (
	// ControlHook takes the control messages of the types the
	// mechanism declared (Spec.Controls) received on port: frames of
	// link-local types arriving on host ports never get here (the
	// switch drops them as forged), except PFC frames (wire.TypePFC:
	// hosts' NICs send them). Receiving worker; a batch of one.
	// It may set the verdict (Consume, Drop) or the lane.
	ControlHook interface {
		Control(port int, b *Batch)
	}
	// IngressHook runs on packets received on a port where the
	// mechanism is enabled, after forwarding chose their egress port,
	// once per received batch. Receiving worker.
	IngressHook interface {
		Ingress(port int, b *Batch)
	}
	// AdmitHook runs on each data packet for a port where the mechanism
	// is enabled, just before the traffic manager admits it, one packet
	// at a time, so each decision sees the queues the previous packet
	// left (queue assignment, ranks, bids, pause counters, marks). It
	// may set the packet's Queue, Rank, Lane and Meta bits, rewrite its
	// frame, or set the verdict Drop (p.DropWith) or Consume.
	AdmitHook interface {
		Admit(v *PortView, p *pkt.Packet, now int64)
	}
	// EnqueuedHook hears that the port's scheduler took p (see the
	// admission contract).
	EnqueuedHook interface {
		Enqueued(v *PortView, p *pkt.Packet, now int64)
	}
	// DroppedHook hears that p was dropped at admission (v.Admitting())
	// or, after its Enqueued, evicted or flushed (see the admission
	// contract); r is why.
	DroppedHook interface {
		Dropped(v *PortView, p *pkt.Packet, r pkt.Reason, now int64)
	}
	// DequeuedHook hears of the packets the port's scheduler has just
	// released, a batch at a time, before they are transmitted (and
	// before Egress). Packets are all Forward; b.Now is the time.
	DequeuedHook interface {
		Dequeued(v *PortView, b *Batch)
	}
	// EgressHook runs on the same batch after the Dequeued hooks; it may
	// rewrite frames (add or strip a tag: the shaper is charged for the
	// final length) or drop or consume them.
	EgressHook interface {
		Egress(v *PortView, b *Batch)
	}
	// TickHook runs on every worker w at or after the time it last
	// asked for (or sooner, after Switch.TickSoon) and returns the next
	// time it wants to run (switch clock, ns): the mechanism's timers.
	TickHook interface {
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

// hooks are the hook interfaces by method name.
var hooks = []struct {
	method string
	iface  reflect.Type
}{
	{"Control", reflect.TypeFor[ControlHook]()}, {"Ingress", reflect.TypeFor[IngressHook]()},
	{"Admit", reflect.TypeFor[AdmitHook]()}, {"Enqueued", reflect.TypeFor[EnqueuedHook]()},
	{"Dropped", reflect.TypeFor[DroppedHook]()}, {"Dequeued", reflect.TypeFor[DequeuedHook]()},
	{"Egress", reflect.TypeFor[EgressHook]()}, {"Tick", reflect.TypeFor[TickHook]()},
}

// CheckHooks reports a method of inst that has a hook's name but not its
// signature (a hook written against another version of this package, or
// mistyped): the switch would never call it. The switch checks every
// instance when it builds it.
func CheckHooks(inst Instance) error {
	t := reflect.TypeOf(inst)
	if t == nil {
		return nil
	}
	for _, h := range hooks {
		m, ok := t.MethodByName(h.method)
		if !ok || t.Implements(h.iface) {
			continue
		}
		want, _ := h.iface.MethodByName(h.method)
		return fmt.Errorf("method %s%s is not the %s hook, %s%s (mech.%s), so the switch would never call it: give it the hook's signature, or another name",
			h.method, signature(m.Type, 1), h.method, h.method, signature(want.Type, 0), h.iface.Name())
	}
	return nil
}

// signature formats the parameters and results of function type f, from
// parameter skip on (1 skips a method's receiver).
func signature(f reflect.Type, skip int) string {
	var in, out []string
	for i := skip; i < f.NumIn(); i++ {
		in = append(in, f.In(i).String())
	}
	for i := 0; i < f.NumOut(); i++ {
		out = append(out, f.Out(i).String())
	}
	s := "(" + strings.Join(in, ", ") + ")"
	switch len(out) {
	case 0:
	case 1:
		s += " " + out[0]
	default:
		s += " (" + strings.Join(out, ", ") + ")"
	}
	return s
}
