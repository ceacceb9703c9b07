// Package ecn is ECN marking at a port's queues as a gswitch mechanism,
// in one of two modes: step (the default), DCTCP's step marking
// (Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010, section
// 3.1), or red, RED's probabilistic marking (Floyd and Jacobson, "Random
// Early Detection Gateways for Congestion Avoidance", IEEE/ACM ToN 1993)
// as DCQCN's switches run it (Zhu et al., "Congestion Control for
// Large-Scale RDMA Deployments", SIGCOMM 2015, section 3).
//
// # Step marking
//
// A packet arriving at a queue that holds more than K (the instantaneous
// depth, not an average) is marked Congestion Experienced, if it is
// ECN-capable (ECT(0) or ECT(1)): the ECN field of its IPv4 or IPv6 header
// is set to CE, and the IPv4 header checksum updated incrementally
// (pkt.MarkCE, RFC 1624). Packets that are not ECN-capable are left alone
// and go on: step marking only marks, it never drops (counted as
// not_capable); a packet already CE stays so. The depth compared is the
// exact depth of the queue the packet takes, in bytes (k) or in packets
// (k_packets), before the packet joins it.
//
// The comparison runs in the Admit hook, on the port's egress worker, with
// the port's PortView: QueueOf names the packet's queue and Backlog gives
// its depth now. The queue is the one the packet takes only once the
// mechanism that assigns the queues (BFC) and the one that sets the ranks
// (AFQ's calendar rounds) have run, so ecn declares it runs after them
// (Spec.After: mech.QueueSetter, mech.RankSetter): on a port with BFC it
// reads the queue BFC assigned, whatever the order of the config.
//
// A mark is counted once the traffic manager has taken the packet (the
// Enqueued that answers the Admit, mech's admission contract): a marked
// packet the buffer then refuses is not counted.
//
// # K
//
// DCTCP's guideline is K > C x RTT / 7 (section 3.4: the least threshold
// that keeps a link of capacity C busy under synchronized flows of round
// trip RTT). With neither k nor k_packets set, K is that bound, C the
// port's rate and RTT the rtt key (by default the port's own rtt, 200 us
// unless the port says otherwise), but never below two full frames
// (3028 B): below that a port whose senders are paced at the line rate
// would mark the frame that waits behind the one on the wire. The paper's
// experiments ran K = 20 packets at 1 Gbit/s and 65 at 10 Gbit/s, above the
// bound, for burst tolerance: set k or k_packets for that. A port with no rate
// has no default: set k or k_packets. A derived K follows a change of the
// port's rate (gswitchctl set rate); a K that is set stays.
//
// Config (per port, under mechanisms: ecn:):
//
//	mode: step     # step (also when absent) or red
//	k: 0           # threshold in bytes; 0 = from the rate and rtt, as above
//	k_packets: 0   # threshold in packets instead (set at most one of k, k_packets)
//	rtt: 0         # the RTT of the default K; 0 = the port's rtt
//
// # RED marking (mode: red)
//
// Each IP data packet is compared, in Admit as in mode step, on the queue
// it takes, before it joins it: RED computes avg, the queue's averaged
// depth, and then, with avg below kmin, does nothing; with avg in
// [kmin, kmax), marks the packet CE with probability
// p_b = pmax x (avg - kmin) / (kmax - kmin); with avg at or above kmax,
// always marks it. A packet chosen that is ECN-capable is marked CE as in
// mode step (checksum updated); one already CE stays so and counts as
// marked; one that is not ECN-capable is dropped, as RED drops without
// ECN (drop reason red, counted in gswitch_ecn_red_dropped_total and in
// gswitch_ecn_not_capable_total: in both modes not_capable counts the
// packets chosen for a mark that could not take one, and in mode red
// every one of them is a RED drop). The probability is RED's plain p_b:
// neither the count since the last mark that spaces marks out
// (p_a = p_b / (1 - count x p_b)) nor "gentle" RED's ramp above kmax.
//
// The average: with weight 0 (the default) avg is the instantaneous
// depth, as DCQCN's switches compare it. With weight w_q in (0, 1), avg
// follows RED's update on each arrival (Floyd and Jacobson, Fig. 2):
// avg += w_q (q - avg) if the queue q holds packets; if it is empty,
// avg *= (1 - w_q)^m, where m is the number of small packets (500 B,
// IdlePacket, ns-2's mean packet size for RED) the port could have sent
// at its rate since the queue went empty. The queue goes empty when a
// batch leaves it (the Dequeued hook, which ecn has only on a switch
// where some port averages); a queue emptied otherwise (flushed when the
// port went down, evicted) counts as idle since its last arrival. Each
// queue of the port has its average, updated only by arrivals at it. A
// port without a rate has no transmission time to count idle time in:
// weight > 0 needs the port's rate (the config refuses it otherwise, and
// gswitchctl set rate refuses to make such a port unlimited); weight 0
// needs none.
//
// The draws come from a PCG generator per port (math/rand/v2), owned by
// the port's egress worker (no lock, no allocation), seeded from
// crypto/rand when the switch starts: hosts cannot choose the seed, and
// their packets only advance the generator, one draw per arrival in the
// band between kmin and kmax.
//
// Config of mode red (per port, under mechanisms: ecn:):
//
//	mode: red
//	kmin: 0          # lower threshold in bytes; 0 = 5KB (or kmin_packets)
//	kmax: 0          # upper threshold in bytes; 0 = 200KB (or kmax_packets); below the port's buffer
//	kmin_packets: 0  # lower threshold in packets instead of kmin
//	kmax_packets: 0  # upper threshold in packets instead of kmax
//	pmax: 0          # the marking probability at kmax, in (0, 1]; 0 = 0.01
//	weight: 0        # RED's EWMA weight w_q, in [0, 1); 0 = the instantaneous depth
//
// kmin must be below kmax; each threshold is set in bytes or in packets,
// not both, and both in the same unit (the defaults are in bytes, so a
// port with thresholds in packets sets both). The defaults are DCQCN's:
// Kmin = 5 KB, Kmax = 200 KB, Pmax = 1%, on the instantaneous queue, the
// values its paper gives for its 40 Gbit/s switches; they are not scaled
// by the port's rate. Floyd and Jacobson's simulations run w_q = 0.002.
// Mode step's keys (k, k_packets, rtt) are refused in mode red, and mode
// red's in mode step.
//
// # Metrics
//
//	gswitch_ecn_marked_total{port}          packets marked CE and queued (mode red: also CE packets chosen)
//	gswitch_ecn_not_capable_total{port}     packets chosen for a mark that were not ECN-capable (step: left unmarked; red: dropped)
//	gswitch_ecn_threshold_bytes{port}       K in bytes (mode step, ports whose K is in bytes)
//	gswitch_ecn_threshold_packets{port}     K in packets (mode step, ports with k_packets)
//	gswitch_ecn_queue_packets{port}         histogram: depth (packets) of its queue each IP data packet found on arrival
//	gswitch_ecn_red_dropped_total{port}     mode red: packets chosen that were not ECN-capable, dropped
//	gswitch_ecn_red_kmin_bytes{port}        mode red: kmin and kmax in bytes (or _packets: in packets)
//	gswitch_ecn_red_kmax_bytes{port}
//	gswitch_ecn_red_average_bytes{port,queue}  mode red: avg at the queue's last arrival, in bytes
//	                                        (or _packets), for the queues that have had one
//
// The averages are what the egress worker published at each arrival
// (an atomic store): reading them takes no lock on the packet path.
package ecn
