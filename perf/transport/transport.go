package transport

import (
	"fmt"
	"math"

	"github.com/gswitch/gswitch/perf/proto"
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

// String is the mode's name, as ParseMode reads it; a value that is no
// mode prints as mode(n).
func (m Mode) String() string {
	names := [...]string{"plain", "pfabric", "xpass", "dctcp", "hpcc", "dcqcn"}
	if m < 0 || int(m) >= len(names) {
		return fmt.Sprintf("mode(%d)", int(m))
	}
	return names[m]
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
	RTO         int64 // plain, DCTCP, HPCC and DCQCN: initial and minimum retransmission timeout in ns (default DefaultRTO); pFabric: the fixed timeout (3 x base RTT)
	MaxRTO      int64 // plain, DCTCP, HPCC and DCQCN: the exponential backoff's cap in ns (default DefaultMaxRTO)
	MaxTimeouts int   // pFabric: consecutive timeouts before probe mode (default 5)
	MaxWindow   int   // cap on the window in bytes (default 4 MB; DCQCN: at least InitWindow; HPCC: at least W_init)
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
	switch c.Mode {
	case DCQCN: // the window is fixed: the cap must not cut it on the first ack
		c.MaxWindow = max(c.MaxWindow, c.InitWindow)
	case HPCC: // W_init = B x T, and the rate is W / T: a cap below W_init would cap the rate below the line's
		h := c.HPCC
		h.defaults(c.MSS)
		c.MaxWindow = max(c.MaxWindow, int(math.Ceil(min(h.wInit(), 1<<40))))
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
	srtt     float64 // ns, from echoed timestamps (the modes tcp reports)
	rttvar   float64
	rto      int64 // current timeout, backed off on consecutive timeouts (the modes tcp reports; pFabric's stays Config.RTO)
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
	hl := s.encodeData(&h)
	Fill(s.buf[hl:hl+n], s.flow, off)
	out(s.buf[:hl+n])
	s.charge(now, n)
	s.Sent++
	s.segs[i] = segInFlight
	s.inflight += int64(n)
	s.nxt = max(s.nxt, off+uint64(n))
	if s.timer == 0 {
		s.timer = now + s.rto
	}
}

// allow asks the rate limiters, then the gate, whether a segment of n
// payload bytes may leave at now: DCQCN's rate (in DCQCN mode), HPCC's
// rate (in HPCC mode), then the sender's gate. When not, wake is the
// earliest time worth asking again (0: on the next packet). The rates
// are asked here and charged by charge once the segment leaves, so that
// none of them is charged for a segment another holds back.
func (s *Sender) allow(now int64, n int) (ok bool, wake int64) {
	if s.rp != nil {
		if ok, wake := s.rp.ready(now, n); !ok {
			return false, wake
		}
	}
	if s.hp != nil {
		if ok, wake := s.hp.ready(now, n); !ok {
			return false, wake
		}
	}
	return s.gate.Allow(now, n)
}

// charge counts a segment of n payload bytes that left at now against
// the rate limiters allow asked (the gate charges itself when it allows).
func (s *Sender) charge(now int64, n int) {
	if s.rp != nil {
		s.rp.sent(now, n)
	}
	if s.hp != nil {
		s.hp.sent(now, n)
	}
}
