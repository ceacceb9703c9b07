// Package telemetry is in-band network telemetry (INT) for HPCC as a
// gswitch mechanism, named int in the config (Li et al., "HPCC: High
// Precision Congestion Control", SIGCOMM 2019, sections 3.2 and 4): as
// each gsperf data segment that carries an INT option leaves a port where
// int is enabled, the switch writes the port's record into the next slot
// its sender reserved. The receiver echoes the option in its ack and the
// sender computes each hop's utilization from two consecutive records:
// U = qlen / (rate x T) + txRate / rate, with
// txRate = (txBytes - txBytes') / (ts - ts'). The option's layout is
// package wire/gsperf's (int.go, and docs/wire-formats.md).
//
// # What a hop says
//
// Each record holds four values, as HPCC's switches push them when a
// packet is dequeued (the paper's section 4, and its simulator's
// SwitchNotifyDequeue):
//
//   - ts: when the segment starts on the port's line, switch clock, ns.
//     The traffic manager releases a batch of frames at once, all at the
//     batch's time (mech.Batch.Now); a line of the port's rate sends them
//     one after the other. So the first frame after an idle line is
//     stamped with the batch's time, and each later one with the time the
//     frame before it ends on a line of the port's rate (wire bytes x 8 /
//     rate, kept to the nanosecond without drift). Stamping every frame of
//     a batch with the batch's time would give two segments of a batch the
//     same ts and different txBytes: a sender dividing by the difference,
//     as HPCC's does on every ack, would see an infinite rate. With the
//     line's times, two segments back to back show exactly the port's
//     rate. A port with no rate stamps the batch's time.
//   - txBytes: the bytes the port had sent through its data path before
//     this segment (a uint64 that wraps), counted on every data frame that
//     leaves through the egress stage, INT or not, as bytes on the wire:
//     the frame padded to 60 bytes plus 24 of preamble, FCS and
//     inter-frame gap, as the port's shaper counts them, so that txRate /
//     rate is the line's utilization exactly. Frames of the control and
//     credit lanes (pauses, credits), which leave without the egress
//     hooks, are not counted.
//   - qlen: the bytes queued at the port that the segment leaves behind:
//     every data queue of the port (PortView.Total, exact on the egress
//     worker) plus the frames of the same batch that leave after it (on a
//     line they would still be waiting), the segment itself excluded, in
//     wire bytes as txBytes (the frames' bytes plus 24 per frame; a queued
//     frame shorter than 60 bytes counts short by its padding). HPCC's
//     switch reads the same: its port's bytes queued, all queues, after
//     the packet left.
//   - rate: the port's rate on this machine (PortView.RateBits, which
//     follows gswitchctl set rate), written in kbit/s. A port with no rate
//     (unlimited) writes 0: the switch knows no speed for its link, and
//     HPCC cannot use that hop (the sender must skip a hop of rate 0).
//     Under a timescale every value is the machine's: HPCC uses them only
//     in ratios, which the timescale leaves unchanged.
//
// # Which frames
//
// Only data segments (gsperf type 1) in whole UDP datagrams: the gsperf
// header found from the parse stage's L4 offset (gsperf.InUDP), magic and
// version 1, a consistent INT option within the header length and the
// frame (Header.INT), and a UDP length that covers the option and ends
// within the frame (the checksum covers the datagram: an option past it,
// or a datagram cut short or in fragments, is not one whose checksum the
// stage could keep right; gsperf never sends either). Acks, probes, CNPs,
// other UDP, TCP and non-IP frames, fragments and frames cut short are
// never touched. A segment whose slots are all written crossed more INT
// ports than its sender reserved for: it
// is left alone and counted (slots_full).
//
// # The UDP checksum
//
// Hosts send gsperf from kernel sockets with checksum offload off (the
// topology's ethtool settings), so the UDP checksum is set, over IPv4 as
// over IPv6. Writing a hop changes 26 bytes the checksum covers (the hop
// count and the slot), so the stage updates the checksum incrementally,
// from the old and new values of those words (RFC 1624, eqn. 3), and
// writes a result of 0 as 0xffff (RFC 768: 0 means no checksum). A
// checksum of 0 is left 0: over IPv4 it says the sender computed none
// (RFC 768), which stays true; over IPv6 it is not allowed (RFC 8200), and
// the receiver drops the datagram whatever the stage writes. The IPv4
// header is not touched (its length and checksum do not change).
//
// # Where it runs
//
// In the Egress hook, on the port's egress worker, once per batch. Not in
// Dequeued: it rewrites frames, which is Egress's contract (Dequeued
// hears); and it must see the batch as it will leave, after every other
// mechanism's Egress has dropped frames (PFC's watchdog) or grown them (BFC's
// upstream-queue tag, which also moves the L4 offset), so that txBytes
// counts what is sent, at its final length. The depth is no more exact in
// Dequeued: the whole batch has left the scheduler before either hook
// runs, which is why qlen adds the batch's later frames. int declares that
// it runs after every other mechanism of the switch (Spec.After), so on a
// port its Egress comes last, whatever the order of the config; a new
// mechanism with an Egress hook is added to that list (the order test
// fails until it is).
//
// The stage allocates nothing, takes no lock, and runs one pass over the
// batch's lengths and one over its packets; txBytes and the line's time
// belong to the egress worker, and the counters are published with one
// atomic add per batch.
//
// # Config
//
// Per port, under mechanisms: (no keys):
//
//	int: {}
//
// # Metrics
//
//	gswitch_int_hops_written_total{port}   INT records the port wrote into data segments
//	gswitch_int_slots_full_total{port}     data segments with an INT option whose slots were all written (left alone)
//
// gswitchctl queues shows the same counters and the port's tx_bytes.
package telemetry
