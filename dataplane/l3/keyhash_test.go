package l3

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"testing"
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
// vectors (key 00..0f, messages 00, 00 01, ...), and sipHash13 equals its
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
		if got, want := sipHash13(k0, k1, m, n), refSipHash(1, 3, k0, k1, b[:n]); got != want {
			t.Fatalf("sipHash13(%#x, %#x, %#x, %d) = %#x, want %#x", k0, k1, m, n, got, want)
		}
	}
}

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
