package l3

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestSymHash4IsSymmetric(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for i := range 1_000_000 {
		src, dst := r.Uint32(), r.Uint32()
		sp, dp := uint16(r.Uint32()), uint16(r.Uint32())
		switch i % 4 { // equal fields, where ordering must fall back on the other field
		case 1:
			dst = src
		case 2:
			dp = sp
		}
		pr := uint8(r.Uint32())
		h := SymHash4(src, dst, sp, dp, pr)
		if g := SymHash4(dst, src, dp, sp, pr); g != h {
			t.Fatalf("SymHash4(%08x, %08x, %d, %d, %d) = %08x, reverse %08x", src, dst, sp, dp, pr, h, g)
		}
	}
}

func TestSymHash6IsSymmetric(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	var src, dst [16]byte
	for i := range 300_000 {
		binary.LittleEndian.PutUint64(src[:8], r.Uint64())
		binary.LittleEndian.PutUint64(src[8:], r.Uint64())
		binary.LittleEndian.PutUint64(dst[:8], r.Uint64())
		binary.LittleEndian.PutUint64(dst[8:], r.Uint64())
		sp, dp := uint16(r.Uint32()), uint16(r.Uint32())
		switch i % 4 {
		case 1:
			copy(dst[:8], src[:8]) // same upper half
		case 2:
			dst = src
		case 3:
			dp = sp
		}
		pr := uint8(r.Uint32())
		h := SymHash6(&src, &dst, sp, dp, pr)
		if g := SymHash6(&dst, &src, dp, sp, pr); g != h {
			t.Fatalf("SymHash6(%x, %x, %d, %d, %d) = %08x, reverse %08x", src, dst, sp, dp, pr, h, g)
		}
	}
}

// The hash must still tell apart flows that only differ in which side
// each port is on, or in the protocol.
func TestSymHashSeesEveryField(t *testing.T) {
	src, dst := a4("10.0.0.1"), a4("10.0.0.2")
	h := SymHash4(src, dst, 1000, 80, 6)
	for name, g := range map[string]uint32{
		"ports swapped alone": SymHash4(src, dst, 80, 1000, 6),
		"protocol":            SymHash4(src, dst, 1000, 80, 17),
		"source port":         SymHash4(src, dst, 1001, 80, 6),
		"destination":         SymHash4(src, dst+1, 1000, 80, 6),
	} {
		if g == h {
			t.Errorf("%s: same hash %08x", name, h)
		}
	}
	s6, d6 := [16]byte{0x20, 1, 0xd, 0xb8, 15: 1}, [16]byte{0x20, 1, 0xd, 0xb8, 15: 2}
	h6 := SymHash6(&s6, &d6, 1000, 80, 6)
	if SymHash6(&s6, &d6, 80, 1000, 6) == h6 || SymHash6(&s6, &d6, 1000, 80, 17) == h6 {
		t.Error("SymHash6 ignores the ports' sides or the protocol")
	}
}

type flow struct {
	src, dst   uint32
	sp, dp     uint16
	proto      uint8
	src6, dst6 [16]byte
}

// flowSets are sets of 1,000 flows, from random to as regular as a test
// fabric's: one host pair with consecutive source ports, consecutive hosts
// to one server port, and so on.
func flowSets() map[string][]flow {
	r := rand.New(rand.NewPCG(21, 22))
	sets := map[string][]flow{}
	add := func(name string, f func(i int) flow) {
		fs := make([]flow, 1000)
		for i := range fs {
			fs[i] = f(i)
			x := fs[i]
			binary.BigEndian.PutUint32(fs[i].src6[12:], x.src)
			binary.BigEndian.PutUint32(fs[i].dst6[12:], x.dst)
			fs[i].src6[0], fs[i].src6[1], fs[i].dst6[0], fs[i].dst6[1] = 0xfd, 0, 0xfd, 0
		}
		sets[name] = fs
	}
	base := a4("10.0.0.1")
	add("random", func(int) flow {
		return flow{src: r.Uint32(), dst: r.Uint32(), sp: uint16(r.Uint32()), dp: uint16(r.Uint32()), proto: 6}
	})
	add("source ports", func(i int) flow { return flow{src: base, dst: base + 1, sp: 32768 + uint16(i), dp: 5201, proto: 6} })
	add("hosts to one port", func(i int) flow { return flow{src: base + uint32(i), dst: base - 1, sp: 40000, dp: 80, proto: 6} })
	add("host pairs", func(i int) flow {
		return flow{src: base + uint32(i), dst: base + 0x100 + uint32(i), sp: 5000, dp: 5000, proto: 17}
	})
	add("even ports", func(i int) flow { return flow{src: base, dst: base + 1, sp: 1024 + 2*uint16(i), dp: 443, proto: 6} })
	return sets
}

// spread returns the worst relative deviation from an even split of the
// flows over k next hops, under hash h.
func spread(fs []flow, k int, h func(flow) uint32) float64 {
	nhs := make([]NextHop, k)
	for i := range nhs {
		nhs[i].Port = uint16(i)
	}
	count := make([]int, k)
	for _, f := range fs {
		count[Pick(nhs, h(f)).Port]++
	}
	worst := 0.0
	want := float64(len(fs)) / float64(k)
	for _, c := range count {
		worst = max(worst, abs(float64(c)-want)/float64(len(fs)))
	}
	return worst
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func hash4(f flow) uint32 { return SymHash4(f.src, f.dst, f.sp, f.dp, f.proto) }
func hash6(f flow) uint32 { return SymHash6(&f.src6, &f.dst6, f.sp, f.dp, f.proto) }

// maxSkew is how far from an even split (as a share of all flows) a next
// hop may be: about three standard deviations of a fair random split of
// 1,000 flows over two (1.6%).
const maxSkew = 0.05

func TestSymHashSpread(t *testing.T) {
	for name, fs := range flowSets() {
		for _, k := range []int{2, 3, 4} {
			for hn, h := range map[string]func(flow) uint32{"SymHash4": hash4, "SymHash6": hash6} {
				if s := spread(fs, k, h); s > maxSkew {
					t.Errorf("%s, %s flows over %d next hops: a next hop is %.1f%% of all flows off an even share", hn, name, k, 100*s)
				}
			}
		}
	}
}

// The spread test fails a symmetric hash that does not mix (the sum of the
// fields): it is a test that can fail.
func TestSpreadCatchesAWeakHash(t *testing.T) {
	weak := func(f flow) uint32 { return f.src + f.dst + uint32(f.sp) + uint32(f.dp) }
	if s := spread(flowSets()["source ports"], 2, weak); s <= maxSkew {
		t.Errorf("an unmixed hash passes the spread test (%.1f%% off)", 100*s)
	}
}

func TestPick(t *testing.T) {
	if Pick(nil, 123) != nil {
		t.Error("Pick of no next hops is not nil")
	}
	nhs := hops(0, 1, 2)
	for _, c := range []struct {
		h    uint32
		want uint16
	}{{0, 0}, {1<<32/3 - 1, 0}, {1<<32/3 + 1, 1}, {2 * (1<<32/3 + 1), 2}, {^uint32(0), 2}} {
		if p := Pick(nhs, c.h); p != &nhs[c.want] {
			t.Errorf("Pick(3 hops, %08x) = %v, want hop %d", c.h, *p, c.want)
		}
	}
	// Every hash value picks within range, each hop an equal share.
	for k := 1; k <= 64; k++ {
		nhs := make([]NextHop, k)
		for i := range nhs {
			nhs[i].Port = uint16(i)
		}
		count := make([]int, k)
		for h := uint64(0); h < 1<<32; h += 1<<32/4096 + 1 {
			count[Pick(nhs, uint32(h)).Port]++
		}
		for i, c := range count {
			if want := 4096.0 / float64(k); abs(float64(c)-want) > 1 {
				t.Errorf("%d hops: hop %d picked %d times of 4096 evenly spaced hashes, want %.1f", k, i, c, want)
			}
		}
	}
}

func TestHashAndPickDoNotAllocate(t *testing.T) {
	nhs := hops(1, 2, 3)
	var s6, d6 [16]byte
	var sink uint32
	x := uint32(1)
	if n := testing.AllocsPerRun(1000, func() {
		x++
		sink += SymHash4(x, ^x, uint16(x), 80, 6)
		s6[15] = byte(x)
		sink += SymHash6(&s6, &d6, uint16(x), 80, 6)
		sink += uint32(Pick(nhs, x*0x9e3779b9).Port)
	}); n != 0 {
		t.Errorf("SymHash4, SymHash6, Pick: %v allocations per run, want 0", n)
	}
	_ = sink
}

func BenchmarkSymHash4(b *testing.B) {
	var sink uint32
	x := uint32(0x0a000001)
	for b.Loop() {
		x++
		sink += SymHash4(x, 0x0a000002, uint16(x), 443, 6)
	}
	_ = sink
}

func BenchmarkSymHash6(b *testing.B) {
	var sink uint32
	s6, d6 := [16]byte{0xfd, 15: 1}, [16]byte{0xfd, 15: 2}
	x := uint32(0)
	for b.Loop() {
		x++
		s6[14] = byte(x >> 8)
		s6[15] = byte(x)
		sink += SymHash6(&s6, &d6, uint16(x), 443, 6)
	}
	_ = sink
}

func BenchmarkPick(b *testing.B) {
	for _, k := range []int{2, 16} {
		b.Run(fmt.Sprint(k), func(b *testing.B) {
			nhs := make([]NextHop, k)
			var sink uint16
			h := uint32(1)
			for b.Loop() {
				h *= 0x9e3779b9
				sink += Pick(nhs, h).Port
			}
			_ = sink
		})
	}
}
