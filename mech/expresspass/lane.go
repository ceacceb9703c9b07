package expresspass

import "github.com/gswitch/gswitch/mech"

// CreditDrop is how a port's credit lane drops the credits it cannot carry
// (config credit_drop).
type CreditDrop uint8

const (
	// CreditDropTail drops only when the queue is full (the paper's
	// switch). The credits that arrive between two of the lane's sends
	// compete alike for the room (the worker reads its sockets one after
	// another, where a switch sees their credits interleaved): a credit
	// that finds the queue full is dropped, or takes the place of one of
	// them, which is dropped instead.
	CreditDropTail CreditDrop = iota
	// CreditDropRandom drops each arriving credit with a probability that
	// grows with the queue's average length, from 0 at half the queue to
	// 1 at the full queue (random early detection on the credit
	// queue), and as CreditDropTail when the queue is full. Every credit that
	// arrives at about the same time has the same chance, however its
	// sender spaces its credits: the uniform random drop ExpressPass's
	// fairness rests on (section 3.1 of the paper).
	CreditDropRandom
)

// lanePolicy is ExpressPass's policy for a port's credit lane
// (mech.LanePolicy): which credits the lane keeps. The switch runs it on
// the port's egress worker only.
//
// A full lane drops, but not simply at the tail. The worker admits a
// pass's credits in the order it reads its sockets, one port after
// another, where a switch's credit queue sees them interleaved in time;
// tail drop would then favour the ports read first. So the credits that
// arrive between two sends compete alike for the room the last send left:
// when the k-th of them finds the lane full, it replaces one of the up to
// fairWindow admitted before it since that send with probability (that
// number)/k, else it is dropped (reservoir sampling; the queue's order is
// kept). With CreditDropRandom an arriving credit may also be dropped
// before the lane is full (random early detection: see early).
type lanePolicy struct {
	random      bool   // CreditDropRandom
	avg         int64  // the queue's average length at arrivals, in 1/256 credits (random only)
	lastArrival int64  // when the last credit arrived (random only)
	gap         int64  // ns per credit at the lane's rate (random only: the average's decay)
	arrived     uint32 // credits offered since the lane last sent
	admits      uint32 // of those, still queued at the tail (at most fairWindow count)
	rng         uint64 // xorshift state for the drop choices
}

// fairWindow bounds how many of a pass's admitted credits a later one may
// replace (each replacement moves that many): beyond it, tail drop.
const fairWindow = 64

var _ mech.LanePolicy = (*lanePolicy)(nil)

// newLanePolicy is the policy of port's credit lane, metered to rateBits
// (at least 8 kbit/s), dropping as drop says.
func newLanePolicy(port int, rateBits uint64, drop CreditDrop) *lanePolicy {
	return &lanePolicy{random: drop == CreditDropRandom, gap: max(int64(CreditWireBytes*8*1e9/rateBits), 1),
		rng: 0x9e3779b97f4a7c15 ^ uint64(port+1)*0xbf58476d1ce4e5b9}
}

// Arrive implements mech.LanePolicy: an arriving credit is dropped early
// (random only), queued if the lane has room, or, with the probability of
// reservoir sampling, queued in place of one the lane admitted since its
// last send, else dropped.
func (l *lanePolicy) Arrive(queued, limit uint32, room bool, now int64) mech.LaneVerdict {
	if l.random && l.early(queued, limit, now) {
		return mech.LaneDropEarly // not among the arrivals that compete for room
	}
	l.arrived++
	if room {
		l.admits = min(l.admits+1, fairWindow)
		return mech.LaneKeep
	}
	if l.admits == 0 {
		return mech.LaneDrop
	}
	j := uint32(l.next() >> 32 * uint64(l.arrived) >> 32) // uniform in [0, arrived)
	if j >= l.admits {
		return mech.LaneDrop
	}
	return mech.LaneReplace(j)
}

// Sent implements mech.LanePolicy: it ends a pass's competition for room;
// the credits that arrive next compete for what this send freed.
func (l *lanePolicy) Sent() { l.arrived, l.admits = 0, 0 }

// Reset implements mech.LanePolicy: the port went down and its credits
// were dropped; no competition, no average.
func (l *lanePolicy) Reset() {
	l.Sent()
	l.avg = 0
}

// early folds the queue's length into its average and draws whether an
// arriving credit is dropped before the queue is full: with probability
// (avg - limit/2) / (limit - limit/2), clamped to [0, 1] (CreditDropRandom).
// The threshold is half the queue, not less: at a quarter, a lane that was
// not the flows' bottleneck (the multi-bottleneck's swl) dropped early
// whenever its credits bunched. An empty lane's average decays as if a
// credit had arrived to it every credit time since the last arrival (as
// RED's does over idle time, so a burst after a pause is not dropped for
// the queue of before).
func (l *lanePolicy) early(queued, limit uint32, now int64) bool {
	if queued == 0 && l.avg > 0 {
		for m := (now - l.lastArrival) / l.gap; m > 0 && l.avg > 0; m-- {
			l.avg -= (l.avg + 15) / 16
		}
	}
	l.lastArrival = now
	l.avg += (int64(queued)<<8 - l.avg) / 16   // weight 1/16 per arrival
	lo, hi := int64(limit)<<7, int64(limit)<<8 // half the queue, the queue; 1/256 credits
	if l.avg <= lo {
		return false
	}
	r := int64(l.next() >> 40) // uniform in [0, 2^24)
	return r*(hi-lo) < (l.avg-lo)<<24
}

// next steps the xorshift generator.
func (l *lanePolicy) next() uint64 {
	l.rng ^= l.rng << 13
	l.rng ^= l.rng >> 7
	l.rng ^= l.rng << 17
	return l.rng
}
