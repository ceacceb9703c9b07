package l2

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

const sec = int64(1e9)

// testKey is the hash key of the tables tests build with mustNew, so that
// where a MAC goes is the same on every run. (New draws a random key when
// none is set.)
var testKey = [2]uint64{0x0706050403020100, 0x0f0e0d0c0b0a0908}

func mustNew(t testing.TB, c Config) *Table {
	t.Helper()
	if c.HashKey == [2]uint64{} {
		c.HashKey = testKey
	}
	tb, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// checkTable verifies the table's structure and returns the slots held per
// port (live or dead). quiescent: no operation is in flight, so the port
// counters must equal the slots held exactly.
func checkTable(t *testing.T, tb *Table, quiescent bool) []int {
	t.Helper()
	held := make([]int, len(tb.held))
	over := make([]int64, len(tb.slots))
	at := map[uint64]int{}
	for i := range tb.slots {
		k := tb.slots[i].key.Load()
		if k == clearing && quiescent {
			t.Errorf("slot %d still marked for clearing", i)
		}
		if k == 0 || uint16(k) >= special {
			continue
		}
		mac, p := k>>16, int(uint16(k))-1
		if p < 0 || p >= len(held) {
			t.Errorf("slot %d: key %x names no port", i, k)
			continue
		}
		held[p]++
		if j, dup := at[mac]; dup {
			t.Errorf("MAC %012x in slots %d and %d", mac, j, i)
		}
		at[mac] = i
		if err := reachable(tb, mac, uint64(i)); err != "" {
			t.Error(err)
		}
		if a, ok := onSecond(tb, mac, uint64(i)); ok {
			over[a]++
		}
	}
	for i, n := range over {
		if c := tb.slots[i].over.Load(); c < n || quiescent && c != n {
			t.Errorf("slot %d: overflow count %d, entries on their second path that start here %d", i, c, n)
		}
	}
	for p := range held {
		c := tb.held[p].n.Load()
		if c < int64(held[p]) || quiescent && c != int64(held[p]) {
			t.Errorf("port %d: count %d, slots held %d", p, c, held[p])
		}
		if tb.limit > 0 && int64(held[p]) > tb.limit {
			t.Errorf("port %d holds %d slots, limit %d", p, held[p], tb.limit)
		}
	}
	return held
}

// reachable says why mac in slot i cannot be found by a lookup ("" if it
// can): the slot must be on one of the MAC's paths, with no empty slot
// between the path's start and it.
func reachable(tb *Table, mac, i uint64) string {
	a, b := tb.homes(mac)
	why := ""
	for _, home := range []uint64{a, b} {
		d := (i - home) & tb.mask
		if d >= tb.probe {
			why = fmt.Sprintf("MAC %012x in slot %d is on neither path (homes %d, %d)", mac, i, a, b)
			continue
		}
		for q := uint64(0); q < d; q++ {
			if tb.slots[(home+q)&tb.mask].key.Load() == 0 {
				return fmt.Sprintf("MAC %012x in slot %d is cut off from its home %d by empty slot %d", mac, i, home, (home+q)&tb.mask)
			}
		}
		return ""
	}
	return why
}

// first is the first slot of mac's first path.
func first(tb *Table, mac uint64) uint64 {
	a, _ := tb.homes(mac)
	return a
}

func TestConfigErrors(t *testing.T) {
	good := Config{Size: 64, Aging: sec, Ports: 4}
	for _, c := range []struct {
		field string
		mod   func(*Config)
	}{
		{"Size", func(c *Config) { c.Size = 0 }},
		{"Size", func(c *Config) { c.Size = MaxSize + 1 }},
		{"Aging", func(c *Config) { c.Aging = 0 }},
		{"Ports", func(c *Config) { c.Ports = 0 }},
		{"Ports", func(c *Config) { c.Ports = MaxPorts + 1 }},
		{"PortLimit", func(c *Config) { c.PortLimit = -1 }},
		{"MoveHold", func(c *Config) { c.MoveHold = -1 }},
	} {
		cfg := good
		c.mod(&cfg)
		_, err := New(cfg)
		if err == nil || !strings.Contains(err.Error(), "Config."+c.field) {
			t.Errorf("%+v: error %v, want one naming Config.%s", cfg, err, c.field)
		}
	}
	if _, err := New(Config{Size: 1, Aging: 1, Ports: MaxPorts}); err != nil {
		t.Errorf("smallest table with the most ports: %v", err)
	}
}

func TestLearnLookupAge(t *testing.T) {
	tb := mustNew(t, Config{Size: 64, Aging: 300 * sec, Ports: 4})
	if _, ok := tb.Lookup(0x020000000001, 0); ok {
		t.Fatal("empty table found a MAC")
	}
	if r := tb.Learn(0x020000000001, 3, 10*sec); r != Learned {
		t.Fatalf("first learn: %v", r)
	}
	if p, ok := tb.Lookup(0x020000000001, 11*sec); !ok || p != 3 {
		t.Fatalf("Lookup = %d %v", p, ok)
	}
	if r := tb.Learn(0x020000000001, 3, 12*sec); r != Refreshed {
		t.Fatalf("re-learn on the same port: %v", r)
	}
	// Move to port 0 (port 0 must be representable).
	if r := tb.Learn(0x020000000001, 0, 13*sec); r != Moved {
		t.Fatalf("move: %v", r)
	}
	if p, ok := tb.Lookup(0x020000000001, 14*sec); !ok || p != 0 {
		t.Fatalf("after move Lookup = %d %v", p, ok)
	}
	// Ages out 300 s after the last refresh.
	if _, ok := tb.Lookup(0x020000000001, 13*sec+300*sec+1); ok {
		t.Fatal("entry did not age out")
	}
	if tb.Len(14*sec) != 1 || tb.Len(400*sec) != 0 {
		t.Fatalf("Len = %d, %d", tb.Len(14*sec), tb.Len(400*sec))
	}
	// MAC 0 and the broadcast MAC are ordinary keys; bits above 48 are ignored.
	tb.Learn(0, 1, 20*sec)
	tb.Learn(0xffffffffffff, 2, 20*sec)
	if p, ok := tb.Lookup(0, 21*sec); !ok || p != 1 {
		t.Fatalf("MAC 0: %d %v", p, ok)
	}
	if p, ok := tb.Lookup(0xffff_ffffffffffff, 21*sec); !ok || p != 2 {
		t.Fatalf("MAC ff:ff:ff:ff:ff:ff with high bits: %d %v", p, ok)
	}
	if r := tb.Learn(1, 4, 0); r != BadPort {
		t.Fatalf("port 4 of 4: %v", r)
	}
	checkTable(t, tb, true)
}

func TestRefreshKeepsAlive(t *testing.T) {
	tb := mustNew(t, Config{Size: 16, Aging: 100 * sec, Ports: 2})
	mac := uint64(0x0200000000aa)
	for now := int64(0); now < 1000*sec; now += 20 * sec {
		tb.Learn(mac, 1, now)
		if _, ok := tb.Lookup(mac, now+sec); !ok {
			t.Fatalf("refreshed entry lost at %d s", now/sec)
		}
	}
}

func TestFullAndReuse(t *testing.T) {
	tb := mustNew(t, Config{Size: 4, Aging: 10 * sec, Ports: 8})
	for m := uint64(1); m <= 4; m++ {
		if r := tb.Learn(m, uint16(m), 0); r != Learned {
			t.Fatalf("MAC %d: %v", m, r)
		}
	}
	if r := tb.Learn(99, 1, sec); r != TableFull || tb.Full() != 1 {
		t.Fatalf("a full table: %v, full=%d", r, tb.Full())
	}
	if _, ok := tb.Lookup(99, sec); ok {
		t.Fatal("unlearnt MAC found")
	}
	// After aging, the slots are reusable.
	if r := tb.Learn(99, 2, 20*sec); r != Learned {
		t.Fatalf("expired slot not reused: %v", r)
	}
	if p, ok := tb.Lookup(99, 20*sec); !ok || p != 2 {
		t.Fatalf("Lookup = %d %v", p, ok)
	}
	st := tb.Stats(20 * sec)
	if st.Entries != 1 || st.Retired != 1 || st.Learned != 5 || st.TableFull != 1 {
		t.Fatalf("stats %+v", st)
	}
	checkTable(t, tb, true)
}

// TestFloodFromOnePort: a million random source MACs on port 2 (limit 100)
// while three known hosts on ports 0 and 1 keep talking.
func TestFloodFromOnePort(t *testing.T) {
	const limit, frames = 100, 1_000_000
	tb := mustNew(t, Config{Size: 4096, Aging: 300 * sec, Ports: 4, PortLimit: limit})
	known := []struct {
		mac  uint64
		port uint16
	}{{0x020000000001, 0}, {0x020000000002, 1}, {0x020000000003, 1}}
	for _, h := range known {
		if r := tb.Learn(h.mac, h.port, 0); r != Learned {
			t.Fatalf("known %012x: %v", h.mac, r)
		}
	}
	var got [BadPort + 1]uint64
	now := int64(0)
	for i := uint64(1); i <= frames; i++ {
		now += 1000 // 1 µs a frame
		// Distinct MACs: multiplying by an odd number permutes 48-bit values.
		mac := i * 0x5deece66d & macMask
		got[tb.Learn(mac, 2, now)]++
		if i%1000 == 0 {
			for _, h := range known {
				tb.Learn(h.mac, h.port, now)
				if p, ok := tb.Lookup(h.mac, now); !ok || p != h.port {
					t.Fatalf("frame %d: known %012x: %d %v", i, h.mac, p, ok)
				}
			}
		}
		if i%100_000 == 0 {
			tb.Sweep(now) // nothing is dead: must change nothing
		}
	}
	st := tb.Stats(now)
	t.Logf("flood: %+v", st)
	if got[Learned] != limit || got[PortFull] != frames-limit || got[Learned]+got[PortFull] != frames {
		t.Fatalf("results %v, want %d learned and the rest port_full", got, limit)
	}
	if st.Learned != 3+limit || st.PortFull != frames-limit || st.TableFull != 0 || st.Moves != 0 {
		t.Fatalf("counters %+v", st)
	}
	if st.PerPort[2] != limit || st.Held[2] != limit || st.Entries != 3+limit || st.PerPort[0] != 1 || st.PerPort[1] != 2 {
		t.Fatalf("entries %+v", st)
	}
	checkTable(t, tb, true)

	// The flood's entries die; the known hosts keep talking. Once Sweep has
	// retired the dead entries, port 2 learns again.
	for now2 := now; now2 < now+301*sec; now2 += 10 * sec {
		for _, h := range known {
			tb.Learn(h.mac, h.port, now2)
		}
	}
	now += 301 * sec
	tb.Sweep(now)
	st = tb.Stats(now)
	if st.Held[2] != 0 || st.PerPort[2] != 0 || st.Retired != limit || st.Entries != 3 {
		t.Fatalf("after aging and Sweep: %+v", st)
	}
	for i := uint64(1); i <= 10; i++ {
		if r := tb.Learn(0x060000000000|i, 2, now); r != Learned {
			t.Fatalf("new MAC on port 2 after the flood died: %v", r)
		}
	}
	for _, h := range known {
		if p, ok := tb.Lookup(h.mac, now); !ok || p != h.port {
			t.Fatalf("known %012x: %d %v", h.mac, p, ok)
		}
	}
	checkTable(t, tb, true)
}

// TestFloodWithoutLimit: with no port limit a flood fills the table, but
// known hosts keep their slots and learns that find none are counted.
func TestFloodWithoutLimit(t *testing.T) {
	const frames = 100_000
	tb := mustNew(t, Config{Size: 256, Aging: 300 * sec, Ports: 4})
	known := []uint64{0x020000000001, 0x020000000002, 0x020000000003}
	for i, m := range known {
		tb.Learn(m, uint16(i%2), 0)
	}
	var got [BadPort + 1]uint64
	now := int64(0)
	for i := uint64(1); i <= frames; i++ {
		now += 1000
		got[tb.Learn(i*0x5deece66d&macMask, 2, now)]++
		if i%1000 == 0 {
			for j, m := range known {
				tb.Learn(m, uint16(j%2), now)
				if p, ok := tb.Lookup(m, now); !ok || p != uint16(j%2) {
					t.Fatalf("frame %d: known %012x: %d %v", i, m, p, ok)
				}
			}
		}
	}
	st := tb.Stats(now)
	if got[TableFull] == 0 || got[Learned]+got[TableFull] != frames || st.TableFull != got[TableFull] || st.Learned != got[Learned]+3 {
		t.Fatalf("results %v, stats %+v", got, st)
	}
	if st.Entries > 256 || st.PerPort[2] != st.Entries-3 {
		t.Fatalf("entries %+v", st)
	}
	checkTable(t, tb, true)
}

func TestMoveIntoFullPort(t *testing.T) {
	tb := mustNew(t, Config{Size: 64, Aging: 300 * sec, Ports: 2, PortLimit: 2})
	tb.Learn(0xa1, 1, 0)
	tb.Learn(0xa2, 1, 0)
	if r := tb.Learn(0xa3, 1, 0); r != PortFull {
		t.Fatalf("third MAC on a port limited to two: %v", r)
	}
	tb.Learn(0xb1, 0, 0)
	if r := tb.Learn(0xb1, 1, sec); r != PortFull {
		t.Fatalf("move into a full port: %v", r)
	}
	if p, ok := tb.Lookup(0xb1, sec); !ok || p != 0 {
		t.Fatalf("refused move: Lookup = %d %v", p, ok)
	}
	// A move away from port 1 frees room there.
	if r := tb.Learn(0xa1, 0, sec); r != Moved {
		t.Fatalf("move to port 0: %v", r)
	}
	if r := tb.Learn(0xa3, 1, sec); r != Learned {
		t.Fatalf("learn after a move freed room: %v", r)
	}
	checkTable(t, tb, true)
}

// TestDeadEntriesCountUntilRetired: a dead entry holds its port's count until
// Sweep retires it, or until a learner of any port reuses its slot.
func TestDeadEntriesCountUntilRetired(t *testing.T) {
	tb := mustNew(t, Config{Size: 4096, Aging: 10 * sec, Ports: 2, PortLimit: 1})
	tb.Learn(0xa1, 0, 0)
	if err := reachable(tb, 0xa2, first(tb, 0xa1)); err == "" {
		t.Fatal("the test key puts 0xa1 on 0xa2's path")
	}
	if r := tb.Learn(0xa2, 0, 20*sec); r != PortFull {
		t.Fatalf("before Sweep: %v", r) // 0xa1 is dead but not on 0xa2's path
	}
	tb.Sweep(20 * sec)
	if r := tb.Learn(0xa2, 0, 20*sec); r != Learned {
		t.Fatalf("after Sweep: %v", r)
	}
	// With one slot, every MAC's path holds the dead entry: it is reused at once.
	one := mustNew(t, Config{Size: 1, Aging: 10 * sec, Ports: 2, PortLimit: 1})
	one.Learn(0xa1, 0, 0)
	if r := one.Learn(0xa2, 0, 20*sec); r != Learned {
		t.Fatalf("reuse of a dead slot of the port: %v", r)
	}
	if p, ok := one.Lookup(0xa2, 20*sec); !ok || p != 0 {
		t.Fatalf("Lookup = %d %v", p, ok)
	}
	checkTable(t, tb, true)
	checkTable(t, one, true)
}

func TestFlushAndSweep(t *testing.T) {
	tb := mustNew(t, Config{Size: 1024, Aging: 10 * sec, Ports: 3})
	for i := uint64(0); i < 200; i++ {
		tb.Learn(0x020000000000|i, uint16(1+i%2), 0)
	}
	tb.Flush(1)
	tb.Flush(7) // no such port: nothing
	for i := uint64(0); i < 200; i++ {
		p, ok := tb.Lookup(0x020000000000|i, sec)
		if want := uint16(1 + i%2); want == 1 && ok || want == 2 && (!ok || p != 2) {
			t.Fatalf("MAC %d after Flush(1): %d %v", i, p, ok)
		}
	}
	st := tb.Stats(sec)
	if st.Held[1] != 0 || st.PerPort[1] != 0 || st.PerPort[2] != 100 || st.Held[2] != 100 {
		t.Fatalf("after Flush: %+v", st)
	}
	checkTable(t, tb, true)
	// Port 1's MACs come back after the flush.
	if r := tb.Learn(0x020000000000, 1, sec); r != Learned {
		t.Fatalf("relearn after Flush: %v", r)
	}
	// Everything dies; two Sweeps (the second for a run that wraps the
	// table's end) leave every slot empty.
	tb.Sweep(30 * sec)
	tb.Sweep(30 * sec)
	for i := range tb.slots {
		if k := tb.slots[i].key.Load(); k != 0 {
			t.Fatalf("slot %d holds %x after everything died", i, k)
		}
	}
	if st := tb.Stats(30 * sec); st.Retired != 101 || st.Held[1]+st.Held[2] != 0 {
		t.Fatalf("after Sweep: %+v", st)
	}
}

func TestSweepKeepsChains(t *testing.T) {
	// Retired slots in front of live ones must stay (a lookup stops at an
	// empty slot); those ending a chain are cleared.
	tb := mustNew(t, Config{Size: 64, Aging: 10 * sec, Ports: 2})
	var macs []uint64
	for m := uint64(1); len(macs) < 40; m++ {
		macs = append(macs, m)
		tb.Learn(m, uint16(m%2), 0)
	}
	tb.Flush(0)
	tb.Sweep(sec)
	for _, m := range macs {
		if p, ok := tb.Lookup(m, sec); ok != (m%2 == 1) || ok && p != 1 {
			t.Fatalf("MAC %d after Flush(0) and Sweep: %d %v", m, p, ok)
		}
	}
	for i := 0; i+1 < len(tb.slots); i++ {
		if tb.slots[i].key.Load() == retired && tb.slots[i+1].key.Load() == 0 {
			t.Fatalf("retired slot %d before an empty one survived Sweep", i)
		}
	}
	checkTable(t, tb, true)
}

// The tests below play, through claimHook, another worker or Sweep acting
// between a learner's claim of a slot and its walk back along the path.

func setClaimHook(t *testing.T, f func(slot uint64)) {
	t.Helper()
	claimHook = f
	t.Cleanup(func() { claimHook = nil })
}

// macHomedAt returns a MAC other than not whose probe path starts at slot i.
func macHomedAt(tb *Table, i, not uint64) uint64 {
	for m := uint64(0x0a0000000000); ; m++ {
		if first(tb, m) == i && m != not {
			return m
		}
	}
}

// occupy writes a live entry into slot i as a worker's claim would.
func occupy(tb *Table, i, mac uint64, port uint16, now int64) {
	tb.held[port].n.Add(1)
	if a, ok := onSecond(tb, mac, i); ok {
		tb.slots[a].over.Add(1)
	}
	s := &tb.slots[i]
	s.seen.Store(now)
	s.moved.Store(never)
	s.key.Store(mac<<16 | (uint64(port) + 1))
}

// vacate takes the entry (of port 0) out of slot i as Sweep would: retired,
// marked for clearing, or cleared, as key says.
func vacate(tb *Table, i, key uint64) {
	if a, ok := onSecond(tb, tb.slots[i].key.Load()>>16, i); ok {
		tb.slots[a].over.Add(-1)
	}
	tb.slots[i].key.Store(key)
	tb.held[0].n.Add(-1)
}

// onSecond reports whether slot i is on mac's second path, and where its
// first path starts.
func onSecond(tb *Table, mac, i uint64) (first uint64, ok bool) {
	a, b := tb.homes(mac)
	return a, tb.span != 0 && (i-b)&tb.mask < tb.probe
}

// TestClaimCutOffBySweep: the MAC in front of our slot dies and Sweep
// empties its slot (having seen ours still empty) just after we claimed
// ours: the learner must notice the gap, give its slot up and learn again.
func TestClaimCutOffBySweep(t *testing.T) {
	tb := mustNew(t, Config{Size: 64, Aging: 100, Ports: 2})
	m := uint64(0x020000000001)
	h := first(tb, m)
	tb.Learn(macHomedAt(tb, h, m), 0, 0)
	fired := 0
	setClaimHook(t, func(i uint64) {
		if fired++; fired == 1 {
			if i != (h+1)&tb.mask {
				t.Errorf("claimed slot %d, want %d", i, (h+1)&tb.mask)
			}
			vacate(tb, h, 0)
		}
	})
	if r := tb.Learn(m, 1, 10); r != Learned || fired != 2 {
		t.Fatalf("Learn = %v after %d claims, want learned after 2", r, fired)
	}
	if k := tb.slots[h].key.Load(); k != m<<16|2 {
		t.Fatalf("slot %d holds %x, want the MAC", h, k)
	}
	if k := tb.slots[(h+1)&tb.mask].key.Load(); k != retired {
		t.Fatalf("given-up slot holds %x, want retired", k)
	}
	if p, ok := tb.Lookup(m, 10); !ok || p != 1 {
		t.Fatalf("Lookup = %d %v", p, ok)
	}
	checkTable(t, tb, true)
}

// TestClaimUndoesSweepMark: Sweep has marked the slot in front of ours for
// clearing (our slot was empty when it looked): the learner turns the mark
// back into retired, so Sweep's clear fails and our entry stays reachable.
func TestClaimUndoesSweepMark(t *testing.T) {
	tb := mustNew(t, Config{Size: 64, Aging: 100, Ports: 2})
	m := uint64(0x020000000001)
	h := first(tb, m)
	tb.Learn(macHomedAt(tb, h, m), 0, 0)
	setClaimHook(t, func(uint64) { vacate(tb, h, clearing) })
	if r := tb.Learn(m, 1, 10); r != Learned {
		t.Fatalf("Learn = %v", r)
	}
	if tb.slots[h].key.CompareAndSwap(clearing, 0) {
		t.Fatal("Sweep's clear succeeded behind a learner")
	}
	if k := tb.slots[h].key.Load(); k != retired {
		t.Fatalf("marked slot holds %x, want retired", k)
	}
	claimHook = nil
	tb.Sweep(10) // the retired slot is followed by ours: it must stay
	if p, ok := tb.Lookup(m, 10); !ok || p != 1 {
		t.Fatalf("Lookup = %d %v", p, ok)
	}
	checkTable(t, tb, true)
}

// TestSweepChecksAgainAfterMarking: a learner (whose scan found the slot in
// front still live) claims the next slot and walks back past the slot just
// after Sweep saw that next slot empty, before Sweep marks the slot: Sweep's
// second look must find the claim and leave the slot retired.
func TestSweepChecksAgainAfterMarking(t *testing.T) {
	tb := mustNew(t, Config{Size: 64, Aging: 100, Ports: 2})
	m := uint64(0x020000000001)
	h := first(tb, m)
	tb.Learn(macHomedAt(tb, h, m), 0, 0)
	clearHook = func(i uint64) {
		if i == h {
			occupy(tb, (h+1)&tb.mask, m, 1, 200)
		}
	}
	t.Cleanup(func() { clearHook = nil })
	tb.Sweep(200) // retires the dead MAC at h, then tries to clear h
	if k := tb.slots[h].key.Load(); k != retired {
		t.Fatalf("slot %d holds %x, want retired", h, k)
	}
	if p, ok := tb.Lookup(m, 200); !ok || p != 1 {
		t.Fatalf("Lookup = %d %v", p, ok)
	}
	checkTable(t, tb, true)
}

// TestReserveBound: learners racing for a port's last place never hold more
// than the limit between them. (A bound broken by one shows up in most runs
// under -race, in some without.)
func TestReserveBound(t *testing.T) {
	tb := mustNew(t, Config{Size: 64, Aging: 100, Ports: 1, PortLimit: 1})
	var holding atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; i < 200_000; i++ {
				if !tb.reserve(0) {
					continue
				}
				if n := holding.Add(1); n > 1 {
					t.Errorf("%d learners hold a place on a port limited to 1", n)
					return
				}
				holding.Add(-1)
				tb.unreserve(0)
			}
		}()
	}
	close(start)
	wg.Wait()
	if c := tb.held[0].n.Load(); c != 0 {
		t.Fatalf("count %d after every place was given back", c)
	}
}

// TestConcurrentCopies: another worker inserts the same MAC at the same
// time; the copy nearer the start of the path stays.
func TestConcurrentCopies(t *testing.T) {
	m := uint64(0x020000000001)
	t.Run("earlier copy wins", func(t *testing.T) {
		tb := mustNew(t, Config{Size: 64, Aging: 100, Ports: 2})
		h := first(tb, m)
		tb.Learn(macHomedAt(tb, h, m), 0, 0)
		fired := 0
		setClaimHook(t, func(uint64) {
			if fired++; fired == 1 { // the MAC in front dies; the other worker takes its slot for m on port 0
				vacate(tb, h, retired)
				occupy(tb, h, m, 0, 10)
			}
		})
		// Our copy (port 1) is given up; the retry finds port 0's and moves it.
		if r := tb.Learn(m, 1, 10); r != Moved {
			t.Fatalf("Learn = %v", r)
		}
		if p, ok := tb.Lookup(m, 10); !ok || p != 1 {
			t.Fatalf("Lookup = %d %v", p, ok)
		}
		if held := checkTable(t, tb, true); held[0] != 0 || held[1] != 1 {
			t.Fatalf("held %v", held)
		}
	})
	t.Run("later copy loses", func(t *testing.T) {
		tb := mustNew(t, Config{Size: 64, Aging: 100, Ports: 2})
		h := first(tb, m)
		setClaimHook(t, func(i uint64) {
			if i != h {
				t.Errorf("claimed slot %d, want %d", i, h)
			}
			occupy(tb, (h+1)&tb.mask, m, 0, 10) // the other worker scanned before our claim
		})
		if r := tb.Learn(m, 1, 10); r != Learned {
			t.Fatalf("Learn = %v", r)
		}
		if k := tb.slots[(h+1)&tb.mask].key.Load(); k != retired {
			t.Fatalf("later copy: slot holds %x, want retired", k)
		}
		if held := checkTable(t, tb, true); held[0] != 0 || held[1] != 1 {
			t.Fatalf("held %v", held)
		}
	})
}

// TestFlapping: a MAC alternates between ports 0 and 1 on every frame (1 ms
// apart) for 10 s. With MoveHold 1 s one move per second is taken and the
// rest refused; lookups change port only at those moves.
func TestFlapping(t *testing.T) {
	const ms = sec / 1000
	for _, hold := range []int64{0, sec} {
		tb := mustNew(t, Config{Size: 64, Aging: 300 * sec, Ports: 2, MoveHold: hold})
		mac := uint64(0x02000000f1a9)
		var got [BadPort + 1]int
		var moves []int64
		port, changes := uint16(0), 0
		for i := int64(0); i < 10_000; i++ {
			now := i * ms
			r := tb.Learn(mac, uint16(i%2), now)
			got[r]++
			if r == Moved {
				moves = append(moves, now)
			}
			p, ok := tb.Lookup(mac, now)
			if !ok {
				t.Fatalf("hold %d: lookup missed at frame %d", hold, i)
			}
			if i > 0 && p != port {
				changes++
			}
			port = p
		}
		st := tb.Stats(10 * sec)
		if got[Learned] != 1 || got[Moved] != changes || uint64(got[Moved]) != st.Moves || uint64(got[MoveRefused]) != st.MoveRefused ||
			got[Learned]+got[Moved]+got[MoveRefused]+got[Refreshed] != 10_000 {
			t.Fatalf("hold %d: results %v, %d lookup changes, stats %+v", hold, got, changes, st)
		}
		if hold == 0 {
			if got[Moved] != 9_999 {
				t.Fatalf("no hold: %d moves, want every frame after the first", got[Moved])
			}
			continue
		}
		if len(moves) < 9 || len(moves) > 11 || moves[0] != ms {
			t.Fatalf("hold 1 s: moves at %v", moves)
		}
		for i := 1; i < len(moves); i++ {
			if d := moves[i] - moves[i-1]; d < hold || d > hold+2*ms {
				t.Fatalf("moves %d ms apart, want one per hold of %d ms: %v", d/ms, hold/ms, moves)
			}
		}
		if got[MoveRefused] < 4_900 {
			t.Fatalf("hold 1 s: %d moves refused", got[MoveRefused])
		}
	}
}

// TestConcurrentStructure: learners on several goroutines (own, shared,
// flapping and random MACs) while others look up, flush and sweep, with a
// clock fast enough that entries die and slots are reused and cleared.
// Afterwards: no MAC twice, no entry cut off from its home, port counts
// equal to the slots held, within the limit, counters equal to results.
func TestConcurrentStructure(t *testing.T) {
	const learners, iters = 3, 10000
	// A small table, so that probe paths overlap and races are frequent.
	tb := mustNew(t, Config{Size: 128, Aging: 600, Ports: 4, PortLimit: 16, MoveHold: 40})
	var clock atomic.Int64
	var results [learners][BadPort + 1]uint64
	own := func(w, j int) uint64 { return 0x0a0000000000 | uint64(w)<<8 | uint64(j) }
	shared := func(j int) uint64 { return 0x0b0000000000 | uint64(j) }
	const flapper = 0x0c0000000001
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := 0; w < learners; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			<-start
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			res := &results[w]
			for i := 0; i < iters; i++ {
				now := clock.Add(1)
				for j := 0; j < 4; j++ {
					res[tb.Learn(own(w, j), uint16(w), now)]++
					res[tb.Learn(shared(j), 3, now)]++
				}
				res[tb.Learn(flapper, uint16((w+i)%learners), now)]++
				for j := 0; j < 2; j++ {
					res[tb.Learn(rng.Uint64()&macMask, uint16(w), now)]++
				}
				// MACs that only ever live on one port are never seen on another.
				o := (w + 1) % learners
				if p, ok := tb.Lookup(own(o, i%4), now); ok && int(p) != o {
					t.Errorf("MAC of port %d found on port %d", o, p)
					return
				}
				if p, ok := tb.Lookup(shared(i%4), now); ok && p != 3 {
					t.Errorf("shared MAC found on port %d", p)
					return
				}
				if i%64 == 0 {
					runtime.Gosched()
				}
			}
		}(w)
	}
	close(start)
	done := make(chan struct{})
	var housekeeping sync.WaitGroup
	housekeeping.Add(1)
	go func() {
		defer housekeeping.Done()
		for n := 0; ; n++ {
			select {
			case <-done:
				return
			default:
			}
			tb.Sweep(clock.Load())
			if n%16 == 0 {
				tb.Flush(uint16(n/16) % 4)
			}
			tb.Stats(clock.Load())
			runtime.Gosched()
		}
	}()
	wg.Wait()
	close(done)
	housekeeping.Wait()

	checkTable(t, tb, true)
	var sum [BadPort + 1]uint64
	for w := range results {
		for r := range sum {
			sum[r] += results[w][r]
		}
	}
	st := tb.Stats(clock.Load())
	t.Logf("results %v; stats %+v", sum, st)
	if sum[BadPort] != 0 || st.Learned != sum[Learned] || st.Moves != sum[Moved] || st.MoveRefused != sum[MoveRefused] ||
		st.PortFull != sum[PortFull] || st.TableFull != sum[TableFull] || st.Contended != sum[Contended] {
		t.Fatalf("counters do not match the results: %v vs %+v", sum, st)
	}
	if sum[Learned] == 0 || sum[Moved] == 0 || sum[MoveRefused] == 0 || sum[PortFull] == 0 || st.Retired == 0 {
		t.Fatalf("the test did not exercise learning, moves, refusals, limits and retirement: %v %+v", sum, st)
	}
}

// TestConcurrentKnownHosts: two goroutines flood random MACs from ports 2
// and 3 (limit 100), two keep 16 known hosts on ports 0 and 1 talking, and a
// third flushes port 3 and sweeps. No entry dies of age, so every lookup of
// a known host, during the flood and after it, must find it on its port.
func TestConcurrentKnownHosts(t *testing.T) {
	const limit = 100
	tb := mustNew(t, Config{Size: 4096, Aging: 1 << 60, Ports: 4, PortLimit: limit, MoveHold: 1000})
	known := func(j int) uint64 { return 0x020000000000 | uint64(j) }
	for j := 0; j < 16; j++ {
		tb.Learn(known(j), uint16(j%2), 0)
	}
	var clock atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(2)
		go func(w int) { // flooder
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for i := 0; i < 40_000; i++ {
				tb.Learn(rng.Uint64()&macMask, uint16(2+w), clock.Add(1))
			}
		}(w)
		go func(w int) { // known hosts
			defer wg.Done()
			for i := 0; i < 20_000; i++ {
				now := clock.Add(1)
				j := 2*(i%8) + w
				if r := tb.Learn(known(j), uint16(w), now); r != Refreshed {
					t.Errorf("known host %d: %v", j, r)
					return
				}
				j = (i * 7) % 16
				if p, ok := tb.Lookup(known(j), now); !ok || int(p) != j%2 {
					t.Errorf("known host %d: Lookup = %d %v", j, p, ok)
					return
				}
			}
		}(w)
	}
	done := make(chan struct{})
	var hk sync.WaitGroup
	hk.Add(1)
	go func() {
		defer hk.Done()
		for n := 0; ; n++ {
			select {
			case <-done:
				return
			default:
			}
			// One learner per flooded port: its count may be one above
			// the slots held while it learns, never more.
			if c2, c3 := tb.held[2].n.Load(), tb.held[3].n.Load(); c2 > limit+1 || c3 > limit+1 {
				t.Errorf("flooded ports counted %d and %d (limit %d)", c2, c3, limit)
				return
			}
			if n%8 == 0 {
				tb.Flush(3)
			}
			tb.Sweep(clock.Load())
			runtime.Gosched()
		}
	}()
	wg.Wait()
	close(done)
	hk.Wait()
	held := checkTable(t, tb, true)
	for j := 0; j < 16; j++ {
		if p, ok := tb.Lookup(known(j), clock.Load()); !ok || int(p) != j%2 {
			t.Fatalf("known host %d after the flood: %d %v", j, p, ok)
		}
	}
	st := tb.Stats(clock.Load())
	if held[2] != limit || st.PortFull == 0 {
		t.Fatalf("flooded port 2 holds %d (limit %d); stats %+v", held[2], limit, st)
	}
}

func TestHotPathDoesNotAllocate(t *testing.T) {
	tb := mustNew(t, Config{Size: 4096, Aging: 300 * sec, Ports: 4, PortLimit: 10, MoveHold: sec})
	for i := uint64(0); i < 10; i++ {
		tb.Learn(0x020000000000|i, 1, 0)
	}
	mac := uint64(1)
	for name, f := range map[string]func(){
		"learn refresh":  func() { tb.Learn(0x020000000003, 1, 1) },
		"learn new":      func() { mac++; tb.Learn(0x040000000000|mac, 2, 1) },
		"learn portfull": func() { mac++; tb.Learn(0x060000000000|mac, 1, 1) },
		"learn move":     func() { tb.Learn(0x020000000004, uint16(mac%2)+2, 1); mac++ },
		"lookup hit":     func() { tb.Lookup(0x020000000005, 1) },
		"lookup miss":    func() { tb.Lookup(0x0e0000000005, 1) },
	} {
		if a := testing.AllocsPerRun(1000, f); a != 0 {
			t.Errorf("%s: %v allocations", name, a)
		}
	}
}

func benchTable(b *testing.B) (*Table, []uint64) {
	tb := mustNew(b, Config{Size: 4096, Aging: 300 * sec, Ports: 4, PortLimit: 1024, MoveHold: sec})
	macs := make([]uint64, 1024)
	for i := range macs {
		macs[i] = 0x020000000000 | uint64(i)*0x9e37
		tb.Learn(macs[i], uint16(i%4), 0)
	}
	return tb, macs
}

func BenchmarkLearnRefresh(b *testing.B) {
	tb, macs := benchTable(b)
	for i := 0; b.Loop(); i++ {
		m := i & 1023
		tb.Learn(macs[m], uint16(m%4), 1)
	}
}

func BenchmarkLearnRefreshParallel(b *testing.B) {
	tb, macs := benchTable(b)
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			m := i & 1023
			tb.Learn(macs[m], uint16(m%4), 1)
		}
	})
}

func BenchmarkLearnFlood(b *testing.B) {
	tb := mustNew(b, Config{Size: 4096, Aging: 300 * sec, Ports: 4, PortLimit: 100})
	for i := 0; b.Loop(); i++ {
		tb.Learn(uint64(i)*0x5deece66d&macMask, 2, 1) // port_full after the first 100
	}
}

func BenchmarkLookup(b *testing.B) {
	tb, macs := benchTable(b)
	for i := 0; b.Loop(); i++ {
		tb.Lookup(macs[i&1023], 1)
	}
}

func BenchmarkLookupMiss(b *testing.B) {
	tb, _ := benchTable(b)
	for i := 0; b.Loop(); i++ {
		tb.Lookup(0x0e0000000000|uint64(i), 1)
	}
}
