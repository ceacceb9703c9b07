package xpass

// Feedback is the credit feedback control of one flow's credit sender (the
// data receiver): ns2-xpass's credit_feedback_control in xpass/xpass.cc,
// with its types, so it computes what the simulator computes. Rates are
// bytes per second held in integers and truncated where ns-2 assigns a
// double to an int; times are seconds in float64, as ns-2's clock.
//
// Once per RTT at most (called before each credit), with loss =
// Dropped/Total credits since the last update and target = (1 - Cur/MaxRate)
// x TargetLossScaling:
//
//	loss > target (congestion):
//	    Cur = loss >= 1 ? avg/RTT : avg x (Total - Dropped)/Δt x (1 + target)
//	    Cur = min(Cur, old Cur);  W = max(W/2, WMin);  CanIncrease = false
//	otherwise:
//	    if CanIncrease { W = min(W + 0.05, 0.5) } else { CanIncrease = true }
//	    if Cur < MaxRate { Cur = W x MaxRate + (1 - W) x Cur }
//	Cur = clamp(Cur, avg/RTT, MaxRate); Total = Dropped = 0
//
// where avg is the average credit size on the wire (84 bytes). A Feedback
// is used by one goroutine.
type Feedback struct {
	MaxRate           int64   // max_credit_rate_: bytes/s (link x 84/1622)
	AvgCredit         float64 // avg_credit_size(): bytes on the wire (84)
	TargetLossScaling float64 // target_loss_scaling_ (0.125)
	WMin              float64 // min_w_ (0.01)

	Cur         int64   // cur_credit_rate_: bytes/s
	W           float64 // w_
	CanIncrease bool    // can_increase_w_
	RTT         float64 // rtt_: seconds, an EWMA of data arrival - credit sent time; <= 0 before the first sample
	LastUpdate  float64 // last_credit_rate_update_: seconds
	Total       int64   // credit_total_: credits accounted for since the last update (received + dropped)
	Dropped     int64   // credit_dropped_
}

// Start is recv_credit_request: a flow asks for credits at now (seconds).
// The first rate is alpha x MaxRate, scaled down by pkts/40 for a flow of
// fewer than 40 packets (ns-2 scales alpha by the request's send buffer).
func (f *Feedback) Start(now, alpha, wInit float64, pkts int64) {
	f.W = wInit
	f.LastUpdate = now
	lalpha := alpha
	if pkts < 40 {
		lalpha = alpha * float64(pkts) / 40.0
	}
	f.Cur = int64(lalpha * float64(f.MaxRate))
}

// SampleRTT folds an RTT sample (seconds: the data's arrival minus its
// credit's sent time) into the EWMA, as ns-2's update_rtt does.
func (f *Feedback) SampleRTT(rtt float64) {
	if f.RTT > 0.0 {
		f.RTT = 0.8*f.RTT + 0.2*rtt
	} else {
		f.RTT = rtt
	}
}

// Account counts the credits a data packet's echoed credit_seq shows: gap
// credits lost before the one it echoes, which arrived.
func (f *Feedback) Account(gap int64) {
	f.Total += gap + 1
	f.Dropped += gap
}

// Update is credit_feedback_control at now (seconds). It reports whether
// the rate was recomputed (not before the first RTT sample, not within an
// RTT of the last update, not with no credit accounted for).
func (f *Feedback) Update(now float64) bool {
	if f.RTT <= 0.0 {
		return false
	}
	if now-f.LastUpdate < f.RTT {
		return false
	}
	if f.Total == 0 {
		return false
	}
	old := f.Cur
	loss := float64(f.Dropped) / float64(f.Total)
	target := (1.0 - float64(f.Cur)/float64(f.MaxRate)) * f.TargetLossScaling
	minRate := int64(f.AvgCredit / f.RTT)
	if loss > target {
		if loss >= 1.0 {
			f.Cur = int64(f.AvgCredit / f.RTT)
		} else {
			f.Cur = int64(f.AvgCredit * float64(f.Total-f.Dropped) / (now - f.LastUpdate) * (1.0 + target))
		}
		if f.Cur > old {
			f.Cur = old
		}
		f.W = max(f.W/2.0, f.WMin)
		f.CanIncrease = false
	} else {
		if f.CanIncrease {
			f.W = min(f.W+0.05, 0.5)
		} else {
			f.CanIncrease = true
		}
		if f.Cur < f.MaxRate {
			f.Cur = int64(f.W*float64(f.MaxRate) + (1-f.W)*float64(f.Cur))
		}
	}
	if f.Cur > f.MaxRate {
		f.Cur = f.MaxRate
	}
	if f.Cur < minRate {
		f.Cur = minRate
	}
	f.Total = 0
	f.Dropped = 0
	f.LastUpdate = now
	return true
}
