package l3

import (
	"encoding/binary"
	"math/bits"
)

// Constants of the mixer (odd, with well spread bits: the golden ratio,
// splitmix64's and wyhash's multipliers).
const (
	k0 = 0x9e3779b97f4a7c15
	k1 = 0xbf58476d1ce4e5b9
	k2 = 0x94d049bb133111eb
	k3 = 0xa0761d6478bd642f
	k4 = 0xe7037ed1a0b428db
)

// mum multiplies a and b into 128 bits and folds them (wyhash's mixer):
// every input bit reaches every output bit.
func mum(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// SymHash4 hashes an IPv4 flow (addresses as big-endian uint32) for ECMP.
// A flow and its reverse (addresses and ports swapped) hash alike: the two
// (address, port) endpoints are put in order before they are mixed. It is
// unseeded: every switch computes the same value for a flow. It allocates
// nothing.
func SymHash4(src, dst uint32, sport, dport uint16, proto uint8) uint32 {
	a := uint64(src)<<16 | uint64(sport)
	b := uint64(dst)<<16 | uint64(dport)
	if a > b {
		a, b = b, a
	}
	// a, b < 2^48 and k0, k1 >= 2^48: neither factor is ever zero.
	x := mum(a^k0, b^k1)
	x = mum(x^k2, uint64(proto)^k3)
	return uint32(x ^ x>>32)
}

// SymHash6 is SymHash4 for IPv6 addresses (16 bytes in network order).
func SymHash6(src, dst *[16]byte, sport, dport uint16, proto uint8) uint32 {
	a0, a1 := binary.BigEndian.Uint64(src[:8]), binary.BigEndian.Uint64(src[8:])
	b0, b1 := binary.BigEndian.Uint64(dst[:8]), binary.BigEndian.Uint64(dst[8:])
	pa, pb := sport, dport
	if b0 < a0 || b0 == a0 && (b1 < a1 || b1 == a1 && pb < pa) {
		a0, a1, pa, b0, b1, pb = b0, b1, pb, a0, a1, pa
	}
	x := mum(a0^k0, a1^k1)
	y := mum(b0^k2, b1^k3)
	p := uint64(pa)<<24 | uint64(pb)<<8 | uint64(proto)
	z := mum(x^p^k4, y^k0)
	z = mum(z^k1, k2)
	return uint32(z ^ z>>32)
}

// Pick returns the next hop of nhs that h selects: nhs[h*len/2^32], so
// each next hop gets an equal share of the hash space (within one part in
// 2^32/len) and the choice uses h's top bits. It returns nil for no next
// hops. It allocates nothing.
func Pick(nhs []NextHop, h uint32) *NextHop {
	if len(nhs) == 0 {
		return nil
	}
	return &nhs[uint64(h)*uint64(len(nhs))>>32]
}
