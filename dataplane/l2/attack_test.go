package l2

import "testing"

// The tests in this file use only what the table offered before its hash
// was keyed (New, Learn, Lookup, Flush), so that they run unchanged
// against the unkeyed table, where they fail.

// unkeyedHome is where the unkeyed table hashed a MAC: the first slot of
// its one probe path, in a table of mask+1 slots. Anyone could compute it.
func unkeyedHome(mac, mask uint64) uint64 {
	h := mac * 0x9e3779b97f4a7c15
	return (h ^ h>>29) & mask
}

// collidingMACs returns n MACs (locally administered, as an attacker may
// choose any) that the unkeyed hash sends to the same home as victim.
func collidingMACs(victim, mask uint64, n int) []uint64 {
	home := unkeyedHome(victim, mask)
	var macs []uint64
	for m := uint64(0x020000000000); len(macs) < n; m++ {
		if m != victim && unkeyedHome(m, mask) == home {
			macs = append(macs, m)
		}
	}
	return macs
}

// TestComputedMACsDoNotBlockVictim: a host on port 3 sends frames from 16
// MACs computed to fill the victim's probe path under the unkeyed hash
// (far below its port's limit). Under the keyed hash they are 16 random
// MACs: the victim on port 1 is learnt before they came, after its entry
// aged out, and after its port flapped, and frames to it are not flooded.
func TestComputedMACsDoNotBlockVictim(t *testing.T) {
	const size, aging = 4096, 300 * sec
	victim := uint64(0x0200000000aa)
	attack := collidingMACs(victim, size-1, 16)
	for _, when := range []string{"before the victim is learnt", "after it aged out", "after its port flapped"} {
		tb, err := New(Config{Size: size, Aging: aging, Ports: 4, PortLimit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		now := int64(0)
		flood := func() {
			for _, m := range attack {
				if r := tb.Learn(m, 3, now); r != Learned && r != Refreshed && r != TableFull {
					t.Fatalf("%s: attacker MAC %012x: %v", when, m, r)
				}
			}
		}
		switch when {
		case "before the victim is learnt":
			flood()
		case "after it aged out":
			tb.Learn(victim, 1, now)
			// The attacker keeps its MACs alive; the victim falls silent,
			// and its entry dies just before the attacker's last round.
			for ; now <= aging+10*sec; now += 10 * sec {
				flood()
			}
			now -= 10 * sec
		case "after its port flapped":
			tb.Learn(victim, 1, now)
			flood()
			tb.Flush(1)
			now += sec
			flood()
		}
		if r := tb.Learn(victim, 1, now); r != Learned {
			t.Errorf("%s: the victim's MAC: %v, want learned", when, r)
		}
		if p, ok := tb.Lookup(victim, now); !ok || p != 1 {
			t.Errorf("%s: frames to the victim: port %d %v, want port 1 (not flooded)", when, p, ok)
		}
	}
}
