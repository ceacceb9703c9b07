package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gswitch/gswitch/fidelity"
)

// fidelityFlags are -fidelity and -fidelity-bounds of the client and the
// server: the switches' metrics endpoints, snapshotted when the run starts
// and when it ends, and what the verdict judges by.
type fidelityFlags struct {
	urls, bounds *string
}

func addFidelityFlags(fs *flag.FlagSet) *fidelityFlags {
	return &fidelityFlags{
		urls: fs.String("fidelity", "", "judge the switches' own lateness over the run: their metrics endpoints, URL or name=URL, comma-separated "+
			"(e.g. sw1=http://127.0.0.1:9101/metrics); the verdict ends the report"),
		bounds: fs.String("fidelity-bounds", "", "the bounds of a VALID verdict, e.g. lateness=1,lost=1%,delay=1 (frame times of the fastest link, percent of line time, frame times; default all three at 1)"),
	}
}

// fidelityRun takes the snapshots of one run.
type fidelityRun struct {
	targets []fidelity.Target
	bounds  fidelity.Bounds
	before  fidelity.Snapshot
}

// start checks the flags; nil when -fidelity is not given.
func (f *fidelityFlags) start() (*fidelityRun, error) {
	if *f.urls == "" {
		if *f.bounds != "" {
			return nil, errors.New("-fidelity-bounds: give -fidelity too (the switches' metrics endpoints)")
		}
		return nil, nil
	}
	ts, err := fidelity.ParseTargets(*f.urls)
	if err != nil {
		return nil, fmt.Errorf("-fidelity: %w", err)
	}
	b, err := fidelity.ParseBounds(*f.bounds)
	if err != nil {
		return nil, fmt.Errorf("-fidelity-bounds: %w", err)
	}
	return &fidelityRun{targets: ts, bounds: b}, nil
}

// begin takes the first snapshot; a switch that does not answer is an
// error before anything runs.
func (r *fidelityRun) begin() error {
	if r == nil {
		return nil
	}
	s, err := fidelity.Scrape(context.Background(), nil, r.targets)
	if err != nil {
		return fmt.Errorf("-fidelity: %w", err)
	}
	r.before = s
	return nil
}

// end takes the second snapshot and judges the window (nil without
// -fidelity). A failure then does not lose the run: the verdict is
// INVALID and says why.
func (r *fidelityRun) end() *fidelity.Verdict {
	if r == nil {
		return nil
	}
	after, err := fidelity.Scrape(context.Background(), nil, r.targets)
	var w fidelity.Window
	if err == nil {
		w, err = fidelity.Diff(r.before, after)
	}
	if err != nil {
		return &fidelity.Verdict{Reasons: []string{"no window to judge: " + err.Error()}, Bounds: r.bounds}
	}
	v := fidelity.Evaluate(w, r.bounds)
	return &v
}

// report prints the verdict line (nothing without -fidelity).
func (r *fidelityRun) report(w io.Writer) {
	if v := r.end(); v != nil {
		fmt.Fprintln(w, v)
	}
}

// fidelityCmd is gsperf fidelity: snapshot the switches, wait, snapshot
// again and judge the window; or judge against a snapshot saved earlier.
func fidelityCmd(args []string) error {
	fs := flag.NewFlagSet("fidelity", flag.ExitOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: gsperf fidelity -metrics URL[,URL...] [-duration D | -before FILE] [-save FILE] [-json FILE]

Judges whether the switches kept time well enough over a window: their
lateness against a frame time of the fastest link, the line time they
lost, their delay lines' error (package fidelity). Around an experiment:

  gsperf fidelity -metrics $URLS -save before.json     # before the run
  ... the run ...
  gsperf fidelity -metrics $URLS -before before.json   # after it: the verdict

or for a window of its own: gsperf fidelity -metrics $URLS -duration 10s.
The switches say their timescale themselves (gswitch_timescale).

`)
		fs.PrintDefaults()
	}
	urls := fs.String("metrics", "", "the switches' metrics endpoints, URL or name=URL, comma-separated (e.g. sw1=http://127.0.0.1:9101/metrics)")
	dur := fs.Duration("duration", 0, "snapshot, wait this long, snapshot again (wall time: the window this machine is judged over)")
	before := fs.String("before", "", "the first snapshot: a file -save wrote (instead of -duration)")
	save := fs.String("save", "", "write the last snapshot taken here (the -before of a later call)")
	bounds := fs.String("bounds", "", "the bounds of a VALID verdict, e.g. lateness=1,lost=1%,delay=1 (default all three at 1)")
	jsonOut := fs.String("json", "", "write the verdict as JSON here")
	strict := fs.Bool("strict", false, "exit with status 3 when the verdict is INVALID")
	fs.Parse(args)
	ts, err := fidelity.ParseTargets(*urls)
	if err != nil {
		return fmt.Errorf("-metrics: %w", err)
	}
	b, err := fidelity.ParseBounds(*bounds)
	if err != nil {
		return fmt.Errorf("-bounds: %w", err)
	}
	if *dur < 0 {
		return fmt.Errorf("-duration: %v is negative", *dur)
	}
	if *dur > 0 && *before != "" {
		return errors.New("-duration and -before: give one (a window from now, or from a saved snapshot)")
	}
	if *dur == 0 && *before == "" && *save == "" {
		return errors.New("give -duration (a window from now), -before (from a saved snapshot) or -save (only take a snapshot)")
	}
	ctx := context.Background()
	var first fidelity.Snapshot
	switch {
	case *before != "":
		if first, err = fidelity.Load(*before); err != nil {
			return fmt.Errorf("-before: %w", err)
		}
	case *dur > 0:
		if first, err = fidelity.Scrape(ctx, nil, ts); err != nil {
			return fmt.Errorf("-metrics: %w", err)
		}
		time.Sleep(*dur)
	}
	last, err := fidelity.Scrape(ctx, nil, ts)
	if err != nil {
		return fmt.Errorf("-metrics: %w", err)
	}
	if *save != "" {
		if err := last.Save(*save); err != nil {
			return fmt.Errorf("-save: %w", err)
		}
	}
	if first.Switches == nil {
		fmt.Fprintf(os.Stderr, "gsperf fidelity: snapshot of %d switches in %s\n", len(last.Switches), *save)
		return nil
	}
	w, err := fidelity.Diff(first, last)
	if err != nil {
		return err
	}
	v := fidelity.Evaluate(w, b)
	fmt.Println(v)
	if *jsonOut != "" {
		j, err := json.MarshalIndent(v, "", " ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*jsonOut, j, 0o644); err != nil {
			return fmt.Errorf("-json: %w", err)
		}
	}
	if *strict && !v.Valid {
		os.Exit(3)
	}
	return nil
}
