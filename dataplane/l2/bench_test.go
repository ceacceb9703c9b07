package l2

import "testing"

// BenchmarkLookupCrowded looks up the MACs of a table 85% full, where some
// sit on their second path. (It uses only New, Learn and Lookup, so it runs
// against the unkeyed table too.)
func BenchmarkLookupCrowded(b *testing.B) {
	tb, err := New(Config{Size: 4096, Aging: 300 * sec, Ports: 4})
	if err != nil {
		b.Fatal(err)
	}
	var macs []uint64
	for i := uint64(0); len(macs) < 4096*85/100 && i < 1<<20; i++ {
		m := 0x020000000000 | i*0x9e37
		if tb.Learn(m, uint16(i%4), 0) == Learned {
			macs = append(macs, m)
		}
	}
	for i := 0; b.Loop(); i++ {
		tb.Lookup(macs[i%len(macs)], 1)
	}
}
