package fidelity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The metric names this package reads (doc.go describes them).
const (
	MetricTimescale  = "gswitch_timescale"
	MetricWakeLate   = "gswitch_worker_wake_late_seconds"
	MetricPassGap    = "gswitch_worker_pass_gap_seconds"
	MetricTxLate     = "gswitch_port_tx_late_seconds_total"
	MetricCreditLate = "gswitch_port_credit_late_seconds_total"
	MetricDelayError = "gswitch_port_delay_error_seconds"
	MetricPortRate   = "gswitch_port_rate_bytes_per_second"
)

// Histogram is one Prometheus histogram: cumulative counts at ascending
// finite upper bounds (seconds), the count of every observation (the +Inf
// bucket) and their sum (seconds).
type Histogram struct {
	Bounds     []float64 `json:"bounds"`
	Cumulative []uint64  `json:"cumulative"`
	Count      uint64    `json:"count"`
	Sum        float64   `json:"sum"`
}

// Switch is what one switch's metrics said at one instant. Maps are keyed
// by the worker or port label; a nil map means the switch does not export
// that metric.
type Switch struct {
	Name      string    `json:"name"`             // as the caller names it (sw1), or the URL's host:port
	Source    string    `json:"source,omitempty"` // the URL scraped
	Time      time.Time `json:"time"`             // when, wall clock (the middle of the request)
	Timescale float64   `json:"timescale"`        // gswitch_timescale; 0 if not exported (K 1)

	WakeLate   map[string]Histogram `json:"wake_late,omitempty"`   // by worker
	PassGap    map[string]Histogram `json:"pass_gap,omitempty"`    // by worker
	DelayError map[string]Histogram `json:"delay_error,omitempty"` // by port
	TxLate     map[string]float64   `json:"tx_late,omitempty"`     // by port, seconds (a counter)
	CreditLate map[string]float64   `json:"credit_late,omitempty"` // by port, seconds (a counter)
	Rate       map[string]float64   `json:"rate,omitempty"`        // by port, bytes/s wall (0: unlimited)
}

// K is the switch's timescale (1 when it exports none).
func (s *Switch) K() float64 {
	if s.Timescale <= 0 || math.IsNaN(s.Timescale) || math.IsInf(s.Timescale, 0) {
		return 1
	}
	return s.Timescale
}

// Snapshot is the metrics of one or more switches, taken together.
type Snapshot struct {
	Switches []Switch `json:"switches"`
}

// Parse reads one switch's metrics in Prometheus' text exposition format,
// keeping the metrics this package judges by. at is when they were taken.
func Parse(name string, r io.Reader, at time.Time) (Switch, error) {
	tp := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := tp.TextToMetricFamilies(r)
	if err != nil {
		return Switch{}, fmt.Errorf("%s: metrics do not parse: %w", name, err)
	}
	sw := Switch{Name: name, Time: at}
	if f := fams[MetricTimescale]; f != nil {
		for _, m := range f.GetMetric() {
			if v, ok := scalar(m); ok && v > 0 && !math.IsInf(v, 0) {
				sw.Timescale = v
			}
		}
	}
	sw.WakeLate = histograms(fams[MetricWakeLate], "worker")
	sw.PassGap = histograms(fams[MetricPassGap], "worker")
	sw.DelayError = histograms(fams[MetricDelayError], "port")
	sw.TxLate = scalars(fams[MetricTxLate], "port")
	sw.CreditLate = scalars(fams[MetricCreditLate], "port")
	sw.Rate = scalars(fams[MetricPortRate], "port")
	return sw, nil
}

// ParseBytes is Parse of an exposition held in b.
func ParseBytes(name string, b []byte, at time.Time) (Switch, error) {
	return Parse(name, bytes.NewReader(b), at)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// scalar is a counter's, gauge's or untyped metric's value; NaN is no value.
func scalar(m *dto.Metric) (float64, bool) {
	var v float64
	switch {
	case m.Counter != nil:
		v = m.Counter.GetValue()
	case m.Gauge != nil:
		v = m.Gauge.GetValue()
	case m.Untyped != nil:
		v = m.Untyped.GetValue()
	default:
		return 0, false
	}
	return v, !math.IsNaN(v)
}

func scalars(f *dto.MetricFamily, key string) map[string]float64 {
	if f == nil {
		return nil
	}
	out := map[string]float64{}
	for _, m := range f.GetMetric() {
		if v, ok := scalar(m); ok {
			out[label(m, key)] += v
		}
	}
	return out
}

func histograms(f *dto.MetricFamily, key string) map[string]Histogram {
	if f == nil {
		return nil
	}
	out := map[string]Histogram{}
	for _, m := range f.GetMetric() {
		if h := m.GetHistogram(); h != nil {
			out[label(m, key)] = fromDTO(h)
		}
	}
	return out
}

// fromDTO keeps a histogram's finite buckets in ascending order. Counts
// are made cumulative (never decreasing) and no more than the total, so
// what a quantile reads is a distribution whatever the exposition said.
func fromDTO(h *dto.Histogram) Histogram {
	type b struct {
		le float64
		n  uint64
	}
	var bs []b
	for _, x := range h.GetBucket() {
		le := x.GetUpperBound()
		if math.IsNaN(le) || math.IsInf(le, 0) {
			continue
		}
		bs = append(bs, b{le, x.GetCumulativeCount()})
	}
	sort.SliceStable(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
	out := Histogram{Count: h.GetSampleCount(), Sum: h.GetSampleSum()}
	if math.IsNaN(out.Sum) {
		out.Sum = 0
	}
	var run uint64
	for i, x := range bs {
		if i > 0 && x.le == bs[i-1].le {
			continue // a repeated bound: the first one counts
		}
		run = max(run, x.n)
		out.Bounds = append(out.Bounds, x.le)
		out.Cumulative = append(out.Cumulative, run)
	}
	out.Count = max(out.Count, run)
	return out
}

// Target is one switch's metrics endpoint.
type Target struct {
	Name string // how reports name the switch
	URL  string
}

// ParseTargets reads a comma-separated list of metrics endpoints, each a
// URL or name=URL ("sw1=http://127.0.0.1:9101/metrics"); without a name the
// switch is called by the URL's host:port. A URL without a path gets
// /metrics.
func ParseTargets(list string) ([]Target, error) {
	var out []Target
	seen := map[string]bool{}
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, raw, named := strings.Cut(item, "=")
		if !named || strings.Contains(name, "/") || strings.Contains(name, ":") {
			name, raw = "", item // an = inside the URL's query, not a name
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%q is not a metrics URL (write http://host:port/metrics, or name=http://host:port/metrics)", item)
		}
		if u.Path == "" {
			u.Path = "/metrics"
		}
		if name == "" {
			name = u.Host
		}
		if seen[name] {
			return nil, fmt.Errorf("%q: switch %s named twice", item, name)
		}
		seen[name] = true
		out = append(out, Target{Name: name, URL: u.String()})
	}
	if len(out) == 0 {
		return nil, errors.New("no metrics URL given (write http://host:port/metrics, several separated by commas)")
	}
	return out, nil
}

// Scrape takes a snapshot of every target, one after the other, with
// client (nil: a client with a 5 s timeout).
func Scrape(ctx context.Context, client *http.Client, targets []Target) (Snapshot, error) {
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	var s Snapshot
	for _, t := range targets {
		sw, err := scrapeOne(ctx, client, t)
		if err != nil {
			return Snapshot{}, err
		}
		s.Switches = append(s.Switches, sw)
	}
	return s, nil
}

func scrapeOne(ctx context.Context, client *http.Client, t Target) (Switch, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.URL, nil)
	if err != nil {
		return Switch{}, fmt.Errorf("%s: %w", t.Name, err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	begin := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return Switch{}, fmt.Errorf("%s: %w", t.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Switch{}, fmt.Errorf("%s: %s answered %s", t.Name, t.URL, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return Switch{}, fmt.Errorf("%s: %w", t.Name, err)
	}
	end := time.Now()
	sw, err := ParseBytes(t.Name, body, begin.Add(end.Sub(begin)/2))
	sw.Source = t.URL
	return sw, err
}

// Save writes the snapshot as JSON to path.
func (s Snapshot) Save(path string) error {
	b, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// Load reads a snapshot Save wrote.
func Load(path string) (Snapshot, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Snapshot{}, err
	}
	var s Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return Snapshot{}, fmt.Errorf("%s: not a fidelity snapshot: %w", path, err)
	}
	return s, nil
}
