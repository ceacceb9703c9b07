// Package transport is gsperf's message transport over datagrams: a sender
// and a receiver per flow, driven by the caller with the time and the
// packets that arrive, so the same code runs over UDP sockets (cmd/gsperf)
// and over an in-memory lossy link (the tests, on a fake clock).
//
// # Modes
//
//   - Plain: a window-based sender with slow start, additive increase,
//     fast retransmit on three duplicate acks, and retransmission on timeout.
//   - PFabric: the host side of pFabric (Alizadeh et al., section 4.2). Each
//     segment carries the flow's remaining size as its priority; the flow
//     starts with a window of one bandwidth-delay product; acks are
//     selective (each ack names the segment it acknowledges) and increase
//     the window additively; there is no fast retransmit: losses are found
//     only by a small fixed timeout, after which the window restarts at one
//     segment (ssthresh = half the window); after MaxTimeouts consecutive
//     timeouts the flow enters probe mode, sending a one-byte probe every
//     timeout until one is acknowledged, then slow start again.
//   - DCTCP: the plain sender, whose datagrams the caller sends ECN-capable,
//     cutting its window by the extent of the congestion the receiver
//     echoes (Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010,
//     section 3; dctcp.go).
//   - HPCC: the plain sender's loss recovery under HPCC's window and
//     rate, computed on every ack from the in-band telemetry its data
//     segments collect and its receiver echoes (Li et al., "HPCC: High
//     Precision Congestion Control", SIGCOMM 2019, Algorithm 1; hpcc.go).
//     Each data segment reserves INT slots after the fixed header
//     (wire/gsperf's INT option); every receiver copies the option of a
//     segment into its ack (Receiver.OnPacketINT), whatever its flow's
//     mode, so a plain server serves HPCC senders.
//   - DCQCN: a rate-based sender (Zhu et al., "Congestion Control for
//     Large-Scale RDMA Deployments", SIGCOMM 2015, section 3.1;
//     dcqcn.go), whose datagrams the caller sends ECN-capable: it starts
//     at line rate, cuts its rate on each CNP a receiver sends for CE
//     segments (Receiver.SendCNPs) and raises it again by a timer and a
//     byte counter; the plain sender's loss recovery runs underneath, in
//     a fixed window.
//
// # Extending the sender
//
// Whether the sender may transmit at all is asked of its Gate before every
// segment. The default gate always says yes; Pacer (a host's line rate) is
// one; SFC's Back-to-Sender pause, ExpressPass credits and BFC's per-queue
// pause are gates too, set with Sender.Gate, without touching the window
// logic.
//
// A Sender or Receiver is used by one goroutine.
package transport
