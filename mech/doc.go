// Package mech is how congestion-control mechanisms plug into gswitch's
// pipeline.
//
// # Model
//
// The pipeline is fixed; what runs on a port is a list, as VPP's feature
// arcs are. A mechanism (AFQ, pFabric, BFC, SFC, ExpressPass, ECN, PFC, INT) is one
// package under mech/ that registers a Spec from its init function. The
// config enables mechanisms per port (`mechanisms: {afq: {...}}`); the
// switch then builds one Instance of each enabled mechanism, handing it the
// ports it is enabled on with each port's decoded config, and calls the
// hooks the instance implements at fixed points of the pipeline:
//
//	rx -> parse -> Control -> forwarding -> Ingress -> | handoff |
//	   -> traffic manager [ Admit -> scheduler (Enqueued | Dropped) -> Dequeued -> Egress ] -> tx
//
// Each hook is an interface of one method (hooks.go), and the switch wires
// each one the instance implements, and only those; the dataplane calls
// the receiving side's hooks and Tick, the traffic manager (package tm)
// the egress side's:
//
//	hook       runs on           gets                    for
//	Control    receiving worker  port index, batch of 1  control messages of the types in Spec.Controls
//	Ingress    receiving worker  port index, batch       packets received on the port, after forwarding
//	Admit      egress worker     *PortView, packet       each data packet for the port, before the scheduler takes it
//	Enqueued   egress worker     *PortView, packet       the scheduler took it
//	Dropped    egress worker     *PortView, packet, why  refused at admission, or evicted or flushed later
//	Dequeued   egress worker     *PortView, batch        released by the scheduler, before transmission
//	Egress     egress worker     *PortView, batch        the same batch, after Dequeued; may rewrite frames
//	Tick       every worker      worker, now             timers: returns when it wants the next tick
//
// What follows Admit for each packet is a contract, written on the hook
// types (hooks.go): every Admit that does not consume the packet or move
// it off the data lane is followed by exactly one Enqueued or Dropped for
// it, before the port's next Admit; a packet Enqueued leaves once, as a
// Dequeued or a later Dropped (evicted, flushed).
//
// # What the egress hooks know: PortView
//
// The egress-side hooks get their port's PortView: its index, queue count,
// buffer, rate and delay, the exact depth of any of its queues now
// (Backlog, Total: the depths other goroutines read are a pass old) and
// the queue a packet would take (QueueOf), and whether the hook is about
// the packet being admitted (Admitting). It is a concrete type the traffic
// manager keeps per port: no type assertion and no allocation per packet.
//
// # Order
//
// A port runs the hooks of its mechanisms in one order, the same for every
// hook. A mechanism declares where it goes (Spec.After, Spec.Before: names
// of mechanisms, or the roles QueueSetter and RankSetter, "whichever
// mechanism assigns the queues"), as VPP features declare runs-before and
// runs-after; Order resolves the declarations of a port's mechanisms
// (undeclared pairs in the order of their names), and Check, which the
// config loader and the switch run at start, refuses declarations that
// contradict each other with an error naming both mechanisms. The order of
// the config does not matter. A mechanism that reads the queue a packet
// takes (SFC, ECN) runs After QueueSetter and RankSetter, so it reads the
// queue that BFC assigned or the round that AFQ set.
//
// # Per-packet scratch bits
//
// A mechanism that must remember something about one packet from one hook
// to another (BFC: the packet raised a pause counter; SFC: it already
// caused a BTS) registers bits of pkt.Packet.Meta from its init function
// (pkt.RegisterMeta) and keeps the mask; nothing in package pkt names it.
// Every frame is received with its bits clear.
//
// # Threads
//
// Hooks run on the forwarding workers: they must not block, allocate or take
// locks. Control and Ingress of different ports can run at the same time on
// different workers; Admit, Enqueued, Dropped, Dequeued and Egress of one
// port always run on that port's egress worker (Switch.EgressWorker). Data
// a mechanism shares between ports on different workers must be atomic.
//
// A mechanism sends frames of its own (pause and resume frames, BTS,
// credits) through the Emitter of the worker it runs on: they take frames
// from a reserve that data cannot exhaust and leave on the port's control or
// credit lane, never through the data handoff rings and never paused. A
// mechanism that needs a metered lane (ExpressPass's credits) sets up the
// port's credit lane from New (Switch.SetCreditLane) and hands it the
// LanePolicy that chooses which arriving frames the lane keeps.
//
// # Capabilities
//
// Besides its hooks, an instance may implement prometheus.Collector (its
// metrics), Viewer and FlowLister (what gswitchctl shows of it) and
// RateFollower (it accepts a change of a port's rate while the switch runs;
// without it the change is refused). caps.go lists them in one place, with
// what the switch does when one is missing.
//
// # Writing a mechanism
//
// A package mech/NAME with doc.go (what it does, which paper section it
// follows), a config struct with yaml tags, its defaults in the value
// Spec.Config returns (the config package holds none of them), and a
// Validate method (it sees the port: rate, buffer, queues, delay, rtt,
// timescale); the instance and the hooks it needs, its order (Spec.After,
// Spec.Before) if it reads what another mechanism sets, scratch bits and
// drop reasons if it needs them, a prometheus.Collector for its metrics,
// and, as it has state to show, a Viewer (view.go, by custom), a
// FlowLister, a RateFollower; and an init function calling Register. One
// blank import in mech/all adds it to gswitchd, one line in
// configs/reference.yaml lists its keys and defaults, and one row in the
// README's mechanisms table says what it does and needs; nothing in the
// dataplane, the traffic manager, the config loader or the metrics
// collector changes. A mechanism with frames of its own defines them in
// package wire (and docs/wire-formats.md). mech/ecn is a small example;
// docs/architecture.md walks through mech/sfc, file by file.
package mech
