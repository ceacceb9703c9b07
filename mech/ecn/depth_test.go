package ecn_test

import (
	"testing"

	"github.com/gswitch/gswitch/mech/ecn"
	"github.com/prometheus/client_golang/prometheus"
)

// TestQueueHistogram: ten frames arrive at once at an empty queue, so
// frame i finds i packets; gswitch_ecn_queue_packets counts them in its
// buckets (cumulative: le 0 holds one, le 1 two, le 2 three, le 4 five,
// le 8 nine, le 16 all ten) with a sum of 0 + 1 + ... + 9 = 45.
func TestQueueHistogram(t *testing.T) {
	h := harness(t, "fifo", 1, ecnOn(&ecn.Config{KPackets: 2}))
	for i := 0; i < 10; i++ {
		h.Links[0].Inject(frame(uint16(i), ect0))
	}
	h.Settle()
	h.Advance(20e6, 100e3)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(inst(h))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[float64]uint64{0: 1, 1: 2, 2: 3, 4: 5, 8: 9, 16: 10, 256: 10, 4096: 10}
	found := false
	for _, mf := range mfs {
		if mf.GetName() != "gswitch_ecn_queue_packets" {
			continue
		}
		for _, m := range mf.Metric {
			if m.Label[0].GetValue() != "out" {
				continue
			}
			found = true
			hs := m.Histogram
			if hs.GetSampleCount() != 10 || hs.GetSampleSum() != 45 {
				t.Errorf("count %d sum %g, want 10 and 45", hs.GetSampleCount(), hs.GetSampleSum())
			}
			for _, b := range hs.Bucket {
				if w, ok := want[b.GetUpperBound()]; ok && b.GetCumulativeCount() != w {
					t.Errorf("bucket le %g: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), w)
				}
			}
		}
	}
	if !found {
		t.Fatal("no gswitch_ecn_queue_packets for port out")
	}
}
