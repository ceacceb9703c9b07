package afq_test

import (
	"testing"

	"github.com/gswitch/gswitch/mech/afq"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
)

// unkeyedCell is the cell of row r a flow of 5-tuple hash f took in a
// sketch of cols columns before the sketch was keyed.
func unkeyedCell(r int, f uint32, cols uint64) uint64 {
	h := (uint64(f) + uint64(r)*0x9e3779b97f4a7c15) * 0xbf58476d1ce4e5b9
	h ^= h >> 31
	return h & (cols - 1)
}

func hashOf(t *testing.T, f []byte) uint32 {
	t.Helper()
	var p pkt.Packet
	if e := pkt.Parse(f, &p); e != pkt.OK {
		t.Fatalf("parse: %v", e)
	}
	return p.Hash
}

// TestSketchIsKeyed: host b computes, by the unkeyed sketch, one flow for
// each row whose cell in that row is the victim flow's, and runs each up
// to the last round the calendar holds. The victim's first packet is
// still admitted in the current round: the sketch is keyed, so b's bytes
// do not count as the victim's. With the unkeyed sketch the victim's bid
// read as b's and its first packet was dropped as round overflow.
func TestSketchIsKeyed(t *testing.T) {
	const rows, cols = 4, 1024
	h := harness(t, &afq.Config{BytesPerRound: 1500, Sketch: afq.Sketch{Rows: rows, Cols: cols}}, 8e3)
	out := h.SW.Scheduler(2)
	for q := 0; q < out.NumQueues(); q++ {
		out.Pause(q) // the port sends nothing: the round stays where it is
	}
	victim := pkttest.UDP4(pkttest.MAC(3), pkttest.MAC(1), ip1, ip3, 4000, 9, make([]byte, 958))
	vf := hashOf(t, victim)
	var attack [][]byte
	for r := 0; r < rows; r++ {
		for sport := uint16(1); sport < 60000; sport++ {
			f := pkttest.UDP4(pkttest.MAC(3), pkttest.MAC(2), ip2, ip3, sport, 9, make([]byte, 958))
			if unkeyedCell(r, hashOf(t, f), cols) == unkeyedCell(r, vf, cols) {
				attack = append(attack, f)
				break
			}
		}
	}
	if len(attack) != rows {
		t.Fatalf("found flows for %d of %d rows", len(attack), rows)
	}
	for _, f := range attack {
		for i := 0; i < 12; i++ { // 12,000 B: up to the 8th round, then overflow
			h.Links[1].Inject(f)
		}
		h.Settle()
	}
	before := h.SW.Counters(2).Drops[pkt.ReasonRoundOverflow]
	h.Links[0].Inject(victim)
	h.Settle()
	if d := h.SW.Counters(2).Drops[pkt.ReasonRoundOverflow] - before; d != 0 {
		t.Fatalf("the victim's first packet was dropped as round overflow after %d flows computed to share its cells", len(attack))
	}
}
