package keyhash

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
)

// refSipHash is SipHash-c-d of msg as its paper defines it, written
// plainly (byte by byte) to check the one-block version against.
func refSipHash(c, d int, k0, k1 uint64, msg []byte) uint64 {
	v := [4]uint64{k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d, k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573}
	round := func() {
		v[0] += v[1]
		v[1] = bits.RotateLeft64(v[1], 13) ^ v[0]
		v[0] = bits.RotateLeft64(v[0], 32)
		v[2] += v[3]
		v[3] = bits.RotateLeft64(v[3], 16) ^ v[2]
		v[0] += v[3]
		v[3] = bits.RotateLeft64(v[3], 21) ^ v[0]
		v[2] += v[1]
		v[1] = bits.RotateLeft64(v[1], 17) ^ v[2]
		v[2] = bits.RotateLeft64(v[2], 32)
	}
	block := func(m uint64) {
		v[3] ^= m
		for range c {
			round()
		}
		v[0] ^= m
	}
	n := len(msg)
	for len(msg) >= 8 {
		block(binary.LittleEndian.Uint64(msg))
		msg = msg[8:]
	}
	var last [8]byte
	copy(last[:], msg)
	last[7] = byte(n)
	block(binary.LittleEndian.Uint64(last[:]))
	v[2] ^= 0xff
	for range d {
		round()
	}
	return v[0] ^ v[1] ^ v[2] ^ v[3]
}

// TestSipHashVectors: the reference above gives the published SipHash-2-4
// vectors (key 00..0f, messages 00, 00 01, ...), and SipHash13 equals its
// SipHash-1-3 on every message of up to 7 bytes tried.
func TestSipHashVectors(t *testing.T) {
	k0, k1 := uint64(0x0706050403020100), uint64(0x0f0e0d0c0b0a0908)
	want := []uint64{0x726fdb47dd0e0e31, 0x74f839c593dc67fd, 0x0d6c8009d9a94f5a, 0x85676696d7fb7e2d,
		0xcf2794e0277187b7, 0x18765564cd99a68d, 0xcbc9466e58fee3ce, 0xab0200f58b01d137, 0x93f5f5799a932462}
	msg := []byte{0, 1, 2, 3, 4, 5, 6, 7}
	for n, w := range want {
		if got := refSipHash(2, 4, k0, k1, msg[:n]); got != w {
			t.Fatalf("SipHash-2-4 of %d bytes: %#x, want %#x", n, got, w)
		}
	}
	// SipHash-1-3 of the empty message under the zero key (a published vector).
	if got := refSipHash(1, 3, 0, 0, nil); got != 0xd1fba762150c532c {
		t.Fatalf("SipHash-1-3 of nothing: %#x", got)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		k0, k1, m, n := r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64N(8)
		m &= 1<<(8*n) - 1
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], m)
		if got, want := SipHash13(k0, k1, m, n), refSipHash(1, 3, k0, k1, b[:n]); got != want {
			t.Fatalf("SipHash13(%#x, %#x, %#x, %d) = %#x, want %#x", k0, k1, m, n, got, want)
		}
	}
}

// TestKeys: New draws a different key each time; FromKey is repeatable;
// the multipliers are odd; one input goes elsewhere under another key.
func TestKeys(t *testing.T) {
	a, b := New(), New()
	if a == b {
		t.Fatal("two random keys are equal")
	}
	x, y := FromKey([2]uint64{1, 2}), FromKey([2]uint64{1, 2})
	if x != y || x == FromKey([2]uint64{1, 3}) {
		t.Fatal("FromKey is not a function of its key")
	}
	if x.sub[1]&1 == 0 || x.sub[3]&1 == 0 || FromKey([2]uint64{}).sub[1]&1 == 0 {
		t.Fatal("an even multiplier")
	}
	same := 0
	for i := uint64(0); i < 1000; i++ {
		if Index(a.Sum(i), 1024) == Index(b.Sum(i), 1024) {
			same++
		}
	}
	if same > 10 {
		t.Fatalf("%d of 1000 values land in the same slot of 1024 under two random keys", same)
	}
}

// TestSpread: consecutive inputs (what a host choosing its ports would
// try) spread evenly over the slots of a table, by Index, by the low bits
// and by Sum2's second word.
func TestSpread(t *testing.T) {
	k := FromKey([2]uint64{7, 9})
	const n, per = 256, 400
	var idx, low, two [n]int
	for i := uint64(0); i < n*per; i++ {
		idx[Index(k.Sum(i), n)]++
		low[k.Sum(i<<32)&(n-1)]++
		two[Index(k.Sum2(5, i), n)]++
	}
	for s := 0; s < n; s++ {
		for _, c := range []struct {
			name string
			got  int
		}{{"Index", idx[s]}, {"low bits", low[s]}, {"Sum2", two[s]}} {
			if c.got < per/2 || c.got > per*3/2 {
				t.Fatalf("%s: slot %d holds %d of %d values (want about %d)", c.name, s, c.got, n*per, per)
			}
		}
	}
	if Index(^uint64(0), 1000) != 999 || Index(0, 1000) != 0 {
		t.Fatal("Index out of range")
	}
}

func parsed(t *testing.T, f []byte) pkt.Packet {
	t.Helper()
	var p pkt.Packet
	if e := pkt.Parse(f, &p); e != pkt.OK {
		t.Fatalf("parse: %v", e)
	}
	p.Len = uint32(len(f))
	return p
}

// TestFlow: two flows from different sources whose unkeyed Packet.Hash is
// the same (a host that found a 5-tuple hashing like another host's flow)
// still hash apart; a flow hashes alike in every packet; IPv6 sources that
// differ only where a chosen hash could cancel the difference hash apart.
func TestFlow(t *testing.T) {
	k := FromKey([2]uint64{3, 4})
	f1 := pkttest.UDP4(pkttest.MAC(1), pkttest.MAC(2), [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 9}, 1000, 5500, make([]byte, 20))
	f2 := pkttest.UDP4(pkttest.MAC(1), pkttest.MAC(3), [4]byte{10, 0, 0, 2}, [4]byte{10, 0, 0, 9}, 1000, 5500, make([]byte, 20))
	p1, p2 := parsed(t, f1), parsed(t, f2)
	p2.Hash = p1.Hash // as if the second host had found such a 5-tuple
	if k.Flow(f1, &p1) == k.Flow(f2, &p2) {
		t.Fatal("two sources with one Packet.Hash hash alike")
	}
	again := parsed(t, append([]byte(nil), f1...))
	if k.Flow(f1, &p1) != k.Flow(f1, &again) {
		t.Fatal("one flow hashes two ways")
	}
	src1 := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 9, 9, 9, 9, 9, 9, 9, 9}
	src2 := src1
	src2[7] = 2 // another /64, differing in the low bits of the prefix
	dst := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 1}
	g1 := pkttest.UDP6(pkttest.MAC(1), pkttest.MAC(2), src1, dst, 1000, 5500, make([]byte, 20))
	g2 := pkttest.UDP6(pkttest.MAC(1), pkttest.MAC(3), src2, dst, 1000, 5500, make([]byte, 20))
	q1, q2 := parsed(t, g1), parsed(t, g2)
	q2.Hash = q1.Hash ^ 1<<0 ^ 1<<1 // 1 ^ 2: the prefixes' difference
	if k.Flow(g1, &q1) == k.Flow(g2, &q2) {
		t.Fatal("an IPv6 source cancelled its prefix with its hash")
	}
	arp := pkttest.ARP(pkttest.MAC(1), [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2})
	pa := parsed(t, arp)
	if k.Flow(arp, &pa) != k.Sum(uint64(pa.Hash)) {
		t.Fatal("a frame without IP does not hash by Packet.Hash alone")
	}
	if n := testing.AllocsPerRun(100, func() { k.Flow(f1, &p1); k.Flow(g1, &q1) }); n != 0 {
		t.Fatalf("Flow allocates %v per call", n)
	}
}

func BenchmarkSum(b *testing.B) {
	k := New()
	var s uint64
	for i := 0; i < b.N; i++ {
		s += k.Sum(uint64(i))
	}
	sink = s
}

func BenchmarkFlow4(b *testing.B) {
	k := New()
	f := pkttest.UDP4(pkttest.MAC(1), pkttest.MAC(2), [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 9}, 1000, 5500, make([]byte, 20))
	var p pkt.Packet
	pkt.Parse(f, &p)
	var s uint64
	for i := 0; i < b.N; i++ {
		p.Hash = uint32(i)
		s += k.Flow(f, &p)
	}
	sink = s
}

var sink uint64
