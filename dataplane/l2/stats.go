package l2

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
