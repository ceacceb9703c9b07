package l2

import "testing"

// macsOnFirstPath returns n MACs other than not whose first path starts at
// home (what an attacker who knew the key could compute, or bad luck).
func macsOnFirstPath(tb *Table, home, not uint64, n int) []uint64 {
	var macs []uint64
	for m := uint64(0x0a0000000000); len(macs) < n; m++ {
		if m != not && first(tb, m) == home {
			macs = append(macs, m)
		}
	}
	return macs
}

// TestCrowdedFirstPath: 16 live MACs fill the first path of a victim's
// MAC; the victim is learnt on its second path and found there. Only a MAC
// whose two paths are both full is refused.
func TestCrowdedFirstPath(t *testing.T) {
	tb := mustNew(t, Config{Size: 4096, Aging: 300 * sec, Ports: 4})
	victim := uint64(0x0200000000aa)
	a, b := tb.homes(victim)
	for _, m := range macsOnFirstPath(tb, a, victim, 16) {
		if r := tb.Learn(m, 3, 0); r != Learned {
			t.Fatalf("crowding MAC %012x: %v", m, r)
		}
	}
	for p := uint64(0); p < maxProbe; p++ {
		if tb.slots[(a+p)&tb.mask].key.Load() == 0 {
			t.Fatalf("the first path still has an empty slot at %d", p)
		}
	}
	if r := tb.Learn(victim, 1, sec); r != Learned {
		t.Fatalf("victim: %v", r)
	}
	if k := tb.slots[b].key.Load(); k != victim<<16|2 {
		t.Fatalf("victim not at the start of its second path: slot %d holds %x", b, k)
	}
	if p, ok := tb.Lookup(victim, sec); !ok || p != 1 {
		t.Fatalf("Lookup = %d %v", p, ok)
	}
	if r := tb.Learn(victim, 1, 2*sec); r != Refreshed {
		t.Fatalf("victim again: %v", r)
	}
	// Fill the second path too: a MAC with both paths full is refused.
	other := uint64(0x0200000000bb)
	for first(tb, other) != a || other == victim {
		other++
	}
	_, ob := tb.homes(other)
	for _, m := range macsOnFirstPath(tb, ob, other, 16) {
		tb.Learn(m, 2, 3*sec)
	}
	full := true
	for p := uint64(0); p < maxProbe; p++ {
		if k := tb.slots[(ob+p)&tb.mask].key.Load(); k == 0 || uint16(k) >= special {
			full = false
		}
	}
	if !full {
		t.Fatal("16 MACs did not fill their first path")
	}
	if r := tb.Learn(other, 1, 3*sec); r != TableFull || tb.Full() != 1 {
		t.Fatalf("a MAC whose paths are full: %v (full %d)", r, tb.Full())
	}
	checkTable(t, tb, true)
}

// fillFirstPath makes the 16 slots of the first path from home hold live
// entries of port 0, as other workers' learns would.
func fillFirstPath(tb *Table, home, not uint64, now int64) []uint64 {
	macs := macsOnFirstPath(tb, home, not, maxProbe)
	for p, m := range macs {
		occupy(tb, (home+uint64(p))&tb.mask, m, 0, now)
	}
	return macs
}

// TestSecondPathCopies plays, through claimHook, another worker inserting
// the same MAC on the other path while a learner claims its slot.
func TestSecondPathCopies(t *testing.T) {
	m := uint64(0x020000000001)
	t.Run("a copy on the first path wins over ours on the second", func(t *testing.T) {
		tb := mustNew(t, Config{Size: 64, Aging: 100, Ports: 2})
		a, b := tb.homes(m)
		macs := fillFirstPath(tb, a, m, 0)
		fired := 0
		setClaimHook(t, func(i uint64) {
			if fired++; fired == 1 {
				if i != b {
					t.Errorf("claimed slot %d, want %d (the second path's start)", i, b)
				}
				// A MAC on the first path dies and is retired; the other
				// worker takes its slot for m, on port 0.
				s := (a + 3) & tb.mask
				if k := tb.slots[s].key.Load(); k>>16 != macs[3] {
					t.Errorf("slot %d holds %x", s, k)
				}
				vacate(tb, s, retired)
				occupy(tb, s, m, 0, 10)
			}
		})
		// Ours is given up; the retry finds port 0's copy and moves it.
		if r := tb.Learn(m, 1, 10); r != Moved {
			t.Fatalf("Learn = %v", r)
		}
		if k := tb.slots[b].key.Load(); k != retired {
			t.Fatalf("given-up slot %d holds %x, want retired", b, k)
		}
		if p, ok := tb.Lookup(m, 10); !ok || p != 1 {
			t.Fatalf("Lookup = %d %v", p, ok)
		}
		if held := checkTable(t, tb, true); held[0] != 15 || held[1] != 1 {
			t.Fatalf("held %v", held)
		}
	})
	t.Run("a copy on the second path loses to ours on the first", func(t *testing.T) {
		tb := mustNew(t, Config{Size: 64, Aging: 100, Ports: 2})
		a, b := tb.homes(m)
		setClaimHook(t, func(i uint64) {
			if i != a {
				t.Errorf("claimed slot %d, want %d", i, a)
			}
			occupy(tb, b, m, 0, 10) // the other worker found the first path full a moment ago
		})
		if r := tb.Learn(m, 1, 10); r != Learned {
			t.Fatalf("Learn = %v", r)
		}
		if k := tb.slots[b].key.Load(); k != retired {
			t.Fatalf("second path's copy: slot holds %x, want retired", k)
		}
		if held := checkTable(t, tb, true); held[0] != 0 || held[1] != 1 {
			t.Fatalf("held %v", held)
		}
	})
	t.Run("lookups reach the second path past a retired first path", func(t *testing.T) {
		tb := mustNew(t, Config{Size: 64, Aging: 100, Ports: 2})
		a, _ := tb.homes(m)
		fillFirstPath(tb, a, m, 0)
		if r := tb.Learn(m, 1, 10); r != Learned {
			t.Fatalf("Learn = %v", r)
		}
		tb.Flush(0) // the first path is all retired now; m stays on its second
		for _, now := range []int64{10, 50} {
			tb.Sweep(now)
			if p, ok := tb.Lookup(m, now); !ok || p != 1 {
				t.Fatalf("at %d: Lookup = %d %v", now, p, ok)
			}
			if r := tb.Learn(m, 1, now); r != Refreshed {
				t.Fatalf("at %d: Learn = %v", now, r)
			}
		}
		checkTable(t, tb, true)
	})
}
