package l2

import "github.com/gswitch/gswitch/internal/keyhash"

// The MAC table's slot hash is keyed: see the package doc. The hash is
// package internal/keyhash's (the mechanisms' tables and the neighbour
// table use it too).

// mix is the keyed hash of the table under its subkeys.
func mix(sub *[4]uint64, x uint64) uint64 { return keyhash.Mix(sub, x) }

// subkeys derives mix's subkeys from a 128-bit key (keyhash.Subkeys).
func subkeys(key [2]uint64) [4]uint64 { return keyhash.Subkeys(key) }

// randomKey draws a hash key from the system's secure random source.
func randomKey() [2]uint64 { return keyhash.Random() }
