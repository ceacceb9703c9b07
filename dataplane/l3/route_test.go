package l3

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func a4(s string) uint32 {
	b := netip.MustParseAddr(s).As4()
	return binary.BigEndian.Uint32(b[:])
}

func addr4(x uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], x)
	return netip.AddrFrom4(b)
}

// ref is the reference longest-prefix match: every route, one by one.
func ref(routes []Route, a netip.Addr) ([]NextHop, bool) {
	best := -1
	for i, r := range routes {
		if r.Prefix.Contains(a) && (best < 0 || r.Prefix.Bits() > routes[best].Prefix.Bits()) {
			best = i
		}
	}
	if best < 0 {
		return nil, false
	}
	return routes[best].NextHops, true
}

func lookup(t *Table, a netip.Addr) ([]NextHop, bool) {
	if a.Is4() {
		b := a.As4()
		return t.Lookup4(binary.BigEndian.Uint32(b[:]))
	}
	b := a.As16()
	return t.Lookup6(&b)
}

func mustTable(tb testing.TB, routes []Route) *Table {
	tb.Helper()
	t, err := NewTable(routes)
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

func hops(ports ...uint16) []NextHop {
	var h []NextHop
	for _, p := range ports {
		h = append(h, NextHop{Port: p})
	}
	return h
}

func TestLookupExamples(t *testing.T) {
	routes := []Route{
		{netip.MustParsePrefix("0.0.0.0/0"), hops(1)},
		{netip.MustParsePrefix("10.0.0.0/8"), hops(2)},
		{netip.MustParsePrefix("10.1.0.0/16"), []NextHop{{netip.MustParseAddr("10.1.0.1"), 3}, {netip.MustParseAddr("10.1.0.2"), 4}}},
		{netip.MustParsePrefix("10.1.2.3/32"), hops(5)},
		{netip.MustParsePrefix("255.255.255.255/32"), hops(6)},
		{netip.MustParsePrefix("2001:db8::/32"), hops(7)},
		{netip.MustParsePrefix("2001:db8::1/128"), hops(8)},
		{netip.MustParsePrefix("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"), hops(9)},
	}
	tb := mustTable(t, routes)
	for _, c := range []struct {
		addr string
		port uint16 // 0: no route
	}{
		{"1.2.3.4", 1}, {"0.0.0.0", 1}, {"10.0.0.0", 2}, {"10.255.255.255", 2},
		{"10.1.0.0", 3}, {"10.1.2.2", 3}, {"10.1.2.3", 5}, {"10.1.2.4", 3},
		{"10.2.0.0", 2}, {"11.0.0.0", 1}, {"255.255.255.254", 1}, {"255.255.255.255", 6},
		{"2001:db8::", 7}, {"2001:db8::1", 8}, {"2001:db8::2", 7}, {"2001:db9::", 0},
		{"::", 0}, {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe", 0},
		{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 9},
	} {
		nhs, ok := lookup(tb, netip.MustParseAddr(c.addr))
		if c.port == 0 {
			if ok {
				t.Errorf("%s: got %v, want no route", c.addr, nhs)
			}
			continue
		}
		if !ok || nhs[0].Port != c.port {
			t.Errorf("%s: got %v %v, want port %d", c.addr, nhs, ok, c.port)
		}
	}
	// ECMP next hops in the order given.
	nhs, _ := tb.Lookup4(a4("10.1.9.9"))
	if !slices.Equal(nhs, routes[2].NextHops) {
		t.Errorf("next hops %v, want %v in that order", nhs, routes[2].NextHops)
	}
}

func TestEmptyTable(t *testing.T) {
	tb := mustTable(t, nil)
	if _, ok := tb.Lookup4(a4("1.2.3.4")); ok {
		t.Error("IPv4 route in an empty table")
	}
	var b [16]byte
	if _, ok := tb.Lookup6(&b); ok {
		t.Error("IPv6 route in an empty table")
	}
	only4 := mustTable(t, []Route{{netip.MustParsePrefix("0.0.0.0/0"), hops(1)}})
	if _, ok := only4.Lookup6(&b); ok {
		t.Error("IPv4 default route matches IPv6")
	}
	b = netip.MustParseAddr("::ffff:1.2.3.4").As16()
	if _, ok := only4.Lookup6(&b); ok {
		t.Error("IPv4 default route matches an IPv4-mapped IPv6 address")
	}
}

func TestNewTableErrors(t *testing.T) {
	p := netip.MustParsePrefix
	for _, c := range []struct {
		routes []Route
		want   string
	}{
		{[]Route{{netip.Prefix{}, hops(1)}}, "routes[0].Prefix: invalid"},
		{[]Route{{p("10.0.0.0/8"), hops(1)}, {p("10.0.0.1/24"), hops(1)}}, "routes[1].Prefix: 10.0.0.1/24 has bits set beyond its length (write 10.0.0.0/24)"},
		{[]Route{{p("10.0.0.0/8"), nil}}, "routes[0] (10.0.0.0/8).NextHops: none"},
		{[]Route{{p("10.0.0.0/8"), []NextHop{{Port: 1}, {netip.MustParseAddr("2001:db8::1"), 2}}}}, "routes[0] (10.0.0.0/8).NextHops[1].IP: 2001:db8::1 is not of the prefix's family"},
		{[]Route{{p("2001:db8::/32"), []NextHop{{netip.MustParseAddr("10.0.0.1"), 2}}}}, "NextHops[0].IP: 10.0.0.1 is not of the prefix's family"},
		{[]Route{{p("2001:db8::/32"), []NextHop{{netip.MustParseAddr("fe80::1%eth0"), 2}}}}, "has a zone"},
		{[]Route{{p("10.0.0.0/8"), []NextHop{{netip.MustParseAddr("0.0.0.0"), 2}}}}, "unspecified"},
		{[]Route{{p("10.0.0.0/8"), hops(1)}, {p("10.0.0.0/16"), hops(1)}, {p("10.0.0.0/8"), hops(2)}}, "routes[0] and routes[2]: duplicate prefix 10.0.0.0/8"},
		{[]Route{{p("2001:db8::/32"), hops(1)}, {p("2001:db8::/32"), hops(1)}}, "routes[0] and routes[1]: duplicate prefix 2001:db8::/32"},
	} {
		_, err := NewTable(c.routes)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.routes, err, c.want)
		}
	}
	// The same length in the other family is no duplicate.
	mustTable(t, []Route{{p("0.0.0.0/0"), hops(1)}, {p("::/0"), hops(1)}})
}

func TestTableKeepsItsOwnRoutes(t *testing.T) {
	in := []Route{
		{netip.MustParsePrefix("10.0.0.0/8"), hops(1, 2)},
		{netip.MustParsePrefix("10.1.0.0/16"), hops(3)},
	}
	tb := mustTable(t, in)
	in[0].NextHops[0].Port = 99 // the caller's slice changes after NewTable
	nhs, _ := tb.Lookup4(a4("10.2.0.0"))
	if nhs[0].Port != 1 {
		t.Errorf("table shares the caller's next hops: port %d", nhs[0].Port)
	}
	// Appending to a returned slice must not overwrite the next route's hops.
	_ = append(nhs, NextHop{Port: 77})
	if nhs2, _ := tb.Lookup4(a4("10.1.0.0")); nhs2[0].Port != 3 {
		t.Errorf("append to one route's next hops changed another's: %v", nhs2)
	}
	out := tb.Routes()
	if len(out) != 2 || out[0].Prefix != in[0].Prefix || out[1].Prefix != in[1].Prefix {
		t.Fatalf("Routes() = %v, want the routes in the order given", out)
	}
	out[0].NextHops[1].Port = 55
	if nhs, _ := tb.Lookup4(a4("10.2.0.0")); nhs[1].Port != 2 {
		t.Error("Routes() returns the table's own next hops")
	}
}

// randRoutes returns n distinct random prefixes of the family (bits 32 or
// 128), drawn from a few base addresses so that they nest often, with the
// shortest and longest lengths always possible.
func randRoutes(r *rand.Rand, n, bits int) []Route {
	bases := make([]netip.Addr, 1+r.IntN(6))
	for i := range bases {
		bases[i] = randAddr(r, bits)
	}
	seen := map[netip.Prefix]bool{}
	var routes []Route
	for len(routes) < n {
		a := bases[r.IntN(len(bases))]
		if r.IntN(4) == 0 {
			a = randAddr(r, bits)
		}
		var l int
		switch r.IntN(8) {
		case 0:
			l = 0
		case 1:
			l = bits
		default:
			l = r.IntN(bits + 1)
		}
		p := netip.PrefixFrom(a, l).Masked()
		if seen[p] {
			continue
		}
		seen[p] = true
		nh := make([]NextHop, 1+r.IntN(3))
		for i := range nh {
			nh[i].Port = uint16(len(routes))
			if r.IntN(2) == 0 {
				nh[i].IP = randAddr(r, bits)
			}
		}
		routes = append(routes, Route{p, nh})
	}
	return routes
}

func randAddr(r *rand.Rand, bits int) netip.Addr {
	if bits == 32 {
		return addr4(r.Uint32())
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], r.Uint64())
	binary.BigEndian.PutUint64(b[8:], r.Uint64())
	return netip.AddrFrom16(b)
}

// probes returns addresses to look up: random ones, and around every
// prefix's first and last address.
func probes(r *rand.Rand, routes []Route, bits int) []netip.Addr {
	var out []netip.Addr
	for range 200 {
		out = append(out, randAddr(r, bits))
	}
	last := func(p netip.Prefix) netip.Addr {
		b := p.Addr().AsSlice()
		for i := p.Bits(); i < len(b)*8; i++ {
			b[i/8] |= 0x80 >> (i % 8)
		}
		a, _ := netip.AddrFromSlice(b)
		return a
	}
	for _, rt := range routes {
		f, l := rt.Prefix.Addr(), last(rt.Prefix)
		out = append(out, f, l, f.Prev(), l.Next())
	}
	zero, ones := netip.IPv6Unspecified(), netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")
	if bits == 32 {
		zero, ones = netip.IPv4Unspecified(), netip.MustParseAddr("255.255.255.255")
	}
	out = append(out, zero, ones)
	return slices.DeleteFunc(out, func(a netip.Addr) bool { return !a.IsValid() })
}

func checkAgainstRef(t *testing.T, routes []Route, addrs []netip.Addr) {
	t.Helper()
	tb, err := NewTable(routes)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		got, gok := lookup(tb, a)
		want, wok := ref(routes, a)
		if gok != wok || !slices.Equal(got, want) {
			t.Fatalf("%s: got %v %v, want %v %v (routes %v)", a, got, gok, want, wok, routes)
		}
	}
}

func TestLPMAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		n := 1 + r.IntN(60)
		if i%50 == 0 {
			n = 400
		}
		for _, bits := range []int{32, 128} {
			routes := randRoutes(r, n, bits)
			checkAgainstRef(t, routes, probes(r, routes, bits))
		}
		// Both families in one table.
		routes := append(randRoutes(r, n, 32), randRoutes(r, n, 128)...)
		addrs := append(probes(r, routes[:n], 32), probes(r, routes[n:], 128)...)
		checkAgainstRef(t, routes, addrs)
	}
}

func FuzzLPM4(f *testing.F) {
	f.Add([]byte{10, 0, 0, 0, 8, 10, 1, 0, 0, 16}, []byte{10, 1, 2, 3, 10, 2, 0, 0})
	f.Add([]byte{0, 0, 0, 0, 0, 255, 255, 255, 255, 32}, []byte{255, 255, 255, 255, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, rb, lb []byte) {
		// Each 5 bytes of rb: an address and a length (mod 33). A prefix
		// given again must be refused; the table is then checked without it.
		var routes, all []Route
		seen := map[netip.Prefix]bool{}
		for i := 0; i+5 <= len(rb) && len(all) < 256; i += 5 {
			p := netip.PrefixFrom(addr4(binary.BigEndian.Uint32(rb[i:])), int(rb[i+4])%33).Masked()
			rt := Route{p, hops(uint16(len(all)))}
			all = append(all, rt)
			if !seen[p] {
				seen[p] = true
				routes = append(routes, rt)
			}
		}
		if len(all) > len(routes) {
			if _, err := NewTable(all); err == nil || !strings.Contains(err.Error(), "duplicate prefix") {
				t.Fatalf("duplicate prefix accepted (err %v)", err)
			}
		}
		tb, err := NewTable(routes)
		if err != nil {
			t.Fatal(err)
		}
		var addrs []uint32
		for i := 0; i+4 <= len(lb); i += 4 {
			addrs = append(addrs, binary.BigEndian.Uint32(lb[i:]))
		}
		for _, rt := range routes {
			b := rt.Prefix.Addr().As4()
			first := binary.BigEndian.Uint32(b[:])
			last := first | uint32(uint64(1)<<(32-rt.Prefix.Bits())-1)
			addrs = append(addrs, first, last, first-1, last+1)
		}
		for _, x := range addrs {
			got, gok := tb.Lookup4(x)
			want, wok := ref(routes, addr4(x))
			if gok != wok || !slices.Equal(got, want) {
				t.Fatalf("%s: got %v %v, want %v %v", addr4(x), got, gok, want, wok)
			}
		}
	})
}

func TestLookupDoesNotAllocate(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	tb := mustTable(t, append(randRoutes(r, 500, 32), randRoutes(r, 500, 128)...))
	x := r.Uint32()
	b := randAddr(r, 128).As16()
	var sink int
	if n := testing.AllocsPerRun(1000, func() {
		nhs, _ := tb.Lookup4(x)
		sink += len(nhs)
		x += 0x01000193
		nhs, _ = tb.Lookup6(&b)
		sink += len(nhs)
		b[3]++
	}); n != 0 {
		t.Errorf("Lookup4 and Lookup6: %v allocations per run, want 0", n)
	}
	_ = sink
}

// benchRoutes returns n distinct prefixes shaped like a fabric's table:
// mostly /24 and /32 (IPv6: /64 and /128), some shorter, and a default.
func benchRoutes(n, bits int) []Route {
	r := rand.New(rand.NewPCG(uint64(n), uint64(bits)))
	seen := map[netip.Prefix]bool{}
	routes := []Route{{netip.PrefixFrom(randAddr(r, bits), 0).Masked(), hops(0)}}
	seen[routes[0].Prefix] = true
	base := randAddr(r, bits)
	for len(routes) < n {
		a := randAddr(r, bits)
		if bits == 32 {
			// Within a /12 of the base, as a fabric's addresses are.
			b := base.As4()
			x := binary.BigEndian.Uint32(b[:])&0xfff00000 | r.Uint32()&0xfffff
			a = addr4(x)
		} else {
			b := base.As16()
			copy(b[8:], a.AsSlice()[8:])
			b[6], b[7] = byte(r.IntN(256)), byte(r.IntN(4))
			a = netip.AddrFrom16(b)
		}
		var l int
		switch k := r.IntN(10); {
		case k < 5:
			l = bits * 3 / 4 // /24, /96
		case k < 8:
			l = bits
		case bits == 32:
			l = 12 + r.IntN(12)
		default:
			l = 48 + r.IntN(16)
		}
		if bits == 128 && l == 96 {
			l = 64
		}
		p := netip.PrefixFrom(a, l).Masked()
		if seen[p] {
			continue
		}
		seen[p] = true
		routes = append(routes, Route{p, hops(uint16(len(routes)), uint16(len(routes)+1))})
	}
	return routes
}

func BenchmarkLookup4(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			routes := benchRoutes(n, 32)
			tb := mustTable(b, routes)
			// Destinations: addresses in random routes' prefixes.
			r := rand.New(rand.NewPCG(5, 6))
			dst := make([]uint32, 4096)
			for i := range dst {
				p := routes[r.IntN(len(routes))].Prefix
				a := p.Addr().As4()
				dst[i] = binary.BigEndian.Uint32(a[:]) | r.Uint32()&uint32(uint64(1)<<(32-p.Bits())-1)
			}
			b.ResetTimer()
			var sink int
			for i := 0; b.Loop(); i++ {
				nhs, _ := tb.Lookup4(dst[i&4095])
				sink += len(nhs)
			}
			_ = sink
		})
	}
}

func BenchmarkLookup6(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			routes := benchRoutes(n, 128)
			tb := mustTable(b, routes)
			r := rand.New(rand.NewPCG(7, 8))
			dst := make([][16]byte, 4096)
			for i := range dst {
				p := routes[r.IntN(len(routes))].Prefix
				a := p.Addr().As16()
				rnd := randAddr(r, 128).As16()
				for j := p.Bits(); j < 128; j++ {
					m := byte(0x80 >> (j % 8))
					a[j/8] = a[j/8]&^m | rnd[j/8]&m
				}
				dst[i] = a
			}
			b.ResetTimer()
			var sink int
			for i := 0; b.Loop(); i++ {
				nhs, _ := tb.Lookup6(&dst[i&4095])
				sink += len(nhs)
			}
			_ = sink
		})
	}
}
