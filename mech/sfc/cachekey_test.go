package sfc

import "testing"

// unkeyedBucket is the bucket a key took in a cache of the given buckets
// before the cache was keyed (SplitMix64 of the key).
func unkeyedBucket(k uint64, buckets uint64) uint64 {
	k ^= k >> 30
	k *= 0xbf58476d1ce4e5b9
	k ^= k >> 27
	k *= 0x94d049bb133111eb
	k ^= k >> 31
	return k & (buckets - 1)
}

// TestCacheBucketIsKeyed: four destinations computed (by the unkeyed
// bucket) to share a victim destination's bucket, each cached with a
// longer pause, no longer evict the victim's entry. With the unkeyed
// bucket they did: whoever could get pauses cached for addresses of its
// choice could clear another destination's entry, and the local senders
// toward it were answered no more.
func TestCacheBucketIsKeyed(t *testing.T) {
	c := newCache(DefaultCacheEntries)
	buckets := uint64(DefaultCacheEntries / cacheWays)
	victim := cacheKey([4]byte{10, 1, 2, 1}, 0)
	home := unkeyedBucket(victim, buckets)
	var attack []uint64
	for i := 1; len(attack) < cacheWays && i < 1<<24; i++ {
		k := cacheKey(ipOf(i), 0)
		if k != victim && unkeyedBucket(k, buckets) == home {
			attack = append(attack, k)
		}
	}
	if len(attack) < cacheWays {
		t.Fatalf("found %d keys for the victim's bucket", len(attack))
	}
	c.update(victim, 5e6, 0)
	for _, k := range attack {
		c.update(k, 9e6, 0)
	}
	if c.remaining(victim, 0) != 5e6 {
		t.Fatalf("the victim's entry was evicted by %d keys computed for its bucket (%d evictions)", len(attack), c.evictions.Load())
	}
}
