// Package ecn is ECN marking at a port's queues as a gswitch mechanism:
// DCTCP's step marking (Alizadeh et al., "Data Center TCP (DCTCP)",
// SIGCOMM 2010, section 3.1).
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
//	k: 0           # threshold in bytes; 0 = from the rate and rtt, as above
//	k_packets: 0   # threshold in packets instead (set at most one of k, k_packets)
//	rtt: 0         # the RTT of the default K; 0 = the port's rtt
//
// # Metrics
//
//	gswitch_ecn_marked_total{port}          packets marked CE and queued
//	gswitch_ecn_not_capable_total{port}     packets above K that were not ECN-capable (left unmarked, not dropped)
//	gswitch_ecn_threshold_bytes{port}       K in bytes (ports whose K is in bytes)
//	gswitch_ecn_threshold_packets{port}     K in packets (ports with k_packets)
//
// The package is named for ECN marking in general: RED's marking (a
// probability that grows with an averaged depth) may join it as another
// mode.
package ecn
