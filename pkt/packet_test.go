package pkt

import (
	"testing"
	"unsafe"
)

// TestPacketSize: the descriptor stays 56 bytes (rings and batches copy it
// by value; the scratch bits fit in its padding).
func TestPacketSize(t *testing.T) {
	if n := unsafe.Sizeof(Packet{}); n != 56 {
		t.Fatalf("Packet is %d bytes, not 56", n)
	}
}

// TestRegisterMeta: each registration gets a bit of its own, named by its
// owner; the seventeenth panics with the owners' names.
func TestRegisterMeta(t *testing.T) {
	saved := metaOwners
	defer func() { metaOwners = saved }()
	metaOwners = nil
	var all uint16
	for i := 0; i < MaxMeta; i++ {
		b := RegisterMeta("m")
		if b == 0 || b&(b-1) != 0 || all&b != 0 {
			t.Fatalf("registration %d got mask %#x (taken %#x)", i, b, all)
		}
		all |= b
	}
	if MetaOwner(1<<3) != "m" || MetaOwner(3) != "" {
		t.Fatalf("owners %q %q", MetaOwner(1<<3), MetaOwner(3))
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a seventeenth bit was given")
		}
	}()
	RegisterMeta("late")
}
