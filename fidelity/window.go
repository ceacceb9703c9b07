package fidelity

import (
	"fmt"
	"sort"
	"time"
)

// SwitchWindow is what one switch did between two snapshots: its
// histograms and counters are the differences, its rates and timescale the
// later snapshot's.
type SwitchWindow struct {
	Switch
	Duration time.Duration `json:"duration"` // wall time between the two scrapes
	// Reset lists the series that went backwards (the switch restarted, or
	// a histogram's buckets changed): the later values are taken whole.
	Reset []string `json:"reset,omitempty"`
}

// Window is the span between two snapshots.
type Window struct {
	Switches []SwitchWindow `json:"switches"`
}

// Diff makes the window from before to after. Every switch of after must
// be in before (by name), scraped earlier.
func Diff(before, after Snapshot) (Window, error) {
	byName := map[string]*Switch{}
	for i := range before.Switches {
		byName[before.Switches[i].Name] = &before.Switches[i]
	}
	var w Window
	if len(after.Switches) == 0 {
		return w, fmt.Errorf("the later snapshot holds no switch")
	}
	for _, a := range after.Switches {
		b := byName[a.Name]
		if b == nil {
			return Window{}, fmt.Errorf("switch %s is not in the first snapshot (compare snapshots of the same switches)", a.Name)
		}
		d := a.Time.Sub(b.Time)
		if d <= 0 {
			return Window{}, fmt.Errorf("switch %s: the later snapshot (%v) is not after the first (%v)", a.Name, a.Time, b.Time)
		}
		sw := SwitchWindow{Duration: d}
		sw.Name, sw.Source, sw.Time, sw.Timescale, sw.Rate = a.Name, a.Source, a.Time, a.Timescale, a.Rate
		sw.WakeLate = sw.diffHists("wake_late", b.WakeLate, a.WakeLate)
		sw.PassGap = sw.diffHists("pass_gap", b.PassGap, a.PassGap)
		sw.DelayError = sw.diffHists("delay_error", b.DelayError, a.DelayError)
		sw.TxLate = sw.diffCounters("tx_late", b.TxLate, a.TxLate)
		sw.CreditLate = sw.diffCounters("credit_late", b.CreditLate, a.CreditLate)
		w.Switches = append(w.Switches, sw)
	}
	return w, nil
}

func (sw *SwitchWindow) diffCounters(what string, b, a map[string]float64) map[string]float64 {
	if a == nil {
		return nil
	}
	out := make(map[string]float64, len(a))
	for k, v := range a {
		if old, ok := b[k]; ok && v >= old {
			v -= old
		} else if ok {
			sw.Reset = append(sw.Reset, what+"/"+k)
		}
		out[k] = v
	}
	return out
}

func (sw *SwitchWindow) diffHists(what string, b, a map[string]Histogram) map[string]Histogram {
	if a == nil {
		return nil
	}
	out := make(map[string]Histogram, len(a))
	for k, h := range a {
		old, ok := b[k]
		if !ok {
			out[k] = h
			continue
		}
		d, ok := h.sub(old)
		if !ok {
			sw.Reset = append(sw.Reset, what+"/"+k)
			d = h
		}
		out[k] = d
	}
	return out
}

// sub is h - old bucket by bucket; false if old is not an earlier state of
// h (other bounds, or a count that went down).
func (h Histogram) sub(old Histogram) (Histogram, bool) {
	if len(h.Bounds) != len(old.Bounds) || len(old.Cumulative) != len(old.Bounds) || h.Count < old.Count {
		return Histogram{}, false
	}
	d := Histogram{Bounds: h.Bounds, Cumulative: make([]uint64, len(h.Cumulative)), Count: h.Count - old.Count, Sum: h.Sum - old.Sum}
	for i := range h.Bounds {
		if h.Bounds[i] != old.Bounds[i] || h.Cumulative[i] < old.Cumulative[i] {
			return Histogram{}, false
		}
		d.Cumulative[i] = h.Cumulative[i] - old.Cumulative[i]
	}
	return d, true
}

// Merge adds histograms into one. Bounds they share add exactly; where
// their bounds differ, each contributes at a bound its count at its own
// largest bound not above it (a lower estimate of its cumulative count).
func Merge(hs ...Histogram) Histogram {
	var all []float64
	seen := map[float64]bool{}
	for _, h := range hs {
		for _, b := range h.Bounds {
			if !seen[b] {
				seen[b] = true
				all = append(all, b)
			}
		}
	}
	sort.Float64s(all)
	m := Histogram{Bounds: all, Cumulative: make([]uint64, len(all))}
	for _, h := range hs {
		m.Count += h.Count
		m.Sum += h.Sum
		j := -1
		for i, b := range all {
			for j+1 < len(h.Bounds) && j+1 < len(h.Cumulative) && h.Bounds[j+1] <= b {
				j++
			}
			if j >= 0 {
				m.Cumulative[i] += h.Cumulative[j]
			}
		}
	}
	return m
}

// Quantile estimates the q-quantile (0 < q <= 1) of the observations in
// seconds, by linear interpolation within the bucket that holds the rank,
// as Prometheus' histogram_quantile does: the estimate is within the
// bucket, so off by at most its width (19% with this package's buckets).
// A rank beyond the last finite bound gives that bound (over reports it:
// the quantile is at least that; 0 if there is no finite bound).
// ok is false when the histogram holds no observation.
func (h Histogram) Quantile(q float64) (v float64, over, ok bool) {
	if h.Count == 0 || len(h.Bounds) == 0 || len(h.Cumulative) != len(h.Bounds) {
		if h.Count > 0 { // only the +Inf bucket: nothing to interpolate in
			return 0, true, true
		}
		return 0, false, false
	}
	rank := q * float64(h.Count)
	lower, below := 0.0, uint64(0)
	for i, le := range h.Bounds {
		n := max(h.Cumulative[i], below) // never decreasing, whatever was parsed
		if float64(n) >= rank && n > below {
			if i == 0 && le <= 0 {
				return le, false, true
			}
			return lower + (le-lower)*(rank-float64(below))/float64(n-below), false, true
		}
		lower, below = le, n
	}
	return h.Bounds[len(h.Bounds)-1], true, true
}
