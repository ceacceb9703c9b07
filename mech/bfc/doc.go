// Package bfc is Backpressure Flow Control (Goyal et al., NSDI 2022; seed
// 000: sections 3.3.1 and 3.3.2, 4, 5, appendices B and C) as a gswitch
// mechanism: per-hop, per-flow backpressure between switches, with pause
// and resume frames on the wire.
//
// # Model
//
// Each switch assigns the active flows of an egress port to the port's
// queues so that, as long as there are fewer flows than queues, every flow
// has a queue of its own; it counts, per upstream queue, how many of that
// queue's packets are sitting in this switch above a threshold; and it tells
// the upstream hop to stop that one queue (PAUSE) when its count goes from 0
// to 1, and to restart it (RESUME) when it comes back to 0. The upstream hop
// is another BFC switch, which pauses exactly that queue of the port facing
// us, or a gsperf host in BFC mode, which pauses the flows it gave that
// queue id. The port's scheduler is DRR over the queues that are not paused
// (section 3.3.1); the config allows only `scheduler: drr`.
//
// Downstream (the hooks of the egress port, on its egress worker):
//
//   - Admit assigns the packet's queue (p.Queue; Spec.SetsQueue makes DRR
//     classify by it). assign: dynamic keeps a flow table of 100 x the
//     port's queues entries (flow_table), indexed by a keyed hash of the
//     5-tuple hash (see Hosts' reach); an entry holds its queue, the packets of its flows now in the
//     switch and when one last arrived or left. An entry with no packet and
//     not touched for the sticky time (2 HRTT) takes the first empty queue
//     at or after a rotating cursor (empty and not paused first), else a
//     random queue (section 3.3.1; the sticky rule of 3.3.2). Two flows on
//     one entry share its queue (a collision, counted). assign: stochastic
//     hashes flows onto the queues (SFQ); assign: single puts every flow in
//     queue 0, and a single-mode port counts all upstream queues of its
//     neighbour as one, queue 0: a per-port pause, as PFC (the paper's two
//     baselines of section 6.1 and Fig. 8).
//   - Admit then compares the queue's length before the packet (wire bytes:
//     frame + 24, what the shaper charges) with Th and marks the packet (a
//     scratch bit of pkt.Packet.Meta BFC registers) if it is above. Th =
//     HRTT x rate / N_active, HRTT the largest of the switch's BFC ports,
//     N_active the queues of the port with packets and not paused,
//     counting the packet's own; never below th_floor (two full frames: a
//     constant the paper leaves to the implementation, config.go); or a fixed th. A port with no
//     rate never pauses its upstream unless th is set.
//   - Enqueued raises the packet's pause counter, keyed by (ingress port,
//     upstream queue), and on 0 -> 1 sends a PAUSE out of the ingress port
//     (section 3.3.2). Counters live on the ingress port and are atomic:
//     several egress workers change them; the one whose Add returns 1 (or 0)
//     sends the frame, through its own emitter, onto the ingress port's
//     control lane.
//   - Dequeued and Dropped lower it for every marked packet that leaves,
//     sent, evicted or flushed, and on 1 -> 0 send a RESUME. A packet the
//     traffic manager refuses right after Admit (mech.PortView.Admitting)
//     was never counted (so drops leave the counters right; a port that
//     goes down drops its queues and resumes everything). The upstream
//     queue is resumed only once every packet that found its queue above
//     Th has left, however many flows it carried.
//   - Packets without an upstream queue (from a port where BFC does not
//     run, from a host that names none, non-IP frames) are queued but never
//     counted: backpressure toward them is elided.
//
// Upstream (Control, on the worker receiving on the port; the dataplane
// drops types 1-3 arriving on host ports as forged): PAUSE and RESUME
// pause and resume the named queue of the port the frame arrived on
// (Scheduler.Pause, an atomic bitmap); BITMAP sets every queue of the port
// as it says. Each queue follows the newest message about it (per-queue
// serial numbers, RFC 1982), so frames that two of the neighbour's workers
// sent and the wire reordered cannot undo a newer state. Frames naming a
// queue the port does not have are ignored and counted.
//
// Healing (section 3.3: "idempotent, resilient to packet loss"): while any
// counter of a port is above zero, and for two periods after the last one
// came back to zero, the port sends its neighbour a BITMAP of the upstream
// queues that must be paused every bitmap_period (4 x HRTT within [100us,
// 1ms]), so a lost PAUSE or RESUME is healed within one period. A port
// whose neighbour paused a queue and then refreshed it with no bitmap or
// pause for watchdog resumes it and counts it, as SONiC's PFC watchdog does
// (the paper leaves this out). The bound is 3 periods, but at least 200 ms:
// on a loaded host a switch process can lose its CPU for tens of
// milliseconds (we saw 53 ms on our shared 2-core machine), and a watchdog
// that fires then undoes pauses that are still needed. It must also be
// exceeded at two ticks with a pass of the worker in between, so frames
// that arrived while the worker had no CPU are read first.
//
// Tagging (section 3.3.2: "each upstream switch inserts its local queue
// number in a special header field called upstreamQ"): a data frame leaving
// a port whose peer is bfc carries the 4-byte upstream-queue tag (TPID
// 0x88B5, docs/wire-formats.md) with the queue it left from. Ingress on a
// BFC port removes the tag (the parser has read it into p.UpQ), so frames
// inside the switch are untagged and leave untagged toward hosts and ports
// that are not BFC. Egress hooks run only on ports where BFC is enabled: a
// tagged frame that comes in on a port without BFC keeps its tag unless it
// leaves through a BFC port (which rewrites or strips it); do not mix BFC
// and non-BFC neighbours that tag.
//
// Hosts (section 3.3.2, "source NIC"):
// on a host port (peer: host), Ingress reads the upstream queue from the
// gsperf header's mechanism field (upstreamQ, 12 bits; 0: the host gives
// none). gsperf -mode bfc (perf/bfc) gives every flow its own queue id,
// listens for 0x88B6 frames on an AF_PACKET socket in its namespace, pauses
// the flows of a paused id (id 0: all of them) and caps each flow's data
// in flight at one BDP. A host that names no queue (iperf3, gsperf in
// other modes) is never paused: the pause toward it is elided, which is the
// paper's "BFC - NIC" case (App. A.8): its queue at the first switch grows
// instead, and only a window of its own protects it.
//
// Deadlock (section 5, appendix B): pauses follow the (ingress, egress)
// pairs of an elision table. By default every pair may pause except an
// uplink to an uplink (ports marked uplink: true: toward a higher tier), so
// in a leaf-spine a packet that comes down from one spine and goes up to
// another never pauses its spine (up-down routing has no cyclic buffer
// dependency). pause_from on an egress port lists the ingress ports that
// may be paused for it instead. BFC's uplink key defaults to the port's own
// uplink key (ports[i].uplink, mech.PortInfo.Uplink); fabrics brought up by
// package topo set that on every port toward a higher tier (tiers counted
// from the switches with hosts), so a leaf-spine is up-down without a word
// in the file.
//
// # Hosts' reach
//
// What a host on a host port can and cannot do through BFC:
//
//   - It names its own upstream queue (the gsperf header's field, on a
//     port with peer host): its packets raise the counter of (its port,
//     that id), so the pauses it causes go out on its own link only. A tag
//     it puts on a frame is removed and not believed (tags_removed_total).
//   - It cannot send PAUSE, RESUME or BITMAP: the dataplane drops them from
//     host ports as forged (gswitch_control_forged_total); a port whose peer
//     is not bfc refuses them (not_peer_received_total), and queues the port
//     does not have are ignored (bad_queue_received_total).
//   - It cannot compute which of its flows share another flow's flow-table
//     entry, hence its queue: the table's index and the stochastic hash are
//     keyed (package internal/keyhash, a secret key per port). With more
//     active flows than the port has queues, flows share queues at random,
//     as they do for any busy host (flow_collisions_total,
//     assigned_total{how="random"}), and each flow lowers Th for all
//     (N_active). A host that knows another flow's whole 5-tuple can find a
//     5-tuple of its own with the same 32-bit flow hash and share that
//     flow's entry: no more than opening flows gives it.
//   - Its traffic's backpressure pauses upstream queues, with whatever
//     shares them: that is BFC's design (section 3.3.1), not a hole.
//   - No BFC frame carries a duration: a queue a neighbour paused and no
//     longer refreshes resumes after watchdog, at most a minute
//     (watchdog_resumes_total); gsperf hosts do the same (-bfc-watchdog)
//     and take pause frames only from their switch (perf/bfc).
//
// # Config (per port, under mechanisms: bfc:)
//
//	assign: dynamic      # dynamic, stochastic or single
//	peer: ""             # bfc (default on fabric ports), host (default on host ports) or none
//	hrtt: 0              # the link's one-hop RTT; 0 = 2 x the port's delay + 2 x budget
//	budget: 25us         # one switch or host traversal, for the default hrtt
//	th: 0                # fixed pause threshold in bytes; 0 = HRTT x rate / N_active
//	th_floor: 3028       # the least Th
//	sticky: 0            # 0 = 2 x HRTT
//	bitmap_period: 0     # 0 = 4 x HRTT within [100us, 1ms]
//	watchdog: 0          # 0 = 3 x bitmap_period, at least 200ms
//	flow_table: 0        # 0 = 100 x queues
//	uplink:              # toward a higher tier: uplink -> uplink never pauses (default: the port's uplink key)
//	pause_from: []       # ingress ports that may be paused for this port (replaces the uplink rule)
//
// # Metrics
//
// gswitch_bfc_{pauses,resumes,bitmaps}_sent_total{port} (the port the
// frame went out of), gswitch_bfc_{pauses,resumes,bitmaps}_received_total,
// gswitch_bfc_{stale,bad_queue,malformed,not_peer}_received_total,
// gswitch_bfc_paused_queues{port} (queues of the port paused by its
// neighbour), gswitch_bfc_counters_active{port} (upstream queues of the
// port's neighbour paused now), gswitch_bfc_over_threshold_total,
// gswitch_bfc_flow_table_{size,entries}, gswitch_bfc_flow_collisions_total,
// gswitch_bfc_sticky_total, gswitch_bfc_sticky_reuse_total,
// gswitch_bfc_assigned_total{how}, gswitch_bfc_watchdog_resumes_total,
// gswitch_bfc_threshold_bytes, gswitch_bfc_threshold_floor_bytes,
// gswitch_bfc_hrtt_seconds, gswitch_bfc_emit_failed_total,
// gswitch_bfc_tagged_total, gswitch_bfc_tags_removed_total,
// gswitch_bfc_host_queue_total, gswitch_bfc_pause_underflows_total (0
// unless there is a bug), and per queue
// gswitch_bfc_queue_byte_seconds_total{port,queue} (the integral of the
// queue's length: its rate of increase is the mean queue) and
// gswitch_bfc_queue_watermark_bytes{port,queue} (the highest length since
// the previous scrape, cleared on read).
//
// # Goroutines
//
// A port's flow table, queue lengths and bitmap timer belong to its egress
// worker; pause counters (per ingress port) and the upstream state (per
// port) are atomics touched by any worker; Collect and the Stats, Counter
// and Period accessors read atomics only. Nothing on the packet path
// allocates or locks (TestHotPathDoesNotAllocate).
package bfc
