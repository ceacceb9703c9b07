package l2

import "testing"

// TestEntries lists live entries with their ports and ages, leaves out
// dead and flushed ones, and stops at the limit.
func TestEntries(t *testing.T) {
	tb := mustNew(t, Config{Size: 64, Aging: 10 * sec, Ports: 4})
	tb.Learn(0x020000000001, 0, 1*sec)
	tb.Learn(0x020000000002, 1, 2*sec)
	tb.Learn(0x020000000003, 2, 3*sec)
	tb.Learn(0x020000000004, 3, 3*sec)
	tb.Flush(3)
	got := map[uint64]Entry{}
	for _, e := range tb.Entries(12*sec, 0) { // the first MAC is dead at 12 s (seen at 1 s, aging 10 s)
		got[e.MAC] = e
	}
	want := map[uint64]Entry{
		0x020000000002: {MAC: 0x020000000002, Port: 1, Age: 10 * sec},
		0x020000000003: {MAC: 0x020000000003, Port: 2, Age: 9 * sec},
	}
	if len(got) != len(want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Fatalf("entry %x: %+v, want %+v", k, got[k], w)
		}
	}
	if n := len(tb.Entries(3*sec, 1)); n != 1 {
		t.Fatalf("limit 1 gave %d entries", n)
	}
}
