package l3

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

const sec = int64(1e9)

// testKey is the hash key of the caches tests build with mustNeighbors,
// so that where an address goes is the same on every run.
var testKey = [2]uint64{0x0706050403020100, 0x0f0e0d0c0b0a0908}

func mustNeighbors(t testing.TB, size int, ttl int64, opts ...Option) *Neighbors {
	t.Helper()
	n, err := NewNeighbors(size, ttl, append([]Option{HashKey(testKey)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mac(b ...byte) [6]byte {
	var m [6]byte
	copy(m[:], b)
	return m
}

func TestNewNeighborsErrors(t *testing.T) {
	for _, c := range []struct {
		size int
		ttl  int64
		want string
	}{
		{0, sec, "size: 0 is not a power of two"},
		{1000, sec, "size: 1000 is not a power of two"},
		{MaxNeighbors * 2, sec, "not a power of two from 1 to"},
		{1024, 0, "ttl: 0 is not positive"},
	} {
		if _, err := NewNeighbors(c.size, c.ttl); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewNeighbors(%d, %d): error %v, want %q", c.size, c.ttl, err, c.want)
		}
	}
	mustNeighbors(t, 1, sec)
}

func TestLearnAndLookup(t *testing.T) {
	n := mustNeighbors(t, 64, 10*sec)
	ip := a4("10.0.0.1")
	if _, _, ok := n.Lookup4(ip, 0); ok {
		t.Fatal("found an address never learnt")
	}
	m1, m2 := mac(2, 0, 0, 0, 0, 1), mac(2, 0, 0, 0, 0, 2)
	if !n.Learn4(ip, m1, 3, 0) {
		t.Fatal("Learn4 refused a new address")
	}
	if m, p, ok := n.Lookup4(ip, 1); !ok || m != m1 || p != 3 {
		t.Fatalf("Lookup4 = %x %d %v, want %x 3 true", m, p, ok, m1)
	}
	// Another MAC, or the same one on another port, claims the address
	// while it is bound: refused (it may be another host taking it over).
	if n.Learn4(ip, m2, 3, 2) {
		t.Fatal("Learn4 moved a bound address to a new MAC")
	}
	if n.Learn4(ip, m1, 4, 3) {
		t.Fatal("Learn4 moved a bound address to another port")
	}
	if m, p, ok := n.Lookup4(ip, 4); !ok || m != m1 || p != 3 {
		t.Fatalf("after refused moves: %x %d %v, want %x 3", m, p, ok, m1)
	}
	// The host changed NIC and moved: once its old binding expired, the
	// new MAC and port are taken.
	now := 10*sec + 1
	if !n.Learn4(ip, m2, 4, now) {
		t.Fatal("Learn4 refused a new MAC and port after the old binding expired")
	}
	if m, p, ok := n.Lookup4(ip, now); !ok || m != m2 || p != 4 {
		t.Fatalf("after a move: %x %d %v, want %x 4", m, p, ok, m2)
	}
	if n.Learn4(0, m1, 1, now) {
		t.Error("Learn4 took address 0.0.0.0 (an ARP probe's sender)")
	}
	if e, s, full := n.Stats(now); e != 1 || s != 0 || full != 0 {
		t.Errorf("Stats = %d %d %d, want 1 0 0", e, s, full)
	}
	if c := n.Counters(); c != (ARPCounters{Learnt: 2, MoveRefused: 2}) {
		t.Errorf("Counters = %+v, want 2 learnt, 2 moves refused", c)
	}
}

func TestExpiry(t *testing.T) {
	ttl := 8 * sec
	n := mustNeighbors(t, 64, ttl)
	ip := a4("10.0.0.1")
	m := mac(2, 0, 0, 0, 0, 1)
	n.Learn4(ip, m, 1, 100)
	if _, _, ok := n.Lookup4(ip, 100+ttl); !ok {
		t.Error("entry gone at exactly ttl")
	}
	if _, _, ok := n.Lookup4(ip, 100+ttl+1); ok {
		t.Error("entry alive past ttl")
	}
	if e, _, _ := n.Stats(100 + ttl + 1); e != 0 {
		t.Errorf("Stats counts %d expired entries", e)
	}
	// A refresh within ttl/8 writes nothing; a later one moves the expiry.
	n.Learn4(ip, m, 1, 100+ttl/16)
	if _, _, ok := n.Lookup4(ip, 100+ttl+1); ok {
		t.Error("a refresh within ttl/8 moved the expiry")
	}
	n.Learn4(ip, m, 1, 100+ttl/2)
	if _, _, ok := n.Lookup4(ip, 100+ttl/2+ttl); !ok {
		t.Error("a refresh at ttl/2 did not move the expiry")
	}
	if _, _, ok := n.Lookup4(ip, 100+ttl/2+ttl+1); ok {
		t.Error("entry alive past ttl after its refresh")
	}
	// An expired entry is learnt again.
	now := 100 + 3*ttl
	if !n.Learn4(ip, m, 2, now) {
		t.Fatal("Learn4 refused an expired address")
	}
	if _, p, ok := n.Lookup4(ip, now+ttl); !ok || p != 2 {
		t.Errorf("revived entry: port %d %v, want 2 true", p, ok)
	}
}

func TestStaticNeverOverriddenNorExpired(t *testing.T) {
	n := mustNeighbors(t, 64, sec)
	sm, other := mac(2, 0, 0, 0, 0, 0x55), mac(2, 0, 0, 0, 0, 0x66)
	ip := netip.MustParseAddr("10.0.0.9")
	// A learnt entry becomes static in place.
	n.Learn4(a4("10.0.0.9"), other, 2, 0)
	if err := n.Static(ip, sm, 7); err != nil {
		t.Fatal(err)
	}
	if err := n.Static(ip, sm, 7); err != nil {
		t.Errorf("setting the same static entry again: %v", err)
	}
	if err := n.Static(ip, other, 7); err == nil || !strings.Contains(err.Error(), "10.0.0.9: already set to 02:00:00:00:00:55 on port 7") {
		t.Errorf("conflicting static entry: error %v", err)
	}
	if n.Learn4(a4("10.0.0.9"), other, 2, 1) {
		t.Error("Learn4 reports it overrode a static entry")
	}
	if !n.Learn4(a4("10.0.0.9"), sm, 7, 1) {
		t.Error("Learn4 of what the static entry says is not true")
	}
	for _, now := range []int64{2, 1000 * sec} {
		if m, p, ok := n.Lookup4(a4("10.0.0.9"), now); !ok || m != sm || p != 7 {
			t.Errorf("at %d: static entry reads %x %d %v", now, m, p, ok)
		}
	}
	// IPv6, and IPv4-mapped IPv6 as IPv4.
	v6 := netip.MustParseAddr("2001:db8::9")
	if err := n.Static(v6, sm, 5); err != nil {
		t.Fatal(err)
	}
	if err := n.Static(v6, sm, 6); err == nil {
		t.Error("conflicting IPv6 static entry accepted")
	}
	b := v6.As16()
	if m, p, ok := n.Lookup6(&b, 1000*sec); !ok || m != sm || p != 5 {
		t.Errorf("IPv6 static entry reads %x %d %v", m, p, ok)
	}
	b[15]++
	if _, _, ok := n.Lookup6(&b, 0); ok {
		t.Error("found an IPv6 neighbour never set")
	}
	if err := n.Static(netip.MustParseAddr("::ffff:10.0.0.10"), sm, 1); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := n.Lookup4(a4("10.0.0.10"), 0); !ok {
		t.Error("IPv4-mapped static entry not found as IPv4")
	}
	for _, bad := range []string{"0.0.0.0", "::", "fe80::1%eth0"} {
		if err := n.Static(netip.MustParseAddr(bad), sm, 1); err == nil {
			t.Errorf("Static(%s) accepted", bad)
		}
	}
	if err := n.Static(netip.Addr{}, sm, 1); err == nil {
		t.Error("Static of the zero Addr accepted")
	}
	if e, s, _ := n.Stats(1000 * sec); e != 3 || s != 3 {
		t.Errorf("Stats = %d entries, %d static, want 3 3", e, s)
	}
	es := n.Entries(1000 * sec)
	if len(es) != 3 || es[0].IP != netip.MustParseAddr("10.0.0.9") || es[1].IP != netip.MustParseAddr("10.0.0.10") || es[2].IP != v6 || !es[0].Static || es[2].Port != 5 {
		t.Errorf("Entries = %+v", es)
	}
}

func TestTableFullIsBoundedAndCounted(t *testing.T) {
	const size = 16 // one probe path covers the whole table
	ttl := 10 * sec
	n := mustNeighbors(t, size, ttl)
	for i := range size {
		if !n.Learn4(uint32(i+1), mac(byte(i)), 1, 0) {
			t.Fatalf("address %d of %d refused", i+1, size)
		}
	}
	if n.Learn4(size+1, mac(0xff), 1, ttl) {
		t.Error("learnt into a full table")
	}
	if e, _, full := n.Stats(ttl); e != size || full != 1 {
		t.Errorf("Stats = %d entries, full %d, want %d, 1", e, full, size)
	}
	// A live entry is never pushed out, but an expired one is.
	for i := range size {
		if _, _, ok := n.Lookup4(uint32(i+1), ttl); !ok {
			t.Errorf("address %d lost", i+1)
		}
	}
	if !n.Learn4(5, mac(4), 1, ttl) { // refresh one (address i+1 is at MAC i)
		t.Fatal("refresh refused")
	}
	if !n.Learn4(size+1, mac(0xff), 1, ttl+1) {
		t.Fatal("not learnt over expired entries")
	}
	if _, _, ok := n.Lookup4(5, ttl+1); !ok {
		t.Error("the refreshed entry was reused")
	}
	if m, _, ok := n.Lookup4(size+1, ttl+1); !ok || m != mac(0xff) {
		t.Error("the new entry is not found")
	}

	// A flood of made-up addresses: memory is fixed, every address that
	// was accepted stays (none expires), the refusals are counted. (No
	// rate limit: this is about room.)
	n = mustNeighbors(t, 1024, ttl, ARPRate(0, 0))
	r := rand.New(rand.NewPCG(31, 32))
	var learnt []uint32
	refused := 0
	for range 20000 {
		ip := r.Uint32() | 1
		if n.Learn4(ip, mac(byte(ip>>24), byte(ip>>16), byte(ip>>8), byte(ip)), uint16(ip), 0) {
			learnt = append(learnt, ip)
		} else {
			refused++
		}
	}
	e, _, full := n.Stats(0)
	if e > 1024 || e != len(learnt) || full != uint64(refused) {
		t.Errorf("Stats = %d entries, full %d; learnt %d, refused %d, size 1024", e, full, len(learnt), refused)
	}
	for _, ip := range learnt {
		if m, p, ok := n.Lookup4(ip, 0); !ok || binary.BigEndian.Uint32(m[:4]) != ip || p != uint16(ip) {
			t.Fatalf("%s: %x %d %v", addr4(ip), m, p, ok)
		}
	}
	t.Logf("1024 slots: %d of 20000 random addresses learnt (%.0f%% full)", len(learnt), 100*float64(len(learnt))/1024)
}

func TestShouldRequest4(t *testing.T) {
	n := mustNeighbors(t, 256, sec)
	ip, other := a4("10.0.0.1"), a4("10.0.0.2")
	for n.reqIndex(other) == n.reqIndex(ip) {
		other++
	}
	iv := sec
	for _, c := range []struct {
		ip   uint32
		now  int64
		want bool
	}{
		{ip, 0, true}, // a fake clock at 0 works too
		{ip, 1, false},
		{other, 1, true},
		{ip, iv - 1, false},
		{ip, iv, true},
		{ip, iv, false},
		{ip, 2*iv - 1, false},
		{other, iv + 1, true},
		{ip, 5 * iv, true},
	} {
		if got := n.ShouldRequest4(c.ip, c.now, iv); got != c.want {
			t.Errorf("ShouldRequest4(%s, %d) = %v, want %v", addr4(c.ip), c.now, got, c.want)
		}
	}

	// Workers asking at once: one true per interval.
	n = mustNeighbors(t, 256, sec)
	var clock atomic.Int64
	var yes atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20000 {
				now := clock.Add(1000) // 1 µs a call: 160 ms in all
				if n.ShouldRequest4(ip, now, 10_000_000) {
					yes.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if max := clock.Load()/10_000_000 + 1; yes.Load() > max || yes.Load() < max-1 {
		t.Errorf("%d requests in %d ns at one per 10 ms, want %d", yes.Load(), clock.Load(), max)
	}
}

// In the concurrent test a learnt MAC names its address and a version,
// and the port is a function of both: a reader can tell a MAC or port that
// was never learnt for the address it looked up.
func verMAC(ip uint32, v uint16) [6]byte {
	return [6]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip), byte(v >> 8), byte(v)}
}

func verPort(ip uint32, v uint16) uint16 { return uint16(ip*31) ^ v }

func TestNeighborsConcurrent(t *testing.T) {
	ttl := int64(50_000)
	n := mustNeighbors(t, 64, ttl, ARPRate(0, 0)) // small: paths overlap, fill up, expire and get reused
	static := map[uint32][6]byte{}
	for i := range 8 {
		ip := a4("10.9.0.1") + uint32(i)
		m := mac(0xee, byte(i))
		static[ip] = m
		if err := n.Static(addr4(ip), m, 99); err != nil {
			t.Fatal(err)
		}
	}
	var ips []uint32
	for i := range 96 {
		ips = append(ips, a4("10.1.0.1")+uint32(i)*257)
	}
	for ip := range static {
		ips = append(ips, ip)
	}
	var clock atomic.Int64
	var stop atomic.Bool
	var bad atomic.Int64
	var wg sync.WaitGroup
	workers := max(4, runtime.GOMAXPROCS(0))
	fail := func(format string, args ...any) {
		if bad.Add(1) <= 5 {
			t.Errorf(format, args...)
		}
	}
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 77))
			for i := 0; !stop.Load(); i++ {
				ip := ips[r.IntN(len(ips))]
				now := clock.Add(1)
				if r.IntN(4) == 0 {
					v := uint16(r.IntN(4)) // few versions: MAC changes and plain refreshes
					ok := n.Learn4(ip, verMAC(ip, v), verPort(ip, v), now)
					if sm, isStatic := static[ip]; isStatic && ok && verMAC(ip, v) != sm {
						fail("Learn4 over static %s reports success", addr4(ip))
					}
					continue
				}
				m, p, ok := n.Lookup4(ip, now)
				if sm, isStatic := static[ip]; isStatic {
					if !ok || m != sm || p != 99 {
						fail("static %s reads %x %d %v", addr4(ip), m, p, ok)
					}
					continue
				}
				if !ok {
					continue
				}
				v := uint16(m[4])<<8 | uint16(m[5])
				if m != verMAC(ip, v) || p != verPort(ip, v) {
					fail("%s reads MAC %x port %d, never learnt for it", addr4(ip), m, p)
				}
				if i%1000 == 0 {
					n.ShouldRequest4(ip, now, 1000)
				}
			}
		})
	}
	// A reader of Stats and Entries meanwhile.
	wg.Go(func() {
		for !stop.Load() {
			now := clock.Load()
			for _, e := range n.Entries(now) {
				b := e.IP.As4()
				ip := binary.BigEndian.Uint32(b[:])
				if _, isStatic := static[ip]; isStatic != e.Static {
					fail("Entries: %s static %v", e.IP, e.Static)
				}
				v := uint16(e.MAC[4])<<8 | uint16(e.MAC[5])
				if !e.Static && (e.MAC != verMAC(ip, v) || e.Port != verPort(ip, v)) {
					fail("Entries: %s with MAC %x port %d, never learnt for it", e.IP, e.MAC, e.Port)
				}
			}
			if e, s, _ := n.Stats(now); e > 64 || s != 8 {
				fail("Stats: %d entries, %d static", e, s)
			}
			runtime.Gosched()
		}
	})
	for clock.Load() < 1_000_000 && bad.Load() == 0 {
		runtime.Gosched()
	}
	stop.Store(true)
	wg.Wait()
	_, _, full := n.Stats(clock.Load())
	t.Logf("%d operations, %d refused for a full path", clock.Load(), full)
}

func TestNeighborsDoNotAllocate(t *testing.T) {
	n := mustNeighbors(t, 1024, 100*sec)
	if err := n.Static(netip.MustParseAddr("2001:db8::1"), mac(1), 1); err != nil {
		t.Fatal(err)
	}
	v6 := netip.MustParseAddr("2001:db8::1").As16()
	ip := uint32(0x0a000000)
	now := int64(0)
	var sink uint16
	if a := testing.AllocsPerRun(1000, func() {
		ip++
		now += sec
		n.Learn4(ip, mac(byte(ip)), 1, now)        // new
		n.Learn4(ip, mac(byte(ip), 1), 2, now)     // a refused move
		n.Learn4(ip-1, mac(byte(ip-1), 1), 2, now) // a refused move, or new
		n.Learn4(ip-1, mac(byte(ip-1)), 1, now)    // refresh
		n.ARP4(ip+1, mac(1), 1, ARPReply, now)     // unsolicited
		n.ARP4(ip+2, mac(1), 1, ARPOther, now)     // unsolicited
		n.ShouldRequest4(ip+3, now, 1)
		n.ARP4(ip+3, mac(1), 1, ARPReply, now) // solicited
		sink += uint16(n.Counters().Learnt)
		_, p, _ := n.Lookup4(ip, now)
		sink += p
		_, p, _ = n.Lookup6(&v6, now)
		sink += p
		if n.ShouldRequest4(ip, now, sec) {
			sink++
		}
	}); a != 0 {
		t.Errorf("Learn4, Lookup4, Lookup6, ShouldRequest4: %v allocations per run, want 0", a)
	}
	_ = sink
}

func benchNeighbors(b *testing.B) (*Neighbors, []uint32) {
	n := mustNeighbors(b, 4096, 1<<62)
	ips := make([]uint32, 1024)
	r := rand.New(rand.NewPCG(41, 42))
	for i := range ips {
		ips[i] = a4("10.0.0.0") | r.Uint32()&0xffff
		n.Learn4(ips[i], mac(byte(i)), uint16(i), 1)
	}
	return n, ips
}

func BenchmarkNeighborsLookup4(b *testing.B) {
	n, ips := benchNeighbors(b)
	var sink uint16
	for i := 0; b.Loop(); i++ {
		_, p, _ := n.Lookup4(ips[i&1023], 2)
		sink += p
	}
	_ = sink
}

func BenchmarkNeighborsLookup4Miss(b *testing.B) {
	n, _ := benchNeighbors(b)
	var sink uint16
	for i := 0; b.Loop(); i++ {
		_, p, _ := n.Lookup4(a4("10.9.0.0")|uint32(i)&0xffff, 2)
		sink += p
	}
	_ = sink
}

func BenchmarkNeighborsLookup4Parallel(b *testing.B) {
	n, ips := benchNeighbors(b)
	b.RunParallel(func(pb *testing.PB) {
		var sink uint16
		for i := 0; pb.Next(); i++ {
			_, p, _ := n.Lookup4(ips[i&1023], 2)
			sink += p
		}
		_ = sink
	})
}

func BenchmarkNeighborsLookup6(b *testing.B) {
	n := mustNeighbors(b, 64, sec)
	var addrs [][16]byte
	for i := range 64 {
		a := netip.AddrFrom16([16]byte{0x20, 1, 0xd, 0xb8, 15: byte(i)})
		n.Static(a, mac(byte(i)), uint16(i))
		addrs = append(addrs, a.As16())
	}
	var sink uint16
	for i := 0; b.Loop(); i++ {
		_, p, _ := n.Lookup6(&addrs[i&63], 0)
		sink += p
	}
	_ = sink
}

func BenchmarkNeighborsLearn4(b *testing.B) {
	n, ips := benchNeighbors(b)
	for i := 0; b.Loop(); i++ {
		n.Learn4(ips[i&1023], mac(byte(i&1023)), uint16(i&1023), 2)
	}
}

func BenchmarkShouldRequest4(b *testing.B) {
	n, ips := benchNeighbors(b)
	now := int64(0)
	for i := 0; b.Loop(); i++ {
		now += 1000
		n.ShouldRequest4(ips[i&1023], now, sec)
	}
}

// A learner that read an entry, then lost the slot to another address
// before writing it, must not write its MAC into the other address's
// entry.
func TestLearnRacesSlotReuse(t *testing.T) {
	ttl := 10 * sec
	n := mustNeighbors(t, 2, ttl) // both addresses share both slots
	x, y := a4("10.0.0.1"), a4("10.0.0.2")
	n.Learn4(x, mac(1), 1, 0)
	n.Learn4(y, mac(2), 2, 0)
	// At 100 s both are dead. x's learner reads x's entry; meanwhile a
	// third address takes x's slot (it finds it first on its path or
	// second, either way both slots are dead).
	z := a4("10.0.0.3")
	knownHook = func() {
		knownHook = nil
		if !n.Learn4(z, mac(3), 3, 100*sec) {
			t.Error("z not learnt")
		}
		if !n.Learn4(y, mac(2), 2, 100*sec) {
			t.Error("y not learnt")
		}
	}
	defer func() { knownHook = nil }()
	n.Learn4(x, mac(1, 1), 1, 100*sec)
	if m, p, ok := n.Lookup4(z, 100*sec); !ok || m != mac(3) || p != 3 {
		t.Errorf("z reads %x port %d: x's learner wrote into its slot", m, p)
	}
	if m, p, ok := n.Lookup4(y, 100*sec); !ok || m != mac(2) || p != 2 {
		t.Errorf("y reads %x port %d: x's learner wrote into its slot", m, p)
	}
	if m, _, ok := n.Lookup4(x, 100*sec); ok && m != mac(1, 1) {
		t.Errorf("x reads %x", m)
	}
}

// A reader that matched a key, then saw the slot go to another address
// before it read the value, must not return that address's MAC.
func TestLookupRacesSlotReuse(t *testing.T) {
	ttl := 10 * sec
	n := mustNeighbors(t, 1, ttl)
	x, y := a4("10.0.0.1"), a4("10.0.0.2")
	n.Learn4(x, mac(1), 1, 0)
	// The reader's clock says x is live; a learner whose clock is later
	// finds it dead and reuses the slot.
	lookupHook = func() {
		lookupHook = nil
		if !n.Learn4(y, mac(2), 2, 100*sec) {
			t.Error("y not learnt")
		}
	}
	defer func() { lookupHook = nil }()
	if m, p, ok := n.Lookup4(x, 5*sec); ok && (m != mac(1) || p != 1) {
		t.Errorf("x reads %x port %d, y's entry", m, p)
	}
}
