// Package pfc is priority flow control (IEEE 802.1Qbb, PFC) as a gswitch
// mechanism: the hop-by-hop, per-priority pause that lossless Ethernet
// fabrics (RoCE) run, and the baseline BFC's paper compares with (seed
// 000, sections 2 and 6: "if the packets from a particular input port
// start building up at a congested switch (past a configurable threshold),
// the switch sends a pause frame upstream, stopping that input").
//
// # Model
//
// Priority. A packet's priority (0-7) is read from its DSCP (priority_from:
// dscp, the default, through dscp_map, by default DSCP >> 3) or from the
// PCP of its 802.1Q tag (priority_from: pcp; untagged frames are priority
// 0), by the settings of the port it came in on (the trust setting of a
// switch's ingress interface); a packet from a port where PFC does not run
// takes the egress port's settings. The egress port's queue_map gives the
// priority's queue (default priority p -> queue p mod the port's queues):
// PFC assigns the queues (Spec.SetsQueue, so the scheduler classifies by
// the queue it sets, classify: queue), in Admit, as BFC does. With the prio
// scheduler, queue 0 is served first: map the priorities with queue_map to
// serve them in another order. fifo has one queue: every priority shares
// it, and a pause of any stops the port (802.3x, per port).
//
// Ingress accounting. Each port counts, per priority, the bytes of the
// packets that came in on it and are held in any egress queue of this
// switch (held_bytes): a packet of a lossless priority (priorities,
// default all eight) adds its frame's length when an egress queue takes it
// (Enqueued) and takes it off when it leaves it (Dequeued, or Dropped
// after it was queued: evicted, flushed), as BFC's upstream counters do;
// a scratch bit of pkt.Packet.Meta marks the packets counted. The counts
// are atomics: egress workers of every port change them. The egress
// port's hooks keep them, so enable PFC on every port lossless traffic
// crosses: bytes queued at a port without PFC are not counted (and
// packets that came in on a port without PFC are never counted).
// Packets of a priority that is not lossless on their ingress port are
// queued as the others but never counted: that port never pauses them.
//
// Sending. When a priority's count rises above xoff, the port sends its
// upstream neighbour a PFC frame pausing that priority for pause_quanta
// (default 65535) quanta of 512 bit times at the port's rate; while it
// stays above xon the port refreshes the pause every half pause time, so
// it never runs out; when it falls to xon the port sends a zero time for
// the priority, which resumes it at once. One frame carries every change
// and refresh due (its class-enable vector names them). All of a port's
// frames go out from its own egress worker, which decides them from the
// counts, so they leave in the order of its decisions: a hook on another
// worker that sees a count cross a threshold only asks for that worker's
// tick (Switch.TickSoon). Frames leave on the port's control lane, which
// no pause stops. PFC frames go to hosts as well, whose NICs honour them
// in a RoCE fabric.
//
// Receiving. A PFC frame arriving on a port where PFC runs (the dataplane
// hands MAC control frames, EtherType 0x8808, to the mechanism that claims
// wire.TypePFC, from host ports too: hosts' NICs send PFC in RoCE fabrics)
// pauses the egress queues its enabled priorities map to (of the lossless
// ones) for the time it gives, quanta x 512 bit times at the port's rate
// from its arrival, replacing the time left; a zero time resumes them. The
// pause acts at once (Scheduler.Pause, as BFC's); its end is the egress
// worker's: its tick resumes the queues no pause holds any more at the
// earliest expiry, and a zero time received on that worker resumes them at
// once (on another worker, at that worker's next pass). 802.3x PAUSE
// (opcode 0x0001) and PFC frames on ports where PFC does not run are
// dropped as link_local, as on a switch without PFC, and counted; frames
// that do not parse are dropped as malformed. MAC control frames to any
// destination but PFC's group (01:80:C2:00:00:01) never reach PFC: the
// switch drops them as link_local, with or without PFC (a bridge never
// relays MAC control, so no host can pause another's NIC through it).
//
// Times. The rate is the port's rate on this machine, and the delay of
// its link, already scaled by the timescale K: quanta are bit times at the
// link's rate, so a frame means the same on both ends of a link at any K
// (the fabric's time x K here). A port needs a rate. One pause lasts at
// most MaxPause (a minute: 65535 quanta at 1 kbit/s would be over nine
// hours), and pause ends saturate at the clock's end; a pause of one
// quantum is never rounded to 0 (a resume).
//
// # Thresholds
//
// headroom (default 2 x link delay x rate + 2 x MTU + response x rate) is
// what may still arrive for a priority after its count crosses xoff: the
// link's round trip of data while the pause goes up, the frame the
// upstream is sending when the pause arrives and the one this port is
// sending when it decides (neither can be cut), and what the upstream
// sends while the two switches act (response, default 25us: one traversal
// of a software switch, BFC's budget; this machine's time, not scaled by
// K). MTU is 1514 bytes: set headroom where jumbo frames run. xoff
// defaults to the headroom and xon to xoff - 2 x MTU: then xon holds about
// a round trip of the link, so an egress port keeps sending while a
// resume goes up and the upstream's data comes back. A port whose buffer
// cannot hold xoff + headroom is refused. These are static thresholds:
// the paper's baseline (after HPCC's) pauses when an input holds 11% of
// the free buffer; set xoff to size it so.
//
// One lossless priority of one ingress port holds at most xoff + headroom
// (2 x headroom by default) in the switch: a packet that would take its
// count past that is dropped at admission (pfc_headroom, counted in
// headroom_drops_total for the ingress port and priority), as switches do
// when a priority's headroom is exhausted. An upstream that honours its
// pauses never meets the cap; one that ignores them (a broken or hostile
// NIC) is held to it instead of filling the shared buffer.
//
// pause_quanta must last, at the port's rate, at least 4 x the time a
// frame this port sends takes to act at the neighbour (response + the
// link's delay + one MTU at the rate): the port refreshes a pause at half
// its time, and a shorter pause would run out before its refresh arrives,
// letting the upstream send between them. A config (or a change of the
// port's rate) that breaks this is refused, naming the least pause_quanta
// that does.
//
// # Watchdog
//
// As switch vendors ship it (SONiC's pfcwd, Junos): a priority that stays
// paused for watchdog (default 200 ms, fabric time) without a break while
// a queue it maps to holds packets is taken for a storm (a stuck NIC, a
// deadlock): its pauses are ignored (its queues resume; counted in
// watchdog_trips_total and ignored_received_total) and, with
// watchdog_action: drop (the default, as SONiC's), its packets at the port
// are dropped (pfc_watchdog) instead of sent; once no pause for it came for
// watchdog_restore (default 200 ms) its pauses are honoured again. 200 ms
// and 200 ms are SONiC's pfcwd defaults; Junos also detects after 200 ms
// (two 100 ms polls) and restores after 200 ms. watchdog: 0 turns it off.
//
// A break is a time of watchdog/4 (50 ms by default) or more with no pause
// in force: a shorter one (a zero time, or a pause that ran out, then a
// new pause) does not end the priority's run of pauses, which the watchdog
// times from its first pause. Else a neighbour that sent a zero time and
// paused again just before each trip would hold the queue paused for good;
// now it must leave the priority resumed for watchdog/4 after each pause
// of under watchdog. The price: a priority a congested neighbour pauses
// and resumes over and over (XOFF, XON, XOFF) with breaks under
// watchdog/4, for watchdog in all while its queue holds packets, trips as
// a priority paused without a break would. The run is the port's egress
// worker's own: it begins when that worker first sees a pause in force
// after none, so no other worker's stores can pair a new pause with an
// old start.
//
// # Deadlock and congestion spreading
//
// PFC pauses a whole priority of a link, whatever flows it carries and
// wherever they go: a congested egress port pauses every input that
// feeds it, and the flows on those inputs bound for other, idle ports
// stop too (head-of-line blocking, section 2 of the paper). Their packets
// then build up at the upstream switch, which in turn pauses its own
// inputs: the pause spreads hop by hop toward the sources, a congestion
// tree. Where the buffer dependencies form a cycle (a routing loop, a
// detour or a failover path out of up-down order, a ring), the pauses can
// hold each other forever: a deadlock, which lasts after the traffic that
// caused it has stopped. This mechanism does nothing to prevent it: no
// elision of pauses along cyclic dependencies, as BFC's (appendix B, after
// Tagger) does; it only has the watchdog, which breaks a deadlock by
// dropping (or sending anyway) after watchdog. That is the paper's point
// against PFC, and why BFC pauses per flow and elides pauses that would
// close a cycle.
//
// # Config (per port, under mechanisms: pfc:)
//
//	priority_from: dscp     # dscp or pcp
//	dscp_map: {}            # DSCP -> priority overrides (default DSCP >> 3)
//	queue_map: {}           # priority -> this port's queue (default p mod queues)
//	priorities: [0, 1, 2, 3, 4, 5, 6, 7]  # the lossless priorities (default all)
//	xoff: 0                 # bytes; 0 = headroom
//	xon: 0                  # bytes; 0 = xoff - 2 x 1514
//	headroom: 0             # bytes; 0 = 2 x delay x rate + 2 x 1514 + response x rate
//	pause_quanta: 65535     # the pause time sent, in 512-bit-time quanta (at least 4 x (response + delay + MTU) at the rate)
//	response: 25us          # wall clock, for the default headroom
//	watchdog: 200ms         # 0 = off
//	watchdog_restore: 200ms
//	watchdog_action: drop   # drop or forward
//
// # Metrics
//
// gswitch_pfc_{frames_sent,emit_failed,frames_received,malformed_received,
// other_opcode_received,not_enabled_received,held_underflows}_total{port},
// gswitch_pfc_{pauses_sent,refreshes_sent,resumes_sent,pauses_received,
// resumes_received,ignored_received,watchdog_trips,watchdog_restores,
// watchdog_drops,headroom_drops}_total{port,priority},
// gswitch_pfc_paused_seconds_total{port,priority} (time the neighbour had
// the priority paused), gauges gswitch_pfc_held_bytes{port,priority} (the
// ingress count), gswitch_pfc_upstream_paused{port,priority},
// gswitch_pfc_paused{port,priority}, gswitch_pfc_watchdog_storm{port,priority},
// gswitch_pfc_{xoff,xon,headroom}_bytes{port}. The switch also counts the
// PFC frames received and sent per port with kind="pfc"
// (gswitch_control_received_total, gswitch_emitted_total).
//
// # Goroutines
//
// The counts (per ingress port and priority) and the received pauses are
// atomics any worker touches; the counts, which every egress worker
// writes per packet, sit on cache lines of their own. What a port last
// sent, when it refreshes and the watchdog's runs of pauses belong to its
// egress worker, which also runs its timers. A pause stores its start
// before it publishes its end, and readers load the end first, so the
// paused time never pairs one pause's end with another's start. Nothing
// on the packet path allocates or locks (TestHotPathDoesNotAllocate).
package pfc
