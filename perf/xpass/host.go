package xpass

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"net/netip"
	"time"

	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/perf/timescale"
	"github.com/gswitch/gswitch/wire"
)

// Wire sizes of the credit share: a credit is a minimum frame (84 bytes on
// the wire), a full data frame 1538.
const (
	CreditWire = 84
	DataWire   = 1538
)

// MaxCreditRate is the most credit bytes per second (on the wire) a link of
// linkBits carries: linkBits x 84/1622 / 8, rounded down.
func MaxCreditRate(linkBits uint64) int64 {
	return int64(linkBits * CreditWire / (CreditWire + DataWire) / 8)
}

// Params configure a host's ExpressPass. The defaults are the spec's:
// ns2-xpass's loop with alpha 0.5, w_init 0.0625, w_min 0.01, target loss
// scaling 0.125, jitter +-10%, an 8-credit NIC queue; the NIC's meter may
// send 8 credits back to back (a switch's holds 2): a NIC in software
// wakes up late, by hundreds of microseconds on a busy machine, and with a
// depth of 2 it lost a third of its rate that way (the first switch's
// credit lane, 2 + 8 credits, takes such a burst and spaces it again).
type Params struct {
	LinkBits          uint64        // the host's link rate: the maximum credit rate is LinkBits x 84/1622
	Alpha             float64       // first rate = Alpha x maximum
	WInit, WMin       float64       // the aggressiveness w: start, floor
	TargetLossScaling float64       // target loss = (1 - rate/maximum) x this
	Jitter            float64       // credit gaps x (1 + U[-Jitter, +Jitter]); 0: no jitter
	Naive             bool          // no feedback: every flow at the maximum rate
	DSCP              uint8         // the credit class
	NICQueue          int           // credits the NIC queue holds
	NICBurst          int           // credits the NIC may send back to back (its meter's depth)
	RetransmitTimeout time.Duration // XP_REQUEST is sent again after this until a credit arrives (100 us)
	StopTimeout       time.Duration // a stopped flow is remembered this long (ns-2's default_credit_stop_timeout_, 2 ms)
	IdleStop          time.Duration // credits stop for a flow whose data has not come back for this long (100 ms, or 50 RTT if longer)
	MaxFlows          int           // flows a host sends credits for at once (4096); more requests are refused
	MSS               int           // payload bytes per segment (for the request's packet count)
}

// DefaultParams returns the spec's defaults for a link of linkBits. The
// timers (RetransmitTimeout, StopTimeout, IdleStop) are protocol timers (a
// fabric's time): gsperf multiplies them by its timescale.
func DefaultParams(linkBits uint64) Params {
	return Params{LinkBits: linkBits, Alpha: 0.5, WInit: 0.0625, WMin: 0.01, TargetLossScaling: 0.125, Jitter: 0.1,
		DSCP: wire.DefaultCreditDSCP, NICQueue: 8, NICBurst: 8, RetransmitTimeout: 100 * time.Microsecond,
		StopTimeout: 2 * time.Millisecond, IdleStop: 100 * time.Millisecond, MaxFlows: 4096, MSS: 1408}
}

// Validate names what is wrong (by the gsperf flag that sets it).
func (p *Params) Validate() error {
	switch {
	case p.LinkBits < 200e3 || p.LinkBits > 1e12:
		return fmt.Errorf("-xp-link: %d bit/s out of range [200kbit, 1Tbit] (the host's link rate: credits are metered to 84/1622 of it)", p.LinkBits)
	case !(p.Alpha > 0 && p.Alpha <= 1):
		return fmt.Errorf("-xp-alpha: %v out of range (0, 1]", p.Alpha)
	case !(p.WInit > 0 && p.WInit <= 0.5):
		return fmt.Errorf("-xp-w-init: %v out of range (0, 0.5]", p.WInit)
	case !(p.WMin > 0 && p.WMin <= p.WInit):
		return fmt.Errorf("-xp-w-min: %v out of range (0, w_init]", p.WMin)
	case !(p.TargetLossScaling > 0 && p.TargetLossScaling < 1):
		return fmt.Errorf("-xp-target-loss: %v out of range (0, 1)", p.TargetLossScaling)
	case !(p.Jitter >= 0 && p.Jitter < 1):
		return fmt.Errorf("-xp-jitter: %v out of range [0, 1)", p.Jitter)
	case p.DSCP > 63:
		return fmt.Errorf("-xp-dscp: %d out of range [0, 63]", p.DSCP)
	case p.NICQueue < 1 || p.NICQueue > 4096:
		return fmt.Errorf("-xp-nic-queue: %d credits out of range [1, 4096]", p.NICQueue)
	case p.NICBurst < 1 || p.NICBurst > 64:
		return fmt.Errorf("-xp-nic-burst: %d credits out of range [1, 64]", p.NICBurst)
	case p.RetransmitTimeout <= 0 || p.StopTimeout <= 0 || p.IdleStop <= 0:
		return errors.New("xpass timeouts must be positive")
	case p.MaxFlows < 1:
		return fmt.Errorf("-max-flows: %d (at least 1)", p.MaxFlows)
	case p.MSS < 1:
		return fmt.Errorf("MSS %d", p.MSS)
	}
	return nil
}

// Key names a flow at its receiver: the sender's address (where credits
// go) and the flow id.
type Key struct {
	From netip.AddrPort
	Flow uint64
}

// Flow is the credit-sending state of one flow at its data receiver.
type Flow struct {
	Key
	FB       Feedback
	seq      uint32 // next credit_seq (ns-2's c_seqno_, from 1, never 0)
	recvNext uint32 // next credit_seq expected in data (c_recv_next_)
	next     int64  // ns: when the next credit is due
	sending  bool
	stopped  int64 // ns: when XP_STOP arrived (0: not stopped)
	lastData int64 // ns: the last data segment (or the request)
	idx      int   // heap index (-1: not in the heap)
	ackCum   uint64
	ackSkip  int
	ackHole  bool

	Credits  uint64 // credits generated
	NICDrops uint64 // of them, dropped by the full NIC queue
	Echoed   uint64 // credits echoed by data
	Lost     uint64 // credits the echoes show lost (gaps)
	Reorder  uint64 // data that echoed an older credit than one already seen
	Invalid  uint64 // data that echoed a credit never sent
}

// Rate is the flow's current credit rate, bytes/s on the wire.
func (f *Flow) Rate() int64 { return f.FB.Cur }

// Sending reports whether the flow is being sent credits.
func (f *Flow) Sending() bool { return f.sending }

// HostStats count what a host's credit sender did.
type HostStats struct {
	Requests, Stops     uint64 // XP_REQUESTs that started a flow, XP_STOPs that stopped one
	Refused             uint64 // requests refused: MaxFlows flows
	IdleStops           uint64 // flows stopped because their data stopped coming back
	Credits             uint64 // credits generated
	NICDrops            uint64 // credits the full NIC queue dropped
	Sent                uint64 // credits that left the NIC
	Echoed, Lost        uint64 // credits echoed by data, and shown lost by gaps in the echoes
	Active, PeakActive  int    // flows being sent credits
	RateSum             int64  // sum of the active flows' credit rates, bytes/s
	NICQueued, Remember int    // credits in the NIC queue; flows remembered
}

type pending struct {
	key Key
	c   wire.Credit
}

// Host is the credit sender of one host: every flow it receives data for,
// and its NIC's credit queue and meter. Used by one goroutine.
type Host struct {
	p       Params
	maxRate int64
	nicGap  float64   // ns per credit at the maximum rate
	nicNext float64   // the NIC's virtual clock: when the credits it has sent are paid for (ns)
	catchUp float64   // how late (ns) a flow's credits are still made up for: NICBurst gaps
	q       []pending // the NIC queue (ring)
	qh, qn  int
	flows   map[Key]*Flow
	due     flowHeap
	rng     *rand.Rand
	st      HostStats

	// OnUpdate, if set, is called after each rate update of the feedback
	// control with the flow, the time (ns) and its Feedback before and
	// after (a trace for experiments; gsperf's -xp-trace).
	OnUpdate func(k Key, now int64, before, after Feedback)
}

// NewHost returns a host's credit sender; now is the clock (ns) it will be driven by.
func NewHost(p Params, seed int64, now int64) (*Host, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	rate := MaxCreditRate(p.LinkBits)
	gap := CreditWire / float64(rate) * 1e9
	return &Host{p: p, maxRate: rate, nicGap: gap, catchUp: float64(p.NICBurst) * gap, nicNext: float64(now),
		q: make([]pending, p.NICQueue), flows: map[Key]*Flow{}, rng: rand.New(rand.NewSource(seed))}, nil
}

// MaxRate is the maximum credit rate of the host's link, bytes/s.
func (h *Host) MaxRate() int64 { return h.maxRate }

// Flow returns the flow of k, or nil.
func (h *Host) Flow(k Key) *Flow { return h.flows[k] }

func sec(ns int64) float64 { return float64(ns) / 1e9 }

// Request starts sending credits to the flow k (an XP_REQUEST arrived at
// now) of size bytes. A request for a flow already being sent credits (the
// sender retransmits requests until a credit arrives) changes nothing.
// It reports false when MaxFlows flows are remembered.
func (h *Host) Request(k Key, size uint64, now int64) bool {
	f := h.flows[k]
	if f == nil {
		if len(h.flows) >= h.p.MaxFlows {
			h.st.Refused++
			return false
		}
		f = &Flow{Key: k, seq: 1, recvNext: 1, idx: -1,
			FB: Feedback{MaxRate: h.maxRate, AvgCredit: CreditWire, TargetLossScaling: h.p.TargetLossScaling, WMin: h.p.WMin}}
		h.flows[k] = f
	}
	if f.sending {
		return true
	}
	pkts := int64(math.Ceil(float64(size) / float64(h.p.MSS)))
	f.FB.Start(sec(now), h.p.Alpha, h.p.WInit, pkts)
	if h.p.Naive {
		f.FB.Cur = h.maxRate
	}
	f.sending, f.stopped, f.next, f.lastData = true, 0, now, now
	heap.Push(&h.due, f)
	h.st.Requests++
	h.st.PeakActive = max(h.st.PeakActive, h.due.Len())
	return true
}

// Stop stops the credits of flow k (an XP_STOP arrived at now). It
// reports false when the host knows no flow k: a stop names a flow by its
// sender's address and the flow id, so only the sender of a flow can stop
// it (a stop repeated for a flow already stopped is known, and changes
// nothing).
func (h *Host) Stop(k Key, now int64) bool {
	f := h.flows[k]
	if f == nil {
		return false
	}
	if f.sending {
		h.stop(f, now)
		h.st.Stops++
	}
	return true
}

func (h *Host) stop(f *Flow, now int64) {
	f.sending, f.stopped = false, now
	if f.idx >= 0 {
		heap.Remove(&h.due, f.idx)
	}
}

// OnData takes the mechanism field of a data segment of flow k that
// arrived at now: the credit it echoes shows the credits lost before it
// (a gap in the sequence) and an RTT sample.
func (h *Host) OnData(k Key, mechField uint64, now int64) {
	f := h.flows[k]
	if f == nil {
		return
	}
	seq, sent := wire.MechXPCredit(mechField)
	if int32(seq-f.seq) >= 0 { // never sent: not an echo of ours
		f.Invalid++
		return
	}
	gap := int32(seq - f.recvNext)
	if gap < 0 {
		f.Reorder++
		return
	}
	f.FB.Account(int64(gap))
	f.recvNext = seq + 1
	if f.recvNext == 0 {
		f.recvNext = 1
	}
	f.Echoed++
	f.Lost += uint64(gap)
	h.st.Echoed++
	h.st.Lost += uint64(gap)
	f.lastData = now
	if rtt := uint32(now/1000) - sent; rtt < 10e6 { // µs, serial: less than 10 s
		f.FB.SampleRTT(float64(rtt) / 1e6)
	}
}

// Poll generates the credits due at now, sends what the NIC meter allows
// through send (the credit and the flow it is for; send must not keep
// anything), and returns when it next has something to do
// (math.MaxInt64: nothing until a request).
func (h *Host) Poll(now int64, send func(k Key, c wire.Credit)) int64 {
	for h.due.Len() > 0 && h.due[0].next <= now {
		f := h.due[0]
		if idle := max(h.p.IdleStop.Nanoseconds(), int64(50*f.FB.RTT*1e9)); now-f.lastData > idle {
			h.stop(f, now) // the sender is gone, or its data no longer comes back
			h.st.IdleStops++
			continue
		}
		h.credit(f, now)
		heap.Fix(&h.due, 0)
	}
	for h.qn > 0 && h.nicWait(now) == 0 {
		p := h.q[h.qh]
		h.q[h.qh] = pending{}
		h.qh = (h.qh + 1) % len(h.q)
		h.qn--
		h.nicNext = max(h.nicNext, float64(now)) + h.jittered(h.nicGap)
		h.st.Sent++
		send(p.key, p.c)
	}
	next := int64(math.MaxInt64)
	if h.due.Len() > 0 {
		next = h.due[0].next
	}
	if h.qn > 0 {
		next = min(next, now+max(h.nicWait(now), 1))
	}
	return next
}

// nicWait is how long after now the NIC may send its next credit: its
// meter holds NICBurst credits; each credit costs its gap at the maximum
// rate, jittered as the flows' gaps are (a meter that spaced credits
// exactly would undo the flows' jitter whenever its queue is backlogged,
// and drop-tail credit queues downstream would then favour whichever
// sender's phase comes first: section 3.1, "fair credit drop").
func (h *Host) nicWait(now int64) int64 {
	w := h.nicNext - float64(h.p.NICBurst-1)*h.nicGap - float64(now)
	if w <= 0 {
		return 0
	}
	return int64(math.Ceil(w))
}

// jittered scales a gap by 1 + U[-Jitter, +Jitter].
func (h *Host) jittered(gap float64) float64 {
	if h.p.Jitter > 0 {
		gap *= 1 + (h.rng.Float64()*2-1)*h.p.Jitter
	}
	return gap
}

// credit is ns-2's send_credit for flow f at now: feedback, a credit into
// the NIC queue, the next credit's time.
func (h *Host) credit(f *Flow, now int64) {
	if !h.p.Naive {
		if h.OnUpdate == nil {
			f.FB.Update(sec(now))
		} else if before := f.FB; f.FB.Update(sec(now)) {
			h.OnUpdate(f.Key, now, before, f.FB)
		}
	}
	c := wire.Credit{Seq: f.seq, SentTime: uint32(now / 1000)}
	if f.seq++; f.seq == 0 {
		f.seq = 1
	}
	f.Credits++
	h.st.Credits++
	if h.qn == len(h.q) {
		f.NICDrops++
		h.st.NICDrops++
	} else {
		h.q[(h.qh+h.qn)%len(h.q)] = pending{f.Key, c}
		h.qn++
	}
	rate := f.FB.Cur
	if h.p.Naive {
		rate = h.maxRate
	}
	gap := h.jittered(float64(CreditWire) / float64(max(rate, 1)) * 1e9)
	f.next += int64(gap)
	if late := now - int64(h.catchUp); f.next < late {
		// Woken late (the host's thread did not run): the credits of the
		// last NICBurst credit gaps are made up for, as the NIC's meter
		// may send them back to back; older ones are not (a burst of them
		// would overflow the NIC queue, and the loss would read as
		// congestion).
		f.next = late
	}
}

// Sweep forgets flows stopped longer than StopTimeout ago.
func (h *Host) Sweep(now int64) {
	for k, f := range h.flows {
		if !f.sending && now-f.stopped >= h.p.StopTimeout.Nanoseconds() {
			delete(h.flows, k)
		}
	}
}

// Stats returns the host's counters.
func (h *Host) Stats() HostStats {
	st := h.st
	st.Active = h.due.Len()
	for _, f := range h.due {
		st.RateSum += f.FB.Cur
	}
	if h.p.Naive {
		st.RateSum = int64(st.Active) * h.maxRate
	}
	st.NICQueued, st.Remember = h.qn, len(h.flows)
	return st
}

// String summarizes the counters in one line.
func (s HostStats) String() string { return s.Format(timescale.Scale{}) }

// Format is String for a host run at timescale sc: the credit rate, which
// the host measures on this machine's clock, is given on both clocks
// ("0.1 Mbit/s of credits wall = 100 Mbit/s fabric"); at timescale 1 it is
// String's line.
func (s HostStats) Format(sc timescale.Scale) string {
	loss := 0.0
	if s.Echoed+s.Lost > 0 {
		loss = float64(s.Lost) / float64(s.Echoed+s.Lost)
	}
	rate := fmt.Sprintf("%.1f Mbit/s of credits", float64(s.RateSum)*8/1e6)
	if !sc.One() {
		wall := float64(s.RateSum) * 8
		rate = fmt.Sprintf("%s of credits wall = %s fabric (timescale %v)", timescale.FormatRate(wall), timescale.FormatRate(sc.FabricRate(wall)), sc)
	}
	return fmt.Sprintf("xpass: %d flows requested (%d stopped, %d idle, %d refused), %d active (peak %d) at %s; "+
		"%d credits generated, %d sent, %d dropped by the NIC queue; %d echoed, %d lost (%.2f%%)",
		s.Requests, s.Stops, s.IdleStops, s.Refused, s.Active, s.PeakActive, rate,
		s.Credits, s.Sent, s.NICDrops, s.Echoed, s.Lost, 100*loss)
}

// flowHeap orders flows by their next credit.
type flowHeap []*Flow

func (q flowHeap) Len() int           { return len(q) }
func (q flowHeap) Less(i, j int) bool { return q[i].next < q[j].next }
func (q flowHeap) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].idx, q[j].idx = i, j
}
func (q *flowHeap) Push(x any) {
	f := x.(*Flow)
	f.idx = len(*q)
	*q = append(*q, f)
}
func (q *flowHeap) Pop() any {
	old := *q
	f := old[len(old)-1]
	old[len(old)-1] = nil
	f.idx = -1
	*q = old[:len(old)-1]
	return f
}

// KeepAck says whether the receiver of flow f sends ack a (the ack the
// gsperf receiver wrote for a segment). Acks that only move the in-order
// point forward by the segment just received are sent one in every; the
// others (out of order: a hole the sender must hear of at once; a
// duplicate; the one that fills a hole; the flow's last byte) always. A nil flow keeps every ack.
func (f *Flow) KeepAck(a proto.Header, every int) bool {
	if f == nil || every <= 1 {
		return true
	}
	inOrder := a.Seq == f.ackCum && a.Ack > f.ackCum && a.Ack < a.Size
	f.ackCum = max(f.ackCum, a.Ack)
	if !inOrder || f.ackHole {
		f.ackSkip = 0
		f.ackHole = !inOrder // the ack that fills a hole goes too
		return true
	}
	if f.ackSkip++; f.ackSkip >= every {
		f.ackSkip = 0
		return true
	}
	return false
}
