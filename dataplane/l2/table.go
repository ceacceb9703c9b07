// Package l2 is the ingress stage's MAC learning table.
//
// # Model
//
// A fixed-size open-addressing hash table of MAC -> port entries with aging,
// shared by all workers without locks. Each slot is two words:
//
//	key:  MAC (48 bits) << 16 | port+1 (16 bits)   (0 = empty slot)
//	seen: time of the last frame from MAC, in the table clock's units
//
// A lookup loads the key word once, so it always sees a MAC and its port
// together. Learning writes the key word with compare-and-swap (to claim an
// empty or expired slot, or to move a MAC to a new port) and stores seen.
// Learning refreshes seen at most once per refresh interval per MAC, so a
// steady flow does not write the shared cache line on every frame.
//
// An entry older than the aging time is invisible to lookups (the frame is
// flooded, as on any learning switch) and its slot may be taken by another
// MAC. When every slot on a MAC's probe path is live, the MAC is not learned
// and the miss is counted (Full).
package l2

import (
	"fmt"
	"sync/atomic"
)

const maxProbe = 16

// Table is the learning table. Learn and Lookup may be called from any
// goroutine at once.
type Table struct {
	slots   []slot
	mask    uint64
	aging   int64 // entries older than this are dead
	refresh int64 // re-store seen only when older than this

	full atomic.Uint64 // learn attempts that found no slot
}

type slot struct {
	key  atomic.Uint64
	seen atomic.Int64
}

// New returns a table with at least size slots (rounded up to a power of
// two). Times passed to Learn and Lookup are in the same unit as aging
// (gswitchd uses nanoseconds).
func New(size int, aging int64) (*Table, error) {
	if size <= 0 || size > 1<<24 {
		return nil, fmt.Errorf("MAC table size %d out of range [1, %d]", size, 1<<24)
	}
	if aging <= 0 {
		return nil, fmt.Errorf("MAC aging time must be positive")
	}
	n := 1
	for n < size {
		n <<= 1
	}
	return &Table{slots: make([]slot, n), mask: uint64(n - 1), aging: aging, refresh: aging / 8}, nil
}

func index(mac uint64) uint64 {
	h := mac * 0x9e3779b97f4a7c15
	return h ^ h>>29
}

// Lookup returns the port that mac was last seen on, if it is live at now.
func (t *Table) Lookup(mac uint64, now int64) (port uint16, ok bool) {
	i := index(mac)
	for p := 0; p < maxProbe; p++ {
		s := &t.slots[(i+uint64(p))&t.mask]
		k := s.key.Load()
		if k == 0 {
			return 0, false
		}
		if k>>16 == mac {
			if now-s.seen.Load() > t.aging {
				return 0, false
			}
			return uint16(k&0xffff) - 1, true
		}
	}
	return 0, false
}

// Learn records that mac was seen on port at now. It reports whether the
// MAC is new to the table or moved to another port.
func (t *Table) Learn(mac uint64, port uint16, now int64) (changed bool) {
	want := mac<<16 | uint64(port+1)
	i := index(mac)
	var victim *slot
	var victimKey uint64
	for p := 0; p < maxProbe; p++ {
		s := &t.slots[(i+uint64(p))&t.mask]
		k := s.key.Load()
		if k>>16 == mac && k != 0 {
			if k != want {
				if !s.key.CompareAndSwap(k, want) {
					return false // another worker is learning the same MAC right now
				}
				s.seen.Store(now)
				return true
			}
			if now-s.seen.Load() > t.refresh {
				s.seen.Store(now)
			}
			return false
		}
		if k == 0 {
			// The MAC is nowhere further along the probe path.
			if victim == nil {
				victim, victimKey = s, 0
			}
			break
		}
		if victim == nil && now-s.seen.Load() > t.aging {
			victim, victimKey = s, k
		}
	}
	if victim == nil {
		t.full.Add(1)
		return false
	}
	if !victim.key.CompareAndSwap(victimKey, want) {
		return false // lost a race for the slot; the next frame learns again
	}
	victim.seen.Store(now)
	return true
}

// Full counts learn attempts that found no free or expired slot.
func (t *Table) Full() uint64 { return t.full.Load() }

// Len counts live entries at now (walks the whole table: for metrics, not the hot path).
func (t *Table) Len(now int64) int {
	n := 0
	for i := range t.slots {
		if t.slots[i].key.Load() != 0 && now-t.slots[i].seen.Load() <= t.aging {
			n++
		}
	}
	return n
}
