package l2

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
			if now-s.seen.Load() <= t.aging || !t.retire(uint64(i), k) {
				continue
			}
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
		if k != 0 && k&0xffff == f {
			t.retire(uint64(i), k)
		}
	}
}
