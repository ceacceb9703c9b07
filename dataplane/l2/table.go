// Package l2 is the ingress stage's MAC learning table.
//
// # Model
//
// A fixed-size open-addressing hash table (linear probing, at most 16 slots
// per MAC) of MAC -> port entries with aging, shared by all workers without
// locks. Each slot is four words (32 bytes, two slots per cache line):
//
//	key:   MAC (48 bits) << 16 | port+1 (16 bits)
//	       0 = empty; port field 0xffff = retired, 0xfffe = being cleared
//	seen:  time of the last frame from MAC, in the table clock's units
//	moved: time of the MAC's last move to another port
//
// A lookup loads the key word once, so it always sees a MAC and its port
// together; then it loads seen to tell a live entry from a dead one. An
// entry not seen for longer than the aging time is dead: invisible to
// lookups (the frame is flooded, as on any learning switch) and its slot may
// be taken by another MAC. Learning refreshes seen at most once per eighth
// of the aging time, so a steady flow does not write the shared cache line
// on every frame. Every change of a key word is a compare-and-swap.
//
// # Bounds
//
// A flood of source MACs cannot push known hosts out: a MAC only takes an
// empty, retired or dead slot on its probe path, never a live one. When all
// 16 slots on the path are live the MAC is not learnt (TableFull).
//
// Each port has a counter of the slots whose key names the port, live or
// dead. A learner adds one before it writes a key for the port and takes
// the one back if the write fails; whoever moves a key off a port (to
// another port, or retires it) subtracts one after the write. So the
// counter is never below the number of slots held by the port, and since a
// learner checks the value its own addition returned, a port never holds
// more than PortLimit slots, however many workers learn at once (concurrent
// learners may be refused a little early instead). A dead entry keeps
// counting against its port until Sweep retires it or a learner takes its
// slot (a learner retires a dead entry before it reuses the slot); once
// nothing is in flight the counter equals the slots held.
//
// A MAC seen on another port moves there, unless it already moved within
// MoveHold: then the move is refused (MoveRefused), the entry stays on its
// port, and the caller still forwards the frame. A flapping MAC (a loop, or
// a host spoofing another's address) thus changes port at most once per
// MoveHold, and lookups of it stay stable in between.
//
// # Housekeeping
//
// Sweep, called about once a second from one non-forwarding goroutine,
// retires dead entries (their key becomes the retired mark, which frees the
// port's count) and clears retired slots that end a probe chain back to
// empty, so lookups of unknown MACs stay short after a flood. A lookup stops
// at an empty slot, so clearing a slot must never cut a MAC off from the
// start of its probe path, even one a worker is inserting behind it at that
// instant. Sweep clears in two steps: it marks a retired slot whose successor
// is empty as being cleared, checks the successor again, and only then
// empties the slot, by compare-and-swap on the mark. A learner, after
// claiming a slot, walks its path back to the start: it turns any mark it
// meets back into retired (so that clear fails), and if it meets an empty
// slot its own slot may be cut off, so it gives the slot up and tries again.
// No learner ever waits for Sweep. On the same walk (and on to the path's
// end) it looks for a copy of its MAC inserted by another worker at the same
// time; the copy nearer the path's start stays and the other is retired, so
// a MAC has one entry.
//
// Flush retires every entry of a port at once (for a port that went down);
// its slots are reused and cleared like any other retired slot.
//
// Races that remain, all benign: a frame that revives a dead entry at the
// instant Sweep or another learner retires it is not learnt; a learn that
// loses every compare-and-swap it tries (Contended) is not learnt; the next
// frame from the MAC learns it in both cases.
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
}

// Result says what Learn did.
type Result uint8

const (
	Refreshed   Result = iota // the MAC is known on this port
	Learned                   // the MAC was new (or dead) and is now live on this port
	Moved                     // the MAC was live on another port and now is on this one
	MoveRefused               // the MAC moved within MoveHold: it stays on its port
	PortFull                  // the port holds PortLimit slots: not learnt (or, for a known MAC, not moved)
	TableFull                 // every slot on the MAC's probe path is live: not learnt
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
	probe    uint64 // slots on a probe path: maxProbe, or the table size if smaller
	aging    int64  // entries older than this are dead
	refresh  int64  // re-store seen only when older than this
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
	_     uint64 // 32 bytes: no slot straddles a cache line
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
	t := &Table{
		slots:    make([]slot, n),
		mask:     uint64(n - 1),
		probe:    uint64(min(maxProbe, n)),
		aging:    c.Aging,
		refresh:  c.Aging / 8,
		moveHold: c.MoveHold,
		limit:    int64(c.PortLimit),
		held:     make([]count, c.Ports),
	}
	return t, nil
}

func index(mac uint64) uint64 {
	h := mac * 0x9e3779b97f4a7c15
	return h ^ h>>29
}

// Lookup returns the port that mac (48 bits) was last seen on, if its entry
// is live at now. It writes nothing.
func (t *Table) Lookup(mac uint64, now int64) (port uint16, ok bool) {
	mac &= macMask
	i := index(mac)
	for p := uint64(0); p < t.probe; p++ {
		s := &t.slots[(i+p)&t.mask]
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
	home := index(mac)
	// Fast path, the common case: a live entry on this port, recently refreshed.
	for p := uint64(0); p < t.probe; p++ {
		s := &t.slots[(home+p)&t.mask]
		k := s.key.Load()
		if k == want {
			if now-s.seen.Load() <= t.refresh {
				return Refreshed
			}
			break
		}
		if k == 0 || k>>16 == mac && uint16(k) < special {
			break
		}
	}
	for a := 0; a < maxAttempts; a++ {
		if r, again := t.learn(mac, want, home, port, now); !again {
			return r
		}
	}
	t.contended.Add(1)
	return Contended
}

// learn is one attempt of Learn; again means a compare-and-swap was lost
// (or Sweep cleared a slot on the path meanwhile): nothing was learnt.
func (t *Table) learn(mac, want, home uint64, port uint16, now int64) (r Result, again bool) {
	var victim *slot
	var vkey uint64
	vp := uint64(0)
	found := false
	for p := uint64(0); p < t.probe; p++ {
		s := &t.slots[(home+p)&t.mask]
		k := s.key.Load()
		if k == 0 {
			// The MAC is nowhere further along the probe path.
			if !found {
				victim, vkey, vp, found = s, 0, p, true
			}
			break
		}
		if k == retired {
			if !found {
				victim, vkey, vp, found = s, k, p, true
			}
			continue
		}
		if k == clearing {
			continue
		}
		if k>>16 == mac {
			return t.known(s, k, want, port, now)
		}
		if !found && now-s.seen.Load() > t.aging {
			victim, vkey, vp, found = s, k, p, true
		}
	}
	if !found {
		t.tableFull.Add(1)
		return TableFull, false
	}
	if vkey != 0 && vkey != retired {
		// A dead entry: retire it first (freeing its port's count), so
		// that nobody ever sees the new key with the old entry's times.
		if !victim.key.CompareAndSwap(vkey, retired) {
			return 0, true
		}
		t.release(uint16(vkey) - 1)
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
	if !victim.key.CompareAndSwap(vkey, want) {
		t.unreserve(port)
		return 0, true
	}
	if claimHook != nil {
		claimHook((home + vp) & t.mask)
	}
	// Walk back to the path's start. Sweep's marks are undone; an empty
	// slot means Sweep may have cut our slot off; an earlier copy of the
	// MAC (another worker's, inserted at the same time) wins over ours.
	// Sweep empties a slot only after seeing its successor empty, so each
	// slot this walk passes, whose successor it has seen occupied, cannot
	// be emptied afterwards while our entry stands.
	for p := vp; p > 0; {
		p--
		s := &t.slots[(home+p)&t.mask]
		k := s.key.Load()
		for k == clearing && !s.key.CompareAndSwap(clearing, retired) {
			k = s.key.Load()
		}
		if k == 0 || k>>16 == mac && uint16(k) < special {
			t.drop(victim, want)
			return 0, true // the next attempt finds the other copy or a free slot
		}
	}
	// A later copy of the MAC loses to ours.
	for p := vp + 1; p < t.probe; p++ {
		s := &t.slots[(home+p)&t.mask]
		k := s.key.Load()
		if k == 0 {
			break
		}
		if k>>16 == mac && uint16(k) < special {
			t.dropMAC(s, mac)
		}
	}
	t.learned.Add(1)
	return Learned, false
}

// claimHook, if set (by tests only), runs after a learner claims a slot,
// before it walks the path back: tests use it to play another worker or
// Sweep acting at that instant.
var claimHook func(slot uint64)

// clearHook, if set (by tests only), runs when Sweep has seen the successor
// of a retired slot empty, before it marks the slot.
var clearHook func(slot uint64)

// known handles a MAC found in slot s with key k.
func (t *Table) known(s *slot, k, want uint64, port uint16, now int64) (Result, bool) {
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
		if s.key.CompareAndSwap(k, retired) {
			t.release(old)
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

// drop retires slot s if it still holds key k (a key of ours).
func (t *Table) drop(s *slot, k uint64) {
	if s.key.CompareAndSwap(k, retired) {
		t.release(uint16(k) - 1)
	}
}

// dropMAC retires slot s if it holds mac, on whatever port.
func (t *Table) dropMAC(s *slot, mac uint64) {
	for {
		k := s.key.Load()
		if k>>16 != mac || k == 0 || uint16(k) >= special {
			return
		}
		if s.key.CompareAndSwap(k, retired) {
			t.release(uint16(k) - 1)
			return
		}
	}
}

// Sweep retires entries dead at now (freeing their ports' counts) and
// clears retired slots that end a probe chain. Call it about once a second
// from a goroutine that does not forward; it walks the whole table. Only one
// Sweep runs at a time: a call while another runs returns at once.
func (t *Table) Sweep(now int64) {
	if !t.sweeping.CompareAndSwap(false, true) {
		return
	}
	defer t.sweeping.Store(false)
	// Backwards, so a run of retired slots before an empty one clears in one pass.
	for i := len(t.slots) - 1; i >= 0; i-- {
		s := &t.slots[i]
		k := s.key.Load()
		if k == 0 || k == clearing {
			continue
		}
		if k != retired {
			if now-s.seen.Load() <= t.aging || !s.key.CompareAndSwap(k, retired) {
				continue
			}
			t.release(uint16(k) - 1)
			t.retiredN.Add(1)
		}
		next := &t.slots[(uint64(i)+1)&t.mask].key
		if next.Load() != 0 {
			continue
		}
		if clearHook != nil {
			clearHook(uint64(i))
		}
		if !s.key.CompareAndSwap(retired, clearing) {
			continue
		}
		// A learner that claimed the next slot before this load is seen
		// here (it may have walked back past this slot before the mark);
		// one that claims it later finds the mark on its walk back and
		// undoes it, and the last compare-and-swap fails.
		if next.Load() == 0 {
			s.key.CompareAndSwap(clearing, 0)
		} else {
			s.key.CompareAndSwap(clearing, retired)
		}
	}
}

// Flush forgets every MAC learnt on port (the port went down). Entries
// learnt on the port while Flush runs may survive it.
func (t *Table) Flush(port uint16) {
	if int(port) >= len(t.held) {
		return
	}
	f := uint64(port) + 1
	for i := range t.slots {
		s := &t.slots[i]
		k := s.key.Load()
		if k != 0 && k&0xffff == f && s.key.CompareAndSwap(k, retired) {
			t.release(port)
		}
	}
}

// Stats is a snapshot of the table for metrics. The walk and the counter
// loads are not one atomic snapshot; with learners running, Held may differ
// from the slots counted by as many operations as are in flight.
type Stats struct {
	Entries int   // live entries
	PerPort []int // live entries by port
	Held    []int // by port: slots counted against PortLimit (live entries, dead ones not yet retired, learns in flight)

	Learned     uint64 // MACs learnt (new, or revived after dying)
	Moves       uint64 // MACs moved to another port
	MoveRefused uint64 // moves refused by MoveHold
	PortFull    uint64 // learns or moves refused by PortLimit
	TableFull   uint64 // learns that found no free slot on the probe path
	Contended   uint64 // learns that lost every compare-and-swap
	Retired     uint64 // dead entries retired (by Sweep, or by a learner reusing the slot)
}

// Stats walks the table (not for the forwarding path) and reads the counters.
func (t *Table) Stats(now int64) Stats {
	st := Stats{PerPort: make([]int, len(t.held)), Held: make([]int, len(t.held))}
	for i := range t.slots {
		s := &t.slots[i]
		k := s.key.Load()
		if k == 0 || uint16(k) >= special || now-s.seen.Load() > t.aging {
			continue
		}
		st.Entries++
		if p := int(uint16(k) - 1); p < len(st.PerPort) {
			st.PerPort[p]++
		}
	}
	for p := range t.held {
		st.Held[p] = int(t.held[p].n.Load())
	}
	st.Learned = t.learned.Load()
	st.Moves = t.moves.Load()
	st.MoveRefused = t.moveRefused.Load()
	st.PortFull = t.portFull.Load()
	st.TableFull = t.tableFull.Load()
	st.Contended = t.contended.Load()
	st.Retired = t.retiredN.Load()
	return st
}

// Len counts live entries at now (walks the whole table, like Stats).
func (t *Table) Len(now int64) int {
	n := 0
	for i := range t.slots {
		s := &t.slots[i]
		if k := s.key.Load(); k != 0 && uint16(k) < special && now-s.seen.Load() <= t.aging {
			n++
		}
	}
	return n
}

// Full counts learns that found no free slot on the probe path (Stats.TableFull).
func (t *Table) Full() uint64 { return t.tableFull.Load() }

// Entry is a live entry of the table, as Entries reports it.
type Entry struct {
	MAC  uint64 // 48 bits
	Port uint16
	Age  int64 // time since the MAC was last seen (to within the refresh interval, Aging/8)
}

// Entries lists the live entries at now, at most limit of them (0: all), in
// slot order. Like Stats it walks the whole table and allocates: for
// tools, not for the forwarding path. Entries learnt or retired during the
// walk may be missed or listed.
func (t *Table) Entries(now int64, limit int) []Entry {
	var es []Entry
	for i := range t.slots {
		s := &t.slots[i]
		k := s.key.Load()
		if k == 0 || uint16(k) >= special {
			continue
		}
		age := now - s.seen.Load()
		if age > t.aging || s.key.Load() != k {
			continue
		}
		es = append(es, Entry{MAC: k >> 16, Port: uint16(k) - 1, Age: max(age, 0)})
		if limit > 0 && len(es) == limit {
			break
		}
	}
	return es
}
