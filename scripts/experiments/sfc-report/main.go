// Command sfc-report turns the runs of scripts/experiments/sfc-incast.sh
// into the comparison table (markdown) and plots: the congested port's
// queue over time per mode, peak and p99 buffer per mode, and the slowdown
// of the incast and of the background flows per mode. Times are the
// fabric's (-timescale K: this machine's / K); byte counts and slowdowns
// are the same on both clocks. Each run's fidelity verdict (verdict.txt,
// gsperf fidelity) is counted per mode.
//
//	sfc-report -dir results-sfc-incast-... -modes "tcp off egress ingress ingress_cache estimator" -timescale 10000
//	sfc-report sweep -dir results-sfc-incast-... -ns "8 16 32" -modes "off ingress_cache-bloom5us ..." -timescale 10000
//	sfc-report watch -out queues.json -duration 5s URL=PORT ...   # sample queue depths with timestamps
//
// sweep reads a sweep's runs (DIR/nN/CASE/RUN: NS with several values or
// BLOOM in the script; a case is a mode, or ingress_cache-bloomD for SFC
// with a Bloom reset of D) and writes DIR/summary.md (sweep.go).
//
// Each run's directory (DIR/MODE/RUN) holds what the script collected: sw1.prom and
// sw2.prom (the switches' metrics at the end of the run), queues.json (the
// watch), meta.txt (the incast's start), verdict.txt (the fidelity
// verdict), incast.json and bg.json (gsperf runs), or iperf3 JSON files
// tcp-*.json for the kernel TCP baseline.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gswitch/gswitch/perf/results"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// congestion drop reasons: frames lost to a full queue, buffer or lane.
var congestion = map[string]bool{"buffer_full": true, "frame_limit": true, "port_limit": true, "queue_limit": true,
	"handoff_full": true, "lane_full": true, "no_frames": true, "evicted": true}

type row struct {
	mode                   string
	label                  string
	runs                   int
	peaks                  []float64 // each run's peak, sorted
	peak, p99              float64   // bytes at the congested port: the median run's
	drops                  float64   // congestion drops in both switches and the kernel's AF_XDP rx drops
	retx                   uint64    // segments the senders sent again
	incast, bg             stats
	incastX, bgX           []float64 // slowdowns of the completed flows, all runs
	sent, supp             float64   // BTS sent and suppressed by Bloom filters, both switches
	fromCache, cacheHits   float64
	bloomMax, cacheUpdates float64
	valid                  int         // runs whose fidelity verdict was VALID
	series                 plotter.XYs // r1's queue: us of the fabric since the incast's start, KB
}

type stats struct {
	n, done       int
	avg, p99, max float64
}

func summarize(xs []float64, n int) stats {
	s := stats{n: n, done: len(xs)}
	if len(xs) == 0 {
		return s
	}
	sort.Float64s(xs)
	for _, x := range xs {
		s.avg += x
	}
	s.avg /= float64(len(xs))
	s.p99 = xs[int(math.Ceil(0.99*float64(len(xs))))-1]
	s.max = xs[len(xs)-1]
	return s
}

func readProm(path string) (map[string]*dto.MetricFamily, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tp := expfmt.NewTextParser(model.UTF8Validation)
	return tp.TextToMetricFamilies(f)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return 0
}

// sum adds the values of family name whose labels match (nil: all).
func sum(fams map[string]*dto.MetricFamily, name string, match func(m *dto.Metric) bool) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	v := 0.0
	for _, m := range f.GetMetric() {
		if match == nil || match(m) {
			v += value(m)
		}
	}
	return v
}

func port(p string) func(m *dto.Metric) bool {
	return func(m *dto.Metric) bool { return label(m, "port") == p }
}

// quantile interpolates the q-quantile of a Prometheus histogram linearly
// within its bucket, as histogram_quantile does.
func quantile(h *dto.Histogram, q float64) float64 {
	n := float64(h.GetSampleCount())
	if n == 0 {
		return 0
	}
	rank := q * n
	prevB, prevC := 0.0, 0.0
	for _, b := range h.GetBucket() {
		c := float64(b.GetCumulativeCount())
		if c >= rank {
			if c == prevC {
				return b.GetUpperBound()
			}
			return prevB + (b.GetUpperBound()-prevB)*(rank-prevC)/(c-prevC)
		}
		prevB, prevC = b.GetUpperBound(), c
	}
	return prevB
}

func slowdowns(path string) (xs []float64, n int, retx uint64, err error) {
	r, err := results.ReadJSON(path)
	if err != nil {
		return nil, 0, 0, err
	}
	for _, f := range r.Flows {
		if f.Complete {
			xs = append(xs, f.Slowdown)
		}
		retx += f.Retransmits
	}
	return xs, len(r.Flows), retx, nil
}

// iperfSlowdowns reads the iperf3 -J files of the TCP baseline: each
// transfer's time over what its bytes need at the rate plus the base RTT
// (this machine's rate and RTT: iperf3 times on its clock).
func iperfSlowdowns(dir string, rateBits float64, rttNs int64) (xs []float64, n int, retx uint64, err error) {
	files, _ := filepath.Glob(filepath.Join(dir, "tcp-*.json"))
	for _, p := range files {
		n++
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, 0, 0, err
		}
		var j struct {
			End struct {
				SumSent struct {
					Seconds     float64 `json:"seconds"`
					Bytes       float64 `json:"bytes"`
					Retransmits uint64  `json:"retransmits"`
				} `json:"sum_sent"`
				SumReceived struct {
					Seconds float64 `json:"seconds"`
				} `json:"sum_received"`
			} `json:"end"`
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &j) != nil || j.Error != "" || j.End.SumSent.Bytes == 0 {
			continue
		}
		secs := max(j.End.SumSent.Seconds, j.End.SumReceived.Seconds)
		ideal := results.Ideal(uint64(j.End.SumSent.Bytes), rateBits, rttNs, 1448, 14+20+32+24)
		xs = append(xs, secs*1e9/ideal)
		retx += j.End.SumSent.Retransmits
	}
	return xs, n, retx, nil
}

func readMeta(path string) map[string]int64 {
	m := map[string]int64{}
	b, _ := os.ReadFile(path)
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, "=")
		if ok {
			m[k], _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return m
}

// load reads every run of a mode (DIR/MODE/1, 2, ...) into one row: the
// counters summed, the flows pooled, the peak and p99 of the run with the
// median peak (and every run's peak), the queue series of that run.
func load(dir, mode string, rateBits float64, rttNs int64, k float64) (*row, error) {
	runs, _ := filepath.Glob(filepath.Join(dir, mode, "[0-9]*"))
	if len(runs) == 0 {
		return nil, fmt.Errorf("no runs in %s", filepath.Join(dir, mode))
	}
	r := &row{mode: mode, label: caseLabel(mode)}
	var each []*row
	for _, d := range runs {
		x, err := loadRun(d, mode, rateBits, rttNs, k)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d, err)
		}
		each = append(each, x)
		r.runs++
		r.drops += x.drops
		r.retx += x.retx
		r.sent += x.sent
		r.supp += x.supp
		r.fromCache += x.fromCache
		r.cacheHits += x.cacheHits
		r.cacheUpdates += x.cacheUpdates
		r.bloomMax = max(r.bloomMax, x.bloomMax)
		r.valid += x.valid
		r.incastX = append(r.incastX, x.incastX...)
		r.bgX = append(r.bgX, x.bgX...)
		r.incast.n += x.incast.n
		r.bg.n += x.bg.n
	}
	sort.Slice(each, func(i, j int) bool { return each[i].peak < each[j].peak })
	med := each[(len(each)-1)/2]
	r.peak, r.p99, r.series = med.peak, med.p99, med.series
	for _, x := range each {
		r.peaks = append(r.peaks, x.peak)
	}
	n, nb := r.incast.n, r.bg.n
	r.incast, r.bg = summarize(r.incastX, n), summarize(r.bgX, nb)
	return r, nil
}

func loadRun(d, mode string, rateBits float64, rttNs int64, k float64) (*row, error) {
	r := &row{mode: mode}
	if b, err := os.ReadFile(filepath.Join(d, "verdict.txt")); err == nil && strings.HasPrefix(string(b), "fidelity: VALID") {
		r.valid = 1
	}
	sw1, err := readProm(filepath.Join(d, "sw1.prom"))
	if err != nil {
		return nil, err
	}
	sw2, err := readProm(filepath.Join(d, "sw2.prom"))
	if err != nil {
		return nil, err
	}
	r.peak = sum(sw2, "gswitch_sfc_queue_peak_bytes", port("r1"))
	if f := sw2["gswitch_sfc_queue_depth_bytes"]; f != nil {
		for _, m := range f.GetMetric() {
			if label(m, "port") == "r1" {
				// Interpolated within its bucket (x1.33 to x1.5 wide), so at most the peak.
				r.p99 = min(quantile(m.GetHistogram(), 0.99), r.peak)
			}
		}
	}
	for _, fams := range []map[string]*dto.MetricFamily{sw1, sw2} {
		r.drops += sum(fams, "gswitch_drops_total", func(m *dto.Metric) bool { return congestion[label(m, "reason")] })
		r.drops += sum(fams, "gswitch_xsk_kernel_total", func(m *dto.Metric) bool { return label(m, "counter") == "rx_dropped" })
		r.sent += sum(fams, "gswitch_sfc_bts_sent_total", nil)
		r.fromCache += sum(fams, "gswitch_sfc_bts_sent_total", func(m *dto.Metric) bool { return label(m, "source") == "cache" })
		r.supp += sum(fams, "gswitch_sfc_bts_suppressed_total", func(m *dto.Metric) bool { return label(m, "reason") == "bloom" })
		r.cacheHits += sum(fams, "gswitch_sfc_cache_hits_total", nil)
		r.cacheUpdates += sum(fams, "gswitch_sfc_cache_updates_total", nil)
		if f := fams["gswitch_sfc_bloom_flows_max"]; f != nil {
			for _, m := range f.GetMetric() {
				r.bloomMax = max(r.bloomMax, value(m))
			}
		}
	}
	var xs []float64
	var n int
	var retx uint64
	if mode == "tcp" {
		xs, n, retx, err = iperfSlowdowns(d, rateBits/k, int64(float64(rttNs)*k))
	} else {
		xs, n, retx, err = slowdowns(filepath.Join(d, "incast.json"))
	}
	if err != nil {
		return nil, err
	}
	r.incast, r.incastX, r.retx = stats{n: n}, xs, retx
	if xs, n, retx, err = slowdowns(filepath.Join(d, "bg.json")); err == nil {
		r.bg, r.bgX = stats{n: n}, xs
		r.retx += retx
	}
	// The congested port's queue over time, from the incast's start.
	if b, err := os.ReadFile(filepath.Join(d, "queues.json")); err == nil {
		var s map[string][][2]float64
		if json.Unmarshal(b, &s) == nil {
			// Time 0 is the last sample before the queue first grew: on a loaded machine the
			// senders start up to a second after the instant they were given.
			// The watch's one series, r1's port (whichever metrics port the topology gave sw2).
			var pts [][2]float64
			for key, v := range s {
				if strings.HasSuffix(key, "/r1") {
					pts = v
					break
				}
			}
			at := float64(readMeta(filepath.Join(d, "meta.txt"))["incast_at_ns"])
			for i, p := range pts {
				if p[1] > 0 {
					if i > 0 {
						at = pts[i-1][0]
					}
					break
				}
			}
			for _, p := range pts {
				r.series = append(r.series, plotter.XY{X: (p[0] - at) / 1e3 / k, Y: p[1] / 1000})
			}
		}
	}
	return r, nil
}

var labels = map[string]string{
	"tcp":           "no SFC, kernel TCP (iperf3)",
	"off":           "no SFC, gsperf",
	"egress":        "egress BTS",
	"ingress":       "ingress BTS",
	"ingress_cache": "ingress BTS + cache (SFC)",
	"estimator":     "SFC + estimator",
	"dcqcn":         "no SFC, DCQCN+W (ECN at one BDP)",
	"hpcc":          "no SFC, HPCC (INT)",
}

func table(w io.Writer, rows []*row) {
	fmt.Fprintln(w, "| mode | peak buffer (KB): median [runs] | p99 buffer (KB) | drops | retransmitted | incast slowdown avg / p99 (done) | background slowdown avg / p99 (done) | BTS sent (from cache) | BTS suppressed by Bloom | suppression ratio | cache hits | Bloom flows max | valid runs (fidelity) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		ratio := "–"
		if r.sent+r.supp > 0 {
			ratio = fmt.Sprintf("%.0f%%", 100*r.supp/(r.sent+r.supp))
		}
		bg := "–"
		if r.bg.n > 0 {
			bg = fmt.Sprintf("%.1f / %.1f (%d/%d)", r.bg.avg, r.bg.p99, r.bg.done, r.bg.n)
		}
		var runs []string
		for _, p := range r.peaks {
			runs = append(runs, fmt.Sprintf("%.0f", p/1000))
		}
		incast := fmt.Sprintf("%.1f / %.1f (%d/%d)", r.incast.avg, r.incast.p99, r.incast.done, r.incast.n)
		if r.mode == "tcp" {
			incast = fmt.Sprintf("not measured (%d/%d)", r.incast.done, r.incast.n) // iperf3 -n times the sender's writes, not the delivery
		}
		fmt.Fprintf(w, "| %s | %.0f [%s] | %.0f | %.0f | %d | %s | %s | %.0f (%.0f) | %.0f | %s | %.0f | %.0f | %d of %d |\n",
			r.label, r.peak/1000, strings.Join(runs, " "), r.p99/1000, r.drops, r.retx, incast, bg,
			r.sent, r.fromCache, r.supp, ratio, r.cacheHits, r.bloomMax, r.valid, r.runs)
	}
}

func plots(dir string, rows []*row, rate, k float64) error {
	// Queue over time.
	p := plot.New()
	p.Title.Text = fmt.Sprintf("incast port (sw2 -> r1): queue depth from the incast's start (timescale %g)", k)
	p.X.Label.Text = "us of the fabric"
	p.Y.Label.Text = "KB"
	for i, r := range rows {
		if len(r.series) == 0 {
			continue
		}
		var pts plotter.XYs
		for _, xy := range r.series {
			if xy.X >= -20 && xy.X <= 2000 {
				pts = append(pts, xy)
			}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i)
		p.Add(l)
		p.Legend.Add(r.label, l)
	}
	p.Legend.Top = true
	if err := p.Save(9*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, "sfc-queue.png")); err != nil {
		return err
	}
	// Peak and p99 buffer, slowdowns: bars per mode.
	bars := func(file, title, ylabel string, names []string, vals func(r *row) []float64) error {
		p := plot.New()
		p.Title.Text = title
		p.Y.Label.Text = ylabel
		w := vg.Points(10)
		for i, r := range rows {
			b, err := plotter.NewBarChart(plotter.Values(vals(r)), w)
			if err != nil {
				return err
			}
			b.Color = plotutil.Color(i)
			b.Offset = w * vg.Length(float64(i)-float64(len(rows)-1)/2)
			p.Add(b)
			p.Legend.Add(r.label, b)
		}
		p.Legend.Top = true
		p.Legend.Left = true
		p.Legend.XOffs = vg.Points(40)
		p.NominalX(names...)
		return p.Save(9*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, file))
	}
	if err := bars("sfc-buffer.png", "buffer at the incast port", "KB", []string{"peak", "p99 (per arrival)"},
		func(r *row) []float64 { return []float64{r.peak / 1000, r.p99 / 1000} }); err != nil {
		return err
	}
	return bars("sfc-slowdown.png", fmt.Sprintf("slowdown (FCT / ideal at %g Gbit/s + base RTT; the same on both clocks)", rate/1e9), "slowdown",
		[]string{"incast avg", "incast p99", "background avg", "background p99"},
		func(r *row) []float64 {
			if r.mode == "tcp" {
				return []float64{0, 0, r.bg.avg, r.bg.p99} // the incast's FCT is not measured with iperf3
			}
			return []float64{r.incast.avg, r.incast.p99, r.bg.avg, r.bg.p99}
		})
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "watch" {
		if err := watch(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "sfc-report:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "sweep" {
		if err := sweep(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "sfc-report:", err)
			os.Exit(1)
		}
		return
	}
	dir := flag.String("dir", "", "the script's output directory")
	modes := flag.String("modes", "tcp off egress ingress ingress_cache estimator", "modes, in table order")
	rate := flag.Float64("rate", 100e9, "the senders' and the incast port's rate, bit/s of the fabric")
	rtt := flag.Duration("base-rtt", 0, "base RTT for the TCP baseline's slowdown, the fabric's")
	k := flag.Float64("timescale", 1, "the runs' timescale K: this machine ran the fabric K times slower")
	flag.Parse()
	if *k < 1 {
		fmt.Fprintf(os.Stderr, "sfc-report: -timescale %g: want at least 1\n", *k)
		os.Exit(2)
	}
	var rows []*row
	for _, m := range strings.Fields(*modes) {
		r, err := load(*dir, m, *rate, rtt.Nanoseconds(), *k)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sfc-report: mode %s: %v\n", m, err)
			os.Exit(1)
		}
		rows = append(rows, r)
	}
	f, err := os.Create(filepath.Join(*dir, "table.md"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	table(io.MultiWriter(f, os.Stdout), rows)
	f.Close()
	if err := plots(*dir, rows, *rate, *k); err != nil {
		fmt.Fprintln(os.Stderr, "sfc-report:", err)
		os.Exit(1)
	}
}
