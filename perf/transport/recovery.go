package transport

import (
	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/wire/gsperf"
)

// The sender's loss recovery and its answers to acks: the timeout, the
// round-trip estimate, pFabric's probes, the acks and CNPs that arrive,
// and the cumulative acknowledgment's advance.

func (s *Sender) onTimeout(now int64, out func([]byte)) {
	s.Timeouts++
	s.timeouts++
	if s.rp == nil { // DCQCN's window is fixed
		if s.timeouts == 1 { // as TCP does, only the first of consecutive timeouts lowers ssthresh
			s.ssthresh = max(s.cwnd/2, float64(2*s.cfg.MSS))
		}
		if s.hp == nil { // HPCC's window is the telemetry's alone
			s.cwnd = float64(s.cfg.MSS)
		}
	}
	s.dupAcks = 0
	if s.dc != nil {
		s.dc.lossCut(s.nxt)
	}
	// Everything in flight is presumed lost: resend it as the window allows.
	s.scan = int(s.una / uint64(s.cfg.MSS))
	for i := s.scan; i < len(s.segs); i++ {
		if s.segs[i] == segInFlight {
			s.segs[i] = segUnsent
		}
	}
	s.inflight = 0
	s.timer = 0
	if s.tcp() {
		s.rto = min(2*s.rto, s.cfg.MaxRTO) // exponential backoff, as TCP does (RFC 6298)
	}
	if s.cfg.Mode == PFabric && s.timeouts >= s.cfg.MaxTimeouts {
		s.probing = true
		s.sendProbe(now, out)
		s.timer = now + s.cfg.RTO
		return
	}
}

// sampleRTT updates the timeout of a sender that recovers as TCP does
// (plain, DCTCP, HPCC, DCQCN: tcp) from an echoed timestamp (RFC 6298).
func (s *Sender) sampleRTT(sent uint64, now int64) {
	if !s.tcp() || sent == 0 || int64(sent) > now {
		return
	}
	r := float64(now - int64(sent))
	if s.srtt == 0 {
		s.srtt, s.rttvar = r, r/2
	} else {
		d := s.srtt - r
		if d < 0 {
			d = -d
		}
		s.rttvar = 0.75*s.rttvar + 0.25*d
		s.srtt = 0.875*s.srtt + 0.125*r
	}
	s.rto = max(s.cfg.RTO, int64(s.srtt+4*s.rttvar))
}

func (s *Sender) sendProbe(now int64, out func([]byte)) {
	h := proto.Header{Type: proto.TypeProbe, Flow: s.flow, Seq: s.una, Size: s.size, Timestamp: uint64(now),
		Priority: proto.Rank(s.size, s.una), Mech: s.cfg.Mech}
	h.Encode(s.buf)
	s.buf[proto.HeaderLen] = 0 // one byte of payload
	out(s.buf[:proto.HeaderLen+1])
	s.Probes++
}

// OnAck processes an ack or probe ack that arrived at now.
func (s *Sender) OnAck(h proto.Header, now int64) { s.OnAckINT(h, nil, now) }

// OnAckINT is OnAck for an ack that carries the INT option o (the view
// gsperf.Header(b).INT() of the datagram b, nil if none): in HPCC mode its
// hops set the window and the rate (hpcc.go); other modes ignore it.
func (s *Sender) OnAckINT(h proto.Header, o gsperf.INT, now int64) {
	if s.Done() || h.Flow != s.flow {
		return
	}
	if h.Type == proto.TypeCNP {
		if s.rp != nil {
			s.rp.onCNP(now)
			s.CNPs, s.RateCuts = s.rp.cnps, s.rp.cuts
		}
		return
	}
	if h.Type == proto.TypeProbeAck {
		if s.probing {
			// Slow start again from one segment, up to at least the initial
			// window (one BDP in pFabric mode: flows run at line rate).
			s.probing, s.timeouts, s.timer = false, 0, 0
			s.cwnd = float64(s.cfg.MSS)
			s.ssthresh = max(s.ssthresh, float64(s.cfg.InitWindow))
		}
		s.advance(h.Ack, now)
		return
	}
	if h.Type != proto.TypeAck {
		return
	}
	// Selective part: the segment this ack names.
	newly := 0
	if i := int(h.Seq / uint64(s.cfg.MSS)); h.Seq%uint64(s.cfg.MSS) == 0 && i < len(s.segs) && s.segs[i] != segAcked {
		if s.segs[i] == segInFlight {
			s.inflight -= int64(s.segLen(i))
		}
		s.segs[i] = segAcked
		newly = s.segLen(i)
	}
	s.probing = false
	if newly > 0 {
		s.sampleRTT(h.Timestamp, now) // the echo of the segment this ack names: no retransmission ambiguity
	}
	oldUna := s.una
	more := s.advance(h.Ack, now)
	// DCTCP: the marks counted and, on an echoed mark, the window cut
	// (an ack that cuts the window does not also grow it).
	cut := s.dc != nil && s.dc.onAck(s, h, newly, more)
	if s.hp != nil {
		s.hp.onAck(s, h.Ack, o)
	}
	if s.una > oldUna || newly > 0 {
		s.timeouts = 0
		// Slow start below ssthresh, additive increase above it.
		switch {
		case s.rp != nil: // DCQCN's window is fixed: the rate is the control
		case cut: // DCTCP's cut is this ack's whole effect on the window
		case s.hp != nil: // HPCC's window is set by the telemetry alone
		case s.dc != nil && !s.cwndLimited && 2*(s.inflight+int64(newly)) < int64(s.cwnd):
			// DCTCP runs paced (gsperf -pace, a host NIC's rate): a window
			// the pacer keeps half empty is not grown (RFC 7661's
			// validation, as Linux's tcp_is_cwnd_limited). Otherwise a
			// flow alone behind its pacer grows its window by every ack
			// while the queue, and so the marks, stay empty: when another
			// flow joins, cuts of alpha/2 (its alpha decayed near 0) of
			// megabytes leave it far above the path's window, and the
			// buffer overflows.
		case s.cwnd < s.ssthresh:
			s.cwnd += float64(newly)
		default:
			s.cwnd += float64(s.cfg.MSS) * float64(newly) / s.cwnd
		}
		s.cwnd = min(s.cwnd, float64(s.cfg.MaxWindow))
	}
	if s.una > oldUna {
		s.dupAcks = 0
		s.timer = 0
		if s.inflight > 0 {
			s.timer = now + s.rto
		}
	} else if s.tcp() && h.Ack == s.lastAck && s.una < s.nxt {
		s.dupAcks++
		if s.dupAcks == 3 { // fast retransmit of the first hole
			i := int(s.una / uint64(s.cfg.MSS))
			if s.segs[i] == segInFlight {
				s.inflight -= int64(s.segLen(i))
				s.segs[i] = segUnsent
				s.scan = min(s.scan, i)
			}
			// DCTCP: a hole in data sent before this window of data's
			// ECN cut is congestion that cut already answered (at most
			// one reduction per window: RFC 3168 section 6.1.2, as
			// Linux skips the reduction in CWR): retransmit only.
			// HPCC and DCQCN: retransmit only (their windows do not answer a loss).
			if s.hp == nil && s.rp == nil && (s.dc == nil || !s.dc.cutBefore(s.una)) {
				s.ssthresh = max(s.cwnd/2, float64(2*s.cfg.MSS))
				s.cwnd = s.ssthresh
				if s.dc != nil {
					s.dc.lossCut(s.nxt)
				}
			}
		}
	}
	s.lastAck = h.Ack
}

// advance marks everything below ack as acknowledged and returns the
// bytes of the segments it acknowledged that were not already.
func (s *Sender) advance(ack uint64, now int64) (acked int) {
	if ack <= s.una {
		return 0
	}
	mss := uint64(s.cfg.MSS)
	for i := int(s.una / mss); i < len(s.segs); i++ {
		if min(uint64(i+1)*mss, s.size) > ack {
			break
		}
		if s.segs[i] == segInFlight {
			s.inflight -= int64(s.segLen(i))
		}
		if s.segs[i] != segAcked {
			acked += s.segLen(i)
		}
		s.segs[i] = segAcked
	}
	s.una = min(ack, s.size)
	if s.una >= s.size {
		s.End = now
		s.timer = 0
	}
	return acked
}
