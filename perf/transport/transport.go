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

import (
	"fmt"

	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/wire/gsperf"
)

// Mode selects the sender's congestion control.
type Mode int

const (
	Plain Mode = iota
	PFabric
	XPass // ExpressPass: one segment per credit from the receiver (package perf/xpass, not this Sender)
	DCTCP // plain with DCTCP's response to ECN marks (dctcp.go); the caller sends its datagrams ECT(0)
	HPCC  // plain's loss recovery with HPCC's window and rate from INT (hpcc.go); data segments carry an INT option
	DCQCN // DCQCN's rate machine over plain's loss recovery (dcqcn.go); the caller sends its datagrams ECT(0)
)

func (m Mode) String() string {
	return [...]string{"plain", "pfabric", "xpass", "dctcp", "hpcc", "dcqcn"}[m]
}

// ParseMode reads "plain", "pfabric", "xpass", "dctcp", "hpcc" or "dcqcn".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "plain", "":
		return Plain, nil
	case "pfabric":
		return PFabric, nil
	case "xpass":
		return XPass, nil
	case "dctcp":
		return DCTCP, nil
	case "hpcc":
		return HPCC, nil
	case "dcqcn":
		return DCQCN, nil
	}
	return Plain, fmt.Errorf("mode %q (use plain, pfabric, xpass, dctcp, hpcc or dcqcn)", s)
}

// Default timers of the plain sender, in ns. Both are protocol timers (a
// fabric's time): gsperf multiplies them by its timescale.
const (
	DefaultRTO    = 10e6 // initial and minimum retransmission timeout
	DefaultMaxRTO = 1e9  // the backed-off timeout's cap
)

// Config configures a sender.
type Config struct {
	Mode        Mode
	MSS         int   // payload bytes per segment (default 1400)
	InitWindow  int   // initial window in bytes (default 10 segments; pFabric: one BDP); DCQCN: the fixed window (default MaxWindow's)
	RTO         int64 // plain and DCTCP: initial and minimum retransmission timeout in ns (default DefaultRTO); pFabric: the fixed timeout (3 x base RTT)
	MaxRTO      int64 // plain and DCTCP: the exponential backoff's cap in ns (default DefaultMaxRTO)
	MaxTimeouts int   // pFabric: consecutive timeouts before probe mode (default 5)
	MaxWindow   int   // cap on the window in bytes (default 4 MB)
	// DCTCPG is DCTCP's gain g, the weight of the newest window's fraction
	// of marked bytes in alpha, from 0 (exclusive) to 1 (default
	// DefaultDCTCPG, 1/16).
	DCTCPG float64
	// HPCC configures -mode hpcc (hpcc.go); zero fields take its defaults.
	HPCC HPCCConfig
	// DCQCN configures a DCQCN sender's rate machine (zero fields: the
	// paper's constants, DefaultDCQCN).
	DCQCN DCQCNConfig
	// Mech is the gsperf header's mechanism field of every data segment and
	// probe (BFC: the flow's queue id, wire.MechBFC); 0 in other modes.
	Mech uint64
}

func (c *Config) defaults() {
	if c.MSS <= 0 {
		c.MSS = 1400
	}
	if c.InitWindow <= 0 {
		c.InitWindow = 10 * c.MSS
		if c.Mode == DCQCN { // the rate is DCQCN's control: MaxWindow's window, which does not bind
			c.InitWindow = c.MaxWindow
			if c.InitWindow <= 0 {
				c.InitWindow = 4 << 20
			}
		}
	}
	if c.RTO <= 0 {
		c.RTO = DefaultRTO
	}
	if c.MaxRTO <= 0 {
		c.MaxRTO = DefaultMaxRTO
	}
	if c.MaxTimeouts <= 0 {
		c.MaxTimeouts = 5
	}
	if c.MaxWindow <= 0 {
		c.MaxWindow = 4 << 20
	}
	if c.DCTCPG <= 0 {
		c.DCTCPG = DefaultDCTCPG
	}
}

// Gate decides whether the sender may send a segment now.
type Gate interface {
	// Allow reports whether a segment of n payload bytes may leave at now;
	// when not, Wake is the earliest time worth asking again (0: on the next packet).
	Allow(now int64, n int) (ok bool, wake int64)
}

type openGate struct{}

func (openGate) Allow(int64, int) (bool, int64) { return true, 0 }

// Fill writes the payload bytes of flow at offset into b: a pattern the
// receiver checks, so a corrupted or misplaced byte is caught.
func Fill(b []byte, flow, offset uint64) {
	for i := range b {
		b[i] = pattern(flow, offset+uint64(i))
	}
}

// pattern is the payload byte of flow at offset o.
func pattern(flow, o uint64) byte { return byte(o*7 + o>>8 + flow*13) }

// Segment states in the sender's scoreboard.
const (
	segUnsent = iota
	segInFlight
	segAcked
)

// Sender sends one flow.
type Sender struct {
	cfg      Config
	flow     uint64
	size     uint64
	gate     Gate
	segs     []uint8 // scoreboard, one entry per MSS
	scan     int     // no segment below this index is unsent
	una      uint64  // first byte not acknowledged in order
	nxt      uint64  // next new byte to send
	cwnd     float64 // bytes
	ssthresh float64
	inflight int64 // bytes in flight (sent, neither acked nor timed out)
	dupAcks  int
	timer    int64 // when the oldest unacked segment times out (0: no timer)
	timeouts int   // consecutive
	probing  bool
	lastAck  uint64
	srtt     float64 // ns, from echoed timestamps (plain)
	rttvar   float64
	rto      int64 // current timeout, backed off on consecutive timeouts (plain)
	buf      []byte
	dc       *dctcp // DCTCP's state; nil in other modes
	hp       *hpcc  // HPCC's state; nil in other modes
	hdrLen   int    // a data segment's header length: proto.HeaderLen, plus the INT option in HPCC mode
	rp       *dcqcn // DCQCN's rate machine; nil in other modes
	// cwndLimited: the window, not the gate or the data, limited the last
	// Poll (DCTCP: a window the sender does not fill is not grown).
	cwndLimited bool

	// Stats
	Sent, Retransmits, Timeouts, Probes uint64
	Start, End                          int64
	// DCTCP: acks that echoed a CE mark (FlagECE), and the window cuts
	// they caused (at most one per window of data). Alpha reads the
	// estimate of the congestion.
	ECEAcks, Reductions uint64
	// DCQCN: the CNPs received, and the rate cuts they made (a CNP at
	// the minimum rate cuts nothing).
	CNPs, RateCuts uint64
}

// NewSender starts a flow of size bytes at now.
func NewSender(cfg Config, flow, size uint64, now int64) *Sender {
	cfg.defaults()
	nseg := (size + uint64(cfg.MSS) - 1) / uint64(cfg.MSS)
	if size == 0 {
		nseg = 1
	}
	s := &Sender{cfg: cfg, flow: flow, size: size, gate: openGate{}, segs: make([]uint8, nseg),
		cwnd: float64(cfg.InitWindow), ssthresh: float64(cfg.MaxWindow), Start: now, rto: cfg.RTO,
		hdrLen: proto.HeaderLen}
	if cfg.Mode == DCTCP {
		s.dc = newDCTCP(cfg.DCTCPG)
	}
	if cfg.Mode == HPCC {
		s.startHPCC()
	}
	if cfg.Mode == DCQCN {
		s.rp = newDCQCN(cfg.DCQCN, cfg.MSS, now)
	}
	s.buf = make([]byte, s.hdrLen+cfg.MSS)
	return s
}

// tcp reports whether the sender recovers from loss as TCP does (adaptive
// timeout with backoff, fast retransmit): plain and DCTCP, which keeps
// TCP's loss response, HPCC, which keeps its recovery (not its cuts), and
// DCQCN, which keeps its recovery (its window and rate do not answer a
// loss).
func (s *Sender) tcp() bool {
	return s.cfg.Mode == Plain || s.cfg.Mode == DCTCP || s.cfg.Mode == HPCC || s.cfg.Mode == DCQCN
}

// Gate sets the gate asked before each segment (nil: always open).
func (s *Sender) Gate(g Gate) {
	if g == nil {
		g = openGate{}
	}
	s.gate = g
}

// Done reports whether every byte is acknowledged.
func (s *Sender) Done() bool { return s.End != 0 }

// Acked is the number of bytes acknowledged in order.
func (s *Sender) Acked() uint64 { return s.una }

// Window is the current congestion window in bytes.
func (s *Sender) Window() int { return int(s.cwnd) }

func (s *Sender) segLen(i int) int {
	off := uint64(i) * uint64(s.cfg.MSS)
	return int(min(uint64(s.cfg.MSS), s.size-off))
}

// Poll sends what the window, the gate and the timer allow at now, calling
// out with each datagram (out must not keep the slice), and returns the next
// time Poll has something to do (0: only when an ack arrives).
func (s *Sender) Poll(now int64, out func([]byte)) int64 {
	if s.Done() {
		return 0
	}
	if s.timer != 0 && now >= s.timer {
		s.onTimeout(now, out)
	}
	if s.probing {
		return s.timer
	}
	s.scan = max(s.scan, int(s.una/uint64(s.cfg.MSS)))
	s.cwndLimited = 2*s.inflight >= int64(s.cwnd)
	for i := s.scan; i < len(s.segs); i++ {
		if s.segs[i] != segUnsent {
			if i == s.scan {
				s.scan++
			}
			continue
		}
		n := s.segLen(i)
		if s.inflight+int64(n) > int64(s.cwnd) && s.inflight > 0 {
			s.cwndLimited = true
			break
		}
		// DCQCN's rate first: asked, not charged, so that a gate that
		// refuses after it costs it nothing.
		if s.rp != nil {
			if ok, wake := s.rp.ready(now, n); !ok {
				if s.timer == 0 || wake < s.timer {
					return wake
				}
				break
			}
		}
		if ok, wake := s.allow(now, n); !ok {
			if wake != 0 && (s.timer == 0 || wake < s.timer) {
				return wake
			}
			break
		}
		s.send(i, now, out)
	}
	return s.timer
}

func (s *Sender) send(i int, now int64, out func([]byte)) {
	off := uint64(i) * uint64(s.cfg.MSS)
	n := s.segLen(i)
	h := proto.Header{Type: proto.TypeData, Flow: s.flow, Seq: off, Size: s.size, Timestamp: uint64(now), Mech: s.cfg.Mech}
	if s.cfg.Mode == PFabric {
		h.Priority = proto.Rank(s.size, off)
	}
	if off+uint64(n) >= s.size {
		h.Flags |= proto.FlagFIN
	}
	if off+uint64(n) <= s.nxt {
		h.Flags |= proto.FlagRetx
		s.Retransmits++
	}
	hl := s.encodeData(&h, n, now)
	Fill(s.buf[hl:hl+n], s.flow, off)
	out(s.buf[:hl+n])
	if s.rp != nil {
		s.rp.sent(now, n)
	}
	s.Sent++
	s.segs[i] = segInFlight
	s.inflight += int64(n)
	s.nxt = max(s.nxt, off+uint64(n))
	if s.timer == 0 {
		s.timer = now + s.rto
	}
}

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

// sampleRTT updates the plain (and DCTCP) sender's timeout from an echoed timestamp (RFC 6298).
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
