package fidelity

import "sync/atomic"

// Counts is a histogram in this package's buckets as gswitchd keeps it:
// the number of observations in each bucket (indexed by Bucket, the +Inf
// one last) and their sum in nanoseconds. gswitchd builds its Switch
// snapshots from these (Histogram) instead of a scrape's text.
type Counts struct {
	N     [NumBuckets]uint64
	SumNs int64
}

// Add adds o's observations to c.
func (c *Counts) Add(o *Counts) {
	for k := range c.N {
		c.N[k] += o.N[k]
	}
	c.SumNs += o.SumNs
}

// Total is the number of observations.
func (c Counts) Total() uint64 {
	var n uint64
	for _, x := range c.N {
		n += x
	}
	return n
}

// Histogram is c as a Histogram: cumulative counts at BucketBounds, every
// observation in Count, the sum in seconds. It is what Parse makes of the
// exposition PromBuckets(c.N[:]) gives.
func (c Counts) Histogram() Histogram {
	h := Histogram{Bounds: BucketBounds(), Cumulative: make([]uint64, MaxExp4+1), Sum: float64(c.SumNs) / 1e9}
	var run uint64
	for k := range h.Cumulative {
		run += c.N[k]
		h.Cumulative[k] = run
	}
	h.Count = run + c.N[NumBuckets-1]
	return h
}

// Recorder counts observations into buckets: one goroutine observes, any
// goroutine loads. Observe takes no lock and allocates nothing, and costs
// a Bucket look-up and two loads and stores: with one writer a counter
// needs no read-modify-write instruction, only atomic publication. A
// Recorder is 90 counters and a sum; the zero value is empty.
type Recorder struct {
	n   [NumBuckets]atomic.Uint64
	sum atomic.Int64
}

// Observe counts one observation of ns nanoseconds (negative ones count as
// 0). The Recorder's one writer only.
func (r *Recorder) Observe(ns int64) {
	ns = max(ns, 0)
	c := &r.n[Bucket(ns)]
	c.Store(c.Load() + 1)
	r.sum.Store(r.sum.Load() + ns)
}

// ObserveN counts n observations of ns nanoseconds each (the writer only).
func (r *Recorder) ObserveN(ns int64, n uint64) {
	if n == 0 {
		return
	}
	ns = max(ns, 0)
	c := &r.n[Bucket(ns)]
	c.Store(c.Load() + n)
	r.sum.Store(r.sum.Load() + ns*int64(n))
}

// AddTo adds what the Recorder has counted to dst (any goroutine). While
// the writer observes, dst may miss the latest observations, or hold an
// observation's count and not yet its sum.
func (r *Recorder) AddTo(dst *Counts) {
	for k := range r.n {
		dst.N[k] += r.n[k].Load()
	}
	dst.SumNs += r.sum.Load()
}

// Load returns what the Recorder has counted (any goroutine).
func (r *Recorder) Load() Counts {
	var c Counts
	r.AddTo(&c)
	return c
}
