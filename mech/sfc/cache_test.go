package sfc

import (
	"github.com/gswitch/gswitch/internal/keyhash"
	"sync"
	"testing"
)

func ipOf(i int) [4]byte { return [4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)} }

// TestCacheMaxUpdate: an entry's end only rises; a new key is inserted;
// remaining counts down on the clock and reaches zero at the end.
func TestCacheMaxUpdate(t *testing.T) {
	c := newCache(64)
	k := cacheKey(ipOf(1), 0)
	if c.remaining(k, 0) != 0 {
		t.Fatal("empty cache hit")
	}
	c.update(k, 5000, 1000)
	c.update(k, 3000, 1000) // earlier end: kept at 5000
	if got := c.remaining(k, 1000); got != 4000 {
		t.Fatalf("remaining %d, want 4000", got)
	}
	c.update(k, 9000, 2000)
	if got := c.remaining(k, 2000); got != 7000 {
		t.Fatalf("remaining %d, want 7000", got)
	}
	if c.remaining(cacheKey(ipOf(1), 1), 2000) != 0 || c.remaining(cacheKey(ipOf(2), 0), 2000) != 0 {
		t.Fatal("another DSCP or address matched")
	}
	if c.remaining(k, 9000) != 0 || c.live(9000) != 0 || c.live(8999) != 1 {
		t.Fatal("the entry outlived its end")
	}
	if c.inserts.Load() != 1 || c.updates.Load() != 3 {
		t.Fatalf("inserts %d, updates %d", c.inserts.Load(), c.updates.Load())
	}
}

// TestCacheIsBounded: far more live keys than slots: the cache never holds
// more than its slots, every replacement of a live entry is counted, the
// longest pauses survive in each bucket, and expired slots are reused
// without counting an eviction.
func TestCacheIsBounded(t *testing.T) {
	c := newCache(64)
	for i := 0; i < 1000; i++ {
		c.update(cacheKey(ipOf(i), 0), int64(1e6+i), 0)
	}
	live := c.live(0)
	if live != 64 {
		t.Fatalf("%d live entries in 64 slots", live)
	}
	if ev := c.evictions.Load(); ev != 1000-64 {
		t.Fatalf("%d evictions, want %d", ev, 1000-64)
	}
	// Each bucket kept its latest-ending keys: the last key inserted is there.
	if c.remaining(cacheKey(ipOf(999), 0), 0) == 0 {
		t.Fatal("the newest, longest pause was evicted")
	}
	// After every entry ended, new keys take the slots: only a bucket that
	// gets more new keys than it has ways evicts (the new ones).
	ev := c.evictions.Load()
	per := map[uint64]int{}
	want := uint64(0)
	for i := 0; i < 64; i++ {
		k := cacheKey(ipOf(5000+i), 0)
		c.update(k, 3e6, 2e6)
		if per[c.bucketOf(k)]++; per[c.bucketOf(k)] > cacheWays {
			want++
		}
	}
	if c.evictions.Load()-ev != want {
		t.Fatalf("%d evictions among new keys over expired entries, want %d", c.evictions.Load()-ev, want)
	}
}

// TestCacheConcurrent: two writers and two readers on a small cache (run
// with -race): no torn reads (a hit always returns an end some writer wrote
// for that key), and the final ends are the maxima.
func TestCacheConcurrent(t *testing.T) {
	c := newCache(16)
	const keys, rounds = 8, 20000
	// A fixed key under which the 8 keys fit their buckets (at most
	// cacheWays each): under a random one, one bucket in nine draws gets
	// five of them, and the cache rightly evicts one.
	c.key = keyhash.FromKey([2]uint64{1, 2})
	per := map[uint64]int{}
	for k := 0; k < keys; k++ {
		if per[c.bucketOf(cacheKey(ipOf(k), 0))]++; per[c.bucketOf(cacheKey(ipOf(k), 0))] > cacheWays {
			t.Fatalf("the test's key puts more than %d of its keys in one bucket: pick another", cacheWays)
		}
	}
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				k := i % keys
				// The end encodes the key: end % 1000 == key.
				for !c.update(cacheKey(ipOf(k), 0), int64(1e9+i*1000+k), 0) {
				}
			}
		}(w)
	}
	bad := make(chan int64, 1)
	for rd := 0; rd < 2; rd++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				k := i % keys
				if e := c.remaining(cacheKey(ipOf(k), 0), 0); e != 0 && e%1000 != int64(k) {
					select {
					case bad <- e:
					default:
					}
				}
			}
		}()
	}
	wg.Wait()
	select {
	case e := <-bad:
		t.Fatalf("a read returned end %d, which no writer wrote for that key", e)
	default:
	}
	for k := 0; k < keys; k++ {
		last := (rounds-keys+k)*1000 + k
		if e := c.remaining(cacheKey(ipOf(k), 0), 0); e != int64(1e9+last) {
			t.Errorf("key %d ends at %d, want %d", k, e, int64(1e9+last))
		}
	}
}

// TestBloomPeriod: a flow is seen once per period and again in the next;
// occupancy counts the flows of the current period only.
func TestBloomPeriod(t *testing.T) {
	b := newBloom(2, 4096, 3, 1000)
	if b.testAndSet(0, 42, 10) {
		t.Fatal("an empty filter saw a flow")
	}
	if !b.testAndSet(0, 42, 999) {
		t.Fatal("the flow was not suppressed within the period")
	}
	if b.testAndSet(1, 42, 999) {
		t.Fatal("queue 1's filter saw queue 0's flow")
	}
	if b.occupancy(999) != 2 || b.occupancy(1000) != 0 {
		t.Fatalf("occupancy %d at 999, %d at 1000", b.occupancy(999), b.occupancy(1000))
	}
	if b.testAndSet(0, 42, 1000) {
		t.Fatal("the flow was still suppressed after the reset")
	}
	if !b.testAndSet(0, 42, 1999) || b.maxFlows.Load() != 2 {
		t.Fatalf("second period: suppression, max %d", b.maxFlows.Load())
	}
	// 100 flows in a 4096-bit filter: few false positives.
	fp := 0
	for f := uint32(0); f < 100; f++ {
		if b.testAndSet(1, uint64(f*2654435761), 5000) {
			fp++
		}
	}
	if fp > 2 {
		t.Fatalf("%d of 100 new flows suppressed", fp)
	}
}

// TestPauseArithmetic: T_P = (qd - Q_Tg)/R, rounded up to microseconds;
// nothing below the target; saturating.
func TestPauseArithmetic(t *testing.T) {
	cases := []struct {
		qd, qtg, rate uint64
		us            uint32
	}{
		{21000, 10000, 8e6, 11000},        // 11,000 B at 1 B/us
		{113000, 56000, 1e9, 456},         // 57,000 B at 125 B/us
		{56001, 56000, 1e9, 1},            // 8 ns, rounded up
		{10000, 10000, 8e6, 0},            // at the target: no pause
		{1 << 40, 0, 8e3, 4294967295},     // saturates
		{28000 + 1500, 28000, 5e8, 24},    // 1,500 B at 62.5 B/us
		{30000, 10000, 0, 0},              // no rate
		{1 << 62, 1 << 61, 1, 4294967295}, // no overflow
	}
	for _, c := range cases {
		if got := pauseUs(pauseNs(c.qd, c.qtg, c.rate)); got != c.us {
			t.Errorf("qd %d, Q_Tg %d, R %d: pause %d us, want %d", c.qd, c.qtg, c.rate, got, c.us)
		}
	}
}
