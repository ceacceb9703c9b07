package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gswitch/gswitch/control"
	"github.com/gswitch/gswitch/fidelity"
)

// FidelityReport is what gswitchctl fidelity prints (-o json prints it as
// is): per worker how late it ran, per port the line time it lost and its
// delay line's error, over a window, and the fidelity package's verdict on
// the window. Times are this machine's (wall) seconds.
type FidelityReport struct {
	Switch    string           `json:"switch"`
	Since     string           `json:"since"` // "start", or the interval between the two snapshots
	Window    float64          `json:"window_seconds"`
	Timescale float64          `json:"timescale"`
	Workers   []WorkerFidelity `json:"workers"`
	Ports     []PortFidelity   `json:"ports"`
	Verdict   fidelity.Verdict `json:"verdict"`
}

// Quantiles sum up one histogram of a window: how many observations, and
// the 50th, 99th and 99.9th percentiles and the largest, in seconds, as
// read from fidelity's buckets (each within a bucket's width, 19%; Max is
// the upper bound of the highest bucket reached). Beyond says the largest
// is past the last bound (4.19 s): Max is then that bound.
type Quantiles struct {
	Count  uint64  `json:"count"`
	P50    float64 `json:"p50"`
	P99    float64 `json:"p99"`
	P999   float64 `json:"p99_9"`
	Max    float64 `json:"max"`
	Beyond bool    `json:"beyond,omitempty"`
}

// WorkerFidelity is one worker in a FidelityReport.
type WorkerFidelity struct {
	Worker   string    `json:"worker"`
	WakeLate Quantiles `json:"wake_late"` // timed wake-ups past their deadline
	PassGap  Quantiles `json:"pass_gap"`  // passes without a sleep between
	TickLate Quantiles `json:"tick_late"` // mechanisms' ticks
}

// PortFidelity is one port in a FidelityReport.
type PortFidelity struct {
	Port     string `json:"port"`
	RateBits uint64 `json:"rate_bits"`
	// Line time lost over the window, percent of the window: the data
	// shaper's, and the credit lane's meter's (when the port has one).
	DataLostPercent   float64  `json:"data_lost_percent"`
	CreditLostPercent *float64 `json:"credit_lost_percent,omitempty"`
	// How late frames left the delay lines (when the port has one).
	DelayError *Quantiles `json:"delay_error,omitempty"`
}

func quantiles(h fidelity.Histogram) Quantiles {
	q := Quantiles{Count: h.Count}
	if h.Count == 0 {
		return q
	}
	q.P50, _, _ = h.Quantile(0.5)
	q.P99, _, _ = h.Quantile(0.99)
	q.P999, _, _ = h.Quantile(0.999)
	q.Max, q.Beyond, _ = h.Quantile(1)
	return q
}

// histDiff is b - a, bucket by bucket (two states of one of the switch's
// histograms: the same bounds; one that went backwards is taken whole).
func histDiff(a, b fidelity.Histogram) fidelity.Histogram {
	if len(a.Cumulative) != len(b.Cumulative) || a.Count > b.Count {
		return b
	}
	d := fidelity.Histogram{Bounds: b.Bounds, Cumulative: make([]uint64, len(b.Cumulative)), Count: b.Count - a.Count, Sum: b.Sum - a.Sum}
	for i := range b.Cumulative {
		if a.Cumulative[i] > b.Cumulative[i] {
			return b
		}
		d.Cumulative[i] = b.Cumulative[i] - a.Cumulative[i]
	}
	return d
}

// fidelityReport makes the report of the window from before to after (nil
// before: since the switch started) and judges it against bounds.
func fidelityReport(before *control.FidelityView, after control.FidelityView, bounds fidelity.Bounds) (FidelityReport, error) {
	start := fidelity.Switch{Name: after.Switch.Name, Time: after.Started, Timescale: after.Switch.Timescale}
	since := "start"
	ticks := map[string]fidelity.Histogram{}
	if before != nil {
		start = before.Switch
		since = after.Switch.Time.Sub(before.Switch.Time).Round(time.Millisecond).String()
		ticks = before.TickLate
	}
	w, err := fidelity.Diff(fidelity.Snapshot{Switches: []fidelity.Switch{start}}, fidelity.Snapshot{Switches: []fidelity.Switch{after.Switch}})
	if err != nil {
		return FidelityReport{}, err
	}
	win := w.Switches[0]
	r := FidelityReport{Switch: after.Switch.Name, Since: since, Window: win.Duration.Seconds(), Timescale: win.K(),
		Verdict: fidelity.Evaluate(w, bounds)}
	for _, wk := range after.Workers {
		r.Workers = append(r.Workers, WorkerFidelity{Worker: wk, WakeLate: quantiles(win.WakeLate[wk]), PassGap: quantiles(win.PassGap[wk]),
			TickLate: quantiles(histDiff(ticks[wk], after.TickLate[wk]))})
	}
	for _, p := range after.Ports {
		pf := PortFidelity{Port: p.Name, RateBits: p.RateBits}
		if r.Window > 0 {
			pf.DataLostPercent = 100 * win.TxLate[p.Name] / r.Window
			if p.Credit {
				c := 100 * win.CreditLate[p.Name] / r.Window
				pf.CreditLostPercent = &c
			}
		}
		if p.Delay {
			q := quantiles(win.DelayError[p.Name])
			pf.DelayError = &q
		}
		r.Ports = append(r.Ports, pf)
	}
	return r, nil
}

// fidelityMain shows how faithfully the switch ran, since it started or
// over an interval, and exits 0 when the fidelity verdict is VALID, 1 when
// it is INVALID (or on an error).
func fidelityMain(args []string) int {
	f := newCtlFlags("fidelity", "fidelity [-interval D] [-bounds lateness=1,lost=1%,delay=1] [-s SWITCH] [-o json]")
	interval := f.fs.Duration("interval", 0, "judge the window between two snapshots this far apart (0: since the switch started)")
	boundsFlag := f.fs.String("bounds", "", "what VALID allows, in frame times of the fastest link and percent of line time (default lateness=1,lost=1%,delay=1)")
	pos, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if !wantArgs(f, pos, 0, 0) {
		return 2
	}
	bounds, err := fidelity.ParseBounds(*boundsFlag)
	if err != nil {
		fmt.Fprintf(os.Stderr, "gswitchctl fidelity: -bounds %v\n", err)
		return 2
	}
	if *interval < 0 {
		fmt.Fprintln(os.Stderr, "gswitchctl fidelity: -interval must be positive (or 0: since the switch started)")
		return 2
	}
	cl, err := f.dial()
	if err != nil {
		return fail(err)
	}
	defer cl.Close()
	var first control.FidelityView
	if err := cl.Call(control.Request{Cmd: "fidelity"}, &first); err != nil {
		return fail(err)
	}
	var before *control.FidelityView
	last := first
	if *interval > 0 {
		last = control.FidelityView{} // not first's maps, which decoding would fill

		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		select {
		case <-ctx.Done():
			return 1
		case <-time.After(*interval):
		}
		if err := cl.Call(control.Request{Cmd: "fidelity"}, &last); err != nil {
			return fail(err)
		}
		before = &first
	}
	r, err := fidelityReport(before, last, bounds)
	if err != nil {
		return fail(err)
	}
	if f.json() {
		printJSONValue(r)
	} else {
		printFidelity(r)
	}
	if !r.Verdict.Valid {
		return 1
	}
	return 0
}

// printFidelity prints a report as tables and the verdict line.
func printFidelity(r FidelityReport) {
	window := (time.Duration(r.Window * 1e9)).Round(time.Millisecond).String()
	if r.Since == "start" {
		fmt.Printf("switch %s, timescale %s, since start (%s)\n", r.Switch, strconv.FormatFloat(r.Timescale, 'g', -1, 64), window)
	} else {
		fmt.Printf("switch %s, timescale %s, over %s\n", r.Switch, strconv.FormatFloat(r.Timescale, 'g', -1, 64), window)
	}
	t := newTable("WORKER", "LATE WAKE-UPS", "p50", "p99", "p99.9", "max", "PASSES", "GAP p50", "p99", "p99.9", "max", "TICKS", "TICK p99", "max")
	for _, w := range r.Workers {
		row := []string{w.Worker}
		row = append(row, qcols(w.WakeLate)...)
		row = append(row, qcols(w.PassGap)...)
		tq := qcols(w.TickLate)
		row = append(row, tq[0], tq[2], tq[4])
		t.row(row...)
	}
	t.flush()
	t = newTable("PORT", "RATE", "LOST DATA", "LOST CREDIT", "DELAYED", "DELAY ERR p50", "p99", "max")
	for _, p := range r.Ports {
		credit := "-"
		if p.CreditLostPercent != nil {
			credit = percent(*p.CreditLostPercent)
		}
		data := percent(p.DataLostPercent)
		if p.RateBits == 0 {
			data = "-"
		}
		delay := []string{"-", "-", "-", "-"}
		if d := p.DelayError; d != nil {
			q := qcols(*d)
			delay = []string{q[0], q[1], q[2], q[4]}
		}
		t.row(append([]string{p.Port, lineRate(p.RateBits), data, credit}, delay...)...)
	}
	t.flush()
	fmt.Println(r.Verdict.String())
}

// qcols formats Quantiles as count, p50, p99, p99.9, max ("-" when empty).
func qcols(q Quantiles) []string {
	if q.Count == 0 {
		return []string{"0", "-", "-", "-", "-"}
	}
	top := seconds(q.Max)
	if q.Beyond {
		top = ">" + top
	}
	return []string{count(q.Count), seconds(q.P50), seconds(q.P99), seconds(q.P999), top}
}

// seconds formats a time in seconds with three significant digits and a
// unit that keeps it readable: 870ns, 45.2µs, 1.68ms, 2.1s.
func seconds(s float64) string {
	switch {
	case s == 0:
		return "0"
	case s < 1e-6:
		return strconv.FormatFloat(s*1e9, 'f', 0, 64) + "ns"
	case s < 1e-3:
		return sig3(s*1e6) + "µs"
	case s < 1:
		return sig3(s*1e3) + "ms"
	}
	return sig3(s) + "s"
}

// sig3 is x (>= 1) with three significant digits, no trailing zeros.
func sig3(x float64) string {
	s := strconv.FormatFloat(x, 'f', max(2-int(math.Floor(math.Log10(x))), 0), 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// percent formats a share in percent: 0%, 0.012%, 3.4%.
func percent(p float64) string {
	if p == 0 {
		return "0%"
	}
	if p < 0.001 {
		return "<0.001%"
	}
	return strconv.FormatFloat(p, 'g', 3, 64) + "%"
}
