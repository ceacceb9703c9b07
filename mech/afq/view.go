package afq

import "github.com/gswitch/gswitch/mech"

// View reports AFQ's settings on port i and what may be read of its
// state from any goroutine: the calendar's current round and the CE marks.
// (The sketch belongs to the egress worker and is not shown.)
func (a *AFQ) View(i int) map[string]any {
	if i < 0 || i >= len(a.ports) || a.ports[i] == nil {
		return nil
	}
	s := a.ports[i]
	return map[string]any{
		"bytes_per_round": s.bpr,
		"rounds":          s.n,
		"sketch_rows":     s.rows,
		"sketch_cols":     s.cols,
		"ecn_rounds":      s.ecn,
		"round":           s.rsp.Round(),
		"ecn_marked":      s.marked.Load(),
	}
}

// RateChanged accepts any rate: AFQ's rounds are in bytes, not time.
func (a *AFQ) RateChanged(int, uint64) error { return nil }

var (
	_ mech.Viewer       = (*AFQ)(nil)
	_ mech.RateFollower = (*AFQ)(nil)
)
