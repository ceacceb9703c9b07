// Package results holds gsperf's per-flow records and the summary the
// papers report: slowdown (FCT over the ideal time of the flow's size at the
// bottleneck rate plus the base RTT) per flow-size bucket.
//
// # Two clocks
//
// A run at timescale K (package perf/timescale) has two clocks: the wall
// clock it ran on and the fabric's, K times faster. Every time a record
// holds is on the wall clock under its old name (start_ns, fct_ns,
// timeline_step_ns, start_unix_ns, mech.*_ns: what scripts have always
// read), and on the fabric's clock under a name with _fabric_ (start_fabric_ns,
// fct_fabric_ns, timeline_step_fabric_ns, mech.*_fabric_ns); params hold
// the timescale and the flags as given, in the fabric's units. Slowdown
// needs no twin: the FCT and the ideal time are both wall (the ideal from
// the wall rate and base RTT), and K cancels. A run without a timescale is
// at K 1: both clocks agree.
package results

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gswitch/gswitch/fidelity"
	"github.com/gswitch/gswitch/perf/timescale"
)

// Flow is one flow's record.
type Flow struct {
	ID          uint64  `json:"id"`
	Src         string  `json:"src"`
	Dst         string  `json:"dst"`
	Size        uint64  `json:"size"`
	StartNs     int64   `json:"start_ns"`                // since the run started, wall clock
	StartUnixNs int64   `json:"start_unix_ns,omitempty"` // wall clock, to line up flows from several clients
	FCTNs       int64   `json:"fct_ns"`                  // wall clock; 0 if it did not complete
	Slowdown    float64 `json:"slowdown"`                // the same on both clocks
	// StartFabricNs and FCTFabricNs are StartNs and FCTNs on the fabric's
	// clock (divided by the timescale; SetTimescale fills them).
	StartFabricNs int64  `json:"start_fabric_ns"`
	FCTFabricNs   int64  `json:"fct_fabric_ns"`
	Retransmits   uint64 `json:"retransmits"`
	Timeouts      uint64 `json:"timeouts"`
	Complete      bool   `json:"complete"`
	// Timeline holds the bytes acknowledged at each TimelineStepNs since the
	// flow started (when the client ran with -timeline).
	Timeline             []uint64 `json:"timeline,omitempty"`
	TimelineStepNs       int64    `json:"timeline_step_ns,omitempty"`        // wall clock
	TimelineStepFabricNs int64    `json:"timeline_step_fabric_ns,omitempty"` // the same step on the fabric's clock
	// Mech holds the mode's own counters (xpass: credits, wasted, requests,
	// stops, segments, first_credit_ns; dctcp: ece_acks, the acks that
	// echoed a CE mark, reductions, the window cuts they caused, and
	// alpha_ppm, the flow's estimate of its marked fraction at its end in
	// millionths; dcqcn: cnps, the CNPs received, rate_cuts, the cuts
	// they made, rate_ppm, the flow's rate at its end in millionths of its
	// line rate, and alpha_ppm). A key ending in _ns is a wall time;
	// SetTimescale adds its twin on the fabric's clock, ending in _fabric_ns.
	Mech map[string]uint64 `json:"mech,omitempty"`
}

// fabricTimes fills f's fabric-clock fields from its wall-clock ones.
func (f *Flow) fabricTimes(sc timescale.Scale) {
	f.StartFabricNs = sc.FabricNs(f.StartNs)
	f.FCTFabricNs = sc.FabricNs(f.FCTNs)
	f.TimelineStepFabricNs = sc.FabricNs(f.TimelineStepNs)
	for k, v := range f.Mech {
		if base, ok := strings.CutSuffix(k, "_ns"); ok && !strings.HasSuffix(base, "_fabric") {
			f.Mech[base+"_fabric_ns"] = uint64(sc.FabricNs(int64(v)))
		}
	}
}

// Ideal is the time size bytes take at rateBits plus the base RTT, in ns.
// Bytes are counted with headers: each MSS of payload travels in a frame of
// MSS + overhead bytes.
func Ideal(size uint64, rateBits float64, baseRTTNs int64, mss, overhead int) float64 {
	segs := math.Ceil(float64(size) / float64(mss))
	wire := float64(size) + segs*float64(overhead)
	return wire*8/rateBits*1e9 + float64(baseRTTNs)
}

// Bucket is a flow-size range [Lo, Hi).
type Bucket struct {
	Name   string
	Lo, Hi uint64
}

// Buckets are the size ranges the papers report (pFabric, BFC).
var Buckets = []Bucket{{"<100KB", 0, 100_000}, {"100KB-1MB", 100_000, 1_000_000}, {">1MB", 1_000_000, math.MaxUint64}}

// Stat summarizes the slowdowns of one bucket (Avg to P99), and the
// completion times on both clocks.
type Stat struct {
	Bucket     string  `json:"bucket"`
	Flows      int     `json:"flows"`
	Incomplete int     `json:"incomplete"`
	Avg        float64 `json:"avg"`
	Median     float64 `json:"median"`
	P95        float64 `json:"p95"`
	P99        float64 `json:"p99"`

	FCTAvgNs          float64 `json:"fct_avg_ns"` // wall clock
	FCTMedianNs       float64 `json:"fct_median_ns"`
	FCTP99Ns          float64 `json:"fct_p99_ns"`
	FCTFabricAvgNs    float64 `json:"fct_fabric_avg_ns"` // the fabric's clock
	FCTFabricMedianNs float64 `json:"fct_fabric_median_ns"`
	FCTFabricP99Ns    float64 `json:"fct_fabric_p99_ns"`
}

// Run is a whole run: its parameters, flows and summary.
type Run struct {
	Name    string            `json:"name"`
	Params  map[string]string `json:"params"`
	Flows   []Flow            `json:"flows"`
	Summary []Stat            `json:"summary"`
	// Fidelity is the judgement of the switches' metrics over the run
	// (gsperf client -fidelity), if taken.
	Fidelity *fidelity.Verdict `json:"fidelity,omitempty"`
}

// SetTimescale records the run's timescale in its params and fills every
// flow's fabric-clock fields from its wall-clock ones.
func (r *Run) SetTimescale(sc timescale.Scale) {
	if r.Params == nil {
		r.Params = map[string]string{}
	}
	r.Params["timescale"] = sc.String()
	for i := range r.Flows {
		r.Flows[i].fabricTimes(sc)
	}
}

// Timescale is the run's timescale from its params (1 if the run has none).
func (r *Run) Timescale() (timescale.Scale, error) {
	k, ok := r.Params["timescale"]
	if !ok {
		return timescale.Scale{}, nil
	}
	sc, err := timescale.Parse(k)
	if err != nil {
		return timescale.Scale{}, fmt.Errorf("run %q: params.timescale %w", r.Name, err)
	}
	return sc, nil
}

// Summarize fills r.Summary (all flows, then each bucket).
func (r *Run) Summarize() {
	r.Summary = nil
	all := Bucket{"all", 0, math.MaxUint64}
	for _, b := range append([]Bucket{all}, Buckets...) {
		var s, wall, fabric []float64
		st := Stat{Bucket: b.Name}
		for _, f := range r.Flows {
			if f.Size < b.Lo || f.Size >= b.Hi {
				continue
			}
			st.Flows++
			if !f.Complete {
				st.Incomplete++
				continue
			}
			s = append(s, f.Slowdown)
			wall = append(wall, float64(f.FCTNs))
			fabric = append(fabric, float64(f.FCTFabricNs))
		}
		if len(s) > 0 {
			st.Avg, st.Median, st.P95, st.P99 = describe(s)
			st.FCTAvgNs, st.FCTMedianNs, _, st.FCTP99Ns = describe(wall)
			st.FCTFabricAvgNs, st.FCTFabricMedianNs, _, st.FCTFabricP99Ns = describe(fabric)
		}
		r.Summary = append(r.Summary, st)
	}
}

// describe sorts s and returns its average, median, p95 and p99.
func describe(s []float64) (avg, median, p95, p99 float64) {
	sort.Float64s(s)
	var sum float64
	for _, v := range s {
		sum += v
	}
	return sum / float64(len(s)), Quantile(s, 0.5), Quantile(s, 0.95), Quantile(s, 0.99)
}

// Quantile of sorted s (nearest rank).
func Quantile(s []float64, q float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// WriteJSON writes the run to path.
func (r *Run) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// ReadJSON reads a run written by WriteJSON.
func ReadJSON(path string) (*Run, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// WriteCSV writes one line per flow.
func (r *Run) WriteCSV(w io.Writer) error {
	c := csv.NewWriter(w)
	// The wall-clock columns keep their names and places; the fabric's
	// clock comes after them.
	c.Write([]string{"id", "src", "dst", "size", "start_ns", "fct_ns", "slowdown", "retransmits", "timeouts", "complete", "start_fabric_ns", "fct_fabric_ns"})
	for _, f := range r.Flows {
		c.Write([]string{strconv.FormatUint(f.ID, 10), f.Src, f.Dst, strconv.FormatUint(f.Size, 10), strconv.FormatInt(f.StartNs, 10),
			strconv.FormatInt(f.FCTNs, 10), strconv.FormatFloat(f.Slowdown, 'f', 3, 64), strconv.FormatUint(f.Retransmits, 10),
			strconv.FormatUint(f.Timeouts, 10), strconv.FormatBool(f.Complete),
			strconv.FormatInt(f.StartFabricNs, 10), strconv.FormatInt(f.FCTFabricNs, 10)})
	}
	c.Flush()
	return c.Error()
}

// Table prints the summary: slowdowns, then completion times on both
// clocks, then the fidelity verdict if the run has one.
func (r *Run) Table(w io.Writer) {
	fmt.Fprintf(w, "%-10s %6s %5s %9s %9s %9s %9s\n", "size", "flows", "lost", "avg", "median", "p95", "p99")
	for _, s := range r.Summary {
		fmt.Fprintf(w, "%-10s %6d %5d %9.2f %9.2f %9.2f %9.2f\n", s.Bucket, s.Flows, s.Incomplete, s.Avg, s.Median, s.P95, s.P99)
	}
	k := "1"
	if sc, err := r.Timescale(); err == nil {
		k = sc.String()
	}
	fmt.Fprintf(w, "completion times, timescale %s (fabric = wall / %s; slowdown is the same on both clocks):\n", k, k)
	fmt.Fprintf(w, "%-10s %10s %10s %10s   %10s %10s %10s\n", "size", "fabric avg", "median", "p99", "wall avg", "median", "p99")
	for _, s := range r.Summary {
		fmt.Fprintf(w, "%-10s %s %s %s   %s %s %s\n", s.Bucket, ns(s.FCTFabricAvgNs), ns(s.FCTFabricMedianNs), ns(s.FCTFabricP99Ns),
			ns(s.FCTAvgNs), ns(s.FCTMedianNs), ns(s.FCTP99Ns))
	}
	if r.Fidelity != nil {
		fmt.Fprintln(w, r.Fidelity)
	}
}

// ns prints a time in ns with four significant digits and its unit,
// right-aligned in 10 columns.
func ns(v float64) string {
	var s string
	switch {
	case v == 0:
		s = "-"
	case v >= 1e9:
		s = strconv.FormatFloat(v/1e9, 'g', 4, 64) + "s"
	case v >= 1e6:
		s = strconv.FormatFloat(v/1e6, 'g', 4, 64) + "ms"
	case v >= 1e3:
		s = strconv.FormatFloat(v/1e3, 'g', 4, 64) + "µs"
	default:
		s = strconv.FormatFloat(v, 'f', 0, 64) + "ns"
	}
	return strings.Repeat(" ", max(0, 10-utf8.RuneCountInString(s))) + s
}
