package transport

import (
	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/wire/gsperf"
)

// HPCC's sender (Li et al., "HPCC: High Precision Congestion Control",
// SIGCOMM 2019, section 3.3, Algorithm 1), with the details the paper
// leaves open taken from the authors' ns-3 simulator (its RdmaHw's
// HandleAckHp and UpdateRateHp, in the single-rate mode the paper
// describes: MULTI_RATE 0, FAST_REACT 1, VAR_WIN 1).
//
// Each data segment reserves Hops slots of an INT option after the fixed
// header (wire/gsperf's INT option: the header length is 64 + INTLen);
// every switch port running the INT stage writes a record into the next
// slot as the segment leaves: its clock (ts), the bytes it had sent
// (txBytes), the bytes queued (qlen) and its rate (B). The receiver copies
// the option into the segment's ack (Receiver.OnPacketINT), and the sender
// keeps the records of the previous ack, hop by hop, to compare with.
//
// On every ack (the paper's NewAck):
//
//	MeasureInflight: for each hop i with a record in the previous ack,
//	  txRate = (txBytes - txBytes') / (ts - ts')
//	  u'     = min(qlen, qlen') / (B x T) + txRate / B
//	  the hop of the largest u' gives u, and tau = ts - ts' of that hop;
//	  tau = min(tau, T); U = (1 - tau/T) U + (tau/T) u
//	ComputeWind: if U >= eta or incStage >= maxStage
//	  W = Wc / (U/eta) + W_AI  (and, on the per-RTT update, incStage = 0)
//	else
//	  W = Wc + W_AI            (and, on the per-RTT update, incStage++)
//	the per-RTT update, once per window of data: when ack > lastUpdateSeq
//	  (the cumulative acknowledgment passed the next byte to send at the
//	  last update), Wc = W and lastUpdateSeq = snd_nxt; every other ack
//	  computes W from the same Wc and leaves Wc and incStage alone.
//	R = W / T: the segments leave no faster, but for a burst (a rate
//	  limiter asked before the sender's gate), and W bounds the payload
//	  bytes in flight.
//
// A flow starts at the line rate with one bandwidth-delay product: W = Wc
// = W_init = B x T (the paper's section 3.3; the simulator's window of
// its largest BDP at the NIC's rate), and R = B.
//
// As the simulator does: U starts at 1 (RdmaQueuePair's hp.u); the first
// ack with an INT option only records its hops and sets lastUpdateSeq
// (UpdateRateHp's "first RTT"); the hop count is not checked against the
// previous ack's, each hop is compared with the record of the same index
// (a changed path is not detected); u' starts at 0 and only a larger u'
// takes the hop, so a path whose hops all read u' = 0 leaves U as it was
// (tau stays 0); tau is clamped to T, and W to [floor, max window] before
// it is kept as Wc (the simulator clamps the rate to [MinRate, the NIC's
// rate], which with VAR_WIN is the window over T). U itself is not
// clamped, there or here.
//
// Where the simulator's records cannot be followed, a hop is recorded and
// not measured on this ack: a hop index the previous ack did not have
// (the simulator compares it with a zeroed or stale record; with 64-bit
// fields that is the port's average since it started), a hop whose ts did
// not advance or whose txBytes went back (reordered acks; the simulator's
// 24-bit fields treat both as a wrap, and divide by a ts delta of 0), and
// a hop of rate 0 (a port the switch knows no speed for). An ack with no
// hop measured leaves the window and rate as they are, as the simulator's
// does with no hop updated, but still ends a window of data.
//
// Clocks. ts and B are the switch's own: its clock in ns and its port's
// rate on this machine (kbit/s in the option); T is the sender's, in ns of
// this machine's clock (gsperf passes -base-rtt times the timescale). Both
// run on this machine's clock, so tau / T, txRate / B and qlen / (B x T)
// are the ratios the paper means, whatever the timescale: a fabric K times
// slower has rates K times lower and times K times longer.
//
// Loss: the plain sender's retransmissions (fast retransmit on three
// duplicate acks, timeouts with backoff) run underneath, but do not cut the
// window: HPCC's window and rate follow the telemetry alone, as the
// simulator's go-back-N on a NACK leaves the rate alone.
//
// The window counts payload bytes in flight (what the sender's scoreboard
// counts); the rate is charged each segment's wire bytes (payload plus
// HPCCConfig.Overhead), so that W_init = B x T paces at the line rate.
//
// The rate limiter keeps a virtual clock, as DCQCN's and Pacer do: the
// time the wire bytes it has let through finish at the rate. A segment
// may leave while that clock is at most HPCCConfig.Burst (less the
// segment itself) ahead of now, so a sender polled late sends what it
// owes back to back instead of losing the time. The latest segment's
// time is taken at the rate of now, so a change of the rate re-times it
// (the simulator's ChangeRate moves m_nextAvail by the difference of the
// last packet's times at the two rates). Times are whole ns, each
// segment's rounded down, as Pacer's are.

// Defaults and sources of HPCC's constants.
const (
	// DefaultHPCCEta is the target utilization eta: 95%, the paper's
	// (section 3.3, "Parameters") and the simulator's (U_TARGET 0.95 in
	// mix/config.txt and run.py; RdmaHw's TargetUtil).
	DefaultHPCCEta = 0.95
	// DefaultHPCCMaxStage is maxStage, the additive increases before a
	// multiplicative one: 5, the paper's (section 3.3) and RdmaHw's
	// MiThresh default (run.py runs MI_THRESH 0 unless told: every update
	// multiplicative; HPCCConfig.MaxStage -1 gives that).
	DefaultHPCCMaxStage = 5
	// DefaultHPCCWAI is W_AI as a fraction of W_init: the simulator's
	// run.py sets RATE_AI to 10 Mbit/s per 25 Gbit/s of NIC (ai = 10 bw /
	// 25), 4e-4 of the line, and with VAR_WIN the window is the rate times
	// T, so W_AI = 4e-4 x W_init. That is the paper's guideline W_AI =
	// W_init (1 - eta) / N (section 3.3) for N = 125 flows at eta = 95%.
	DefaultHPCCWAI = 4e-4
	// HPCCMinWindow is the floor of the window as a fraction of W_init:
	// run.py's MIN_RATE of 1000 Mbit/s on the 100 Gbit/s NICs of the
	// paper's fat tree (mix/fat.txt).
	HPCCMinWindow = 0.01
	// DefaultINTHops is the INT slots a segment reserves: 5, the
	// simulator's IntHeader::maxHop (int-header.h).
	DefaultINTHops = 5
	// Defaults of the line rate (bit/s) and T (ns) when none is given:
	// gsperf's -rate and -base-rtt defaults.
	defaultHPCCLine = 1e9
	defaultHPCCT    = 200e3
)

// HPCCConfig configures an HPCC sender. Rates and times are on the
// sender's clock (this machine's: gsperf divides rates and multiplies
// times by its timescale); byte counts are the same on both clocks.
type HPCCConfig struct {
	// LineRate is B of W_init = B x T, the host NIC's rate in bit/s, and
	// the most the rate may reach (default 1 Gbit/s).
	LineRate float64
	// BaseRTT is T in ns (default 200 us).
	BaseRTT int64
	// Eta is the target utilization, in (0, 1] (default DefaultHPCCEta).
	Eta float64
	// MaxStage is maxStage (0: DefaultHPCCMaxStage; negative: 0, every
	// update multiplicative, the simulator's MI_THRESH 0).
	MaxStage int
	// WAI is W_AI in bytes (0: DefaultHPCCWAI x W_init).
	WAI float64
	// Hops is the INT slots each data segment reserves, 1 to
	// gsperf.MaxINTHops (0: DefaultINTHops; more are cut to the most).
	Hops int
	// Overhead is the wire bytes a segment adds to its payload, which the
	// rate is charged with (0: the header length with its INT option).
	Overhead int
	// Burst is how many bytes on the wire may leave at once ahead of the
	// rate (at least one segment of the sender's MSS, the default), so
	// that a sender that wakes late catches up instead of losing the time
	// (gsperf: its pacer's burst).
	Burst int
}

func (c *HPCCConfig) defaults(mss int) {
	if !(c.LineRate > 0) {
		c.LineRate = defaultHPCCLine
	}
	if c.BaseRTT <= 0 {
		c.BaseRTT = defaultHPCCT
	}
	if !(c.Eta > 0 && c.Eta <= 1) {
		c.Eta = DefaultHPCCEta
	}
	switch {
	case c.MaxStage == 0:
		c.MaxStage = DefaultHPCCMaxStage
	case c.MaxStage < 0:
		c.MaxStage = 0
	}
	if c.Hops <= 0 {
		c.Hops = DefaultINTHops
	}
	c.Hops = min(c.Hops, gsperf.MaxINTHops)
	if c.Overhead <= 0 {
		c.Overhead = proto.HeaderLen + gsperf.INTLen(c.Hops)
	}
	c.Burst = max(c.Burst, mss+c.Overhead)
}

// wInit is W_init = B x T in bytes.
func (c *HPCCConfig) wInit() float64 { return c.LineRate / 8e9 * float64(c.BaseRTT) }

// HPCCStats is what an HPCC sender measured.
type HPCCStats struct {
	INTAcks  uint64  // acks that carried an INT option
	Samples  uint64  // hops measured (a record compared with the previous ack's)
	Skipped  uint64  // hops recorded but not measured (no earlier record, ts not advancing, txBytes back, rate 0)
	Updates  uint64  // per-RTT updates of Wc
	Hops     int     // most hops an ack carried
	Window   float64 // W, bytes
	Wc       float64 // the reference window, bytes
	U        float64 // the normalized inflight estimate
	WInit    float64 // W_init = B x T, bytes
	RateBits float64 // R = W / T on the wire, bit/s of the sender's clock
}

// hpcc is an HPCC sender's state.
type hpcc struct {
	c                HPCCConfig
	t                float64 // T, ns
	wInit, wMin, wAI float64
	wMax             float64
	w, wc, u         float64
	incStage         int
	lastUpdateSeq    uint64
	started          bool // an ack with INT has been recorded
	prev             [gsperf.MaxINTHops]gsperf.INTHop
	nprev            int // hops of the previous ack: prev[:nprev] are its records
	// The rate limiter's virtual clock: the latest segment, of last wire
	// bytes (0: none yet), started at start (ns) and ends last / R later
	// at the rate of now (end), the segments before it having ended by
	// start.
	start int64
	last  int
	st    HPCCStats
}

// startHPCC sets up HPCC mode: its state, the INT option in the header
// length, and the window at W_init.
func (s *Sender) startHPCC() {
	c := s.cfg.HPCC
	c.defaults(s.cfg.MSS)
	p := &hpcc{c: c, t: float64(c.BaseRTT), u: 1}
	p.wInit = c.wInit()
	p.wMax = min(p.wInit, float64(s.cfg.MaxWindow))
	p.wMin = min(HPCCMinWindow*p.wInit, p.wMax)
	p.wAI = c.WAI
	if !(p.wAI > 0) {
		p.wAI = DefaultHPCCWAI * p.wInit
	}
	p.w, p.wc = p.wMax, p.wMax
	s.hp = p
	s.hdrLen = proto.HeaderLen + gsperf.INTLen(c.Hops)
	s.cwnd = p.w
}

// ready reports whether a segment of n payload bytes may leave at now at
// the rate R = W / T, and if not, when it may.
func (p *hpcc) ready(now int64, n int) (bool, int64) {
	if p.last == 0 {
		return true, 0
	}
	if at := p.end() - p.span(max(p.c.Burst-n-p.c.Overhead, 0)); at > now {
		return false, at
	}
	return true, 0
}

// sent charges the rate with a segment of n payload bytes that left at now.
func (p *hpcc) sent(now int64, n int) {
	if p.last == 0 {
		p.start = now
	} else {
		p.start = min(max(p.end(), now), maxTime)
	}
	p.last = n + p.c.Overhead
}

// end is when the latest segment ends on the rate limiter's clock, at the
// rate of now.
func (p *hpcc) end() int64 { return p.start + p.span(p.last) }

// span is the time b wire bytes take at the rate of now, in ns, rounded
// down. It is at most maxTime/2, and start at most maxTime, so that no
// sum of times overflows, whatever the rate.
func (p *hpcc) span(b int) int64 { return int64(min(float64(b)*p.t/p.w, maxTime/2)) }

// encodeData writes the data segment's header h into s.buf and returns
// its length: in HPCC mode followed by an empty INT option of the
// configured slots, the header length covering it.
func (s *Sender) encodeData(h *proto.Header) int {
	h.Encode(s.buf)
	p := s.hp
	if p == nil {
		return proto.HeaderLen
	}
	gsperf.InitINT(s.buf[proto.HeaderLen:], p.c.Hops)
	gsperf.Header(s.buf).SetHdrLen(uint16(s.hdrLen))
	return s.hdrLen
}

// HPCC returns what an HPCC sender measured, and false for a sender in
// another mode.
func (s *Sender) HPCC() (HPCCStats, bool) {
	p := s.hp
	if p == nil {
		return HPCCStats{}, false
	}
	st := p.st
	st.Window, st.Wc, st.U, st.WInit = p.w, p.wc, p.u, p.wInit
	st.RateBits = p.w / p.t * 8e9
	return st, true
}

// onAck is the paper's NewAck for an ack whose cumulative acknowledgment
// is ack, carrying the option o (nil: none, and nothing to learn).
func (p *hpcc) onAck(s *Sender, ack uint64, o gsperf.INT) {
	if o == nil {
		return
	}
	p.st.INTAcks++
	p.st.Hops = max(p.st.Hops, o.Hops())
	if !p.started { // the first ack: records only
		p.started = true
		p.record(o)
		p.lastUpdateSeq = s.nxt
		return
	}
	update := ack > p.lastUpdateSeq
	if p.measureInflight(o) {
		p.computeWind(update)
		s.cwnd = p.w
	}
	if update && s.nxt > p.lastUpdateSeq {
		p.lastUpdateSeq = s.nxt
	}
}

// record keeps o's hops as the previous ack's.
func (p *hpcc) record(o gsperf.INT) {
	p.nprev = o.Hops()
	for i := range p.nprev {
		p.prev[i] = o.Hop(i)
	}
}

// measureInflight is the paper's MeasureInflight: it updates U from the
// hops of o against the previous ack's, keeps o's hops as the previous
// ones, and reports whether any hop was measured (U is then updated).
func (p *hpcc) measureInflight(o gsperf.INT) bool {
	n := o.Hops()
	var u, tau float64
	measured := false
	for i := range n {
		h := o.Hop(i)
		if i < p.nprev {
			if v, dt, ok := p.hopU(h, p.prev[i]); ok {
				measured = true
				p.st.Samples++
				if v > u {
					u, tau = v, dt
				}
			} else {
				p.st.Skipped++
			}
		} else {
			p.st.Skipped++
		}
		p.prev[i] = h
	}
	p.nprev = n
	if !measured {
		return false
	}
	tau = min(tau, p.t)
	p.u = (1-tau/p.t)*p.u + tau/p.t*u
	return true
}

// hopU is u' of one hop h against its previous record r, and the time
// between them (ns of the switch), or false if the two cannot be compared.
func (p *hpcc) hopU(h, r gsperf.INTHop) (u, tau float64, ok bool) {
	dt := int64(h.TS - r.TS)
	db := int64(h.TxBytes - r.TxBytes) // modulo 2^64: a wrap of the counter is a small delta
	if dt <= 0 || db < 0 || h.RateKbps == 0 {
		return 0, 0, false
	}
	b := float64(h.RateKbps) / 8e6 // bytes per ns
	txRate := float64(db) / float64(dt)
	return float64(min(h.QLen, r.QLen))/(b*p.t) + txRate/b, float64(dt), true
}

// computeWind is the paper's ComputeWind: it sets W from Wc and U, and on
// the per-RTT update (update) keeps it as Wc and moves incStage.
func (p *hpcc) computeWind(update bool) {
	var w float64
	md := p.u >= p.c.Eta || p.incStage >= p.c.MaxStage
	if md {
		w = p.wc/(p.u/p.c.Eta) + p.wAI
	} else {
		w = p.wc + p.wAI
	}
	if !(w >= p.wMin) { // also NaN
		w = p.wMin
	}
	w = min(w, p.wMax)
	p.w = w
	if update {
		p.wc = w
		p.st.Updates++
		if md {
			p.incStage = 0
		} else {
			p.incStage++
		}
	}
}
