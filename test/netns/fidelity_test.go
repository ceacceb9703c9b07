package netns

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gswitch/gswitch/fidelity"
	"github.com/gswitch/gswitch/topo"
)

// Fidelity: every test that measures a design through running switches
// judges, over its scenario, whether the switches kept time well enough
// for the figures to mean anything (package fidelity: lateness p99 in
// frame times of the fastest link, line time lost, delay-line error). A
// run that was not valid fails with its figures, whatever else it
// measured: it is never retried and never skipped.

// fidelityWatch holds the switches' state at the start of a scenario.
type fidelityWatch struct {
	t       *testing.T
	targets []fidelity.Target
	bounds  fidelity.Bounds
	before  fidelity.Snapshot
}

// watchFidelity snapshots the switches of r (every one by its name) with
// the default bounds (lateness p99 and delay error p99 at most one frame
// time of the fastest link, at most 1% of line time lost).
func watchFidelity(t *testing.T, r *topo.Running) *fidelityWatch {
	t.Helper()
	var ts []fidelity.Target
	for _, s := range r.Switches {
		ts = append(ts, fidelity.Target{Name: s.Name, URL: "http://" + s.Metrics + "/metrics"})
	}
	return watchTargets(t, ts...)
}

// watchTargets is watchFidelity for switches given by their endpoints.
func watchTargets(t *testing.T, ts ...fidelity.Target) *fidelityWatch {
	t.Helper()
	w := &fidelityWatch{t: t, targets: ts, bounds: fidelity.DefaultBounds()}
	w.before = w.scrape()
	return w
}

func (w *fidelityWatch) scrape() fidelity.Snapshot {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := fidelity.Scrape(ctx, &http.Client{Timeout: 5 * time.Second}, w.targets)
	if err != nil {
		w.t.Fatalf("fidelity: scraping the switches: %v", err)
	}
	return s
}

// verdict judges the window since the watch began, logs the verdict line
// and returns it.
func (w *fidelityWatch) verdict() fidelity.Verdict {
	w.t.Helper()
	win, err := fidelity.Diff(w.before, w.scrape())
	if err != nil {
		w.t.Fatalf("fidelity: %v", err)
	}
	v := fidelity.Evaluate(win, w.bounds)
	w.t.Log(v.String())
	if !v.Valid {
		w.t.Log(windowDetails(win))
	}
	return v
}

// windowDetails is where the time went in a window, switch by switch: each
// worker's wake-up lateness and pass gaps, each delay line's error (p99
// and the highest bucket reached, with counts) and each port's line time
// lost, so that an invalid run says which switch and port were late.
func windowDetails(win fidelity.Window) string {
	var b strings.Builder
	b.WriteString("fidelity details (wall clock):")
	q := func(h fidelity.Histogram) string {
		p99, _, _ := h.Quantile(0.99)
		most, _, _ := h.Quantile(1)
		return fmt.Sprintf("n %d p99 %s max %s", h.Count, time.Duration(p99*1e9).Round(time.Microsecond), time.Duration(most*1e9).Round(time.Microsecond))
	}
	for _, sw := range win.Switches {
		fmt.Fprintf(&b, "\n  %s (%s):", sw.Name, sw.Duration.Round(time.Millisecond))
		for _, k := range slices.Sorted(maps.Keys(sw.WakeLate)) {
			fmt.Fprintf(&b, "\n    worker %s wake late %s; pass gap %s", k, q(sw.WakeLate[k]), q(sw.PassGap[k]))
		}
		for _, k := range slices.Sorted(maps.Keys(sw.DelayError)) {
			if h := sw.DelayError[k]; h.Count > 0 {
				fmt.Fprintf(&b, "\n    port %s delay error %s", k, q(h))
			}
		}
		for _, k := range slices.Sorted(maps.Keys(sw.TxLate)) {
			if x := sw.TxLate[k] + sw.CreditLate[k]; x > 0 {
				fmt.Fprintf(&b, "\n    port %s line time lost %s (%.2f%%)", k, time.Duration(x*1e9).Round(time.Microsecond), 100*x/sw.Duration.Seconds())
			}
		}
	}
	return b.String()
}

// require fails the test, with the figures, when the window since the
// watch began was not valid.
func (w *fidelityWatch) require() fidelity.Verdict {
	w.t.Helper()
	v := w.verdict()
	if !v.Valid {
		w.t.Errorf("the run was not valid, so its figures say nothing of the design: %s", v.String())
	}
	return v
}
