package l2

import (
	"fmt"
	"math"
	"sync/atomic"
)

// MaxPorts is the largest Config.Ports (port numbers 0 to MaxPorts-1).
const MaxPorts = 0xfffd

// MaxSize is the largest Config.Size.
const MaxSize = 1 << 24

const (
	maxProbe    = 16
	maxAttempts = 4 // tries of one Learn that lost a compare-and-swap
	macMask     = 1<<48 - 1
	retired     = uint64(0xffff) // key of a retired slot (port field 0xffff: no port)
	clearing    = uint64(0xfffe) // key of a retired slot Sweep is about to empty
	special     = 0xfffe         // port fields from here up are no port
	never       = math.MinInt64  // moved of a MAC that never moved
)

// Config sizes a Table. Times are in the table clock's units (gswitchd uses
// nanoseconds).
type Config struct {
	Size      int   // slots, rounded up to a power of two (1 to MaxSize; 32 bytes each)
	Aging     int64 // entries not seen for longer are dead (> 0)
	Ports     int   // switch ports; Learn takes ports 0 to Ports-1 (1 to MaxPorts)
	PortLimit int   // most slots (live MACs, plus dead ones until Sweep) one port may hold; 0 = no limit
	MoveHold  int64 // after a MAC moves, further moves within MoveHold are refused; 0 = off

	// HashKey is the secret key of the slot hash. Zero (the default) draws
	// one from the system's secure random source at New, which is what a
	// switch wants: hosts cannot compute which MACs share a probe path.
	// Tests set a fixed key to place MACs on purpose.
	HashKey [2]uint64
}

// Result says what Learn did.
type Result uint8

const (
	Refreshed   Result = iota // the MAC is known on this port
	Learned                   // the MAC was new (or dead) and is now live on this port
	Moved                     // the MAC was live on another port and now is on this one
	MoveRefused               // the MAC moved within MoveHold: it stays on its port
	PortFull                  // the port holds PortLimit slots: not learnt (or, for a known MAC, not moved)
	TableFull                 // every slot on both of the MAC's probe paths is live: not learnt
	Contended                 // lost every compare-and-swap tried: not learnt, the next frame tries again
	BadPort                   // port >= Config.Ports: nothing done
)

var resultNames = [...]string{"refreshed", "learned", "moved", "move_refused", "port_full", "table_full", "contended", "bad_port"}

func (r Result) String() string {
	if int(r) < len(resultNames) {
		return resultNames[r]
	}
	return fmt.Sprintf("Result(%d)", uint8(r))
}

// Table is the learning table. Learn, Lookup, Flush and Stats may be called
// from any goroutine at once; Sweep from one goroutine at a time (a second
// concurrent Sweep returns at once).
type Table struct {
	slots    []slot
	mask     uint64
	probe    uint64    // slots on a probe path: maxProbe, or the table size if smaller
	span     uint64    // places the second path may start, after the first; 0: one path (a table under 2*maxProbe slots)
	sub      [4]uint64 // subkeys of the hash, from the key
	aging    int64     // entries older than this are dead
	refresh  int64     // re-store seen only when older than this
	moveHold int64
	limit    int64 // 0 = none

	held     []count // per port: slots whose key names the port (see Bounds)
	sweeping atomic.Bool

	learned, moves, moveRefused, portFull, tableFull, contended, retiredN counter
}

type slot struct {
	key   atomic.Uint64
	seen  atomic.Int64
	moved atomic.Int64
	// over counts, for the MACs whose first path starts at this slot,
	// their entries on their second path (live or dead, not retired): a
	// lookup that misses on a first path looks at the second only when
	// the count at its start is not zero. It is raised before such an
	// entry's key is written and lowered after the key is retired, so it
	// is never below the entries there.
	over atomic.Int64 // (and 32 bytes: no slot straddles a cache line)
}

type count struct {
	n atomic.Int64
	_ [56]byte
}

type counter struct {
	atomic.Uint64
	_ [56]byte
}

// New returns a table for c, or an error naming the field to fix.
func New(c Config) (*Table, error) {
	if c.Size <= 0 || c.Size > MaxSize {
		return nil, fmt.Errorf("l2.Config.Size: %d slots is out of range (set 1 to %d)", c.Size, MaxSize)
	}
	if c.Aging <= 0 {
		return nil, fmt.Errorf("l2.Config.Aging: %d is not positive (set the aging time in clock units, e.g. 300e9 for 300 s in ns)", c.Aging)
	}
	if c.Ports <= 0 || c.Ports > MaxPorts {
		return nil, fmt.Errorf("l2.Config.Ports: %d is out of range (set the number of switch ports, 1 to %d)", c.Ports, MaxPorts)
	}
	if c.PortLimit < 0 {
		return nil, fmt.Errorf("l2.Config.PortLimit: %d is negative (set 0 for no limit or the most MACs one port may learn)", c.PortLimit)
	}
	if c.MoveHold < 0 {
		return nil, fmt.Errorf("l2.Config.MoveHold: %d is negative (set 0 to allow every move, or the time a moved MAC stays put)", c.MoveHold)
	}
	n := 1
	for n < c.Size {
		n <<= 1
	}
	key := c.HashKey
	if key == [2]uint64{} {
		key = randomKey()
	}
	t := &Table{
		slots:    make([]slot, n),
		mask:     uint64(n - 1),
		probe:    uint64(min(maxProbe, n)),
		sub:      subkeys(key),
		aging:    c.Aging,
		refresh:  c.Aging / 8,
		moveHold: c.MoveHold,
		limit:    int64(c.PortLimit),
		held:     make([]count, c.Ports),
	}
	if n >= 2*maxProbe {
		t.span = uint64(n) - 2*maxProbe + 1
	}
	return t, nil
}

// homes returns the first slots of mac's two probe paths (mac already
// masked to 48 bits). The second path starts anywhere from just after the
// first one's end to where it would run into the first one's start again,
// so the two never share a slot: a MAC's place is ranked by path, then by
// position on the path, which the learner's walks below rely on. With one
// path (span 0) both are the same.
func (t *Table) homes(mac uint64) (a, b uint64) {
	h := mix(&t.sub, mac)
	if t.span == 0 {
		return h & t.mask, h & t.mask
	}
	return h & t.mask, t.second(h)
}

// second is the first slot of the second path of a MAC whose hash is h
// (with two paths). The hot paths compute it only when they need it.
func (t *Table) second(h uint64) uint64 {
	return (h + maxProbe + (h>>32)*t.span>>32) & t.mask
}

// Lookup returns the port that mac (48 bits) was last seen on, if its entry
// is live at now. It writes nothing.
func (t *Table) Lookup(mac uint64, now int64) (port uint16, ok bool) {
	mac &= macMask
	h := mix(&t.sub, mac)
	// The first path, written out here: most lookups end on it.
	for p := uint64(0); p < t.probe; p++ {
		s := &t.slots[(h+p)&t.mask]
		k := s.key.Load()
		if k == 0 {
			break
		}
		if k>>16 == mac && uint16(k) < special {
			if now-s.seen.Load() > t.aging {
				return 0, false
			}
			return uint16(k) - 1, true
		}
	}
	if t.span == 0 || t.slots[h&t.mask].over.Load() == 0 {
		return 0, false
	}
	return t.lookup(mac, t.second(h), now)
}

// lookup looks for mac on the path from home.
func (t *Table) lookup(mac, home uint64, now int64) (port uint16, ok bool) {
	for p := uint64(0); p < t.probe; p++ {
		s := &t.slots[(home+p)&t.mask]
		k := s.key.Load()
		if k == 0 {
			return 0, false
		}
		if k>>16 == mac && uint16(k) < special {
			if now-s.seen.Load() > t.aging {
				return 0, false
			}
			return uint16(k) - 1, true
		}
	}
	return 0, false
}

// Learn records that mac (48 bits) was seen on port at now and says what it
// did; every result but Refreshed and BadPort is also counted in Stats.
// It allocates nothing and takes no lock.
func (t *Table) Learn(mac uint64, port uint16, now int64) Result {
	if int(port) >= len(t.held) {
		return BadPort
	}
	mac &= macMask
	want := mac<<16 | (uint64(port) + 1)
	h := mix(&t.sub, mac)
	a := h & t.mask
	// Fast path, the common case: a live entry on this port, recently refreshed.
	fresh, hit := t.fresh(mac, want, a, now)
	if fresh {
		return Refreshed
	}
	b := a
	if t.span != 0 {
		b = t.second(h)
		if !hit && t.slots[a].over.Load() != 0 {
			if fresh, _ = t.fresh(mac, want, b, now); fresh {
				return Refreshed
			}
		}
	}
	for n := 0; n < maxAttempts; n++ {
		if r, again := t.learn(mac, want, a, b, port, now); !again {
			return r
		}
	}
	t.contended.Add(1)
	return Contended
}

// fresh reports whether the path from home holds want refreshed within
// the refresh interval; hit says it found the MAC (on any port).
func (t *Table) fresh(mac, want, home uint64, now int64) (fresh, hit bool) {
	for p := uint64(0); p < t.probe; p++ {
		s := &t.slots[(home+p)&t.mask]
		k := s.key.Load()
		if k == want {
			return now-s.seen.Load() <= t.refresh, true
		}
		if k == 0 {
			return false, false
		}
		if k>>16 == mac && uint16(k) < special {
			return false, true
		}
	}
	return false, false
}

// learn is one attempt of Learn; again means a compare-and-swap was lost
// (or Sweep cleared a slot on the path meanwhile): nothing was learnt.
//
// The MAC goes into the first free slot (empty, retired or dead) of its
// first path, or failing that of its second. Of two copies of a MAC that
// learners on several workers insert at the same time, the one ranked
// first stays: any place on the first path ranks before any on the second,
// and on one path the place nearer its start ranks first.
func (t *Table) learn(mac, want, a, b uint64, port uint16, now int64) (r Result, again bool) {
	var vkey, vhome, vp uint64
	found := false
	for path := 0; path < 2; path++ {
		home := a
		if path == 1 {
			if t.span == 0 {
				break
			}
			home = b
		}
		for p := uint64(0); p < t.probe; p++ {
			s := &t.slots[(home+p)&t.mask]
			k := s.key.Load()
			if k == 0 {
				// The MAC is nowhere further along this path.
				if !found {
					vkey, vhome, vp, found = 0, home, p, true
				}
				break
			}
			if k == retired {
				if !found {
					vkey, vhome, vp, found = k, home, p, true
				}
				continue
			}
			if k == clearing {
				continue
			}
			if k>>16 == mac {
				return t.known((home+p)&t.mask, k, want, port, now)
			}
			if !found && now-s.seen.Load() > t.aging {
				vkey, vhome, vp, found = k, home, p, true
			}
		}
	}
	if !found {
		t.tableFull.Add(1)
		return TableFull, false
	}
	vi := (vhome + vp) & t.mask
	victim := &t.slots[vi]
	if vkey != 0 && vkey != retired {
		// A dead entry: retire it first (freeing its port's count), so
		// that nobody ever sees the new key with the old entry's times.
		if !t.retire(vi, vkey) {
			return 0, true
		}
		t.retiredN.Add(1)
		vkey = retired
	}
	if !t.reserve(port) {
		t.portFull.Add(1)
		return PortFull, false
	}
	// Nobody reads seen or moved of an empty or retired slot: set them
	// first, so the entry is live the moment its key appears.
	victim.seen.Store(now)
	victim.moved.Store(never)
	second := t.span != 0 && vhome == b
	if second {
		t.slots[a].over.Add(1)
	}
	if !victim.key.CompareAndSwap(vkey, want) {
		t.unreserve(port)
		if second {
			t.slots[a].over.Add(-1)
		}
		return 0, true
	}
	if claimHook != nil {
		claimHook(vi)
	}
	// Walk back to the path's start. Sweep's marks are undone; an empty
	// slot means Sweep may have cut our slot off; an earlier copy of the
	// MAC (another worker's, inserted at the same time) wins over ours.
	// Sweep empties a slot only after seeing its successor empty, so each
	// slot this walk passes, whose successor it has seen occupied, cannot
	// be emptied afterwards while our entry stands.
	for p := vp; p > 0; {
		p--
		s := &t.slots[(vhome+p)&t.mask]
		k := s.key.Load()
		for k == clearing && !s.key.CompareAndSwap(clearing, retired) {
			k = s.key.Load()
		}
		if k == 0 || k>>16 == mac && uint16(k) < special {
			t.retire(vi, want)
			return 0, true // the next attempt finds the other copy or a free slot
		}
	}
	if second && t.has(mac, a) {
		// A copy on the first path wins over ours.
		t.retire(vi, want)
		return 0, true
	}
	// Later copies of the MAC lose to ours: further along our path, and
	// anywhere on the second path if ours is on the first. (A learner that
	// inserts one of those after this walk passed it finds ours on its own
	// walk and gives up: each walk reads the other's slot after writing its
	// own, so at least one of the two sees the other.)
	t.dropLater(mac, vhome, vp+1)
	if t.span != 0 && !second {
		t.dropLater(mac, b, 0)
	}
	t.learned.Add(1)
	return Learned, false
}

// has reports whether the path from home holds a live key of mac (any
// port) before its first empty slot.
func (t *Table) has(mac, home uint64) bool {
	for p := uint64(0); p < t.probe; p++ {
		k := t.slots[(home+p)&t.mask].key.Load()
		if k == 0 {
			return false
		}
		if k>>16 == mac && uint16(k) < special {
			return true
		}
	}
	return false
}

// dropLater retires every key of mac (any port) on the path from home,
// from position from up to the first empty slot.
func (t *Table) dropLater(mac, home, from uint64) {
	for p := from; p < t.probe; p++ {
		i := (home + p) & t.mask
		k := t.slots[i].key.Load()
		if k == 0 {
			return
		}
		if k>>16 == mac && uint16(k) < special {
			t.dropMAC(i, mac)
		}
	}
}

// claimHook, if set (by tests only), runs after a learner claims a slot,
// before it walks the path back: tests use it to play another worker or
// Sweep acting at that instant.
var claimHook func(slot uint64)

// clearHook, if set (by tests only), runs when Sweep has seen the successor
// of a retired slot empty, before it marks the slot.
var clearHook func(slot uint64)

// known handles a MAC found in slot i with key k.
func (t *Table) known(i, k, want uint64, port uint16, now int64) (Result, bool) {
	s := &t.slots[i]
	seen := s.seen.Load()
	live := now-seen <= t.aging
	if k == want {
		if live {
			if now-seen > t.refresh {
				s.seen.Store(now)
			}
			return Refreshed, false
		}
		s.seen.Store(now) // revive: the slot still counts against the port
		t.learned.Add(1)
		return Learned, false
	}
	old := uint16(k) - 1
	if !live {
		// A dead entry on another port: retire it; the next attempt
		// learns the MAC afresh on this port.
		if t.retire(i, k) {
			t.retiredN.Add(1)
		}
		return 0, true
	}
	var mv int64
	if t.moveHold > 0 {
		mv = s.moved.Load()
		if mv != never && now-mv < t.moveHold {
			t.moveRefused.Add(1)
			return MoveRefused, false
		}
	}
	if !t.reserve(port) {
		t.portFull.Add(1)
		return PortFull, false
	}
	if t.moveHold > 0 && !s.moved.CompareAndSwap(mv, now) {
		// Another worker is moving this MAC right now: its move counts.
		t.unreserve(port)
		t.moveRefused.Add(1)
		return MoveRefused, false
	}
	if !s.key.CompareAndSwap(k, want) {
		t.unreserve(port)
		if t.moveHold > 0 {
			s.moved.CompareAndSwap(now, mv)
		}
		return 0, true
	}
	t.release(old)
	s.seen.Store(now)
	t.moves.Add(1)
	return Moved, false
}

// reserve adds one to port's count unless that would exceed the limit.
func (t *Table) reserve(port uint16) bool {
	c := &t.held[port].n
	if t.limit == 0 {
		c.Add(1)
		return true
	}
	if c.Load() >= t.limit {
		return false // the common case in a flood: no write
	}
	if c.Add(1) > t.limit {
		c.Add(-1)
		return false
	}
	return true
}

func (t *Table) unreserve(port uint16) { t.held[port].n.Add(-1) }
func (t *Table) release(port uint16)   { t.held[port].n.Add(-1) }

// retire turns the key of slot i from k (a MAC's entry) into the retired
// mark, and if that worked frees the port's count and, for an entry on its
// second path, the overflow count at its first path's start.
func (t *Table) retire(i, k uint64) bool {
	if !t.slots[i].key.CompareAndSwap(k, retired) {
		return false
	}
	t.release(uint16(k) - 1)
	if t.span != 0 {
		h := mix(&t.sub, k>>16)
		if (i-t.second(h))&t.mask < t.probe {
			t.slots[h&t.mask].over.Add(-1)
		}
	}
	return true
}

// dropMAC retires slot i if it holds mac, on whatever port.
func (t *Table) dropMAC(i, mac uint64) {
	for {
		k := t.slots[i].key.Load()
		if k>>16 != mac || k == 0 || uint16(k) >= special {
			return
		}
		if t.retire(i, k) {
			return
		}
	}
}
