package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gswitch/gswitch/perf/results"
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
	title := fs.String("title", "slowdown by flow size", "chart title")
	fs.Parse(args)
	if fs.NArg() == 0 {
		return fmt.Errorf("plot: name the run JSON files")
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
