package l3

import "testing"

// TestKeyedPaths: the two paths of an address never share a slot; a zero
// key draws a random one; the same address goes elsewhere under another key.
func TestKeyedPaths(t *testing.T) {
	for _, size := range []int{32, 64, 4096} {
		n := mustNeighbors(t, size, sec)
		for ip := uint32(0); ip < 5000; ip++ {
			a, b := n.homes(ip)
			if d := (b - a) & n.mask; d < neighProbe || d > uint64(size)-neighProbe || a > n.mask || b > n.mask {
				t.Fatalf("size %d: %s has homes %d and %d", size, addr4(ip), a, b)
			}
		}
	}
	one := mustNeighbors(t, 16, sec)
	if a, b := one.homes(7); a != b || one.paths() != 1 {
		t.Fatal("a table of 16 slots has two paths")
	}
	x, err := NewNeighbors(4096, sec)
	if err != nil {
		t.Fatal(err)
	}
	y, _ := NewNeighbors(4096, sec)
	if x.sub == y.sub || x.sub == mustNeighbors(t, 4096, sec).sub {
		t.Fatal("two tables without a key have the same subkeys")
	}
	same := 0
	for ip := uint32(0); ip < 1000; ip++ {
		if xa, _ := x.homes(ip); xa == func() uint64 { a, _ := y.homes(ip); return a }() {
			same++
		}
	}
	if same > 10 {
		t.Fatalf("%d of 1000 addresses have the same home under two random keys", same)
	}
}
