package l3

import (
	"crypto/rand"
	"encoding/binary"
	"math/bits"
)

// The neighbour table's slot hash is keyed, unlike the ECMP hash: see the
// package doc. (Package l2 keys its MAC table the same way.)

// mix is the keyed hash of the table (mum is ECMP's mixer, in hash.go;
// the ECMP hash itself stays unkeyed): two rounds of a 64x64->128-bit
// multiply whose halves are folded together, each round under two subkeys.
// Every bit of x reaches every bit of the result, and where x goes depends
// on all 256 bits of the subkeys, which nobody outside the process knows.
func mix(sub *[4]uint64, x uint64) uint64 {
	return mum(mum(x^sub[0], sub[1])^sub[2], sub[3])
}

// subkeys derives mix's subkeys from a 128-bit key with SipHash, so that
// they are independent and uniform whatever the key (the multipliers odd,
// so neither round can multiply by zero).
func subkeys(key [2]uint64) (sub [4]uint64) {
	for i := range sub {
		sub[i] = sipHash13(key[0], key[1], uint64(i), 1)
	}
	sub[1] |= 1
	sub[3] |= 1
	return sub
}

// sipHash13 is SipHash-1-3 under key (k0, k1) of the n-byte message
// (n < 8) held in m's n low bytes, least significant byte first.
func sipHash13(k0, k1, m, n uint64) uint64 {
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

// randomKey draws a hash key from the system's secure random source.
func randomKey() [2]uint64 {
	var b [16]byte
	rand.Read(b[:]) // never fails (it aborts the program if the system source does)
	return [2]uint64{binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:])}
}
