package fidelity

import (
	"math/big"
	"math/bits"
)

// Log-linear histogram buckets: four per power of two, upper bounds
// 2^(k/4) µs for k = 0..MaxExp4 (1 µs to 4.19 s), plus +Inf. A bound is
// kept in whole nanoseconds, rounded down (1.189207 µs is 1189 ns), so an
// observation in ns falls in exactly the bucket whose bound in seconds
// the float comparison ns/1e9 <= bound picks.
const (
	// MaxExp4 is the largest k of a finite bound 2^(k/4) µs: 2^22 µs.
	MaxExp4 = 88
	// NumBuckets counts the buckets, the +Inf one included.
	NumBuckets = MaxExp4 + 2
)

// boundNs[k] = floor(1000 x 2^(k/4)) ns.
var boundNs [MaxExp4 + 1]int64

// firstAt[L] is the first k whose bound is at least 2^(L-1): where
// Bucket starts looking for a value of bit length L.
var firstAt [65]uint8

func init() {
	// floor(1000 x 2^(k/4)) = floor((1e12 x 2^k)^(1/4)), and the floor of a
	// fourth root is the floor of the square root of the floor of the
	// square root: exact integers, no rounding of a float power.
	for k := range boundNs {
		x := new(big.Int).Lsh(big.NewInt(1e12), uint(k))
		boundNs[k] = x.Sqrt(x).Sqrt(x).Int64()
	}
	for l := 1; l <= 64; l++ {
		lo := uint64(1) << (l - 1)
		k := 0
		for k < len(boundNs) && uint64(boundNs[k]) < lo {
			k++
		}
		firstAt[l] = uint8(k)
	}
}

// Bucket is the index of the bucket an observation of ns nanoseconds falls
// in: the first whose upper bound is at least ns (0 for ns <= 1 µs,
// negative ones included; NumBuckets-1 above 4.19 s). It takes no
// floating point, no lock and allocates nothing: gswitchd's workers call
// it on every pass.
func Bucket(ns int64) int {
	if ns <= boundNs[0] {
		return 0
	}
	k := int(firstAt[bits.Len64(uint64(ns))])
	for k < len(boundNs) && boundNs[k] < ns {
		k++
	}
	return k
}

// BucketBounds returns the finite upper bounds in seconds, ascending
// (NumBuckets-1 of them; +Inf is implied), as Prometheus histograms take
// them. The slice is the caller's.
func BucketBounds() []float64 {
	b := make([]float64, len(boundNs))
	for k, ns := range boundNs {
		b[k] = float64(ns) / 1e9
	}
	return b
}

// BucketBoundsNs returns the finite upper bounds in nanoseconds.
func BucketBoundsNs() []int64 {
	return append([]int64(nil), boundNs[:]...)
}

// PromBuckets turns counts per bucket (indexed by Bucket, NumBuckets of
// them, the +Inf one last) into what prometheus.MustNewConstHistogram
// takes: the number of observations and the cumulative count at each
// finite bound in seconds.
func PromBuckets(counts []uint64) (count uint64, buckets map[float64]uint64) {
	buckets = make(map[float64]uint64, len(boundNs))
	for k, ns := range boundNs {
		if k < len(counts) {
			count += counts[k]
		}
		buckets[float64(ns)/1e9] = count
	}
	for _, n := range counts[min(len(counts), len(boundNs)):] {
		count += n
	}
	return count, buckets
}
