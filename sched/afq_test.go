package sched

import (
	"testing"

	"github.com/gswitch/gswitch/dataplane/pkt"
	"github.com/gswitch/gswitch/dataplane/pkt/pkttest"
	"github.com/gswitch/gswitch/internal/fairness"
	"github.com/gswitch/gswitch/queues"
)

// TestAFQSharesFairly: flow A offers three times what flow B offers, both
// more than the port serves; AFQ serves them equal bytes and drops A's
// excess as round overflow.
func TestAFQSharesFairly(t *testing.T) {
	s := mk(t, "afq", Params{Queues: 8, BytesPerRound: 1500})
	a := s.(*AFQ)
	served := map[uint32]float64{}
	overflow := 0
	var p pkt.Packet
	for tick := 0; tick < 30000; tick++ {
		// Each tick: A offers 3 packets, B 1; the port sends 2.
		for k := 0; k < 4; k++ {
			p = pkt.Packet{Len: 1000, Hash: 1}
			if k == 3 {
				p.Hash = 2
			}
			if d := s.Enqueue(&p); d == queues.RoundOverflow {
				overflow++
			}
		}
		for k := 0; k < 2; k++ {
			if s.Dequeue(&p) && tick > 1000 {
				served[p.Hash] += float64(p.Len)
			}
		}
	}
	j := fairness.Jain([]float64{served[1], served[2]})
	t.Logf("served A %.0f B, B %.0f B, Jain %.4f, %d round overflows, round %d", served[1], served[2], j, overflow, a.Round())
	if j < 0.99 || overflow == 0 {
		t.Fatalf("AFQ not fair: %v, overflow %d", served, overflow)
	}
}

func TestAFQMarksECN(t *testing.T) {
	mem := make([]byte, 1<<16)
	s := mk(t, "afq", Params{Queues: 8, BytesPerRound: 1000, ECNRounds: 2, Mem: mem})
	frame := pkttest.UDP4(pkttest.MAC(2), pkttest.MAC(1), [4]byte{1}, [4]byte{2}, 1, 2, make([]byte, 958))
	frame[15] = 1 // ECT(1)
	frame[24], frame[25] = 0, 0
	sum := pkttest.Checksum(frame[14:34])
	frame[24], frame[25] = byte(sum>>8), byte(sum)
	marked := 0
	for i := 0; i < 4; i++ {
		addr := uint64(i * 2048)
		copy(mem[addr:], frame)
		var p pkt.Packet
		pkt.Parse(mem[addr:addr+uint64(len(frame))], &p)
		p.Addr, p.Len = addr, uint32(len(frame))
		s.Enqueue(&p)
		if mem[addr+15]&3 == 3 {
			marked++
			if pkttest.Checksum(mem[addr+14:addr+34]) != 0 {
				t.Fatal("IPv4 checksum wrong after marking")
			}
		}
	}
	// Rounds of the 1000-byte packets: 1, 2, 3, 4: those 2 or more ahead are marked.
	if marked != 3 || s.(*AFQ).Marked() != 3 {
		t.Fatalf("marked %d", marked)
	}
}
