package tm

import (
	"fmt"
	"sync/atomic"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/queues"
	"github.com/gswitch/gswitch/tm/shaper"
)

// Lane is a port's metered lane (the credit lane): a FIFO of frames under
// a token bucket of its own, served before the data scheduler when the
// bucket allows. The head frame leaves only when the bucket holds its
// whole cost on the wire (max(len, 60) + 24 bytes), never on debt, so at
// most the bucket's depth leaves back to back, unless the worker ran late:
// then the bucket makes up the time, up to its catch-up, as the port's
// shaper does (shaper, Late service).
//
// Which arriving frames the lane keeps its policy says (mech.LanePolicy;
// with none, it drops those that find it full). The egress worker owns
// the lane; Stats and Depth are for any goroutine.
type Lane struct {
	q       *queues.FIFO
	limit   uint32 // frames the lane holds (the ring under it may be larger)
	bucket  *shaper.Bucket
	policy  mech.LanePolicy
	sent    atomic.Uint64 // frames that left (written by the egress worker only)
	dropped atomic.Uint64 // frames the lane refused or gave up (lane_full)
	early   atomic.Uint64 // of those, the ones the policy dropped early
	tokens  atomic.Int64  // the bucket's bytes at the egress worker's last pass
	late    atomic.Uint64 // line time (ns) the meter lost beyond its catch-up (written by the egress worker only)
}

// NewLane returns a lane metered to rateBits with a bucket of burst bytes
// that makes up at most catchUp ns of line time its worker missed, and a
// queue of queueLen frames of up to frameBytes each, which keeps the
// frames policy says (nil: the frames that find it full are dropped).
func NewLane(rateBits uint64, burst int64, queueLen int, frameBytes uint64, catchUp int64, policy mech.LanePolicy, now int64) (*Lane, error) {
	b, err := shaper.NewBucket(rateBits, burst, now)
	if err != nil {
		return nil, err
	}
	if err := b.SetCatchUp(catchUp); err != nil {
		return nil, fmt.Errorf("catchup: %w", err)
	}
	q, err := queues.NewFIFO(uint64(queueLen)*frameBytes, queueLen)
	if err != nil {
		return nil, err
	}
	l := &Lane{q: q, limit: uint32(queueLen), bucket: b, policy: policy}
	l.tokens.Store(b.Depth())
	return l, nil
}

// Push offers p, arriving at now, to the lane and reports whether the lane
// took it; when it took it in place of a frame it queued before, that
// frame is in victim and evicted is true (egress worker only). The caller
// drops what the lane refused and the victim; the lane counts both.
func (l *Lane) Push(p, victim *pkt.Packet, now int64) (queued, evicted bool) {
	n := l.q.Packets()
	room := n < l.limit && l.q.Bytes()+uint64(p.Len) <= l.q.Limit()
	v := mech.LaneKeep
	if l.policy != nil {
		v = l.policy.Arrive(n, l.limit, room, now)
	}
	switch {
	case v == mech.LaneKeep:
		if room && l.q.Push(p) {
			return true, false
		}
	case v >= 0:
		if l.q.ReplaceFromTail(uint32(v), p, victim) {
			l.dropped.Add(1) // the victim
			return true, true
		}
	case v == mech.LaneDropEarly:
		l.early.Add(1)
	}
	l.dropped.Add(1)
	return false, false
}

// Pop sends the head frame into out if the bucket lets it leave at now,
// charging the bucket (egress worker only).
func (l *Lane) Pop(now int64, out *pkt.Packet) bool {
	h, ok := l.q.Head()
	if !ok || !l.bucket.ReadyFor(now, h.Len) {
		return false
	}
	l.q.Pop(out)
	l.bucket.Take(out.Len)
	l.sent.Add(1)
	if l.policy != nil {
		l.policy.Sent()
	}
	return true
}

// Remove takes the head frame into out without sending it (a port that
// went down drops what its lane holds; egress worker only).
func (l *Lane) Remove(out *pkt.Packet) bool { return l.q.Pop(out) }

// Reset forgets the lane's history once a port that went down has dropped
// what it held: the policy's, and the bucket's banked catch-up.
func (l *Lane) Reset() {
	if l.policy != nil {
		l.policy.Reset()
	}
	l.bucket.Backlogged(false)
}

// Len is the number of frames the lane holds (egress worker only).
func (l *Lane) Len() uint32 { return l.q.Packets() }

// Empty reports whether the lane holds nothing (egress worker only).
func (l *Lane) Empty() bool { return l.q.Empty() }

// Tokens is what the lane's bucket holds at now, in bytes (egress worker only).
func (l *Lane) Tokens(now int64) int64 { return l.bucket.Tokens(now) }

// wait is how long until the head frame may leave (0: now, or nothing queued).
func (l *Lane) wait(now int64) int64 {
	h, ok := l.q.Head()
	if !ok {
		return 0
	}
	return l.bucket.WaitFor(now, h.Len)
}

// publish ends the egress worker's pass: the bucket hears whether frames
// wait, and the depth, the tokens and the time the meter lost are
// published.
func (l *Lane) publish(now int64) {
	l.bucket.Backlogged(!l.q.Empty())
	l.q.Publish()
	l.tokens.Store(l.bucket.Tokens(now))
	if x := l.bucket.TakeLate(); x > 0 {
		l.late.Store(l.late.Load() + uint64(x))
	}
}

// LateNs is the line time (ns) the lane's meter lost while credits
// waited, its worker running later than the catch-up allows: the credit
// lane's counterpart of Port.LateNs (any goroutine).
func (l *Lane) LateNs() uint64 { return l.late.Load() }

// Depth is the lane's depth as of the egress worker's last pass (any goroutine).
func (l *Lane) Depth() (uint64, uint32) { return l.q.Depth() }

// Stats returns the lane's counters (any goroutine).
func (l *Lane) Stats() mech.CreditLaneStats {
	_, n := l.q.Depth()
	return mech.CreditLaneStats{Sent: l.sent.Load(), Dropped: l.dropped.Load(), Early: l.early.Load(), Queued: n,
		TokenBytes: l.tokens.Load(), DepthBytes: l.bucket.Depth(), RateBits: l.bucket.RateBits()}
}
