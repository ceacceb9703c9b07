package xpass

import (
	"encoding/binary"
	"time"

	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/wire"
)

// Sender states (ns-2's credit_recv_state_).
const (
	StateClosed      = iota // nothing asked for
	StateRequestSent        // XP_REQUEST sent, no credit yet
	StateReceiving          // credits arrive: one segment each
	StateStopSent           // XP_STOP sent, waiting 2 RTT
	StateCloseWait          // 1 RTT more: credits still arriving mean the stop was lost
)

// SenderConfig configures a data sender.
type SenderConfig struct {
	MSS               int           // payload bytes per segment
	RetransmitTimeout time.Duration // XP_REQUEST again after this until a credit arrives (100 us), doubling
	MaxRetransmit     time.Duration // up to this (10 ms)
	StopTimeout       time.Duration // the stop timers before an RTT is known (2 ms)
	MinRTO            time.Duration // segments unacknowledged this long (at least; 4 x SRTT if more) are sent again (10 ms)
	CreditTimeout     time.Duration // no credit for this long (or 4 RTT) with data left: ask again (10 ms), no faster than that
}

// DefaultSenderConfig is the sender's configuration when a field is left
// zero. Its timers are protocol timers (a fabric's time): gsperf
// multiplies them by its timescale.
func DefaultSenderConfig() SenderConfig {
	return SenderConfig{MSS: 1408, RetransmitTimeout: 100 * time.Microsecond, MaxRetransmit: 10 * time.Millisecond,
		StopTimeout: 2 * time.Millisecond, MinRTO: 10 * time.Millisecond, CreditTimeout: 10 * time.Millisecond}
}

func (c *SenderConfig) defaults() {
	d := DefaultSenderConfig()
	if c.MSS <= 0 {
		c.MSS = d.MSS
	}
	if c.RetransmitTimeout <= 0 {
		c.RetransmitTimeout = d.RetransmitTimeout
	}
	if c.MaxRetransmit <= 0 {
		c.MaxRetransmit = d.MaxRetransmit
	}
	if c.StopTimeout <= 0 {
		c.StopTimeout = d.StopTimeout
	}
	if c.MinRTO <= 0 {
		c.MinRTO = d.MinRTO
	}
	if c.CreditTimeout <= 0 {
		c.CreditTimeout = d.CreditTimeout
	}
}

// Segment states.
const (
	segUnsent = iota
	segInFlight
	segAcked
	segLost
)

// Sender sends one flow's data, one segment per credit.
type Sender struct {
	cfg        SenderConfig
	flow, size uint64
	segs       []uint8
	order      []uint32 // per segment: when it was last sent, in segments sent
	sent       uint32
	scan       int // no unsent segment below this index
	lostScan   int // no lost segment below this index
	nLost      int
	una        uint64 // bytes acknowledged in order
	state      int
	timer      int64 // the state's timer (0: none)
	reqTime    int64
	reqBackoff int64 // ns until the request is sent again
	rtt        int64 // ns: request -> first credit, then the acks' SRTT
	srtt       float64
	progress   int64 // the last ack that acknowledged something, or the last segment sent into an empty pipe
	inflight   int
	lastCredit int64
	rttCredits int   // credits since rttMark (early stop)
	rttMark    int64 //
	afterStop  int   // credits since the stop (ns-2's credit_recved_)
	buf        []byte

	// Stats
	Credits, Wasted, Sent, Retransmits, Requests, Stops uint64
	Start, End                                          int64
	FirstCredit                                         int64 // when the first credit arrived (0: none yet)
}

// NewSender starts a flow of size bytes at now; call Poll to send its request.
func NewSender(cfg SenderConfig, flow, size uint64, now int64) *Sender {
	cfg.defaults()
	n := int((size + uint64(cfg.MSS) - 1) / uint64(cfg.MSS))
	if size == 0 {
		n = 1
	}
	return &Sender{cfg: cfg, flow: flow, size: size, segs: make([]uint8, n), order: make([]uint32, n), Start: now,
		buf: make([]byte, proto.HeaderLen+cfg.MSS)}
}

// State is the sender's state (State* constants).
func (s *Sender) State() int { return s.state }

// Done reports whether every byte is acknowledged.
func (s *Sender) Done() bool { return s.End != 0 }

// Closed reports whether the sender has nothing more to do: done and its
// credits stopped.
func (s *Sender) Closed() bool { return s.Done() && s.state == StateClosed }

// Acked is the bytes acknowledged in order.
func (s *Sender) Acked() uint64 { return s.una }

func (s *Sender) segLen(i int) int {
	return int(min(uint64(s.cfg.MSS), s.size-uint64(i)*uint64(s.cfg.MSS)))
}

// pending reports whether a segment waits to be sent (lost or never sent).
func (s *Sender) pending() bool { return s.nLost > 0 || s.scan < len(s.segs) }

// remaining is the segments still to send.
func (s *Sender) remaining() int { return s.nLost + len(s.segs) - s.scan }

func (s *Sender) rttOr(d time.Duration) int64 {
	if s.rtt > 0 {
		return s.rtt
	}
	return d.Nanoseconds()
}

// creditTimeout is how long credits may stop coming, data left, before the
// sender asks again: CreditTimeout, or 4 RTT if longer (a receiver at its
// lowest rate sends one credit per RTT).
func (s *Sender) creditTimeout() int64 {
	return max(s.cfg.CreditTimeout.Nanoseconds(), 4*s.rtt)
}

func (s *Sender) rto() int64 {
	return max(s.cfg.MinRTO.Nanoseconds(), int64(4*s.srtt))
}

// request sends XP_REQUEST (the flow's size) through out and arms its
// retransmission: RetransmitTimeout after the first, doubling after each
// one that got no credit, up to MaxRetransmit (ns-2 repeats every 100 µs;
// a host whose requests cannot get through, or whose receiver is gone,
// would send 10,000 a second into the data queues).
func (s *Sender) request(now int64, out func([]byte)) {
	n, _ := wire.PutXPRequest(s.buf, wire.XPRequest{FlowID: s.flow, Size: s.size})
	out(s.buf[:n])
	s.Requests++
	switch {
	case s.state == StateRequestSent:
		s.reqBackoff = min(2*s.reqBackoff, s.cfg.MaxRetransmit.Nanoseconds())
	case s.state == StateReceiving:
		// The credits stopped coming (CreditTimeout): the receiver is slow or
		// gone, not waiting for a first request; ask no faster than that.
		s.reqBackoff = s.creditTimeout()
	default:
		s.reqBackoff = s.cfg.RetransmitTimeout.Nanoseconds()
	}
	s.state, s.reqTime, s.timer = StateRequestSent, now, now+s.reqBackoff
}

// stop sends XP_STOP through out: 58 bytes of frame padded to 60 in the
// datagram itself (a veth does not pad).
func (s *Sender) stop(now int64, out func([]byte)) {
	n, _ := wire.PutXPStop(s.buf, wire.XPStop{FlowID: s.flow})
	s.buf[n], s.buf[n+1] = 0, 0
	out(s.buf[:n+2])
	s.Stops++
	s.state, s.afterStop, s.timer = StateStopSent, 0, now+2*s.rttOr(s.cfg.StopTimeout)
}

// OnCredit sends a segment for a credit that arrived at now, if one is
// waiting; out gets each datagram and must not keep it.
func (s *Sender) OnCredit(c wire.Credit, now int64, out func([]byte)) {
	s.Credits++
	s.lastCredit = now
	if s.FirstCredit == 0 {
		s.FirstCredit = now
	}
	switch s.state {
	case StateRequestSent:
		if s.rtt == 0 {
			s.rtt = now - s.reqTime
		}
		s.state, s.timer, s.rttMark, s.rttCredits = StateReceiving, 0, now, 0
		fallthrough
	case StateReceiving:
		s.rttCredits++
		if !s.sendOne(c, now, out) {
			s.Wasted++
		}
		if !s.pending() {
			s.stop(now, out)
		} else if now-s.rttMark >= s.rtt {
			if s.rttCredits >= s.remaining() { // the credits of the last RTT cover what is left: stop early (ns-2)
				s.stop(now, out)
			}
			s.rttCredits, s.rttMark = 0, now
		}
	case StateStopSent:
		s.afterStop++
		if !s.sendOne(c, now, out) {
			s.Wasted++
		}
	default:
		s.afterStop++
		s.Wasted++
	}
}

// sendOne sends the first lost segment, else the next unsent one, on the
// credit c.
func (s *Sender) sendOne(c wire.Credit, now int64, out func([]byte)) bool {
	i := -1
	if s.nLost > 0 {
		for j := s.lostScan; j < len(s.segs); j++ {
			if s.segs[j] == segLost {
				i, s.lostScan = j, j
				s.nLost--
				s.Retransmits++
				break
			}
		}
	}
	if i < 0 {
		for s.scan < len(s.segs) && s.segs[s.scan] != segUnsent {
			s.scan++
		}
		if s.scan == len(s.segs) {
			return false
		}
		i = s.scan
		s.scan++
	}
	off := uint64(i) * uint64(s.cfg.MSS)
	n := s.segLen(i)
	h := proto.Header{Type: proto.TypeData, Flow: s.flow, Seq: off, Size: s.size, Timestamp: uint64(now), Mech: wire.MechXP(c.Seq, c.SentTime)}
	if off+uint64(n) >= s.size {
		h.Flags |= proto.FlagFIN
	}
	if s.order[i] != 0 {
		h.Flags |= proto.FlagRetx
	}
	h.Encode(s.buf)
	transport.Fill(s.buf[proto.HeaderLen:proto.HeaderLen+n], s.flow, off)
	out(s.buf[:proto.HeaderLen+n])
	s.Sent++
	s.sent++
	s.order[i] = s.sent
	s.segs[i] = segInFlight
	if s.inflight == 0 {
		s.progress = now
	}
	s.inflight++
	return true
}

// OnAck takes an acknowledgement (cumulative and selective) that arrived at now.
func (s *Sender) OnAck(h proto.Header, now int64) {
	if h.Type != proto.TypeAck || h.Flow != s.flow || s.Done() {
		return
	}
	mss := uint64(s.cfg.MSS)
	acked := false
	var named uint32 // send order of the segment this ack names
	if i := int(h.Seq / mss); h.Seq%mss == 0 && i < len(s.segs) {
		named = s.order[i]
		acked = s.ackSeg(i) || acked
		if int64(h.Timestamp) <= now && h.Timestamp != 0 {
			r := float64(now - int64(h.Timestamp))
			if s.srtt == 0 {
				s.srtt = r
			} else {
				s.srtt = 0.875*s.srtt + 0.125*r
			}
			s.rtt = int64(s.srtt)
		}
	}
	ack := min(h.Ack, s.size)
	for i := int(s.una / mss); i < len(s.segs) && min(uint64(i+1)*mss, s.size) <= ack; i++ {
		acked = s.ackSeg(i) || acked
	}
	if ack > s.una {
		s.una = ack
	}
	if acked {
		s.progress = now
	}
	// A segment acknowledged beyond the in-order point: what was sent before
	// it and is still missing was lost (credits and data take one path, in order).
	if named != 0 && h.Seq > s.una {
		for i := int(s.una / mss); i < int(h.Seq/mss); i++ {
			if s.segs[i] == segInFlight && s.order[i] < named {
				s.lose(i)
			}
		}
	}
	if s.una >= s.size {
		s.End = now
	}
}

func (s *Sender) ackSeg(i int) bool {
	switch s.segs[i] {
	case segAcked:
		return false
	case segInFlight:
		s.inflight--
	case segLost:
		s.nLost--
	}
	s.segs[i] = segAcked
	return true
}

func (s *Sender) lose(i int) {
	s.segs[i] = segLost
	s.inflight--
	s.nLost++
	s.lostScan = min(s.lostScan, i)
}

// Poll runs the timers at now (request retransmission, the stop states,
// lost segments) and returns when it next wants to run (0: only when a
// packet arrives).
func (s *Sender) Poll(now int64, out func([]byte)) int64 {
	if s.state == StateClosed && !s.Done() && s.Sent == 0 && s.Requests == 0 {
		s.request(now, out)
	}
	if s.inflight > 0 && now-s.progress >= s.rto() {
		for i := int(s.una / uint64(s.cfg.MSS)); i < len(s.segs); i++ {
			if s.segs[i] == segInFlight {
				s.lose(i)
			}
		}
		s.progress = now
	}
	if s.timer != 0 && now >= s.timer {
		switch s.state {
		case StateRequestSent:
			s.request(now, out)
		case StateStopSent:
			if s.pending() {
				s.request(now, out)
			} else {
				s.state, s.afterStop, s.timer = StateCloseWait, 0, now+s.rttOr(s.cfg.StopTimeout)
			}
		case StateCloseWait:
			if s.afterStop == 0 {
				s.state, s.timer = StateClosed, 0
			} else {
				s.stop(now, out)
			}
		}
	}
	// Lost segments found after the credits stopped, or credits that stopped
	// coming while data waits: ask again.
	if s.pending() && (s.state == StateClosed || s.state == StateCloseWait ||
		(s.state == StateReceiving && now-s.lastCredit >= s.creditTimeout())) && s.Requests > 0 {
		s.request(now, out)
	}
	next := s.timer
	if s.state == StateReceiving && s.pending() {
		next = minNonZero(next, s.lastCredit+s.creditTimeout())
	}
	if s.inflight > 0 {
		next = minNonZero(next, s.progress+s.rto())
	}
	return next
}

// Abort sends XP_STOP once (the flow is given up: the receiver must stop
// sending credits) and closes the sender.
func (s *Sender) Abort(now int64, out func([]byte)) {
	if s.state != StateClosed {
		s.stop(now, out)
	}
	s.state, s.timer = StateClosed, 0
}

func minNonZero(a, b int64) int64 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// IsCredit reports whether a datagram's payload is a GC message (a credit
// for a sender), rather than a gsperf header.
func IsCredit(b []byte) bool { return len(b) >= 2 && binary.BigEndian.Uint16(b) == wire.Magic }
