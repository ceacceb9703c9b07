package xpass

import (
	"math"
	"testing"
)

// TestFeedbackReproducesNs2 drives the feedback loop through a scripted
// sequence of credit counts and losses and checks each rate and w against
// values worked out by hand from ns2-xpass's credit_feedback_control
// (xpass/xpass.cc), integer truncation included. MaxRate 1,000,000 B/s,
// 84-byte credits, target scaling 0.125, w_min 0.01, RTT 1 ms (so the
// floor avg/RTT is 84,000 B/s), alpha 0.5, w_init 0.0625.
func TestFeedbackReproducesNs2(t *testing.T) {
	f := Feedback{MaxRate: 1_000_000, AvgCredit: 84, TargetLossScaling: 0.125, WMin: 0.01}
	f.Start(0, 0.5, 0.0625, 100)
	if f.Cur != 500_000 || f.W != 0.0625 || f.CanIncrease {
		t.Fatalf("start: cur %d w %v", f.Cur, f.W)
	}
	if f.Update(0.0015) {
		t.Fatal("updated before the first RTT sample")
	}
	f.SampleRTT(0.001)
	steps := []struct {
		now            float64
		total, dropped int64
		updated        bool
		cur            int64
		w              float64
		why            string
	}{
		{0.0015, 10, 0, true, 531_250, 0.0625,
			"no loss (target (1-0.5)x0.125 = 0.0625); can_increase was false: w stays, now true; 0.0625x1e6 + 0.9375x500,000 = 531,250"},
		{0.003, 10, 0, true, 583_984, 0.1125,
			"no loss: w = 0.1125; 112,500 + 0.8875x531,250 = 583,984.375 -> 583,984"},
		{0.0045, 20, 15, true, 294_560, 0.05625,
			"loss 0.75 > target (1-0.583984)x0.125 = 0.052002: 84x5 credits / 1.5 ms = 280,000 B/s x 1.052002 = 294,560.56 -> 294,560 (below the old rate); w halves"},
		{0.005, 4, 0, false, 294_560, 0.05625,
			"0.5 ms since the last update, under one RTT: nothing changes, the 4 credits carry over"},
		{0.0065, 6, 6, true, 182_814, 0.028125,
			"10 credits, 6 lost (loss 0.6 > 0.08818): 84x4 / 2 ms = 168,000 x 1.08818 = 182,814.24 -> 182,814; w halves"},
		{0.008, 7, 7, true, 84_000, 0.0140625,
			"loss 1: the rate drops to avg/RTT = 84/0.001 = 84,000; w halves"},
		{0.0095, 10, 0, true, 96_881, 0.0140625,
			"no loss after congestion: w stays (can_increase becomes true); 14,062.5 + 0.9859375x84,000 = 96,881.25 -> 96,881"},
		{0.011, 0, 0, false, 96_881, 0.0140625,
			"no credit accounted for: no update"},
		{0.0125, 10, 1, true, 154_737, 0.0640625,
			"loss 0.1 <= target (1-0.096881)x0.125 = 0.11289: w = 0.0640625; 64,062.5 + 0.9359375x96,881 = 154,737.06 -> 154,737"},
		{0.014, 10, 9, true, 84_000, 0.03203125,
			"loss 0.9: 84x1 / 1.5 ms = 56,000 x 1.105658 = 61,916 is below avg/RTT: clamped to 84,000; w halves"},
		{0.0155, 5, 0, true, 113_340, 0.03203125,
			"no loss: 32,031.25 + 0.96796875x84,000 = 113,340.625 -> 113,340"},
		{0.017, 5, 0, true, 186_073, 0.08203125,
			"no loss: w + 0.05; 82,031.25 + 0.91796875x113,340 = 186,073.4 -> 186,073"},
	}
	for i, s := range steps {
		f.Total += s.total
		f.Dropped += s.dropped
		up := f.Update(s.now)
		if up != s.updated || f.Cur != s.cur || math.Abs(f.W-s.w) > 1e-12 { // w: 0.05 has no exact binary form
			t.Fatalf("step %d at %v s: updated %v cur %d w %v; want %v %d %v (%s)", i+1, s.now, up, f.Cur, f.W, s.updated, s.cur, s.w, s.why)
		}
		if up && (f.Total != 0 || f.Dropped != 0 || f.LastUpdate != s.now) {
			t.Fatalf("step %d: counters not reset", i+1)
		}
	}
	// Without loss w climbs by 0.05 to 0.5 and stays; the rate approaches
	// the maximum and never passes it.
	now := 0.017
	for i := 0; i < 40; i++ {
		now += 0.0015
		f.Total += 5
		f.Update(now)
		if f.Cur > f.MaxRate || f.W > 0.5 {
			t.Fatalf("cur %d w %v", f.Cur, f.W)
		}
	}
	if f.W != 0.5 || f.Cur < 999_000 {
		t.Fatalf("after 40 loss-free RTTs: cur %d w %v", f.Cur, f.W)
	}
	// A small flow starts lower: alpha x pkts/40.
	f.Start(1, 0.5, 0.0625, 10)
	if f.Cur != 125_000 {
		t.Fatalf("10-packet flow starts at %d, want 0.5 x 10/40 x 1e6 = 125,000", f.Cur)
	}
	// The RTT is an EWMA 0.8/0.2.
	g := Feedback{}
	g.SampleRTT(100e-6)
	g.SampleRTT(200e-6)
	if d := g.RTT - 120e-6; d > 1e-15 || d < -1e-15 {
		t.Fatalf("rtt %v, want 0.8x100 + 0.2x200 = 120 us", g.RTT)
	}
}
