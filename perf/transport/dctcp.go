package transport

import "github.com/gswitch/gswitch/perf/proto"

// DCTCP's sender (Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM
// 2010, section 3.1; RFC 8257 where the paper leaves a detail open). The switches mark CE on ECN-capable packets that find their queue
// above K (mech/ecn); the receiver echoes each segment's mark on the ack of
// that segment (FlagECE); the sender estimates the fraction of its bytes
// that are marked, alpha, and cuts its window in proportion to it, once
// per window of data, instead of halving it.
//
// The receiver's echo. The paper's receiver (section 3.1) runs a
// two-state machine so that its delayed acks still tell the sender exactly
// which bytes were marked; with one ack per segment (m = 1) the machine
// reduces to echoing each segment's own mark on its ack, which is what a
// gsperf receiver does (Receiver.OnPacketCE).
//
// The estimate (paper section 3.1, RFC 8257 section 3.3). Once per window
// of data, alpha = (1 - g) x alpha + g x F, where F is the fraction of the
// bytes acknowledged in that window whose segments were marked. A window
// (RFC 8257's observation window) ends with the first ack whose
// cumulative acknowledgment passes WindowEnd, the next byte to send when
// the window began: it has then acknowledged a byte sent after the
// window's start, about one round trip later. The first window ends with
// the first ack that acknowledges any byte: WindowEnd starts at 0, the
// first byte of the flow (RFC 8257 initializes it to SND.UNA, Linux to
// SND.NXT, which at a connection's start are that byte).
//
// RFC 8257 counts a window's bytes from the cumulative acknowledgment
// (ignoring SACK), marking all the bytes an ECE ack acknowledges, because
// a TCP ack's ECE speaks for every byte it covers. A gsperf ack names one
// segment and its ECE is that segment's own mark, so the count here is per
// segment: each segment's bytes are counted once, when it is first
// acknowledged (by its own ack, or by a cumulative one), and are marked
// when its own ack, arriving first, echoed CE. A segment acknowledged only
// cumulatively (its own ack lost or late) counts as unmarked.
//
// The cut (paper section 3.1, RFC 8257 section 3.3). On an ack that echoes
// a mark, cwnd = cwnd x (1 - alpha/2), with the alpha this ack may just
// have updated (RFC 8257 updates alpha before it cuts), and ssthresh = the
// new cwnd: the sender continues in congestion avoidance, so a mark in
// slow start ends slow start. The ack that cuts does not also grow the
// window. The window is cut at most once per window of data (RFC 3168
// section 6.1.2, which RFC 8257 section 3.3 keeps): after a cut, further
// echoes are ignored until an ack acknowledges a byte sent after the cut.
// A loss response (three duplicate acks, a timeout) opens such a window
// too, so one round trip of congestion is not answered twice.
//
// The cut never takes cwnd below two segments (and leaves a window already
// smaller as it is): the floor the plain sender's loss response keeps for
// ssthresh (RFC 5681's 2 x SMSS), and the floor of Linux's dctcp_ssthresh
// (two segments): DCTCP answers a mark more gently than TCP answers a
// loss, never more harshly. Since alpha is at most 1, a window of four
// segments or more is never cut to the floor.
//
// Loss is answered as the plain sender answers it (paper section 3.1:
// recovery from loss is left unchanged; RFC 8257 section 3.5): fast
// retransmit halves the window, a timeout restarts it at one segment.

// DefaultDCTCPG is DCTCP's gain g: 1/16, the value of the paper's
// experiments, and the default of Linux's dctcp (dctcp_shift_g = 4,
// g = 1/2^4). The paper's section 3.4 bounds it from above:
// g < 1.386 / sqrt(2 (C x RTT + K)), C x RTT and K in packets.
const DefaultDCTCPG = 1.0 / 16

// dctcp is a DCTCP sender's state.
type dctcp struct {
	g     float64
	alpha float64
	// The observation window: it ends at the first ack after which
	// una > windowEnd; acked and marked count its bytes.
	windowEnd     uint64
	acked, marked uint64
	cutting       bool   // the window was cut in this window of data ...
	cutEnd        uint64 // ... which ends once una > cutEnd
	byMark        bool   // ... and the cut was a mark's (not a loss response)
}

func newDCTCP(g float64) *dctcp {
	// alpha starts at 1, as RFC 8257 section 3.3 initializes it and as
	// Linux's dctcp_alpha_on_init defaults (DCTCP_MAX_ALPHA): the first
	// marks, before anything is known, cut the window as TCP would (by
	// half).
	return &dctcp{g: min(g, 1), alpha: 1}
}

// Alpha is DCTCP's estimate of the fraction of this flow's bytes the
// switches mark (from 0 to 1; 1 before the first window ends); 0 for a
// sender in another mode.
func (s *Sender) Alpha() float64 {
	if s.dc == nil {
		return 0
	}
	return s.dc.alpha
}

// onAck takes an ack of the sender's flow after the scoreboard was updated:
// named is the bytes of the segment the ack names, if this ack is the
// first to acknowledge it (0 otherwise), more the bytes of other segments
// its cumulative acknowledgment acknowledged for the first time. It
// updates alpha, cuts the window if the ack echoes a mark, and reports
// whether it cut.
func (d *dctcp) onAck(s *Sender, h proto.Header, named, more int) bool {
	ece := h.Flags&proto.FlagECE != 0
	marked := 0
	if ece {
		s.ECEAcks++
		marked = named
	}
	d.observe(uint64(named+more), uint64(marked), s.una, s.nxt)
	if d.cutting && s.una > d.cutEnd {
		d.cutting = false
	}
	if !ece || d.cutting {
		return false
	}
	mss := float64(s.cfg.MSS)
	s.cwnd = min(s.cwnd, max(s.cwnd*(1-d.alpha/2), 2*mss))
	s.ssthresh = s.cwnd
	s.Reductions++
	d.cutting, d.cutEnd, d.byMark = true, s.nxt, true
	return true
}

// observe counts acked bytes, marked of them, acknowledged by an ack after
// which the cumulative acknowledgment is una and the next byte to send
// nxt; if una passed windowEnd, the observation window ends: alpha takes
// its fraction of marked bytes and the next window begins.
func (d *dctcp) observe(acked, marked, una, nxt uint64) {
	d.acked += acked
	d.marked += marked
	if una <= d.windowEnd {
		return
	}
	if d.acked > 0 { // a window in which no byte was acknowledged for the first time says nothing
		f := float64(d.marked) / float64(d.acked)
		d.alpha = (1-d.g)*d.alpha + d.g*f
	}
	d.windowEnd = nxt
	d.acked, d.marked = 0, 0
}

// lossCut notes that the loss response cut the window with nxt the next
// byte to send: marks echoed before an ack acknowledges a byte from nxt on
// are of the same round trip, and do not cut it again.
func (d *dctcp) lossCut(nxt uint64) { d.cutting, d.cutEnd, d.byMark = true, nxt, false }

// cutBefore reports whether a mark cut the window for a window of data
// that the byte at seq belongs to (sent before the cut): a loss there is
// of the round trip the cut already answered. (A loss after a loss
// response is answered as the plain sender answers it: without marks
// DCTCP is the plain sender.)
func (d *dctcp) cutBefore(seq uint64) bool { return d.cutting && d.byMark && seq < d.cutEnd }
