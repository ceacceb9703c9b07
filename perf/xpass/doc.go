// Package xpass is the host side of ExpressPass for gsperf (-mode xpass):
// the data receiver's credit sender with its feedback control, the host
// NIC's credit limiter, and the data sender that sends one segment per
// credit. Switches meter credits per port (mech/expresspass); hosts do the
// rest. The excerpt of the paper (seed 004) stops before the feedback loop
// and the host state machines; they follow the authors' simulator,
// ns2-xpass, xpass/xpass.cc:
//
//   - Receiver of data (Host, one per gsperf server): on XP_REQUEST a flow
//     starts sending credits at alpha x the maximum credit rate (link x
//     84/1622), w = w_init; before each credit the feedback control runs
//     (Feedback, at most once per RTT), and the gap to the next credit is
//     84 B / rate x (1 + U[-jitter, +jitter]). Credits carry a sequence
//     number and the sent time; data echoes both, so the receiver counts
//     credit loss from gaps in the echoed sequence and keeps an RTT EWMA.
//     XP_STOP stops the flow's credits. All flows' credits then pass the
//     host's NIC: a credit queue (8) drained by a token bucket of 2 credits
//     at link x 84/1622 (the NIC limiter of section 3.1, which protects the
//     receiver's own downlink). Naive mode sends every flow's credits at
//     the maximum rate, without feedback (the paper's section 2 scheme);
//     jitter 0 is the no-jitter ablation; both are the same code.
//   - Sender of data (Sender, one per flow): XP_REQUEST, sent again every
//     100 us (doubling, up to 10 ms) until a credit arrives; one segment (new, or a retransmission
//     of a lost one) per credit, echoing the credit's sequence and time in
//     the gsperf header's mechanism field; XP_STOP when nothing is left to
//     send (or when the credits of the last RTT cover what is left),
//     2 RTT in stop-sent, 1 RTT close-wait, XP_STOP again if credits still
//     come; credits that find nothing to send are wasted (counted).
//
// Reliability is gsperf's: the receiver acknowledges segments (in-order
// progress only every few segments), the sender retransmits what a later
// segment's ack or a timeout shows lost, on later credits.
//
// What each side takes from the network: a receiver (Host) keys every
// flow by its sender's address and port and the flow id, so an XP_STOP
// stops only a flow of its own sender (Stop reports a stop that names
// none, which gsperf counts), data echoes count only for the flow they
// come from (an echo of a credit never sent is counted, Flow.Invalid), and
// a request from anyone starts a flow whose credits go back to the
// requester, MaxFlows at most, each stopped IdleStop (or 50 RTTs) after
// its data stopped coming; an RTT sample above 10 s is not taken. A sender
// (Sender, over a socket connected to its receiver) is given datagrams of
// that receiver only and takes credits alone (perf/udp counts the rest).
// No ExpressPass message carries a duration.
//
// The types here are driven with the time and the packets that arrive, so
// they run over UDP sockets (perf/udp) and on a fake clock in tests. Each
// is used by one goroutine.
package xpass
