package l3

import "github.com/gswitch/gswitch/internal/keyhash"

// The neighbour table's slot hash is keyed, unlike the ECMP hash: see the
// package doc. The hash is package internal/keyhash's (package l2 and the
// mechanisms' tables use it too; mum, in hash.go, is ECMP's own mixer).

// mix is the keyed hash of the table under its subkeys.
func mix(sub *[4]uint64, x uint64) uint64 { return keyhash.Mix(sub, x) }

// subkeys derives mix's subkeys from a 128-bit key (keyhash.Subkeys).
func subkeys(key [2]uint64) [4]uint64 { return keyhash.Subkeys(key) }

// randomKey draws a hash key from the system's secure random source.
func randomKey() [2]uint64 { return keyhash.Random() }
