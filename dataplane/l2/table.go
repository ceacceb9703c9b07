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
	// Sticky refuses every move of a live entry (MoveRefused): a key
	// stays on the port it was first learnt on until it ages out. For
	// tables that bind a host's address to its port (the dataplane's
	// source guard), not for MAC learning, where a host may move.
	Sticky bool

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
	MoveRefused               // the MAC moved within MoveHold (or the table is Sticky): it stays on its port
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
	sticky   bool
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
		sticky:   c.Sticky,
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
