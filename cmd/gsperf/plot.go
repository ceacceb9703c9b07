package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gswitch/gswitch/perf/results"
	"github.com/gswitch/gswitch/perf/timescale"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// plotCmd draws average and 99th-percentile slowdown per size bucket for
// several runs side by side.
func plotCmd(args []string) error {
	fs := flag.NewFlagSet("plot", flag.ExitOnError)
	out := fs.String("out", "slowdown.png", "PNG to write")
	kind := fs.String("kind", "slowdown", "slowdown (runs side by side), throughput (flows of one run over time, needs client -timeline) or queue (a watch file)")
	title := fs.String("title", "", "chart title")
	maxFlows := fs.Int("flows", 10, "throughput: plot this many flows (the largest)")
	clockName := fs.String("clock", "fabric", "throughput and queue: the clock of the axes, fabric (the run's -timescale undone) or wall (this machine's)")
	fs.Parse(args)
	if fs.NArg() == 0 {
		return fmt.Errorf("plot: name the JSON files")
	}
	if *clockName != "fabric" && *clockName != "wall" {
		return fmt.Errorf("-clock %q (use fabric or wall)", *clockName)
	}
	wall := *clockName == "wall"
	switch *kind {
	case "throughput":
		return plotThroughput(fs.Arg(0), *out, *title, *maxFlows, wall)
	case "queue":
		return plotQueues(fs.Arg(0), *out, *title, wall)
	case "slowdown":
	default:
		return fmt.Errorf("plot -kind %q (use slowdown, throughput or queue)", *kind)
	}
	if *title == "" {
		*title = "slowdown by flow size"
	}
	var runs []*results.Run
	for _, p := range fs.Args() {
		r, err := results.ReadJSON(p)
		if err != nil {
			return err
		}
		if r.Name == "" {
			r.Name = strings.TrimSuffix(filepath.Base(p), ".json")
		}
		r.Summarize()
		runs = append(runs, r)
	}
	p := plot.New()
	p.Title.Text = *title
	p.Y.Label.Text = "slowdown (FCT / ideal)"
	var names []string
	for _, b := range results.Buckets {
		names = append(names, b.Name+" avg", b.Name+" p99")
	}
	w := vg.Points(12)
	for i, r := range runs {
		var v plotter.Values
		for _, st := range r.Summary[1:] {
			v = append(v, st.Avg, st.P99)
		}
		bars, err := plotter.NewBarChart(v, w)
		if err != nil {
			return err
		}
		bars.Color = plotutil.Color(i)
		bars.Offset = w * vg.Length(float64(i)-float64(len(runs)-1)/2)
		p.Add(bars)
		p.Legend.Add(r.Name, bars)
	}
	p.Legend.Top = true
	p.NominalX(names...)
	return p.Save(vg.Points(float64(140*len(names))), 4*vg.Inch, *out)
}

// axes says how a plot in one clock shows a run at timescale sc: the
// factor from wall seconds to the plot's, the factor from wall rates to
// the plot's, and the clock's name for the labels.
func axes(sc timescale.Scale, wall bool) (tf, rf float64, name string) {
	if wall {
		return 1, 1, "wall"
	}
	return 1 / sc.K(), sc.K(), "fabric"
}

// clockNote is said under a title when the clocks differ.
func clockNote(sc timescale.Scale, name string) string {
	if sc.One() {
		return ""
	}
	return fmt.Sprintf("\n(%s clock; timescale %v: wall time = %v x fabric time)", name, sc, sc)
}

func plotThroughput(path, out, title string, maxFlows int, wall bool) error {
	r, err := results.ReadJSON(path)
	if err != nil {
		return err
	}
	sc, err := r.Timescale()
	if err != nil {
		return err
	}
	tf, rf, clock := axes(sc, wall)
	var fl []results.Flow
	for _, f := range r.Flows {
		if len(f.Timeline) > 1 && f.TimelineStepNs > 0 {
			fl = append(fl, f)
		}
	}
	if len(fl) == 0 {
		return fmt.Errorf("%s: no flow has a timeline (run the client with -timeline 10ms)", path)
	}
	sort.Slice(fl, func(i, j int) bool { return fl[i].Size > fl[j].Size })
	fl = fl[:min(len(fl), maxFlows)]
	// Flows from several clients line up by their wall-clock starts when
	// the records have them; each client's StartNs counts from its own start.
	var t0 int64
	for _, f := range fl {
		if f.StartUnixNs == 0 {
			t0 = 0
			break
		}
		if t0 == 0 || f.StartUnixNs < t0 {
			t0 = f.StartUnixNs
		}
	}
	startOf := func(f results.Flow) int64 {
		if t0 != 0 {
			return f.StartUnixNs - t0
		}
		return f.StartNs
	}
	sort.Slice(fl, func(i, j int) bool { return startOf(fl[i]) < startOf(fl[j]) })
	p := plot.New()
	if title == "" {
		title = "throughput per flow"
	}
	p.Title.Text = title + clockNote(sc, clock)
	p.X.Label.Text = clock + " time (s)"
	p.Y.Label.Text = clock + " Mbit/s"
	for i, f := range fl {
		pts := make(plotter.XYs, 0, len(f.Timeline))
		prev := uint64(0)
		for k, b := range f.Timeline {
			pts = append(pts, plotter.XY{X: float64(startOf(f)+int64(k+1)*f.TimelineStepNs) / 1e9 * tf, Y: float64(b-prev) * 8 / float64(f.TimelineStepNs) * 1e3 * rf})
			prev = b
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("flow %d (%d KB)", f.ID, f.Size/1000), l)
	}
	return p.Save(8*vg.Inch, 4*vg.Inch, out)
}

func plotQueues(path, out, title string, wall bool) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var s QueueSeries
	if err := json.Unmarshal(b, &s); err != nil || s.StepNs <= 0 {
		return fmt.Errorf("%s: not a gsperf watch file (%v)", path, err)
	}
	var keys []string
	for k, v := range s.Bytes {
		for _, x := range v {
			if x > 0 {
				keys = append(keys, k)
				break
			}
		}
	}
	if len(keys) == 0 {
		return fmt.Errorf("%s: every queue stayed empty", path)
	}
	sort.Strings(keys)
	p := plot.New()
	if title == "" {
		title = "queue depth"
	}
	sc := s.scale()
	tf, _, clock := axes(sc, wall)
	p.Title.Text = title + clockNote(sc, clock)
	p.X.Label.Text = clock + " time (s)"
	p.Y.Label.Text = "KB"
	for i, k := range keys {
		pts := make(plotter.XYs, len(s.Bytes[k]))
		for j, v := range s.Bytes[k] {
			pts[j] = plotter.XY{X: float64(int64(j)*s.StepNs) / 1e9 * tf, Y: v / 1000}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		p.Add(l)
		p.Legend.Add("port/queue "+k, l)
	}
	return p.Save(8*vg.Inch, 4*vg.Inch, out)
}
