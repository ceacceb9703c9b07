package afq_test

import (
	"testing"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/mech/afq"
	"github.com/gswitch/gswitch/pkt/pkttest"
)

// TestView: the view shows the port's settings and follows the
// calendar's round and the CE marks; ports without AFQ describe nothing.
func TestView(t *testing.T) {
	h := harness(t, &afq.Config{BytesPerRound: 1000, Sketch: afq.Sketch{Rows: 2, Cols: 64}, ECNRounds: 1}, 8e6)
	d := h.SW.Mechanisms()["afq"].(mech.Viewer)
	if d.View(0) != nil {
		t.Fatal("port a has no AFQ but describes some")
	}
	v := d.View(2)
	if v["bytes_per_round"] != uint64(1000) || v["sketch_rows"] != 2 || v["rounds"] != uint64(8) || v["ecn_marked"] != uint64(0) {
		t.Fatalf("describe %v", v)
	}
	// One flow sends a burst far beyond a round: the round advances as the
	// port serves it, and packets 1 round ahead or more are marked CE.
	f := pkttest.UDP4(pkttest.MAC(3), pkttest.MAC(1), ip1, ip3, 1, 9, make([]byte, 958))
	f[15] = 0x02 // ECT(0)
	for i := 0; i < 6; i++ {
		h.Links[0].Inject(f)
	}
	h.Advance(20e6, 1e6)
	v = d.View(2)
	if v["round"].(uint64) == 0 || v["ecn_marked"].(uint64) == 0 {
		t.Fatalf("after a burst: %v (want a round above 0 and CE marks)", v)
	}
}
