package l2

import "testing"

// TestKeyedPaths: the two paths of a MAC never share a slot; a zero key
// draws a random one; the same MAC goes elsewhere under another key.
func TestKeyedPaths(t *testing.T) {
	for _, size := range []int{32, 64, 4096} {
		tb := mustNew(t, Config{Size: size, Aging: sec, Ports: 1})
		for m := uint64(0); m < 5000; m++ {
			a, b := tb.homes(m * 0x10001)
			if d := (b - a) & tb.mask; d < maxProbe || d > uint64(size)-maxProbe || a > tb.mask || b > tb.mask {
				t.Fatalf("size %d: MAC %x has homes %d and %d", size, m, a, b)
			}
		}
	}
	for _, size := range []int{1, 2, 16} {
		if tb := mustNew(t, Config{Size: size, Aging: sec, Ports: 1}); tb.span != 0 {
			t.Fatalf("a table of %d slots has two paths", size)
		}
	}
	x, _ := New(Config{Size: 4096, Aging: sec, Ports: 1})
	y, _ := New(Config{Size: 4096, Aging: sec, Ports: 1})
	if x.sub == y.sub || x.sub == mustNew(t, Config{Size: 4096, Aging: sec, Ports: 1}).sub {
		t.Fatal("two tables without a key have the same subkeys")
	}
	same := 0
	for m := uint64(0); m < 1000; m++ {
		if first(x, m) == first(y, m) {
			same++
		}
	}
	if same > 10 {
		t.Fatalf("%d of 1000 MACs have the same home under two random keys", same)
	}
}
