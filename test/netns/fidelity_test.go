package netns

import (
	"context"
	"net/http"
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
	return v
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
