// Command bfc-incast-plot draws the queues of scripts/experiments/bfc-incast.sh's
// runs, one line per design: the bytes queued at sw1's port toward sw2 and
// at sw2's port toward r1 over the fabric's time from the incast's start
// (the samples the script took, samples.json, and its instant, meta.txt),
// for one N and one run.
//
//	bfc-incast-plot -dir OUT -designs "bfc dcqcn hpcc" -n 16 -run 1 -timescale 10000
//
// It writes OUT/queues-nN.png.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// series reads one run: the queued bytes at a port of sw (prefix "sw1 " or
// "sw2 ") per sample, against the fabric's us since the incast's instant.
func series(run, sw string, k float64) (plotter.XYs, error) {
	meta, err := os.ReadFile(filepath.Join(run, "meta.txt"))
	if err != nil {
		return nil, err
	}
	var at float64
	for _, kv := range strings.Fields(string(meta)) {
		if v, ok := strings.CutPrefix(kv, "incast_at_ns="); ok {
			if at, err = strconv.ParseFloat(v, 64); err != nil {
				return nil, fmt.Errorf("%s: %v", run, err)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(run, "samples.json"))
	if err != nil {
		return nil, err
	}
	var samples []map[string]any
	if err := json.Unmarshal(b, &samples); err != nil {
		return nil, fmt.Errorf("%s/samples.json: %v", run, err)
	}
	var pts plotter.XYs
	for _, s := range samples {
		t, ok := s["t"].(float64)
		if !ok {
			continue
		}
		var q float64
		for key, v := range s {
			if f, ok := v.(float64); ok && strings.HasPrefix(key, sw+" gswitch_queue_depth_bytes{") {
				q += f
			}
		}
		pts = append(pts, plotter.XY{X: (t*1e9 - at) / k / 1e3, Y: q / 1e3})
	}
	return pts, nil
}

func main() {
	dir := flag.String("dir", "", "bfc-incast.sh's output directory")
	designs := flag.String("designs", "bfc", "the designs, in legend order")
	n := flag.Int("n", 16, "the incast's senders")
	run := flag.Int("run", 1, "the run")
	k := flag.Float64("timescale", 10000, "the runs' timescale")
	flag.Parse()
	ports := []struct{ sw, title string }{
		{"sw1", "sw1 -> sw2 (what sw2's pauses push back)"},
		{"sw2", "sw2 -> r1 (the bottleneck)"},
	}
	const w, h = 9 * vg.Inch, 7 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Points(12), PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	for row, port := range ports {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%d-to-1, run %d: queued at %s", *n, *run, port.title)
		p.X.Label.Text = "us of the fabric from the incast's start"
		p.Y.Label.Text = "KB"
		for i, d := range strings.Fields(*designs) {
			pts, err := series(filepath.Join(*dir, d, fmt.Sprintf("n%d", *n), fmt.Sprintf("r%d", *run)), port.sw, *k)
			if err != nil {
				fmt.Fprintln(os.Stderr, "bfc-incast-plot:", err)
				os.Exit(1)
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				fmt.Fprintln(os.Stderr, "bfc-incast-plot:", err)
				os.Exit(1)
			}
			l.Color = plotutil.Color(i)
			l.Dashes = plotutil.Dashes(i)
			p.Add(l)
			p.Legend.Add(d, l)
		}
		p.Legend.Top = true
		p.Draw(tiles.At(dc, 0, row))
	}
	out := filepath.Join(*dir, fmt.Sprintf("queues-n%d.png", *n))
	f, err := os.Create(out)
	if err == nil {
		_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bfc-incast-plot:", err)
		os.Exit(1)
	}
	fmt.Println(out)
}
