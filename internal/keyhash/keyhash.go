// Package keyhash is the keyed hash of the switch's tables whose index a
// host chooses: the mechanisms' flow tables, sketches, Bloom filters and
// caches (mech/bfc, mech/sfc, mech/afq, mech/pfabric, sched's pfabric
// scheduler), each under a secret key of its own drawn when the table is
// built.
//
// # Why keyed
//
// A table indexed by an unkeyed hash of values a host picks (its ports,
// its addresses, the addresses it sends to) lets the host compute which of
// its flows land where a chosen flow of another host lands: it can fill
// that flow's slot, bucket or sketch cells, make its probe chain long, or
// share its queue. Under a key that never leaves the process, where a
// value goes is unpredictable, so a host can only crowd a table at random,
// as honest traffic does.
//
// The flow hash pkt.Parse computes (pkt.Packet.Hash) stays unkeyed: ECMP
// needs every switch to compute the same value for a flow (docs/
// architecture.md, "L3 and symmetric ECMP"). The tables key their own
// indexing instead: they mix Packet.Hash (and, where the frame is at hand,
// the source address: Key.Flow) with their key before they index.
//
// # The hash
//
// Sum is two rounds of a 64x64->128-bit multiply whose halves are folded
// together, each round under two 64-bit subkeys; the four subkeys are
// derived from the 128-bit key with SipHash-1-3, so they are independent
// and uniform whatever the key. Every bit of the input reaches every bit
// of the result, and where an input goes depends on all 256 bits of the
// subkeys. SipHash itself would be the textbook pseudorandom function, but
// it costs about three times as much per value (package dataplane/l2 gives
// the figures), and nothing here needs a proof: no hash value ever leaves
// the switch, and all a host can observe is how the table behaves.
//
// Keys come from the system's secure random source (New); tests fix one
// (FromKey). A Key is a value: copy it into the table that uses it.
package keyhash

import (
	"crypto/rand"
	"encoding/binary"
	"math/bits"

	"github.com/gswitch/gswitch/pkt"
)

// Key is a table's secret: the four subkeys of Sum.
type Key struct {
	sub [4]uint64
}

// New returns a key drawn from the system's secure random source.
func New() Key { return FromKey(Random()) }

// FromKey returns the key derived from the 128-bit key k (tests fix one to
// make a table's placement repeatable).
func FromKey(k [2]uint64) Key { return Key{sub: Subkeys(k)} }

// Random draws a 128-bit key from the system's secure random source.
func Random() [2]uint64 {
	var b [16]byte
	rand.Read(b[:]) // never fails (it aborts the program if the system source does)
	return [2]uint64{binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:])}
}

// Subkeys derives Sum's four subkeys from a 128-bit key with SipHash-1-3
// (the multipliers made odd, so neither round can multiply by zero).
func Subkeys(key [2]uint64) (sub [4]uint64) {
	for i := range sub {
		sub[i] = SipHash13(key[0], key[1], uint64(i), 1)
	}
	sub[1] |= 1
	sub[3] |= 1
	return sub
}

// Mix is Sum under the subkeys sub (for tables that keep their subkeys as
// an array).
func Mix(sub *[4]uint64, x uint64) uint64 {
	return mum(mum(x^sub[0], sub[1])^sub[2], sub[3])
}

// Sum hashes x under the key.
func (k *Key) Sum(x uint64) uint64 { return Mix(&k.sub, x) }

// Sum2 hashes the pair (x, y) under the key: both words enter the first
// multiply, each xored with a subkey nobody outside the process knows.
func (k *Key) Sum2(x, y uint64) uint64 {
	return mum(mum(x^k.sub[0], y^k.sub[1])^k.sub[2], k.sub[3])
}

// Flow is the keyed hash of p's flow for a table that can read the frame
// (mem is the UMEM p's frame is in): the unkeyed 5-tuple hash p.Hash
// together with the source address, so a flow of one source never
// collides on purpose with a flow of another, even when a host finds a
// 5-tuple whose Packet.Hash equals another host's flow's (2^32 tries of
// pkt.Parse's hash): it would have to send from that host's address, which
// the source guard refuses. Frames without an IP header hash by p.Hash
// alone.
func (k *Key) Flow(mem []byte, p *pkt.Packet) uint64 {
	h := uint64(p.Hash)
	switch {
	case p.Flags&pkt.FlagIPv4 != 0:
		src := binary.BigEndian.Uint32(mem[p.Addr+uint64(p.L3Off)+12:])
		return k.Sum(h | uint64(src)<<32) // one-to-one: a collision is the key's
	case p.Flags&pkt.FlagIPv6 != 0:
		// The address alone first: xoring the hash into one half of it
		// would let a host on another /64 that differs in the low bits
		// of its prefix cancel the difference with its choice of hash.
		o := p.Addr + uint64(p.L3Off) + 8
		a := k.Sum2(binary.BigEndian.Uint64(mem[o:]), binary.BigEndian.Uint64(mem[o+8:]))
		return k.Sum(a ^ h)
	}
	return k.Sum(h)
}

// Index maps a hash to [0, n) by its top 32 bits (multiply and shift: no
// division, and no bias a host could use beyond one part in 2^32/n). n
// must be below 2^32.
func Index(h uint64, n int) int { return int((h >> 32) * uint64(n) >> 32) }

// mum multiplies a and b into 128 bits and folds the halves together.
func mum(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// SipHash13 is SipHash-1-3 under key (k0, k1) of the n-byte message
// (n < 8) held in m's n low bytes, least significant byte first.
func SipHash13(k0, k1, m, n uint64) uint64 {
	v0 := k0 ^ 0x736f6d6570736575
	v1 := k1 ^ 0x646f72616e646f6d
	v2 := k0 ^ 0x6c7967656e657261
	v3 := k1 ^ 0x7465646279746573
	b := m | n<<56 // the last (here the only) block: the bytes and the length
	v3 ^= b
	v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
	v0 ^= b
	v2 ^= 0xff
	v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
	v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
	v0, v1, v2, v3 = sipRound(v0, v1, v2, v3)
	return v0 ^ v1 ^ v2 ^ v3
}

func sipRound(v0, v1, v2, v3 uint64) (uint64, uint64, uint64, uint64) {
	v0 += v1
	v1 = bits.RotateLeft64(v1, 13)
	v1 ^= v0
	v0 = bits.RotateLeft64(v0, 32)
	v2 += v3
	v3 = bits.RotateLeft64(v3, 16)
	v3 ^= v2
	v0 += v3
	v3 = bits.RotateLeft64(v3, 21)
	v3 ^= v0
	v2 += v1
	v1 = bits.RotateLeft64(v1, 17)
	v1 ^= v2
	v2 = bits.RotateLeft64(v2, 32)
	return v0, v1, v2, v3
}
