package l3

import (
	"slices"
	"testing"
)

// The tests in this file use only what the cache offered before its hash
// was keyed and ARP was checked (NewNeighbors, Learn4, Lookup4,
// ShouldRequest4), so that they run unchanged against the old cache,
// where the first three fail.

// unkeyedHome is where the unkeyed cache hashed an address: the first
// slot of its one probe path, in a cache of 1<<bits slots.
func unkeyedHome(ip uint32, bits uint) uint64 {
	return uint64(ip) * 0x9e3779b97f4a7c15 >> (64 - bits)
}

// crowdingAddrs returns addresses of the subnet base/plen (not victim) that
// fill the 16 slots of victim's path in an empty unkeyed cache of 1<<bits
// slots when learnt in order: what a host on the subnet can compute.
func crowdingAddrs(victim, base uint32, plen int, bits uint) []uint32 {
	mask := uint64(1)<<bits - 1
	h := unkeyedHome(victim, bits)
	// before is how far a home lies before the end of victim's path.
	before := func(ip uint32) uint64 { return (h + 15 - unkeyedHome(ip, bits)) & mask }
	// fills reports whether learning ips in order fills victim's path.
	fills := func(ips []uint32) bool {
		used := map[uint64]bool{}
		for _, ip := range ips {
			home := unkeyedHome(ip, bits)
			for p := uint64(0); p < 16; p++ {
				if s := (home + p) & mask; !used[s] {
					used[s] = true
					break
				}
			}
		}
		for p := uint64(0); p < 16; p++ {
			if !used[(h+p)&mask] {
				return false
			}
		}
		return true
	}
	var ips []uint32
	for i := uint32(0); i < 1<<(32-plen); i++ {
		if ip := base + i; ip != victim && before(ip) < 80 {
			ips = append(ips, ip)
		}
	}
	slices.SortFunc(ips, func(a, b uint32) int { return int(before(b)) - int(before(a)) }) // by home, earliest first
	if !fills(ips) {
		return nil
	}
	// Leave out every address the path fills without.
	for i := 0; i < len(ips); {
		if less := slices.Delete(slices.Clone(ips), i, i+1); fills(less) {
			ips = less
		} else {
			i++
		}
	}
	return ips
}

// TestGratuitousARPsDoNotBlockAddress: a host on a /20 sends 17
// gratuitous ARPs for addresses computed to fill a server's path under the
// unkeyed hash. Under the keyed hash they are random addresses: the
// switch's request for the server is answered and learnt, and packets to
// it are routed (not dropped as no_neighbor).
func TestGratuitousARPsDoNotBlockAddress(t *testing.T) {
	base, srv := a4("10.0.0.0"), a4("10.0.10.52")
	attack := crowdingAddrs(srv, base, 20, 12)
	if len(attack) != 17 {
		t.Fatalf("%d addresses fill the path, want 17", len(attack))
	}
	n, err := NewNeighbors(4096, 60*sec)
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range attack {
		n.Learn4(ip, mac(0x02, 0xee), 2, 0)
	}
	if !n.ShouldRequest4(srv, sec, 100e6) {
		t.Fatal("no request for the server")
	}
	if !n.Learn4(srv, mac(0x02, 0x01), 1, sec) {
		t.Error("the server's reply was not learnt")
	}
	if m, p, ok := n.Lookup4(srv, sec); !ok || m != mac(0x02, 0x01) || p != 1 {
		t.Errorf("the server: %x port %d %v", m, p, ok)
	}
}

// TestARPCannotTakeOverBoundAddress: once a server's address is bound, ARP
// from another host (on its port or another) saying the address is at its
// own MAC changes nothing, request or reply, solicited or not.
func TestARPCannotTakeOverBoundAddress(t *testing.T) {
	n, err := NewNeighbors(4096, 60*sec)
	if err != nil {
		t.Fatal(err)
	}
	srv := a4("10.0.0.10")
	owner, thief := mac(0x02, 0x10), mac(0x02, 0x66)
	n.ShouldRequest4(srv, 0, 100e6)
	if !n.Learn4(srv, owner, 1, 0) {
		t.Fatal("the server's reply was not learnt")
	}
	for i, port := range []uint16{1, 2, 1, 2} {
		now := int64(i+1) * sec
		if i >= 2 {
			n.ShouldRequest4(srv, now, 100e6) // the switch asks again; the thief answers
		}
		n.Learn4(srv, thief, port, now)
		if m, p, ok := n.Lookup4(srv, now); !ok || m != owner || p != 1 {
			t.Fatalf("after ARP from the thief on port %d: %x port %d %v", port, m, p, ok)
		}
	}
}

// TestARPRateLimit: ARP from one port binds at most 100 addresses at once
// (the default budget), then more as time passes; another port has its
// own budget.
func TestARPRateLimit(t *testing.T) {
	n, err := NewNeighbors(4096, 60*sec)
	if err != nil {
		t.Fatal(err)
	}
	count := func(first uint32, k int, port uint16, now int64) int {
		learnt := 0
		for i := range k {
			if n.Learn4(first+uint32(i), mac(0x02, byte(i>>8), byte(i)), port, now) {
				learnt++
			}
		}
		return learnt
	}
	if got := count(a4("10.0.1.0"), 200, 1, 0); got != 100 {
		t.Fatalf("port 1 at once: %d bound, want 100", got)
	}
	if got := count(a4("10.0.2.0"), 50, 2, 0); got != 50 {
		t.Fatalf("port 2 at once: %d bound, want 50", got)
	}
	if got := count(a4("10.0.3.0"), 100, 1, sec/2); got != 50 {
		t.Fatalf("port 1 half a second later: %d bound, want 50", got)
	}
	// Refreshes cost nothing.
	if got := count(a4("10.0.1.0"), 100, 1, sec/2); got != 100 {
		t.Fatalf("refreshes on a spent port: %d, want 100", got)
	}
}

// TestMoveAfterAging: a host that changed NIC and port is bound to its new
// MAC and port once its old binding expired.
func TestMoveAfterAging(t *testing.T) {
	ttl := 60 * sec
	n, err := NewNeighbors(4096, ttl)
	if err != nil {
		t.Fatal(err)
	}
	ip := a4("10.0.0.20")
	n.ShouldRequest4(ip, 0, 100e6)
	n.Learn4(ip, mac(0x02, 0x20), 1, 0)
	now := ttl + 1
	if !n.ShouldRequest4(ip, now, 100e6) {
		t.Fatal("no request for an expired address")
	}
	if !n.Learn4(ip, mac(0x02, 0x21), 3, now) {
		t.Fatal("the moved host's reply was not learnt")
	}
	if m, p, ok := n.Lookup4(ip, now); !ok || m != mac(0x02, 0x21) || p != 3 {
		t.Fatalf("after the move: %x port %d %v", m, p, ok)
	}
}
