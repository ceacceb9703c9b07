package bfc_test

import (
	"testing"

	"github.com/gswitch/gswitch/mech/bfc"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
)

var ip2 = [4]byte{10, 0, 0, 2}

// unkeyedEntry is where the flow table of port 1 of switch 7 put a flow
// hash before the table was keyed: a multiply by a seed made of the port
// index and the switch id, numbers no host needs to guess.
func unkeyedEntry(h uint32, entries int) int {
	port, sw := uint32(1), uint32(7)
	seed := port*0x85ebca6b + sw*0xc2b2ae35 + 1
	m := uint32(uint64(h^seed) * 0x9e3779b97f4a7c15 >> 32)
	return int(uint64(m) * uint64(entries) >> 32)
}

func hashOf(t *testing.T, f []byte) uint32 {
	t.Helper()
	var p pkt.Packet
	if e := pkt.Parse(f, &p); e != pkt.OK {
		t.Fatalf("parse: %v", e)
	}
	return p.Hash
}

// testKey is the key fixKey gives a port.
var testKey = [2]uint64{1, 2}

// fixKey gives port i of b a fixed key in place of the random one New drew,
// and fails the test unless under it the flows of frames index distinct
// entries of the port's flow table. A test that needs each of its flows on
// a queue of its own assumes that: under a random key two of n flows share
// one of the table's entries (100 x queues) with probability about
// n(n-1)/2 / entries (10 flows in 800 entries: one draw in 18), and then
// rightly share a queue (section 3.3.1: a collision). A change that breaks
// the assumption (the hash, the table's size, the test's flows) fails here,
// every time and naming it, rather than now and then further on.
func fixKey(t *testing.T, b *bfc.BFC, i int, frames ...[]byte) {
	t.Helper()
	b.SetKey(i, testKey)
	seen := map[int]int{}
	for n, f := range frames {
		e := b.FlowEntry(i, hashOf(t, f))
		if m, ok := seen[e]; ok {
			t.Fatalf("under the test's key, flows %d and %d share entry %d of port %d's flow table: pick another key", m, n, e, i)
		}
		seen[e] = n
	}
}

// TestFlowTableIsKeyed: a host that computes, by the unkeyed index, 16
// flows of its own that land on a victim flow's entry no longer shares
// the victim's entry (and so its queue): the flow table's index is keyed.
// With the unkeyed index all 16 collided with the victim.
func TestFlowTableIsKeyed(t *testing.T) {
	h := congested(t, &bfc.Config{}, 10e6, 1<<20)
	out := h.SW.Scheduler(1)
	for q := 0; q < out.NumQueues(); q++ {
		out.Pause(q) // hold everything: the victim's entry stays busy
	}
	const entries = 800 // flow_table default: 100 x 8 queues
	victim := udp(4000)
	home := unkeyedEntry(hashOf(t, victim), entries)
	var attack [][]byte
	for sport := uint16(1); len(attack) < 16 && sport < 60000; sport++ {
		f := pkttest.UDP4(pkttest.MAC(3), pkttest.MAC(2), ip2, ip3, sport, 9, make([]byte, frameLen-42))
		if unkeyedEntry(hashOf(t, f), entries) == home {
			attack = append(attack, f)
		}
	}
	if len(attack) < 16 {
		t.Fatalf("found %d colliding flows", len(attack))
	}
	h.Links[0].Inject(victim)
	h.Settle()
	for _, f := range attack {
		h.Links[0].Inject(f)
	}
	h.Settle()
	st := inst(h).Stats(1)
	t.Logf("%d flow-table collisions among the victim and 16 computed flows; %d entries in use", st.Collisions, st.FlowEntries)
	if st.Collisions >= 8 {
		t.Fatalf("%d of 16 flows computed by the unkeyed index share an entry", st.Collisions)
	}
}
