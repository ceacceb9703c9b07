package l3

import (
	"net/netip"
	"testing"
)

// TestBound4: a learnt binding is bound here to its own MAC and port and
// elsewhere to any other; asking refreshes it, so a binding asked about
// (a host that keeps sending) outlives the TTL, and one nobody asks about
// expires; a static entry is bound for good; Bound4 counts nothing.
func TestBound4(t *testing.T) {
	n, err := NewNeighbors(4096, 60*sec)
	if err != nil {
		t.Fatal(err)
	}
	a, b := a4("10.0.0.1"), a4("10.0.0.2")
	owner, other := mac(0x02, 1), mac(0x02, 9)
	if got := n.Bound4(a, owner, 1, 0); got != Unbound {
		t.Fatalf("before any ARP: %v", got)
	}
	n.ARP4(a, owner, 1, ARPRequestForUs, 0)
	n.ARP4(b, owner, 1, ARPRequestForUs, 0)
	for _, c := range []struct {
		mac  [6]byte
		port uint16
		want Binding
	}{{owner, 1, BoundHere}, {other, 1, BoundElsewhere}, {owner, 2, BoundElsewhere}} {
		if got := n.Bound4(a, c.mac, c.port, sec); got != c.want {
			t.Errorf("Bound4(%x, %d) = %v, want %v", c.mac, c.port, got, c.want)
		}
	}
	for now := int64(10); now <= 150; now += 10 { // a asked about every 10 s, b never
		if got := n.Bound4(a, owner, 1, now*sec); got != BoundHere {
			t.Fatalf("at %d s: %v", now, got)
		}
	}
	if got := n.Bound4(b, owner, 1, 150*sec); got != Unbound {
		t.Fatalf("b, silent for 150 s: %v", got)
	}
	if err := n.Static(netip.MustParseAddr("10.0.0.3"), owner, 3); err != nil {
		t.Fatal(err)
	}
	if got := n.Bound4(a4("10.0.0.3"), owner, 3, 1e6*sec); got != BoundHere {
		t.Fatalf("static: %v", got)
	}
	if c := n.Counters(); c.Learnt != 2 || c.MoveRefused != 0 || c.Unsolicited != 0 {
		t.Fatalf("counters %+v", c)
	}
	v6 := netip.MustParseAddr("fd00::1")
	if err := n.Static(v6, owner, 1); err != nil {
		t.Fatal(err)
	}
	ip := v6.As16()
	if n.Bound6(&ip, owner, 1) != BoundHere || n.Bound6(&ip, other, 1) != BoundElsewhere {
		t.Fatal("Bound6 of a static neighbour")
	}
	if ip[15] = 2; n.Bound6(&ip, owner, 1) != Unbound {
		t.Fatal("Bound6 of an unknown address")
	}
}
