// Package sfc is Source Flow Control (Le et al., seed 003: sections 3.1-3.4,
// 4 and Algorithm 1) as a gswitch mechanism: a switch whose egress queue
// grows past a threshold sends the senders of the packets arriving at it a
// Back-to-Sender (BTS) frame carrying the time the queue needs to drain, and
// the switch nearest those senders caches that pause, so later packets of
// other local senders to the same destination are paused at the first hop.
// SFC pauses sources only: it has no hop-by-hop backpressure and creates no
// cyclic buffer dependency, so it cannot deadlock.
//
// # Where Algorithm 1 runs
//
// The paper's Tofino2 pipeline puts the trigger at ingress, fed a binary
// "queue over Q_Th" signal from the traffic manager, and builds the BTS at
// egress. In gswitch the stage that sees a packet before the traffic
// manager together with the exact state of its egress queue is Admit, on
// the egress port's worker (docs/architecture.md): stages that need the
// egress port's state run there, so SFC's "ingress" is the Admit hook of the
// port the packet is headed to, and the depth it compares is exact
// (mech.PortView.Backlog), not a signal a few nanoseconds old. SFC declares
// that it runs after the mechanism that assigns the queues and the one that
// sets the ranks (Spec.After), so the queue it reads is the one the packet
// takes on a port that also runs BFC or AFQ. The BTS is built
// in the same step (with the depth the packet finds, the "latest" the
// egress builder of line 21 would read) and handed to the switch to route
// (mech.Routed), as the paper recirculates it so the routing tables pick
// its way back.
//
// The listing in the paper and its prose number lines differently
// (prose line 7 = listing 10, 10 = 13, 13 =
// 11, 16 = 21, 17 = 22, 18-19 = 23-24, 20 = 25). By listing line:
//
//	 1  cache[] <- 0                          cache.go: the switch-wide pause cache, key (IP, DSCP), value the
//	                                          pause end on the switch clock; bounded, entries expire
//	 2  SfcIngress(pkt):                      Control (a BTS from a fabric port) and Admit (every packet)
//	 3  if isValid(bts) and bts.cacheable     Control: wire.ParseBTS checks it (a BTS that does not parse is
//	                                          dropped, bad_bts); only cacheable BTS update the cache, and only
//	                                          at a switch with host ports (ToR-only caching)
//	 5  key <- [bts.src_ip]                   key (BTS source IP = the congested receiver, DSCP of the quoted
//	                                          header): section 4's (dstIP, dscp)
//	 6  cache[key] = max(cache[key],          cache.update: max, never lowered
//	       now + bts.pause_time)
//	 8  return                                a BTS never triggers a BTS: Admit puts every BTS on the control
//	                                          lane and returns, cacheable or not (the listing lets a
//	                                          non-cacheable BTS fall through to the data branch)
//	10  isCongested <- qd(queue) > Q_Th       Admit: PortView.QueueOf names the packet's queue, its exact
//	                                          Backlog is qd; a port without a rate has no Q_Th (no trigger)
//	11  cache_time = max(0, cache[dst]-now)   Admit: for packets of local senders (received on a host port)
//	                                          leaving by a port in mode ingress_cache; "max-ed" with the
//	                                          estimator's local_estimate (section 3.4) when it is on
//	12  if isCongested or cache_time > 0:
//	13    suppr <- bloom(5-tuple)             bloom.go: one filter per egress queue, test-and-set of the flow
//	                                          hash, epoch-salted, reset every bloom_reset (rtt/2)
//	14    if not suppr: mirror with meta      signal: the packet goes on unchanged (SFC never drops to signal)
//	16-17   meta = {queue_id, cache_time}     passed as arguments: the BTS is built at once
//	19  SfcEgress(mirror):
//	21  qd <- queueDepth(meta.queue_id)       the depth Admit read
//	22  buildBtsHeader: reverse src/dst IP    wire.BuildBTS: IPv4 from the original destination to the
//	                                          original source, UDP 19020 -> 19020, DSCP 48, the original
//	                                          IPv4 + L4 headers + 16 bytes quoted; sent on the control lane
//	23  pause = max(meta.pause_time,          max(cache_time, local_estimate, (qd - Q_Tg)/R), in microseconds
//	24              (qd - Q_Tg)/port_speed)   rounded up; flags from_cache / from_estimator when those won
//	25  cacheable = isServerFacing(queue)     the congested port is role host (and the pause is its own)
//
// Choices the paper leaves open (the spec's section 2.5):
//
//   - R is the port's rate, the whole of it, as the paper assumes ("this
//     traffic class is highest priority"), also under DRR with several
//     classes.
//   - A pause that comes out at zero is not sent (counted as drained). With
//     the trigger at Q_Th > Q_Tg it cannot happen for a queue-triggered BTS.
//   - The cache answers packets of local senders only: packets that arrived
//     on a host port of this switch and leave by a port in mode
//     ingress_cache. It is filled from cacheable BTS arriving on fabric ports
//     in mode ingress_cache, at switches that have host ports. A BTS from a
//     host port is forged and dropped by the switch before SFC sees it
//     (gswitch_control_forged_total), so a host can neither pause another
//     host nor fill the cache.
//   - A BTS is always forwarded to its sender; no switch consumes it (the
//     spec's SFC-P conversion to PFC is not built).
//   - The BTS's Ethernet source is the switch port it leaves by: on an L3
//     switch the routed emitter sets both MACs for the hop; on an L2 switch
//     the destination is the original source MAC, found in the learning
//     table, and the source the MAC of the port the packet came in on
//     (where that MAC was learnt, so where the BTS leaves). Never the
//     receiver's MAC.
//   - The trigger ablation "egress" (mode egress, the paper's "Egress BTS")
//     runs in the Dequeued hook: a packet leaving a queue still above Q_Th
//     triggers, with the depth it leaves behind, at most one BTS per
//     dequeued packet, suppressed by the same filter. It has no cache.
//   - The estimator keeps one DRE per configured destination per egress port
//     (estimator.go), tau = rtt, decay 7/8 every tau/8; local_estimate =
//     max(0, bytes - tau*R - Q_Tg)/R with R = estimator_rate and Q_Tg one BDP
//     at R.
//   - A pause is never longer than max_pause (default 256 rtt, see
//     MaxPauseFor for why not "a few rtt"): the congested port cuts the
//     pause it sends to its own, and a fabric port cuts what a BTS
//     arriving on it may set in the cache to its own (both counted,
//     gswitch_sfc_pause_capped_total). The BTS itself is forwarded as it
//     came; the sender's gsperf cuts it again (-max-pause).
//   - Only IPv4 TCP and UDP packets get a BTS: the frame format quotes an
//     IPv4 header, and the sender finds the flow to pause by the ports of
//     the quoted L4 header (ICMP, other protocols and non-first fragments
//     name no flow). Control messages of ours never do.
//
// # Hosts' reach
//
// What a host can and cannot do through SFC:
//
//   - It cannot send a BTS: from a host port a BTS is forged and dropped
//     (gswitch_control_forged_total{kind="sfc_bts"}).
//   - The switches send BTS about its own packets to their source address,
//     which the source guard holds to the host's own: it can have itself
//     paused, not another host (the guard counts the spoofed frames).
//   - By congesting a destination's port it has the switches pause the
//     other senders toward that destination, from the queue and, near
//     them, from the cache: that is SFC (every sender into a congested
//     receiver is paused), each time for at most max_pause
//     (pause_capped_total).
//   - It cannot aim at another flow's Bloom bits (to have its BTS
//     suppressed) or at another destination's cache bucket (to evict it):
//     the filter and the cache are keyed (package internal/keyhash; the
//     filter mixes in the flow's source address). Many flows or
//     destinations crowd them at random (bloom_flows,
//     cache_evictions_total), as heavy honest traffic does.
//   - The DSCP is part of the cache's key: a host that marks another DSCP
//     than the BTS's quote is not answered from the cache (the congested
//     switch's own BTS still reach it).
//
// # Config (per port, under mechanisms: sfc:)
//
//	mode: ingress_cache        # off | egress | ingress | ingress_cache (the ablations, one code)
//	rtt: 450us                 # T_F; BDP = rtt x the port's rate
//	q_th: 0                    # trigger threshold; 0 = 2 BDP
//	q_tg: 0                    # target depth; 0 = 1 BDP
//	bloom_reset: 0             # suppression period; 0 = rtt/2
//	bloom_bits: 4096           # bits of each queue's filter (a power of two)
//	bloom_hashes: 3
//	dscp: 48                   # DSCP of the BTS frames (CS6)
//	cache_entries: 32768       # the switch's cache (the largest value of its ports)
//	estimator: false           # the incast estimator (mode ingress or ingress_cache)
//	estimator_destinations: [] # IPv4 addresses it keeps an entry for
//	estimator_rate: 0          # the destinations' link rate; 0 = the port's
//	max_pause: 0               # longest pause in the port's BTS and cached from a BTS arriving on it; 0 = 256 x rtt
//
// Enable it on every port of a switch: the congested port triggers, the
// uplinks of a ToR answer from the cache, the host ports put BTS frames on
// their control lane.
//
// # Metrics
//
//	gswitch_sfc_bts_sent_total{port,source}        source: queue, cache, estimator
//	gswitch_sfc_bts_suppressed_total{port,reason}  reason: bloom, drained
//	gswitch_sfc_bts_failed_total{port}
//	gswitch_sfc_bts_received_total{port}           transit BTS arriving on a fabric port
//	gswitch_sfc_bts_forwarded_total{port}          BTS leaving on the port's control lane
//	gswitch_sfc_cache_hits_total{port}
//	gswitch_sfc_cache_updates_total{port}
//	gswitch_sfc_cache_entries, gswitch_sfc_cache_capacity
//	gswitch_sfc_cache_inserts_total, gswitch_sfc_cache_evictions_total, gswitch_sfc_cache_contended_total
//	gswitch_sfc_bloom_flows{port}, gswitch_sfc_bloom_flows_max{port}
//	gswitch_sfc_queue_peak_bytes{port}, gswitch_sfc_queue_depth_bytes{port} (histogram, per arrival)
//	gswitch_sfc_estimator_bytes{port,destination}
//	gswitch_sfc_port_info{port,mode,q_th_bytes,q_tg_bytes}
//	gswitch_sfc_pause_capped_total{port,direction}  direction: sent, received (cut to max_pause)
//	gswitch_sfc_max_pause_seconds{port}
//
// Forged BTS (from host ports) are counted by the switch:
// gswitch_control_forged_total{port,kind="sfc_bts"}.
//
// # Goroutines
//
// Admit, Dequeued and a port's Bloom filters and estimator belong to the
// port's egress worker; Control runs on the receiving worker of a fabric
// port; the cache is shared by all of them (lock-free, cache.go); counters
// are atomics that Collect reads from any goroutine, and Flows (gswitchctl
// flows) lists the cache's live entries, which any goroutine may read.
//
// A packet that caused a BTS carries SFC's scratch bit of pkt.Packet.Meta
// (registered with pkt.RegisterMeta).
package sfc
