package l2

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
	if !hit && t.span != 0 && t.slots[a].over.Load() != 0 {
		if fresh, _ = t.fresh(mac, want, t.second(h), now); fresh {
			return Refreshed
		}
	}
	for n := 0; n < maxAttempts; n++ {
		if r, again := t.learn(mac, want, h, port, now); !again {
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
func (t *Table) learn(mac, want, h uint64, port uint16, now int64) (r Result, again bool) {
	a := h & t.mask
	var vkey, vhome, vp uint64
	found, second := false, false // second: the victim slot is on the second path
	for path := 0; path < 2; path++ {
		home := a
		if path == 1 {
			// The second path can hold the MAC only if the count at the
			// first one's start says some MAC overflowed from there; else
			// it matters only when the first path has no room.
			if t.span == 0 || found && t.slots[a].over.Load() == 0 {
				break
			}
			home = t.second(h)
		}
		for p := uint64(0); p < t.probe; p++ {
			s := &t.slots[(home+p)&t.mask]
			k := s.key.Load()
			if k == 0 {
				// The MAC is nowhere further along this path.
				if !found {
					vkey, vhome, vp, found, second = 0, home, p, true, path == 1
				}
				break
			}
			if k == retired {
				if !found {
					vkey, vhome, vp, found, second = k, home, p, true, path == 1
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
				vkey, vhome, vp, found, second = k, home, p, true, path == 1
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
		t.dropLater(mac, t.second(h), 0)
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
	if t.sticky {
		t.moveRefused.Add(1)
		return MoveRefused, false
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
