package fidelity

import (
	"math"
	"math/rand"
	"sort"
	"testing"
)

// The bounds are 2^(k/4) µs, four per power of two, from 1 µs to about 4 s.
func TestBucketBoundsAreLogLinear(t *testing.T) {
	b := BucketBounds()
	if len(b) != NumBuckets-1 || b[0] != 1e-6 || b[len(b)-1] != 4.194304 {
		t.Fatalf("%d bounds, %v .. %v", len(b), b[0], b[len(b)-1])
	}
	for k, v := range b {
		want := math.Pow(2, float64(k)/4) * 1e-6
		if math.Abs(v-want) > 1e-9 { // rounded down to the ns
			t.Errorf("bound %d = %v, want %v", k, v, want)
		}
		if k%4 == 0 && v != math.Ldexp(1e-6, k/4) && k/4 < 10 {
			t.Errorf("bound %d = %v, not exactly a power of two of 1 µs", k, v)
		}
		if k > 0 && !(v > b[k-1]) {
			t.Errorf("bounds not ascending at %d", k)
		}
	}
	ns := BucketBoundsNs()
	if ns[1] != 1189 || ns[2] != 1414 || ns[3] != 1681 || ns[4] != 2000 {
		t.Errorf("first bounds in ns: %v", ns[:5])
	}
}

// Bucket picks the bucket the bounds say: the first bound >= the value.
func TestBucketAgreesWithBounds(t *testing.T) {
	b := BucketBounds()
	check := func(ns int64) {
		want := sort.SearchFloat64s(b, float64(ns)/1e9) // first bound >= the value; len(b) = +Inf
		if got := Bucket(ns); got != want {
			t.Fatalf("Bucket(%d) = %d, the bounds say %d (%v .. %v)", ns, got, want, b[max(want-1, 0)], b[min(want, len(b)-1)])
		}
	}
	for _, n := range BucketBoundsNs() {
		for d := int64(-2); d <= 2; d++ {
			check(n + d)
		}
	}
	for ns := int64(-10); ns < 100_000; ns++ {
		check(ns)
	}
	rng := rand.New(rand.NewSource(1))
	for range 200_000 {
		check(rng.Int63n(10e9))
		check(int64(math.Exp(rng.Float64() * 45)))
	}
	for _, ns := range []int64{0, math.MinInt64, math.MaxInt64, 4194304000, 4194304001} {
		check(ns)
	}
	if Bucket(math.MaxInt64) != NumBuckets-1 || Bucket(-5) != 0 {
		t.Fatal("ends")
	}
}

func TestBucketDoesNotAllocate(t *testing.T) {
	var sink int
	if n := testing.AllocsPerRun(1000, func() { sink += Bucket(123456789) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

func BenchmarkBucket(b *testing.B) {
	vals := make([]int64, 1024)
	rng := rand.New(rand.NewSource(1))
	for i := range vals {
		vals[i] = int64(math.Exp(rng.Float64() * 22)) // 1 ns .. 3.6 ms, log-uniform
	}
	sink := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sink += Bucket(vals[i&1023])
	}
	_ = sink
}

func TestPromBuckets(t *testing.T) {
	counts := make([]uint64, NumBuckets)
	counts[Bucket(500)]++     // 0.5 µs: the first bucket
	counts[Bucket(1500)] += 2 // (1.414, 1.682] µs
	counts[Bucket(10e9)] += 3 // past 4.19 s: +Inf
	n, b := PromBuckets(counts)
	if n != 6 || len(b) != NumBuckets-1 || b[1e-6] != 1 || b[1.414e-6] != 1 || b[1.681e-6] != 3 || b[4.194304] != 3 {
		t.Fatalf("%d %v", n, b)
	}
}
