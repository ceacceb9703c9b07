// Package tm is gswitch's traffic manager: the state of each port's egress
// and the decisions on it, between the ingress stages that chose a packet's
// egress port and the tx ring that puts it on the wire.
//
// # What it owns
//
// A Port is one switch port's egress:
//
//   - admission (Port.Admit), per packet: the Admit hooks of the port's
//     mechanisms, then the lane they chose, then, for data, the frame
//     budget (Frames: UMEM frames, since a frame takes a whole chunk
//     whatever its length) and the scheduler (bytes: the shared buffer,
//     the port's and the queues' limits); the mechanisms hear of each
//     outcome (Enqueued, Dropped);
//   - three lanes, served in this order: the control lane (frames the
//     switch emits; never paused), the credit lane (a Lane: a FIFO under a
//     token bucket of its own, whose LanePolicy a mechanism gives), and the
//     data scheduler (package sched, queues in package queues), whose
//     queues may be paused (Pause, Resume);
//   - the port's shaper (package tm/shaper), which every frame passes;
//   - the delay line (DelayLine), the wire of a port with a delay;
//   - the egress (Port.Send): what the shaper and the tx ring allow leaves
//     the lanes and the scheduler, data through the mechanisms' Dequeued
//     and Egress hooks; a port that goes down is flushed (Port.Flush);
//   - how long the port's worker may sleep (Port.SleepBound, or
//     Port.WakeBounds, which tells a frame's due time from a look again),
//     and the publication of depths for other goroutines (Port.Publish);
//   - the fidelity counters: line time the shaper and the credit lane's
//     meter lost (Port.LateNs, Port.CreditLateNs) and how late frames left
//     the delay line (Port.DelayErrors).
//
// The mechanisms' Admit, Enqueued, Dropped, Dequeued and Egress hooks are
// called here and nowhere else: admit.go and send.go.
//
// # Who calls it
//
// The dataplane runs the workers and moves frames: the worker that owns a
// port's egress hands the port's Port what arrives for it (Admit, ToLane,
// ToLanes) and asks it what to send (Send), once per batch. Everything in
// this package runs on that worker's goroutine except the methods marked
// any goroutine, which read what the egress worker published. A Worker
// holds what the decisions of one worker's ports share: its part of the
// frame budget, scratch, and the Sink through which the traffic manager
// gives back the frames it drops: the dataplane frees them and counts
// their reasons, a batch at a time.
//
// # Frames
//
// The traffic manager holds frames (addresses into the UMEM, as
// pkt.Packets) from admission until they go to the tx ring, onto the delay
// line, or to the Sink; it never frees a frame itself. A frame on a queue,
// a lane or the delay line belongs to the port's egress worker.
//
// # Where it stands
//
// Two of its parts are packages of their own on lower floors, not tm's
// subpackages: the queues (package queues) and the schedulers (package
// sched), because other packages need them without the traffic manager:
// package mech, below tm (a PortView reads a scheduler's exact backlog and the queue a packet
// takes; Check asks whether a scheduler orders by rank), package config (a
// scheduler's defaults are in its sched.Spec) and gsperf's simulation
// (perf/sim runs the schedulers with no switch). tm imports mech, to call
// the hooks and keep each port's PortView; the mechanisms import mech, not
// tm. The shaper serves only the traffic manager (and the dataplane, which
// builds the bucket of a rate change), so it is tm/shaper.
// docs/architecture.md ("The house") draws the floors.
//
// # Files
//
//	frames.go  Frames: the switch's frame budget, by worker range
//	worker.go  Worker: what one worker's ports share (its pending frame counts, scratch, the Sink)
//	lane.go    Lane: the credit lane, a FIFO under a token bucket, kept by a mech.LanePolicy
//	delay.go   DelayLine: the wire of a delayed link, and how late frames leave it
//	port.go    Port: its parts, Init, settings, what other goroutines may read, Publish
//	admit.go   admission: Admit, ToLane, ToLanes (the Admit, Enqueued and Dropped hooks)
//	send.go    what leaves: Send, Flush, SleepBound, WakeBounds (the Dequeued and Egress hooks)
package tm
