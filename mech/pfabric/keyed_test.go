package pfabric_test

import (
	"testing"

	"github.com/gswitch/gswitch/mech/pfabric"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
)

// unkeyedLASCell is the cell of row r (of 4096) a flow of 5-tuple hash h
// took in the las sketch before it was keyed.
func unkeyedLASCell(r, h uint32) uint32 { return ((h * (0x9e3779b1 + 2*r + 1)) >> 20) % 4096 }

func hashOf(t *testing.T, f []byte) uint32 {
	t.Helper()
	var p pkt.Packet
	if e := pkt.Parse(f, &p); e != pkt.OK {
		t.Fatalf("parse: %v", e)
	}
	return p.Hash
}

// TestLASSketchIsKeyed: another host computes, by the unkeyed sketch, a
// flow for each row whose cell is the victim flow's, and sends 20 KB on
// each; the victim's first packet still ranks as a new flow's and leaves
// among the first. With the unkeyed sketch it was ranked behind all 20 KB
// (least attained service read the other host's bytes as the victim's).
func TestLASSketchIsKeyed(t *testing.T) {
	h := harness(t, pfabric.RankLAS)
	out := h.Links[1]
	out.Record = true
	ip3 := [4]byte{10, 0, 0, 3}
	victim := pkttest.UDP4(pkttest.MAC(2), pkttest.MAC(1), ip1, ip2, 4000, 5500, make([]byte, 958))
	vh := hashOf(t, victim)
	var attack [][]byte
	for r := uint32(0); r < 2; r++ {
		for sport := uint16(1); sport < 60000; sport++ {
			f := pkttest.UDP4(pkttest.MAC(2), pkttest.MAC(3), ip3, ip2, sport, 5500, make([]byte, 958))
			if unkeyedLASCell(r, hashOf(t, f)) == unkeyedLASCell(r, vh) {
				attack = append(attack, f)
				break
			}
		}
	}
	if len(attack) != 2 {
		t.Fatal("no flows for the victim's cells")
	}
	h.SW.Ports()[1].PauseQueue(0)
	for i := 0; i < 20; i++ {
		for _, f := range attack {
			h.Links[0].Inject(f)
		}
	}
	h.Links[0].Inject(victim)
	h.Settle()
	h.SW.Ports()[1].ResumeQueue(0)
	h.Advance(1e9, 1e6)
	pos := -1
	for i, f := range out.Sent {
		if len(f) > 36 && uint16(f[34])<<8|uint16(f[35]) == 4000 {
			pos = i
		}
	}
	if pos < 0 || pos >= 10 {
		t.Fatalf("the victim's first packet left %dth of %d, behind the bytes of flows computed to share its cells", pos, len(out.Sent))
	}
}
