package transport

import "math"

// DCQCN's reaction point (Zhu et al., "Congestion Control for Large-Scale
// RDMA Deployments", SIGCOMM 2015, section 3.1): a rate-based sender. The
// switches mark CE on ECN-capable packets by RED on the instantaneous
// queue (the congestion point: mech/ecn's mode red, whose defaults are the
// paper's Kmin 5 KB, Kmax 200 KB, Pmax 1%); the receiver (the notification
// point, Receiver.SendCNPs) sends the flow's sender a CNP when a CE segment
// arrives, at most one per CNPInterval; the sender (here) cuts its rate on
// each CNP and raises it again by a timer and a byte counter.
//
// # The rate machine (section 3.1, Figure 7)
//
// The flow starts at its line rate, with no slow start (section 3.1: "When
// a flow starts, it sends at full line rate"), and with alpha = 1 (the
// paper's initial value). State: the current rate Rc, the target rate Rt
// and alpha.
//
//   - On a CNP (equation 1): Rt = Rc, Rc = Rc (1 - alpha/2), then
//     alpha = (1 - g) alpha + g. The rate-increase counters T and BC, the
//     byte count and the rate-increase timer restart, and so does the
//     alpha timer. Every CNP cuts: the paper has no rate-decrease
//     interval, the notification point's spacing (one CNP per 50 us per
//     flow) is what bounds the cuts.
//   - Alpha's decay (equation 2): alpha = (1 - g) alpha every AlphaTimer
//     (the paper's K) without a CNP, counted from the flow's start and
//     from each CNP.
//   - Rate increase: an event each time the rate-increase timer expires
//     (every Timer, T counts them) and each time the byte counter does
//     (every Bytes sent on the wire, BC counts them), both from the last
//     cut. After the counter of the event is incremented, with F = 5:
//     max(T, BC) <= F: fast recovery, Rc = (Rt + Rc)/2 (equation 3); else
//     min(T, BC) <= F: additive increase, Rt = Rt + R_AI, Rc = (Rt + Rc)/2
//     (equation 4); else hyper increase, Rt = Rt + i R_HAI with
//     i = min(T, BC) - F, Rc = (Rt + Rc)/2. So the first F events after a
//     cut are fast recovery, each halving the distance from Rc to Rt, the
//     rate probes additively once either counter has passed F and hyper
//     additively once both have (QCN's phases, to which the paper defers).
//     Before the first cut the rate is already the line rate: the timer
//     starts with the first cut.
//   - Bounds: Rt and Rc never exceed the line rate; a cut never takes Rc
//     below MinRate (a rate already below it, never the case, is left).
//
// Timer events are applied lazily, each at its own time, whenever the
// sender is next called (Poll, a CNP): the rate machine's result does not
// depend on when it is looked at.
//
// # Constants (DefaultDCQCN) and their sources
//
// The paper's values are for its 40 Gbit/s NICs (Table 1 and section 3.1);
// the simulator is the HPCC authors' ns-3 (alibaba-edu/
// High-Precision-Congestion-Control, simulation/src/point-to-point/model/
// rdma-hw.cc, Mellanox's DCQCN as their "mlx" functions, and
// simulation/run.py's configurations "dcqcn" and "dcqcn_paper" in the
// format of simulation/mix/config.txt). All times are fabric times and
// rates fabric rates (gsperf scales them by its -timescale).
//
//   - CNP interval N = 50 us: paper section 3.1 (NP algorithm). The
//     simulator sends a CNP flag on the ack of every marked packet
//     (RdmaHw::ReceiveUdp) and bounds the cuts at the sender instead
//     (RATE_DECREASE_INTERVAL: 4 us in "dcqcn", 50 us in "dcqcn_paper").
//   - g = 1/256: paper Table 1; simulator EWMA_GAIN 0.00390625 in both
//     configurations (attribute EwmaGain's default is 1/16).
//   - Alpha timer K = 55 us: paper section 3.1 ("Our implementation uses
//     K = 55us"); simulator ALPHA_RESUME_INTERVAL 1 us ("dcqcn") or 50 us
//     ("dcqcn_paper"), attribute AlphaResumInterval's default 55 us. The
//     simulator's alpha starts at the first CNP (RdmaHw::cnp_received_mlx
//     sets it to 1 then); the paper's decays from the flow's start.
//   - Rate-increase timer T = 55 us: paper Table 1 ("Timer"); simulator
//     RP_TIMER 300 us ("dcqcn") or 55 us ("dcqcn_paper").
//   - Byte counter B = 10 MB: paper Table 1 ("Byte Counter"). The
//     simulator's Mellanox version has no byte counter: its increases
//     come from the timer alone (RdmaHw::RateIncEventTimerMlx).
//   - F = 5: paper section 3.1 ("for F = 5 successive iterations");
//     simulator FastRecoveryTimes's default 5, FAST_RECOVERY_TIMES 1 in
//     both configurations.
//   - R_AI = 40 Mbit/s: the paper's additive step for its 40 Gbit/s
//     hosts (also RATE_AI in the sample configuration of the DCQCN
//     authors' own ns-3, bobzhuyb/ns3-rdma); simulator RATE_AI 5 Mbit/s
//     per 25 Gbit/s of NIC rate (run.py: ai = 5 x bw / 25, 8 Mbit/s at
//     40), attribute RateAI's default 5 Mbit/s.
//   - R_HAI = 400 Mbit/s: the paper gives no value (it defers to QCN for
//     hyper increase); the simulator's is ten times its R_AI (attribute
//     RateHAI 50 Mbit/s beside RateAI 5 Mbit/s; run.py hai = 50 x bw / 25),
//     and so is this, ten times the paper's R_AI (the DCQCN authors'
//     sample configuration has 200 Mbit/s, five times).
//   - Minimum rate 100 Mbit/s: the paper gives none; simulator attribute
//     MinRate's default and mix/config.txt's MIN_RATE (run.py writes
//     1000 Mbit/s).
//   - The target rate is set to Rc on every CNP (equation 1); the
//     simulator keeps it on a CNP that follows a cut with no increase
//     between (CLAMP_TARGET_RATE 0 in both configurations).
//
// # What is in flight
//
// DCQCN has no window: a RoCE NIC sends at the rate the reaction point
// sets, and PFC keeps the fabric lossless. gsperf runs over a fabric that
// may drop, so the plain sender's loss recovery stays underneath
// (selective acks, fast retransmit of the first hole, the adaptive timeout
// with its backoff), and a fixed window (Config.InitWindow; DCQCNWindow is
// gsperf's) bounds what a flow has unacknowledged: when acks stop (a
// receiver gone, a path down) the flow stops within a window, and the
// receiver's out-of-order buffer holds what follows a hole. The window
// never changes: losses and timeouts retransmit, they do not cut the rate
// or the window (in RoCE the rate is DCQCN's alone).

// DCQCN's constants (the sources are in the comment above), in the
// fabric's units: rates in bit/s, times in ns, bytes.
const (
	DefaultDCQCNG          = 1.0 / 256
	DefaultDCQCNRAI        = 40e6
	DefaultDCQCNRHAI       = 400e6
	DefaultDCQCNMinRate    = 100e6
	DefaultDCQCNTimer      = 55e3
	DefaultDCQCNAlphaTimer = 55e3
	DefaultDCQCNBytes      = 10e6
	DefaultDCQCNF          = 5
	// DefaultCNPInterval is the notification point's least spacing of a
	// flow's CNPs (Receiver.SendCNPs).
	DefaultCNPInterval = 50e3
	// DCQCNKMax is the top of the marking band the window allows for
	// (DCQCNWindow): the paper's Kmax, mech/ecn's default for mode red.
	DCQCNKMax = 200e3
)

// DCQCNConfig configures a DCQCN sender's rate machine. Rates are in bit/s
// and times in ns on the sender's clock (gsperf: the wall clock, fabric
// values scaled by its timescale); zero fields take DefaultDCQCN's.
type DCQCNConfig struct {
	LineRate   float64 // the host's line rate: the flow starts at it and never exceeds it (required)
	MinRate    float64 // the floor of a cut
	G          float64 // alpha's gain g, in (0, 1]
	RAI, RHAI  float64 // additive and hyper increase steps
	Timer      int64   // the rate-increase timer T
	AlphaTimer int64   // alpha's decay period K
	Bytes      int64   // the byte counter B, in bytes on the wire
	F          int     // fast recovery's number of events
	// Overhead is what a segment adds on the wire beyond its payload,
	// counted in the rate and the byte counter (gsperf: udp.Overhead).
	Overhead int
	// Burst is how many bytes on the wire may leave at once ahead of the
	// rate (at least one segment), so that a sender that wakes late
	// catches up instead of losing the time.
	Burst int
}

// DefaultDCQCN returns the paper's constants (fabric units) with the line
// rate and overhead left 0.
func DefaultDCQCN() DCQCNConfig {
	return DCQCNConfig{MinRate: DefaultDCQCNMinRate, G: DefaultDCQCNG, RAI: DefaultDCQCNRAI, RHAI: DefaultDCQCNRHAI,
		Timer: DefaultDCQCNTimer, AlphaTimer: DefaultDCQCNAlphaTimer, Bytes: DefaultDCQCNBytes, F: DefaultDCQCNF}
}

func (c *DCQCNConfig) defaults(mss int) {
	d := DefaultDCQCN()
	if !(c.LineRate > 0) || math.IsInf(c.LineRate, 0) {
		c.LineRate = 10e9 // a sender needs some line rate; gsperf always gives one
	}
	if !(c.MinRate > 0) {
		c.MinRate = d.MinRate
	}
	c.MinRate = min(c.MinRate, c.LineRate)
	if !(c.G > 0) {
		c.G = d.G
	}
	c.G = min(c.G, 1)
	if !(c.RAI > 0) {
		c.RAI = d.RAI
	}
	if !(c.RHAI > 0) {
		c.RHAI = d.RHAI
	}
	if c.Timer <= 0 {
		c.Timer = d.Timer
	}
	if c.AlphaTimer <= 0 {
		c.AlphaTimer = d.AlphaTimer
	}
	if c.Bytes <= 0 {
		c.Bytes = d.Bytes
	}
	if c.F <= 0 {
		c.F = d.F
	}
	c.Overhead = max(c.Overhead, 0)
	c.Burst = max(c.Burst, mss+c.Overhead)
}

// DCQCNWindow is the window gsperf gives a DCQCN flow of line rate
// lineBits (bit/s) over a path of base round trip rtt and a notification
// point spacing CNPs by cnp (ns, one clock): the most a flow at line rate
// has in flight when the bottleneck's queue sits at the top of the
// marking band (DCQCNKMax, where every packet is marked) and has grown
// for one more CNP interval before the cut reaches the sender:
// lineBits/8 x (rtt + cnp) + DCQCNKMax. While the marks keep the queue
// within that, the window never binds and the rate alone controls the
// flow. At least ten segments of mss.
func DCQCNWindow(lineBits float64, rtt, cnp int64, mss int) int {
	w := lineBits/8*float64(rtt+cnp)/1e9 + DCQCNKMax
	return max(int(min(w, 1<<40)), 10*mss)
}

// maxCatchUp bounds the timer events one call applies; beyond (a gap of a
// million timer periods with no call, which no gsperf flow has), the rest
// are counted without effect.
const maxCatchUp = 1 << 20

// maxTime is the latest time the rate machine takes: times beyond it
// (after 146 years) are taken as it, so that no sum of times overflows.
const maxTime = 1 << 62

// dcqcn is a DCQCN sender's rate machine and the rate limiter it sets.
type dcqcn struct {
	c         DCQCNConfig
	rc, rt    float64 // current and target rate, bit/s
	alpha     float64
	last      int64 // the latest time seen (times never go back)
	nextAlpha int64 // when alpha next decays
	nextInc   int64 // when the rate-increase timer next expires (0: not running, before the first cut)
	t, bc     int64 // timer and byte-counter events since the last cut
	bytes     int64 // bytes on the wire since the byte counter last expired
	next      float64
	// next is the rate limiter's virtual clock (ns): when the bytes it has
	// let through finish at the rate.
	cnps, cuts uint64
}

func newDCQCN(c DCQCNConfig, mss int, now int64) *dcqcn {
	c.defaults(mss)
	now = min(max(now, 0), maxTime)
	return &dcqcn{c: c, rc: c.LineRate, rt: c.LineRate, alpha: 1, last: now, nextAlpha: now + c.AlphaTimer}
}

// clock takes a time as the machine's now: never before the latest seen.
func (d *dcqcn) clock(now int64) int64 {
	d.last = max(d.last, min(now, maxTime))
	return d.last
}

// periods reports how many periods of p have ended at now counting from
// at (at <= now), and when the next one ends.
func periods(at, now, p int64) (n, next int64) {
	n = (now-at)/p + 1
	return n, at + n*p // at + n p <= now + p <= maxTime + p: no overflow
}

// advance applies the timer events due at now, in order.
func (d *dcqcn) advance(now int64) {
	now = d.clock(now)
	if now >= d.nextAlpha {
		n, next := periods(d.nextAlpha, now, d.c.AlphaTimer)
		d.alpha *= math.Pow(1-d.c.G, float64(n))
		d.nextAlpha = next
	}
	for i := 0; d.nextInc != 0 && now >= d.nextInc; i++ {
		if i == maxCatchUp || d.rt == d.c.LineRate && d.rc == d.c.LineRate {
			// At line rate (or past the bound) more events change nothing
			// but the count.
			n, next := periods(d.nextInc, now, d.c.Timer)
			d.t = min(d.t+n, maxTime)
			d.nextInc = next
			break
		}
		d.nextInc += d.c.Timer
		d.t = min(d.t+1, maxTime)
		d.increase()
	}
}

// increase is a rate-increase event, its counter already incremented.
func (d *dcqcn) increase() {
	f := int64(d.c.F)
	switch lo := min(d.t, d.bc); {
	case max(d.t, d.bc) <= f: // fast recovery: Rt stays
	case lo <= f: // additive increase
		d.rt += d.c.RAI
	default: // hyper increase
		d.rt += float64(lo-f) * d.c.RHAI
	}
	d.rt = min(d.rt, d.c.LineRate)
	d.rc = min((d.rt+d.rc)/2, d.rt)
	if d.rt == d.c.LineRate && d.c.LineRate-d.rc < 1 {
		d.rc = d.c.LineRate // within a bit per second: the halvings would never quite reach it
	}
}

// onCNP is a CNP that arrived at now.
func (d *dcqcn) onCNP(now int64) {
	d.advance(now)
	now = d.last
	d.cnps++
	d.rt = d.rc
	if r := max(d.rc*(1-d.alpha/2), d.c.MinRate); r < d.rc { // at the floor a CNP cuts nothing
		d.rc = r
		d.cuts++
	}
	d.alpha = (1-d.c.G)*d.alpha + d.c.G
	d.nextAlpha = now + d.c.AlphaTimer
	d.t, d.bc, d.bytes = 0, 0, 0
	d.nextInc = now + d.c.Timer
}

// ready reports whether a segment of n payload bytes may leave at now at
// the rate, and if not, when it may.
func (d *dcqcn) ready(now int64, n int) (bool, int64) {
	d.advance(now)
	now = d.last
	burst := float64(d.c.Burst-n-d.c.Overhead) * 8e9 / d.rc
	if at := d.next - max(burst, 0); at > float64(now) {
		return false, int64(math.Ceil(at))
	}
	return true, 0
}

// sent counts a segment of n payload bytes that left at now: the rate
// limiter's clock and the byte counter.
func (d *dcqcn) sent(now int64, n int) {
	now = d.clock(now)
	wire := n + d.c.Overhead
	d.next = max(d.next, float64(now)) + float64(wire)*8e9/d.rc
	if d.nextInc == 0 { // before the first cut the counters do not run
		return
	}
	d.bytes += int64(wire)
	for d.bytes >= d.c.Bytes {
		d.bytes -= d.c.Bytes
		d.bc = min(d.bc+1, maxTime)
		d.increase()
	}
}

// Rate is a DCQCN sender's current rate Rc in bit/s (its sender's clock);
// 0 for a sender in another mode.
func (s *Sender) Rate() float64 {
	if s.rp == nil {
		return 0
	}
	return s.rp.rc
}

// TargetRate is a DCQCN sender's target rate Rt in bit/s; 0 in another mode.
func (s *Sender) TargetRate() float64 {
	if s.rp == nil {
		return 0
	}
	return s.rp.rt
}

// RateAlpha is a DCQCN sender's alpha (from 0 to 1); 0 in another mode.
func (s *Sender) RateAlpha() float64 {
	if s.rp == nil {
		return 0
	}
	return s.rp.alpha
}

// LineRate is a DCQCN sender's line rate in bit/s; 0 in another mode.
func (s *Sender) LineRate() float64 {
	if s.rp == nil {
		return 0
	}
	return s.rp.c.LineRate
}
