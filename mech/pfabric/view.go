package pfabric

import "github.com/gswitch/gswitch/mech"

// View reports where port i's ranks come from. (The LAS sketch belongs
// to the egress worker and is not shown.)
func (f *PFabric) View(i int) map[string]any {
	if i < 0 || i >= len(f.ports) || f.ports[i] == nil {
		return nil
	}
	d := map[string]any{"rank": RankGsperf}
	if f.ports[i].las {
		d["rank"] = RankLAS
		d["las_sketch"] = [2]int{lasRows, lasCols}
		d["las_decay_bytes"] = lasDecay
	}
	return d
}

// RateChanged accepts any rate: ranks do not depend on it.
func (f *PFabric) RateChanged(int, uint64) error { return nil }

var (
	_ mech.Viewer       = (*PFabric)(nil)
	_ mech.RateFollower = (*PFabric)(nil)
)
