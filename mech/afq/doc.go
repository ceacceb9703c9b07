// Package afq is Approximate Fair Queueing (Sharma et al., NSDI 2018,
// sections 3 and 5; seed 001) as a gswitch mechanism.
//
// AFQ approximates fair queueing with the few FIFO queues of a switch port.
// It has two halves:
//
//   - At admission (this package's Admit hook, on the port's egress worker),
//     each flow's bid number, the byte position of its last admitted byte in
//     an idealized bit-by-bit round robin, is kept in a count-min sketch
//     keyed by the 5-tuple hash. For a packet of flow f and size s:
//
//     bid   = max(sketch(f), current round x BpR) + s
//     round = bid / BpR
//
//     A packet N or more rounds ahead of the current round (N = the port's
//     queues) is dropped (round_overflow); otherwise its round goes into
//     p.Rank for the scheduler, and once the traffic manager has taken the
//     packet (Enqueued) each row's cell is raised to the new bid. A read is
//     the minimum over the rows, so collisions can only over-estimate a
//     flow's bid (section 3.2).
//
//   - Scheduling is the port's rsp scheduler (sched.RSP, rotating strict
//     priority, section 3.3): queue r mod N holds round r, and the current
//     round's queue is served until empty. The config requires
//     `scheduler: rsp` on every port where afq is enabled.
//
// With ecn_rounds K > 0, an ECN-capable packet K or more rounds ahead is
// marked CE (section 5, "ECN marking"), its IPv4 checksum updated
// incrementally.
//
// Hosts' reach: bids are per flow, so a host gets a share per flow it
// opens (AFQ is fair to flows, not hosts), and its many flows crowd the
// sketch for everyone (count-min only over-estimates). It cannot raise
// another host's flow's bids: the sketch is keyed (package
// internal/keyhash, a secret key per port) and mixes in the source address,
// so its flows share another host's cells only at random; only a host
// sending from that host's address could aim, and the source guard
// refuses that. It cannot set ranks: AFQ computes them. Packets too far
// ahead are dropped (gswitch_drops_total{reason="round_overflow"}).
//
// Config (per port, under mechanisms: afq:):
//
//	bytes_per_round: 1514      # BpR (64 B to 1 MiB)
//	sketch: {rows: 4, cols: 16384}   # count-min sketch (the paper's prototype: 4 x 16K)
//	ecn_rounds: 0              # 0 = no marking
//
// Metrics: gswitch_afq_ecn_marked_total{port}. The scheduler's current round
// is gswitch_rsp_round{port}.
//
// The 64-bit round: the RSP round never wraps, and bids are 64-bit byte
// counts, so a long-running port never falls into the state the first
// version reached after 2^32 rounds (every packet dropped as round
// overflow).
package afq
