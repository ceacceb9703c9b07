// Package shaper is the egress port's line-rate shaper: a token bucket that
// decides when the port may pull its next frame from the scheduler.
//
// # Model
//
// Tokens are bytes on the wire: each frame costs its length, padded to the
// 60-byte Ethernet minimum, plus Overhead (preamble, start delimiter, FCS
// and inter-frame gap, 24 bytes), so a port shaped to 100 Mbit/s carries
// what a 100 Mbit/s Ethernet link would, and a minimum frame costs 84 bytes
// (a ratio of wire sizes such as 84/(84+1538) holds exactly). The
// bucket holds at most Burst bytes. A frame may leave when the bucket is not
// in debt; it then takes its whole cost, possibly driving the bucket
// negative. So the shaper never needs to know the next frame's size in
// advance and the port stays pull-only.
//
// # Late service
//
// A line serializes frames whether or not the CPU that feeds it is
// running; the worker that plays the line here is a thread, and on a busy
// machine it may come back milliseconds after the frame it should have
// sent. A bucket capped at Burst would lose that time: the port idles
// although frames waited. So while the port is backlogged (its owner says
// so with Backlogged at the end of each pass) the bucket may fill past
// Burst up to CatchUp, which lets the port send what the line would have
// sent meanwhile, in one batch, as a NIC drains its tx ring after the CPU
// comes back. Time the port was backlogged beyond CatchUp is lost and
// counted (Late). Once the port has nothing eligible to send, the bucket
// is clamped to Burst again: an idle line banks no time.
//
// A Bucket belongs to the worker that owns the port's egress; it is not safe
// for concurrent use. Time is passed in (nanoseconds), so tests drive it
// with a fake clock.
package shaper

import "fmt"

// Overhead is the per-frame wire overhead in bytes beyond the frame without
// FCS: 7 preamble + 1 SFD + 4 FCS + 12 inter-frame gap.
const Overhead = 24

// MinFrame is the shortest Ethernet frame without FCS; shorter frames are
// padded to it on the wire.
const MinFrame = 60

// WireBytes is what a frame of frameLen bytes (without FCS) occupies on the
// wire: max(frameLen, 60) + 24.
func WireBytes(frameLen uint32) int64 { return int64(max(frameLen, MinFrame)) + Overhead }

// maxBurst bounds the bucket depth so burst x 1e9 fits in an int64.
const maxBurst = 1 << 32

// Bucket is a token bucket. The zero value is an unlimited shaper.
type Bucket struct {
	rate    int64 // bytes per second; 0 = unlimited
	burst   int64 // bucket depth in byte·ns/s units (bytes * 1e9)
	catchup int64 // depth while backlogged, same units (>= burst)
	tokens  int64 // same units
	last    int64 // time of the last refill, ns
	backlog bool  // the owner's last pass left frames it could not send for tokens
	late    int64 // ns of line time lost while backlogged, not yet taken by TakeLate
}

// New returns a shaper for bitsPerSec with the given burst in bytes (0
// chooses max(2 full-size frames, 1 ms at the rate)).
func New(bitsPerSec uint64, burstBytes int64, now int64) (*Bucket, error) {
	if bitsPerSec == 0 {
		return &Bucket{}, nil
	}
	if bitsPerSec < 8000 || bitsPerSec > 1e12 {
		return nil, fmt.Errorf("rate %d bit/s out of range [8 kbit/s, 1 Tbit/s]", bitsPerSec)
	}
	rate := int64(bitsPerSec / 8)
	if burstBytes == 0 {
		burstBytes = max(2*(1514+Overhead), rate/1000)
	}
	if burstBytes < 1514+Overhead {
		return nil, fmt.Errorf("burst %d B is smaller than one full-size frame (%d B)", burstBytes, 1514+Overhead)
	}
	return newBucket(rate, burstBytes, now)
}

// NewBucket returns a token bucket of rate bitsPerSec and depth burstBytes
// (any depth of at least one minimum frame on the wire, 84 B): a lane's
// meter, such as the credit lane's bucket of two credits.
func NewBucket(bitsPerSec uint64, burstBytes int64, now int64) (*Bucket, error) {
	if bitsPerSec < 8000 || bitsPerSec > 1e12 {
		return nil, fmt.Errorf("rate %d bit/s out of range [8 kbit/s, 1 Tbit/s]", bitsPerSec)
	}
	if burstBytes < MinFrame+Overhead {
		return nil, fmt.Errorf("burst %d B is smaller than one minimum frame on the wire (%d B)", burstBytes, MinFrame+Overhead)
	}
	return newBucket(int64(bitsPerSec/8), burstBytes, now)
}

func newBucket(rate, burstBytes, now int64) (*Bucket, error) {
	if burstBytes > maxBurst {
		return nil, fmt.Errorf("burst %d B is larger than %d B", burstBytes, int64(maxBurst))
	}
	b := &Bucket{rate: rate, burst: burstBytes * 1e9, last: now}
	b.tokens = b.burst
	b.catchup = b.burst
	return b, nil
}

// SetCatchUp lets a backlogged bucket fill up to ns of line time beyond
// its depth (0: no catch-up; see the package comment, Late service). At
// most maxBurst bytes in all.
func (b *Bucket) SetCatchUp(ns int64) error {
	if b.rate == 0 {
		return nil
	}
	if ns < 0 || ns > 10e9 {
		return fmt.Errorf("catch-up %dns out of range [0, 10s]", ns)
	}
	c := float64(b.burst/1e9) + float64(ns)*float64(b.rate)/1e9 // ns x rate may not fit in 64 bits
	if c > maxBurst {
		return fmt.Errorf("catch-up of %dns at %d bit/s is %.0f B, more than %d B", ns, b.rate*8, c, int64(maxBurst))
	}
	b.catchup = int64(c) * 1e9
	return nil
}

// Backlogged tells the bucket whether the owner's pass that just ended
// left frames waiting for tokens or for room on the port's ring (true), or
// ended because nothing was eligible (false, which also clamps the bucket
// to its depth).
func (b *Bucket) Backlogged(yes bool) {
	b.backlog = yes
	if !yes && b.tokens > b.burst {
		b.tokens = b.burst
	}
}

// TakeLate returns the line time, in ns, that the port lost while
// backlogged since the last call: time beyond what CatchUp could bank.
func (b *Bucket) TakeLate() int64 {
	l := b.late
	b.late = 0
	return l
}

// Unlimited reports whether the shaper lets everything through.
func (b *Bucket) Unlimited() bool { return b.rate == 0 }

// RateBits is the configured rate in bit/s (0 = unlimited).
func (b *Bucket) RateBits() uint64 { return uint64(b.rate) * 8 }

func (b *Bucket) refill(now int64) {
	dt := now - b.last
	b.last = now
	if dt <= 0 {
		return
	}
	limit := b.burst
	if b.backlog {
		limit = b.catchup
	}
	// need is the time to fill up to limit, rounded up; dt*rate stays
	// below limit-tokens+rate, so it cannot overflow.
	need := (limit - b.tokens + b.rate - 1) / b.rate
	if dt >= need {
		if b.backlog {
			b.late += dt - need
		}
		b.tokens = limit
		return
	}
	b.tokens += dt * b.rate
}

// Ready reports whether a frame may leave at now.
func (b *Bucket) Ready(now int64) bool {
	if b.rate == 0 {
		return true
	}
	b.refill(now)
	return b.tokens >= 0
}

// Take charges a frame of frameLen bytes (without FCS) that was sent at the
// time of the last Ready call: WireBytes(frameLen).
func (b *Bucket) Take(frameLen uint32) {
	if b.rate == 0 {
		return
	}
	b.tokens -= WireBytes(frameLen) * 1e9
}

// Adjust charges delta more bytes (or gives back -delta) for a frame whose
// length changed after Take (an egress stage added or removed a tag).
func (b *Bucket) Adjust(delta int64) {
	if b.rate == 0 {
		return
	}
	b.tokens -= delta * 1e9
}

// ReadyFor reports whether a frame of frameLen bytes may leave at now
// without driving the bucket into debt: the bucket holds at least its
// WireBytes. A meter that must never let more than its depth through at
// once (the credit lane: a credit leaves only when
// tokens >= its size) asks this instead of Ready.
func (b *Bucket) ReadyFor(now int64, frameLen uint32) bool {
	if b.rate == 0 {
		return true
	}
	b.refill(now)
	return b.tokens >= WireBytes(frameLen)*1e9
}

// WaitFor is how long after now until ReadyFor(frameLen) turns true (0 if
// it is already).
func (b *Bucket) WaitFor(now int64, frameLen uint32) int64 {
	if b.rate == 0 {
		return 0
	}
	b.refill(now)
	need := WireBytes(frameLen)*1e9 - b.tokens
	if need <= 0 {
		return 0
	}
	return (need + b.rate - 1) / b.rate
}

// Tokens is what the bucket holds at now, in whole bytes (negative in
// debt); at most the depth, or the catch-up while backlogged.
func (b *Bucket) Tokens(now int64) int64 {
	if b.rate == 0 {
		return 0
	}
	b.refill(now)
	return b.tokens / 1e9
}

// Depth is the bucket's depth in bytes (0 for an unlimited shaper).
func (b *Bucket) Depth() int64 { return b.burst / 1e9 }

// Wait is how long after now until Ready turns true (0 if it is already).
func (b *Bucket) Wait(now int64) int64 {
	if b.rate == 0 {
		return 0
	}
	b.refill(now)
	if b.tokens >= 0 {
		return 0
	}
	return (-b.tokens + b.rate - 1) / b.rate
}
