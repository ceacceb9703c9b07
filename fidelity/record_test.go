package fidelity

import (
	"testing"
)

// A Recorder counts each observation in its bucket and the sum; Load and
// AddTo read it; Histogram is what PromBuckets exports, as Parse reads it.
func TestRecorderAndCounts(t *testing.T) {
	var r Recorder
	r.Observe(500)       // bucket 0 (<= 1 µs)
	r.Observe(300e3)     // 300 µs
	r.ObserveN(300e3, 2) // two more
	r.Observe(-5)        // counts as 0
	r.Observe(10e9)      // beyond the last bound: +Inf
	r.ObserveN(5e3, 0)   // nothing
	c := r.Load()
	if c.Total() != 6 || c.N[0] != 2 || c.N[Bucket(300e3)] != 3 || c.N[NumBuckets-1] != 1 || c.SumNs != 500+3*300e3+10e9 {
		t.Fatalf("counts %v, sum %d", c.N, c.SumNs)
	}
	var two Counts
	r.AddTo(&two)
	two.Add(&c)
	if two.Total() != 12 || two.SumNs != 2*c.SumNs {
		t.Fatalf("added: %d observations, sum %d", two.Total(), two.SumNs)
	}

	h := c.Histogram()
	count, prom := PromBuckets(c.N[:])
	if h.Count != count || h.Count != 6 || len(h.Bounds) != NumBuckets-1 || h.Sum != float64(c.SumNs)/1e9 {
		t.Fatalf("histogram: count %d (prom %d), %d bounds, sum %v", h.Count, count, len(h.Bounds), h.Sum)
	}
	for i, b := range h.Bounds {
		if prom[b] != h.Cumulative[i] {
			t.Fatalf("at %v: %d cumulative, PromBuckets says %d", b, h.Cumulative[i], prom[b])
		}
	}
	// The median is in 300 µs's bucket; the maximum is past the last bound.
	if q, over, ok := h.Quantile(0.5); !ok || over || q > 300e-6*1.2 || q < 300e-6/1.2 {
		t.Fatalf("median %v %v %v", q, over, ok)
	}
	if _, over, _ := h.Quantile(1); !over {
		t.Fatal("the largest observation is past the last bound: Quantile(1) should say so")
	}
}

// Observing allocates nothing (a worker does it every pass).
func TestRecorderDoesNotAllocate(t *testing.T) {
	var r Recorder
	ns := int64(1)
	if a := testing.AllocsPerRun(1000, func() { ns = ns*3 + 1; r.Observe(ns % 5e9); r.ObserveN(ns%7e6, 3) }); a != 0 {
		t.Fatalf("%v allocations per observation", a)
	}
}

// BenchmarkRecorderObserve is the cost a worker pays per pass for its
// pass-gap histogram.
func BenchmarkRecorderObserve(b *testing.B) {
	var r Recorder
	var ns [1024]int64
	x := int64(1)
	for i := range ns {
		x = (x*7 + 13) % 5e6
		ns[i] = x
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.Observe(ns[i&1023])
	}
}
