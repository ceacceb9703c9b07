package l3

import (
	"strings"
	"testing"
)

// TestARPKinds: what each kind of ARP packet may do to an unbound, a
// bound, an expired and a static address, and the counters.
func TestARPKinds(t *testing.T) {
	ttl, win := 60*sec, sec
	n := mustNeighbors(t, 4096, ttl, SolicitWindow(win))
	ip, other := a4("10.0.0.1"), a4("10.0.0.2")
	m1, m2 := mac(2, 0, 0, 0, 0, 1), mac(2, 0, 0, 0, 0, 2)
	steps := []struct {
		what string
		do   func() ARPResult
		want ARPResult
	}{
		{"an unsolicited reply", func() ARPResult { return n.ARP4(ip, m1, 1, ARPReply, 0) }, ARPUnsolicited},
		{"a gratuitous ARP", func() ARPResult { return n.ARP4(ip, m1, 1, ARPOther, 0) }, ARPUnsolicited},
		{"address 0", func() ARPResult { return n.ARP4(0, m1, 1, ARPRequestForUs, 0) }, ARPIgnored},
		{"a reply to the switch's request", func() ARPResult {
			if !n.ShouldRequest4(ip, 0, 100e6) {
				t.Fatal("no request")
			}
			return n.ARP4(ip, m1, 1, ARPReply, win)
		}, ARPLearnt},
		{"a gratuitous ARP from the owner", func() ARPResult { return n.ARP4(ip, m1, 1, ARPOther, 20*sec) }, ARPRefreshed},
		{"a solicited reply from another MAC", func() ARPResult {
			n.ShouldRequest4(ip, 21*sec, 100e6)
			return n.ARP4(ip, m2, 1, ARPReply, 21*sec)
		}, ARPMoveRefused},
		{"a request for us from another port", func() ARPResult { return n.ARP4(ip, m1, 2, ARPRequestForUs, 22*sec) }, ARPMoveRefused},
		{"a reply after the window", func() ARPResult {
			n.ShouldRequest4(other, 0, 100e6)
			return n.ARP4(other, m2, 1, ARPReply, win+1)
		}, ARPUnsolicited},
		{"a request for us from an unbound address", func() ARPResult { return n.ARP4(other, m2, 1, ARPRequestForUs, 23*sec) }, ARPLearnt},
		{"a gratuitous ARP after the binding expired", func() ARPResult { return n.ARP4(ip, m2, 3, ARPOther, 20*sec+ttl+1) }, ARPUnsolicited},
		{"a solicited reply after the binding expired", func() ARPResult {
			n.ShouldRequest4(ip, 20*sec+ttl+1, 100e6)
			return n.ARP4(ip, m2, 3, ARPReply, 20*sec+ttl+2)
		}, ARPLearnt},
	}
	for _, s := range steps {
		if got := s.do(); got != s.want {
			t.Fatalf("%s: %v, want %v", s.what, got, s.want)
		}
	}
	if m, p, ok := n.Lookup4(ip, 20*sec+ttl+2); !ok || m != m2 || p != 3 {
		t.Fatalf("after the move: %x port %d %v", m, p, ok)
	}
	if m, p, ok := n.Lookup4(other, 24*sec); !ok || m != m2 || p != 1 {
		t.Fatalf("other: %x port %d %v", m, p, ok)
	}
	if c := n.Counters(); c != (ARPCounters{Learnt: 3, MoveRefused: 2, Unsolicited: 4}) {
		t.Fatalf("counters %+v", c)
	}
	// A static entry: the same binding refreshes nothing but is no move;
	// another is a refused move.
	st := a4("10.0.0.3")
	if err := n.Static(addr4(st), m1, 1); err != nil {
		t.Fatal(err)
	}
	if r := n.ARP4(st, m1, 1, ARPOther, 0); r != ARPRefreshed {
		t.Fatalf("a static entry's owner: %v", r)
	}
	n.ShouldRequest4(st, 0, 100e6)
	if r := n.ARP4(st, m2, 1, ARPReply, 0); r != ARPMoveRefused || n.Counters().MoveRefused != 3 {
		t.Fatalf("a static entry claimed by another MAC: %v, %+v", r, n.Counters())
	}
	for r := ARPRefreshed; r <= ARPContended+1; r++ {
		if s := r.String(); s == "" || r <= ARPContended && strings.Contains(s, "(") {
			t.Errorf("ARPResult(%d) is %q", r, s)
		}
	}
}

// TestGratuitousARPsDoNotBind: with the kind told, 17 gratuitous ARPs for
// computed addresses bind nothing at all (counted as unsolicited), and the
// server is learnt from its reply.
func TestGratuitousARPsDoNotBind(t *testing.T) {
	base, srv := a4("10.0.0.0"), a4("10.0.10.52")
	n := mustNeighbors(t, 4096, 60*sec)
	for _, ip := range crowdingAddrs(srv, base, 20, 12) {
		if r := n.ARP4(ip, mac(0x02, 0xee), 2, ARPOther, 0); r != ARPUnsolicited {
			t.Fatalf("gratuitous ARP for %s: %v", addr4(ip), r)
		}
	}
	n.ShouldRequest4(srv, sec, 100e6)
	if r := n.ARP4(srv, mac(0x02, 0x01), 1, ARPReply, sec); r != ARPLearnt {
		t.Fatalf("the server's reply: %v", r)
	}
	if e, _, _ := n.Stats(sec); e != 1 || n.Counters().Unsolicited != 17 {
		t.Fatalf("%d entries, counters %+v", e, n.Counters())
	}
}

// TestARPRateCounters: the budget is per port (Ports keeps them apart),
// refills with time, and refusals are counted.
func TestARPRateCounters(t *testing.T) {
	n := mustNeighbors(t, 4096, 60*sec, Ports(8), ARPRate(2, 10))
	ip := a4("10.1.0.0")
	bind := func(port uint16, now int64) ARPResult {
		ip++
		return n.ARP4(ip, mac(2, byte(ip)), port, ARPRequestForUs, now)
	}
	for i, want := range []ARPResult{ARPLearnt, ARPLearnt, ARPRateLimited, ARPRateLimited} {
		if r := bind(0, 0); r != want {
			t.Fatalf("port 0, binding %d: %v, want %v", i, r, want)
		}
	}
	if r := bind(4, 0); r != ARPLearnt {
		t.Fatalf("port 4 has a budget of its own: %v", r)
	}
	if r := bind(0, 4); r != ARPRateLimited {
		t.Fatalf("port 0 after 4 units: %v", r)
	}
	if r := bind(0, 5); r != ARPLearnt {
		t.Fatalf("port 0 after 5 units (one binding per 5): %v", r)
	}
	if c := n.Counters(); c.RateLimited != 3 || c.Learnt != 4 {
		t.Fatalf("counters %+v", c)
	}
	// Ports beyond the option's count share a budget with port % count.
	if r := bind(8, 5); r != ARPRateLimited {
		t.Fatalf("port 8 (sharing with port 0): %v", r)
	}
}

func TestNeighborOptionErrors(t *testing.T) {
	for _, c := range []struct {
		opt  Option
		want string
	}{
		{Ports(0), "neighbour ports: 0"},
		{Ports(1<<16 + 1), "neighbour ports: 65537"},
		{ARPRate(-1, sec), "neighbour ARP rate: -1 per"},
		{ARPRate(5, 0), "neighbour ARP rate: 5 per 0"},
		{SolicitWindow(0), "neighbour solicit window: 0"},
	} {
		if _, err := NewNeighbors(64, sec, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
	if _, err := NewNeighbors(64, sec, ARPRate(0, 0), Ports(1<<16)); err != nil {
		t.Error(err)
	}
}

// addrsOnFirstPath returns n addresses other than not whose first path
// starts at home.
func addrsOnFirstPath(nb *Neighbors, home, not uint32, k int) []uint32 {
	var ips []uint32
	for ip := a4("10.128.0.0"); len(ips) < k; ip++ {
		if a, _ := nb.homes(ip); a == uint64(home) && ip != not {
			ips = append(ips, ip)
		}
	}
	return ips
}

// TestNeighborsCrowdedFirstPath: 16 live entries fill an address's first
// path; it is learnt on its second and found there. Only an address whose
// two paths are both full is refused.
func TestNeighborsCrowdedFirstPath(t *testing.T) {
	n := mustNeighbors(t, 4096, 60*sec)
	srv := a4("10.0.0.10")
	a, b := n.homes(srv)
	for _, ip := range addrsOnFirstPath(n, uint32(a), srv, 16) {
		if !n.Learn4(ip, mac(2, 0xee), 2, 0) {
			t.Fatalf("crowding %s refused", addr4(ip))
		}
	}
	if !n.Learn4(srv, mac(2, 0x10), 1, sec) {
		t.Fatal("the server was refused")
	}
	if k := n.slots[b].key.Load(); uint32(k) != srv || k&stMask != stLearnt {
		t.Fatalf("the server is not at the start of its second path: %x", k)
	}
	if m, p, ok := n.Lookup4(srv, sec); !ok || m != mac(2, 0x10) || p != 1 {
		t.Fatalf("the server: %x %d %v", m, p, ok)
	}
	// Fill the second path of an address on the same first path.
	other := srv + 1
	for oa, _ := n.homes(other); oa != a; oa, _ = n.homes(other) {
		other++
	}
	_, ob := n.homes(other)
	for _, ip := range addrsOnFirstPath(n, uint32(ob), other, 16) {
		n.Learn4(ip, mac(2, 0xef), 3, 2*sec)
	}
	if n.Learn4(other, mac(2, 0x11), 1, 2*sec) || n.Counters().Full != 1 {
		t.Fatalf("an address whose paths are full was learnt (%+v)", n.Counters())
	}
}

// occupy4 writes a live learnt entry of ip into slot i, as another
// worker's ARP4 would.
func occupy4(n *Neighbors, i uint64, ip uint32, m [6]byte, port uint16, now int64) {
	s := &n.slots[i]
	if !n.write(s, s.key.Load(), ip, pack(m, port), now, stLearnt) {
		panic("occupy4: slot changed")
	}
}

// TestNeighborsSecondPathCopies plays, through writtenHook, another worker
// writing the same address on the other path meanwhile.
func TestNeighborsSecondPathCopies(t *testing.T) {
	ip, m := a4("10.0.0.10"), mac(2, 0x10)
	setHook := func(t *testing.T, f func(*nslot)) {
		writtenHook = f
		t.Cleanup(func() { writtenHook = nil })
	}
	t.Run("a copy on the first path wins over ours on the second", func(t *testing.T) {
		n := mustNeighbors(t, 64, 60*sec)
		a, b := n.homes(ip)
		crowd := addrsOnFirstPath(n, uint32(a), ip, 16)
		for p, c := range crowd {
			occupy4(n, (a+uint64(p))&n.mask, c, mac(2, 0xee), 2, 0)
		}
		fired := 0
		setHook(t, func(s *nslot) {
			if fired++; fired > 1 {
				return
			}
			if s != &n.slots[b] {
				t.Errorf("wrote slot %p, want slot %d", s, b)
			}
			// An entry on the first path is freed; the other worker puts
			// ip there (the same binding).
			i := (a + 5) & n.mask
			n.free(&n.slots[i], crowd[5])
			occupy4(n, i, ip, m, 1, sec)
		})
		if r := n.ARP4(ip, m, 1, ARPRequestForUs, sec); r != ARPRefreshed {
			t.Fatalf("ARP4 = %v", r)
		}
		if k := n.slots[b].key.Load(); k&stMask != stFree {
			t.Fatalf("our copy on the second path: key %x, want free", k)
		}
		if e, _, _ := n.Stats(sec); e != 16 {
			t.Fatalf("%d entries, want 16", e)
		}
		if got, _, ok := n.Lookup4(ip, sec); !ok || got != m {
			t.Fatalf("Lookup4 = %x %v", got, ok)
		}
	})
	t.Run("a copy on the second path loses to ours on the first", func(t *testing.T) {
		n := mustNeighbors(t, 64, 60*sec)
		a, b := n.homes(ip)
		setHook(t, func(s *nslot) {
			if s != &n.slots[a] {
				t.Errorf("wrote slot %p, want %d", s, a)
			}
			occupy4(n, b, ip, m, 1, sec)
		})
		if r := n.ARP4(ip, m, 1, ARPRequestForUs, sec); r != ARPLearnt {
			t.Fatalf("ARP4 = %v", r)
		}
		if k := n.slots[b].key.Load(); k&stMask != stFree {
			t.Fatalf("the other copy: key %x, want free", k)
		}
		if e, _, _ := n.Stats(sec); e != 1 {
			t.Fatalf("%d entries, want 1", e)
		}
	})
}
