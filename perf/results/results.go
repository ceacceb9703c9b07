// Package results holds gsperf's per-flow records and the summary the
// papers report: slowdown (FCT over the ideal time of the flow's size at the
// bottleneck rate plus the base RTT) per flow-size bucket.
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
)

// Flow is one flow's record.
type Flow struct {
	ID          uint64  `json:"id"`
	Src         string  `json:"src"`
	Dst         string  `json:"dst"`
	Size        uint64  `json:"size"`
	StartNs     int64   `json:"start_ns"`                // since the run started
	StartUnixNs int64   `json:"start_unix_ns,omitempty"` // wall clock, to line up flows from several clients
	FCTNs       int64   `json:"fct_ns"`                  // 0 if it did not complete
	Slowdown    float64 `json:"slowdown"`
	Retransmits uint64  `json:"retransmits"`
	Timeouts    uint64  `json:"timeouts"`
	Complete    bool    `json:"complete"`
	// Timeline holds the bytes acknowledged at each TimelineStepNs since the
	// flow started (when the client ran with -timeline).
	Timeline       []uint64 `json:"timeline,omitempty"`
	TimelineStepNs int64    `json:"timeline_step_ns,omitempty"`
	// Mech holds the mode's own counters (xpass: credits, wasted, requests, stops, segments).
	Mech map[string]uint64 `json:"mech,omitempty"`
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

// Stat summarizes slowdowns of one bucket.
type Stat struct {
	Bucket     string  `json:"bucket"`
	Flows      int     `json:"flows"`
	Incomplete int     `json:"incomplete"`
	Avg        float64 `json:"avg"`
	Median     float64 `json:"median"`
	P95        float64 `json:"p95"`
	P99        float64 `json:"p99"`
}

// Run is a whole run: its parameters, flows and summary.
type Run struct {
	Name    string            `json:"name"`
	Params  map[string]string `json:"params"`
	Flows   []Flow            `json:"flows"`
	Summary []Stat            `json:"summary"`
}

// Summarize fills r.Summary (all flows, then each bucket).
func (r *Run) Summarize() {
	r.Summary = nil
	all := Bucket{"all", 0, math.MaxUint64}
	for _, b := range append([]Bucket{all}, Buckets...) {
		var s []float64
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
		}
		if len(s) > 0 {
			sort.Float64s(s)
			var sum float64
			for _, v := range s {
				sum += v
			}
			st.Avg = sum / float64(len(s))
			st.Median, st.P95, st.P99 = Quantile(s, 0.5), Quantile(s, 0.95), Quantile(s, 0.99)
		}
		r.Summary = append(r.Summary, st)
	}
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
	c.Write([]string{"id", "src", "dst", "size", "start_ns", "fct_ns", "slowdown", "retransmits", "timeouts", "complete"})
	for _, f := range r.Flows {
		c.Write([]string{strconv.FormatUint(f.ID, 10), f.Src, f.Dst, strconv.FormatUint(f.Size, 10), strconv.FormatInt(f.StartNs, 10),
			strconv.FormatInt(f.FCTNs, 10), strconv.FormatFloat(f.Slowdown, 'f', 3, 64), strconv.FormatUint(f.Retransmits, 10),
			strconv.FormatUint(f.Timeouts, 10), strconv.FormatBool(f.Complete)})
	}
	c.Flush()
	return c.Error()
}

// Table prints the summary.
func (r *Run) Table(w io.Writer) {
	fmt.Fprintf(w, "%-10s %6s %5s %9s %9s %9s %9s\n", "size", "flows", "lost", "avg", "median", "p95", "p99")
	for _, s := range r.Summary {
		fmt.Fprintf(w, "%-10s %6d %5d %9.2f %9.2f %9.2f %9.2f\n", s.Bucket, s.Flows, s.Incomplete, s.Avg, s.Median, s.P95, s.P99)
	}
}
