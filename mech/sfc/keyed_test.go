package sfc_test

import (
	"testing"

	"github.com/gswitch/gswitch/pkt"
)

// splitmix is the finalizer the Bloom filter mixes with (SplitMix64).
func splitmix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// unkeyedBits are the bits a flow of 5-tuple hash h took in a 4096-bit,
// 3-hash filter in epoch ep before the filter was keyed: what a host
// could compute for any flow whose 5-tuple it knows.
func unkeyedBits(h uint32, ep uint64) [3]uint64 {
	h1 := splitmix(uint64(h) ^ ep*0x9e3779b97f4a7c15)
	h2 := splitmix(h1^0x632be59bd9b4e019) | 1
	return [3]uint64{h1 & 4095, (h1 + h2) & 4095, (h1 + 2*h2) & 4095}
}

func flowHash(t *testing.T, f []byte) uint32 {
	t.Helper()
	var p pkt.Packet
	if e := pkt.Parse(f, &p); e != pkt.OK {
		t.Fatalf("parse: %v", e)
	}
	return p.Hash
}

// TestBloomIsKeyed: h2 congests r's queue, then sends one packet each of
// three flows it computed (by the unkeyed filter) to set the three bits
// of h1's flow in this period; h1's packet into the congested queue still
// gets its BTS, since the filter's bits are keyed. With the unkeyed filter
// h1's flow read as already signalled and got none: a host could keep
// another host from being paused (so the congested queue kept growing).
func TestBloomIsKeyed(t *testing.T) {
	d := newDumbbell(t, conf("ingress"), conf("ingress"))
	for i := 0; i < 25; i++ { // 25,000 B queued at r: above Q_Th
		d.a.Links[pH2].Inject(fromH2(9000, 9000, 0))
	}
	d.f.Settle()
	ep := uint64(d.f.Clock.T/bloomReset) + 1
	victim := unkeyedBits(flowHash(t, fromH1(4000, 77)), ep)
	covered := [3]bool{}
	var attack [][]byte
	for sport := uint16(1); sport < 60000 && !(covered[0] && covered[1] && covered[2]); sport++ {
		f := fromH2(sport, uint64(sport), 0)
		bits := unkeyedBits(flowHash(t, f), ep)
		hit := false
		for i, v := range victim {
			for _, b := range bits {
				if b == v && !covered[i] {
					covered[i], hit = true, true
				}
			}
		}
		if hit {
			attack = append(attack, f)
		}
	}
	if !(covered[0] && covered[1] && covered[2]) {
		t.Fatal("no flows cover the victim's bits")
	}
	for _, f := range attack {
		d.a.Links[pH2].Inject(f)
	}
	d.f.Settle()
	d.a.Links[pH1].Sent = nil
	d.a.Links[pH1].Inject(fromH1(4000, 77))
	d.f.Settle()
	if uint64(d.f.Clock.T/bloomReset)+1 != ep {
		t.Fatal("the test crossed a Bloom period")
	}
	if bts, _ := btsOf(t, d.a.Links[pH1].Sent); len(bts) != 1 {
		t.Fatalf("h1's packet into the congested queue got %d BTS after %d flows of h2 computed to cover its bits, want 1", len(bts), len(attack))
	}
}
