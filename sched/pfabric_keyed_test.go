package sched

import (
	"testing"

	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/queues"
)

// longestRun is the longest stretch of occupied slots of f's flow table
// (cyclic): the most slots a lookup may walk.
func longestRun(f *PFabric) int {
	n := len(f.flows)
	best, run := 0, 0
	for i := 0; i < 2*n; i++ {
		if f.flows[i%n].count != 0 {
			run++
			best = max(best, min(run, n))
		} else {
			run = 0
		}
	}
	return best
}

// TestPFabricFlowTableIsKeyed: 1,000 flows whose hashes a host chose to
// share one home slot under the unkeyed table (a host picks the low bits
// of its flows' hashes by picking ports: about 8,192 tries each) no
// longer make one chain: the home is keyed, so the longest stretch a
// lookup walks stays short. Unkeyed, every lookup of those flows, and of
// any flow whose home fell in the chain, walked up to 1,000 slots.
func TestPFabricFlowTableIsKeyed(t *testing.T) {
	f := mk(t, "pfabric", Params{PortBytes: 1 << 22, PortPackets: 4096}).(*PFabric)
	slots := uint32(len(f.flows)) // 8192: twice the packets, a power of two
	for i := uint32(0); i < 1000; i++ {
		p := pkt.Packet{Len: 100, Hash: (i + 1) * slots, Rank: i} // h x 0x9e3779b1 mod 8192 = 0 for all
		if f.Enqueue(&p) != queues.Accepted {
			t.Fatal("refused")
		}
	}
	if r := longestRun(f); r > 32 {
		t.Fatalf("1,000 flows computed for one home slot make a chain of %d slots", r)
	}
	var p pkt.Packet
	for n := 0; f.Dequeue(&p); n++ {
		if p.Rank != uint32(n) {
			t.Fatalf("dequeue %d: rank %d", n, p.Rank)
		}
	}
	if longestRun(f) != 0 {
		t.Fatal("the table is not empty after the last dequeue")
	}
}
