package sfc

import (
	"math"
	"sync/atomic"

	"github.com/gswitch/gswitch/internal/keyhash"
)

// cacheWays is the number of slots of a bucket: a key lives in one of the
// ways of the bucket its hash picks.
const cacheWays = 4

// cache is the switch's near-source pause cache (Algorithm 1 lines 1-8 and
// 11; section 4): key (IPv4 address, DSCP), value the pause-end time on the
// switch clock (ns). It is switch-wide: the receiving workers of fabric
// ports write it (a BTS passing through), the egress workers of ports in
// mode ingress_cache read it (a local sender's packet). It is bounded
// (cache_entries slots, set-associative in buckets of cacheWays),
// allocation-free and lock-free:
//
//   - Readers never wait: a slot carries a sequence number, odd while a
//     writer changes it; a read that sees it odd or changed tries once more
//     and otherwise treats the slot as a miss (a missed hit only delays a
//     BTS to the next packet).
//   - Writers never wait either: they claim a slot by moving its sequence
//     number from even to odd with one compare-and-swap, and give up
//     (counted as contended) if another writer holds it.
//
// An update raises an entry's pause end (max, line 6); a key not present
// takes a free or expired slot of its bucket, else the live slot that ends
// first (counted as an eviction): the paper's hash-addressed register, where
// a collision means "we just don't apply the optimization" (App. B.2), with
// the choice of victim made so the longest pauses survive. Entries expire by
// their end time: an expired slot reads as empty and is reused.
//
// Two workers inserting one absent key at the same instant may both insert
// it, into two ways; lookups take the latest end of every way holding the
// key, so the answer is right, and the spare copy expires.
//
// The bucket of a key is chosen by a keyed hash (package keyhash, a secret
// key per cache): the keys are addresses hosts choose to send to, and with
// an unkeyed hash a host could compute addresses that share a bucket with
// a chosen destination's and, by getting pauses for them cached, evict
// that destination's entry. The eviction rule itself (the entry that ends
// first) stays: which entries a bucket holds is not a host's to aim.
type cache struct {
	slots []cslot
	mask  uint64 // buckets - 1
	key   keyhash.Key

	updates, inserts, evictions, contended atomic.Uint64
}

type cslot struct {
	seq atomic.Uint64
	key atomic.Uint64 // 0: free
	end atomic.Int64  // pause end (switch clock, ns)
}

func newCache(entries int) *cache {
	n := max(entries, cacheWays)
	return &cache{slots: make([]cslot, n), mask: uint64(n/cacheWays) - 1, key: keyhash.New()}
}

// cacheKey is the key of (ip, dscp); never 0.
func cacheKey(ip [4]byte, dscp uint8) uint64 {
	return 1<<63 | uint64(ip[0])<<32 | uint64(ip[1])<<24 | uint64(ip[2])<<16 | uint64(ip[3])<<8 | uint64(dscp&63)
}

// bucketOf is the index of key's bucket.
func (c *cache) bucketOf(key uint64) uint64 { return c.key.Sum(key) & c.mask }

func (c *cache) bucket(key uint64) []cslot {
	b := c.bucketOf(key)
	return c.slots[b*cacheWays : b*cacheWays+cacheWays : b*cacheWays+cacheWays]
}

// claim takes slot s for writing; false if another writer holds it.
func claim(s *cslot) (uint64, bool) {
	q := s.seq.Load()
	return q, q&1 == 0 && s.seq.CompareAndSwap(q, q+1)
}

// update sets key's pause end to max(its end, end) at now, inserting the
// key if absent (any goroutine). It reports false when it could not (the
// slot was being written by another worker).
func (c *cache) update(key uint64, end, now int64) bool {
	bk := c.bucket(key)
	for i := range bk {
		s := &bk[i]
		if s.key.Load() != key {
			continue
		}
		q, ok := claim(s)
		if !ok {
			c.contended.Add(1)
			return false
		}
		if s.key.Load() == key && end > s.end.Load() {
			s.end.Store(end)
		}
		s.seq.Store(q + 2)
		c.updates.Add(1)
		return true
	}
	v, vEnd := 0, int64(math.MaxInt64)
	for i := range bk {
		s := &bk[i]
		e := s.end.Load()
		if s.key.Load() == 0 || e <= now {
			v = i
			break
		}
		if e < vEnd {
			v, vEnd = i, e
		}
	}
	s := &bk[v]
	q, ok := claim(s)
	if !ok {
		c.contended.Add(1)
		return false
	}
	if s.key.Load() != 0 && s.end.Load() > now {
		c.evictions.Add(1)
	}
	s.key.Store(key)
	s.end.Store(end)
	s.seq.Store(q + 2)
	c.inserts.Add(1)
	c.updates.Add(1)
	return true
}

// remaining is how long key's pause still runs at now, in ns (0: no live
// entry) (any goroutine).
func (c *cache) remaining(key uint64, now int64) int64 {
	var best int64
	bk := c.bucket(key)
	for i := range bk {
		s := &bk[i]
		for try := 0; try < 2; try++ {
			q := s.seq.Load()
			if q&1 != 0 {
				continue
			}
			k, e := s.key.Load(), s.end.Load()
			if s.seq.Load() != q {
				continue
			}
			if k == key && e-now > best {
				best = e - now
			}
			break
		}
	}
	return best
}

// live counts the entries whose pause has not ended at now (metrics; it
// reads every slot).
func (c *cache) live(now int64) int {
	n := 0
	for i := range c.slots {
		if c.slots[i].key.Load() != 0 && c.slots[i].end.Load() > now {
			n++
		}
	}
	return n
}

// each calls f with the key and pause end of every entry live at now, each
// read whole (a slot being written is skipped), until f returns false
// (any goroutine).
func (c *cache) each(now int64, f func(key uint64, end int64) bool) {
	for i := range c.slots {
		s := &c.slots[i]
		q := s.seq.Load()
		if q&1 != 0 {
			continue
		}
		k, e := s.key.Load(), s.end.Load()
		if s.seq.Load() != q || k == 0 || e <= now {
			continue
		}
		if !f(k, e) {
			return
		}
	}
}
