package fidelity

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// state is what a synthetic switch exports: histograms as observations per
// bucket index (not cumulative), by label value.
type state struct {
	k                    float64 // 0: no gswitch_timescale
	wake, gap, delay     map[string]map[int]uint64
	txLate, creditLate   map[string]float64
	rate                 map[string]float64
	noWorkerHistograms   bool
	extraAfterExposition string
}

// exposition writes s in Prometheus' text format with this package's buckets.
func (s state) exposition() string {
	var b strings.Builder
	bounds := BucketBounds()
	hist := func(name, key string, series map[string]map[int]uint64) {
		if series == nil {
			return
		}
		fmt.Fprintf(&b, "# HELP %s test\n# TYPE %s histogram\n", name, name)
		for _, lv := range sortedKeys(series) {
			var cum uint64
			var sum float64
			for i, le := range bounds {
				cum += series[lv][i]
				sum += float64(series[lv][i]) * le
				fmt.Fprintf(&b, "%s_bucket{%s=%q,le=%q} %d\n", name, key, lv, strconv.FormatFloat(le, 'g', -1, 64), cum)
			}
			cum += series[lv][NumBuckets-1]
			fmt.Fprintf(&b, "%s_bucket{%s=%q,le=\"+Inf\"} %d\n%s_sum{%s=%q} %g\n%s_count{%s=%q} %d\n", name, key, lv, cum, name, key, lv, sum, name, key, lv, cum)
		}
	}
	scalar := func(name, typ string, m map[string]float64) {
		if m == nil {
			return
		}
		fmt.Fprintf(&b, "# HELP %s test\n# TYPE %s %s\n", name, name, typ)
		for _, p := range sortedKeys(m) {
			fmt.Fprintf(&b, "%s{port=%q} %g\n", name, p, m[p])
		}
	}
	b.WriteString("# HELP gswitch_worker_passes_total Passes.\n# TYPE gswitch_worker_passes_total counter\ngswitch_worker_passes_total{worker=\"0\"} 12345\n")
	if s.k != 0 {
		fmt.Fprintf(&b, "# HELP gswitch_timescale K.\n# TYPE gswitch_timescale gauge\ngswitch_timescale %g\n", s.k)
	}
	if !s.noWorkerHistograms {
		hist(MetricWakeLate, "worker", s.wake)
		hist(MetricPassGap, "worker", s.gap)
	}
	hist(MetricDelayError, "port", s.delay)
	scalar(MetricTxLate, "counter", s.txLate)
	scalar(MetricCreditLate, "counter", s.creditLate)
	scalar(MetricPortRate, "gauge", s.rate)
	b.WriteString(s.extraAfterExposition)
	return b.String()
}

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// twoSwitches is the test's fabric before and after a 10 s run at K 1000:
//
//   - wake-ups, all workers of both switches: 990 in the bucket up to
//     2^10 µs (1.024 ms), 10 in the bucket up to 2^11 µs: the 990th of
//     1000 is the top of the first: p99 = 1.024 ms;
//   - pass gaps: 98 in the bucket up to 32 µs, 2 in the one up to 64 µs:
//     rank 99 is half way into the (53.817 µs, 64 µs] bucket: 58.9085 µs;
//   - the fastest port is sw1/r1 at 1.25e6 B/s = 10 Mbit/s wall, 10 Gbit/s
//     fabric: a frame takes 1538 x 8 / 10e6 = 1.2304 ms, and the lateness
//     is 1.024 / 1.2304 = 0.832 frame times;
//   - line time lost: sw2/r1 0.001 s tx + 0.001 s credit in 10 s = 0.02%;
//     sw1/r1 0.0005 s = 0.005%;
//   - delay error at sw1/r1: 190 up to 4 µs, 10 in (6.727 µs, 8 µs]: rank
//     198 is 8/10 into that bucket: 7.7454 µs = 0.0063 frame times.
func twoSwitches() (before, after []state) {
	sw1b := state{k: 1000,
		wake:       map[string]map[int]uint64{"0": {0: 50}, "1": {0: 30}},
		gap:        map[string]map[int]uint64{"0": {4: 10}},
		delay:      map[string]map[int]uint64{"r1": {0: 5}},
		txLate:     map[string]float64{"r1": 1, "r0": 0},
		creditLate: map[string]float64{"r1": 0.5},
		rate:       map[string]float64{"r1": 1.25e6, "r0": 0},
	}
	sw1a := state{k: 1000,
		wake:       map[string]map[int]uint64{"0": {0: 50, 40: 500}, "1": {0: 30, 40: 290, 44: 10}},
		gap:        map[string]map[int]uint64{"0": {4: 10, 20: 98, 24: 2}},
		delay:      map[string]map[int]uint64{"r1": {0: 5, 8: 190, 12: 10}},
		txLate:     map[string]float64{"r1": 1.0005, "r0": 0},
		creditLate: map[string]float64{"r1": 0.5},
		rate:       map[string]float64{"r1": 1.25e6, "r0": 0},
	}
	sw2b := state{k: 1000,
		wake:       map[string]map[int]uint64{"0": {}},
		txLate:     map[string]float64{"r1": 2},
		creditLate: map[string]float64{"r1": 0},
		rate:       map[string]float64{"r1": 125000},
	}
	sw2a := sw2b
	sw2a.wake = map[string]map[int]uint64{"0": {40: 200}}
	sw2a.txLate = map[string]float64{"r1": 2.001}
	sw2a.creditLate = map[string]float64{"r1": 0.001}
	return []state{sw1b, sw2b}, []state{sw1a, sw2a}
}

func snapshot(t *testing.T, at time.Time, sws []state) Snapshot {
	t.Helper()
	var s Snapshot
	for i, st := range sws {
		sw, err := ParseBytes(fmt.Sprintf("sw%d", i+1), []byte(st.exposition()), at)
		if err != nil {
			t.Fatal(err)
		}
		s.Switches = append(s.Switches, sw)
	}
	return s
}

func window(t *testing.T, before, after []state) Window {
	t.Helper()
	w, err := Diff(snapshot(t, t0, before), snapshot(t, t0.Add(10*time.Second), after))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func near(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want)) }

func TestParseKeepsTheFidelityMetrics(t *testing.T) {
	_, after := twoSwitches()
	sw, err := ParseBytes("sw1", []byte(after[0].exposition()), t0)
	if err != nil {
		t.Fatal(err)
	}
	if sw.K() != 1000 || len(sw.WakeLate) != 2 || len(sw.PassGap) != 1 || len(sw.DelayError) != 1 {
		t.Fatalf("%+v", sw)
	}
	h := sw.WakeLate["1"]
	if h.Count != 330 || len(h.Bounds) != NumBuckets-1 || h.Cumulative[0] != 30 || h.Cumulative[40] != 320 || h.Cumulative[44] != 330 {
		t.Fatalf("worker 1: count %d, %d bounds, cumulative %v", h.Count, len(h.Bounds), h.Cumulative[:45])
	}
	if sw.TxLate["r1"] != 1.0005 || sw.CreditLate["r1"] != 0.5 || sw.Rate["r1"] != 1.25e6 || sw.Rate["r0"] != 0 {
		t.Fatalf("%v %v %v", sw.TxLate, sw.CreditLate, sw.Rate)
	}
	noK, _ := ParseBytes("x", []byte(state{}.exposition()), t0)
	if noK.K() != 1 || noK.WakeLate != nil || noK.Rate != nil {
		t.Fatalf("a switch without the metrics: %+v", noK)
	}
	if _, err := ParseBytes("bad", []byte("gswitch_timescale{ 1\n"), t0); err == nil || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("a broken exposition: %v", err)
	}
}

func TestDiffSubtractsCountersAndBuckets(t *testing.T) {
	before, after := twoSwitches()
	w := window(t, before, after)
	if len(w.Switches) != 2 || w.Switches[0].Duration != 10*time.Second {
		t.Fatalf("%+v", w)
	}
	s1 := w.Switches[0]
	if !near(s1.TxLate["r1"], 0.0005) || s1.CreditLate["r1"] != 0 || s1.WakeLate["0"].Count != 500 || s1.WakeLate["0"].Cumulative[0] != 0 ||
		s1.WakeLate["0"].Cumulative[40] != 500 || s1.DelayError["r1"].Count != 200 || len(s1.Reset) != 0 {
		t.Fatalf("sw1 window: %+v", s1)
	}
	if _, err := Diff(snapshot(t, t0, before[:1]), snapshot(t, t0.Add(time.Second), after)); err == nil || !strings.Contains(err.Error(), "sw2") {
		t.Fatalf("a switch missing from the first snapshot: %v", err)
	}
	if _, err := Diff(snapshot(t, t0, before), snapshot(t, t0, after)); err == nil {
		t.Fatal("a window of no time")
	}
	// A switch that restarted: its counters went down; the later values count whole.
	restarted := after
	restarted[1].txLate = map[string]float64{"r1": 0.001}
	w = window(t, before, restarted)
	if got := w.Switches[1].Reset; len(got) != 1 || got[0] != "tx_late/r1" || w.Switches[1].TxLate["r1"] != 0.001 {
		t.Fatalf("reset: %v %v", got, w.Switches[1].TxLate)
	}
	if v := Evaluate(w, DefaultBounds()); v.Valid || !strings.Contains(strings.Join(v.Reasons, ";"), "went backwards") {
		t.Fatalf("a reset is not a valid window: %v", v)
	}
}

func TestEvaluateValid(t *testing.T) {
	before, after := twoSwitches()
	v := Evaluate(window(t, before, after), DefaultBounds())
	if !v.Valid || len(v.Reasons) != 0 {
		t.Fatalf("%v", v)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"wake-late p99", v.WakeLateP99, 1.024e-3},
		{"pass-gap p99", v.PassGapP99, 58.9085e-6},
		{"lateness p99", v.LatenessP99, 1.024e-3},
		{"frame time", v.FrameTime, 1.2304e-3},
		{"lateness in frames", v.LatenessFrames, 1.024 / 1.2304},
		{"fabric rate", v.FastestFabricBits, 10e9},
		{"lost line", v.LostLinePercent, 0.02},
		{"delay error p99", v.DelayErrorP99, 7.7454e-6},
		{"delay error frames", v.DelayErrorFrames, 7.7454e-6 / 1.2304e-3},
		{"window", v.Window, 10},
		{"timescale", v.Timescale, 1000},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if v.LatenessFrom != "wake_late" || v.FastestPort != "sw1/r1" || v.LostLinePort != "sw2/r1" || v.WakeLateCount != 1000 || v.PassGapCount != 100 {
		t.Errorf("%+v", v)
	}
	want := "fidelity: VALID  lateness p99 0.832 frame times (1.02 ms wall; fastest link 10 Mbit/s wall = 10 Gbit/s fabric at timescale 1000)  " +
		"line time lost 0.02% (sw2/r1)  delay error p99 0.0063 frame times  [bounds: 1 frame, 1%, 1 frame]"
	if v.String() != want {
		t.Errorf("String:\n%s\nwant\n%s", v, want)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var back Verdict
	if err := json.Unmarshal(b, &back); err != nil || back.String() != v.String() {
		t.Fatalf("JSON round trip: %v\n%s", err, b)
	}
	for _, k := range []string{`"valid":true`, `"lateness_p99_wall_s":0.001024`, `"timescale":1000`, `"line_time_lost_port":"sw2/r1"`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("JSON lacks %s: %s", k, b)
		}
	}
}

func TestEvaluateInvalid(t *testing.T) {
	before, after := twoSwitches()
	reasons := func(v Verdict) string { return strings.Join(v.Reasons, "; ") }

	// Declared bounds tighter than the run.
	b, err := ParseBounds("lateness=0.5,lost=0.01%")
	if err != nil || b != (Bounds{0.5, 0.01, 1}) {
		t.Fatalf("%v %v", b, err)
	}
	v := Evaluate(window(t, before, after), b)
	if v.Valid || len(v.Reasons) != 2 || !strings.Contains(reasons(v), "lateness p99 0.832 frame times > 0.5") ||
		!strings.Contains(reasons(v), "line time lost 0.02% at sw2/r1 > 0.01%") {
		t.Fatalf("%v", v)
	}
	if !strings.HasPrefix(v.String(), "fidelity: INVALID  lateness p99 0.832") || !strings.Contains(v.String(), "because: lateness p99") {
		t.Fatalf("%s", v)
	}

	// The same run at K 100: a frame takes 0.123 ms wall, the lateness is
	// 8.32 frame times, the delay error 0.063.
	slow := func(s []state, k float64) []state {
		out := append([]state(nil), s...)
		for i := range out {
			out[i].k = k
			r := map[string]float64{}
			for p, x := range out[i].rate {
				r[p] = x * 10
			}
			out[i].rate = r
		}
		return out
	}
	v = Evaluate(window(t, slow(before, 100), slow(after, 100)), DefaultBounds())
	if v.Valid || !near(v.LatenessFrames, 8.322496749024707) || !near(v.FastestFabricBits, 10e9) || len(v.Reasons) != 1 {
		t.Fatalf("%v", v)
	}

	// The pass gaps dominate: 2 of 100 gaps of 2^21 µs.
	gappy := append([]state(nil), after...)
	gappy[0].gap = map[string]map[int]uint64{"0": {4: 10, 20: 98, 84: 2}}
	v = Evaluate(window(t, before, gappy), DefaultBounds())
	// rank 99 is half way into (2^20.75, 2^21] µs: (1.763487599 s + 2.097152 s) / 2.
	if v.Valid || v.LatenessFrom != "pass_gap" || !near(v.LatenessP99, (1.763487599+2.097152)/2) {
		t.Fatalf("%v (p99 %v)", v, v.LatenessP99)
	}

	// 2% of line time lost on sw1/r1, and delay errors of 10 frame times.
	lossy := append([]state(nil), after...)
	lossy[0].txLate = map[string]float64{"r1": 1.1, "r0": 0.01}
	lossy[0].creditLate = map[string]float64{"r1": 0.6}
	lossy[0].delay = map[string]map[int]uint64{"r1": {0: 5, 8: 1, 54: 199}} // 2^13.5 µs = 11.6 ms
	v = Evaluate(window(t, before, lossy), DefaultBounds())
	if v.Valid || !near(v.LostLinePercent, 2) || v.LostLinePort != "sw1/r1" || !strings.Contains(reasons(v), "delay error p99") {
		t.Fatalf("%v", v)
	}

	// Nothing to judge by: no lateness metrics; no port with a rate; two timescales.
	bare := append([]state(nil), after...)
	bareB := append([]state(nil), before...)
	for i := range bare {
		bare[i].noWorkerHistograms, bareB[i].noWorkerHistograms = true, true
	}
	v = Evaluate(window(t, bareB, bare), DefaultBounds())
	if v.Valid || !v.LatenessMissing || !strings.Contains(reasons(v), "nothing to judge lateness by") || !strings.Contains(v.String(), "lateness unknown") {
		t.Fatalf("%v", v)
	}
	norate := append([]state(nil), after...)
	for i := range norate {
		norate[i].rate = map[string]float64{"r1": 0}
	}
	v = Evaluate(window(t, before, norate), DefaultBounds())
	if v.Valid || v.FrameTime != 0 || !strings.Contains(reasons(v), "no port has a rate") || !strings.Contains(v.String(), "no port has a rate") {
		t.Fatalf("%v", v)
	}
	mixed := append([]state(nil), after...)
	mixed[1].k = 10
	v = Evaluate(window(t, before, mixed), DefaultBounds())
	if v.Valid || !strings.Contains(reasons(v), "different timescales (sw1 1000, sw2 10)") {
		t.Fatalf("%v", v)
	}
	if v := Evaluate(Window{}, DefaultBounds()); v.Valid || v.String() != "fidelity: INVALID  because: no switch in the window" {
		t.Fatalf("an empty window: %v", v)
	}
}

func TestParseBoundsErrors(t *testing.T) {
	for _, s := range []string{"late=1", "lateness=0", "lost=x%", "delay=-1", "lateness=inf"} {
		if _, err := ParseBounds(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	if b, err := ParseBounds(""); err != nil || b != DefaultBounds() {
		t.Errorf("empty: %v %v", b, err)
	}
}

func TestQuantileAndMerge(t *testing.T) {
	h := Histogram{Bounds: []float64{1, 2, 4}, Cumulative: []uint64{0, 50, 100}, Count: 100}
	if q, over, ok := h.Quantile(0.5); !ok || over || q != 2 {
		t.Errorf("p50 %v", q)
	}
	if q, _, _ := h.Quantile(0.75); q != 3 {
		t.Errorf("p75 %v", q)
	}
	h.Count = 200 // half beyond the last bound
	if q, over, _ := h.Quantile(0.99); !over || q != 4 {
		t.Errorf("beyond: %v %v", q, over)
	}
	if _, _, ok := (Histogram{}).Quantile(0.99); ok {
		t.Error("empty histogram")
	}
	// Other bounds merge as steps.
	m := Merge(Histogram{Bounds: []float64{1, 2}, Cumulative: []uint64{1, 2}, Count: 2}, Histogram{Bounds: []float64{1.5}, Cumulative: []uint64{3}, Count: 3})
	if fmt.Sprint(m.Bounds, m.Cumulative, m.Count) != "[1 1.5 2] [1 4 5] 5" {
		t.Errorf("merge: %v %v %d", m.Bounds, m.Cumulative, m.Count)
	}
}

func TestScrapeSaveLoad(t *testing.T) {
	before, after := twoSwitches()
	cur := before
	mux := http.NewServeMux()
	for i := range 2 {
		mux.HandleFunc(fmt.Sprintf("/sw%d/metrics", i+1), func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, cur[i].exposition()) })
	}
	mux.HandleFunc("/gone/metrics", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusNotFound) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	targets, err := ParseTargets(fmt.Sprintf("sw1=%s/sw1/metrics, sw2=%s/sw2/metrics", srv.URL, srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	s0, err := Scrape(context.Background(), nil, targets)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "before.json")
	if err := s0.Save(p); err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(p)
	if err != nil || len(loaded.Switches) != 2 || loaded.Switches[0].Source != targets[0].URL {
		t.Fatalf("%v %+v", err, loaded)
	}
	cur = after
	time.Sleep(5 * time.Millisecond)
	s1, err := Scrape(context.Background(), nil, targets)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Diff(loaded, s1)
	if err != nil {
		t.Fatal(err)
	}
	v := Evaluate(w, DefaultBounds())
	if v.WakeLateCount != 1000 || !near(v.LatenessP99, 1.024e-3) || v.Window <= 0 {
		t.Fatalf("%v", v)
	}
	gone, _ := ParseTargets(srv.URL + "/gone/metrics")
	if _, err := Scrape(context.Background(), nil, gone); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("a 404: %v", err)
	}
}

func TestParseTargets(t *testing.T) {
	ts, err := ParseTargets("http://127.0.0.1:9100,sw2=http://10.0.0.1:9101/metrics?a=b")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(ts)
	if got != "[{127.0.0.1:9100 http://127.0.0.1:9100/metrics} {sw2 http://10.0.0.1:9101/metrics?a=b}]" {
		t.Fatal(got)
	}
	if ts, _ := ParseTargets("http://h:1/m?x=y"); len(ts) != 1 || ts[0].Name != "h:1" {
		t.Fatalf("an = in the query is not a name: %v", ts)
	}
	for _, bad := range []string{"", "127.0.0.1:9100", "sw1=ftp://x/", "a=http://h:1,a=http://h:2", "http://"} {
		if _, err := ParseTargets(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzParse: whatever an endpoint answers, parsing neither panics nor
// keeps a histogram a quantile could not read, and judging it does not
// panic either.
func FuzzParse(f *testing.F) {
	before, after := twoSwitches()
	f.Add([]byte(before[0].exposition()))
	f.Add([]byte(after[1].exposition()))
	f.Add([]byte("# TYPE gswitch_worker_wake_late_seconds histogram\ngswitch_worker_wake_late_seconds_bucket{worker=\"0\",le=\"2\"} 5\ngswitch_worker_wake_late_seconds_bucket{worker=\"0\",le=\"1\"} 9\ngswitch_worker_wake_late_seconds_count{worker=\"0\"} 3\n"))
	f.Add([]byte("gswitch_port_rate_bytes_per_second{port=\"a\"} NaN\ngswitch_timescale -Inf\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		sw, err := ParseBytes("f", b, t0)
		if err != nil {
			return
		}
		for _, m := range []map[string]Histogram{sw.WakeLate, sw.PassGap, sw.DelayError} {
			for _, h := range m {
				if len(h.Bounds) != len(h.Cumulative) || !sort.Float64sAreSorted(h.Bounds) {
					t.Fatalf("%+v", h)
				}
				for i, c := range h.Cumulative {
					if c > h.Count || (i > 0 && c < h.Cumulative[i-1]) {
						t.Fatalf("%+v", h)
					}
				}
				h.Quantile(0.99)
			}
		}
		if k := sw.K(); !(k >= 1 || k > 0) || math.IsInf(k, 0) {
			t.Fatalf("K %v", k)
		}
		later := sw
		later.Time = t0.Add(time.Second)
		w, err := Diff(Snapshot{Switches: []Switch{sw}}, Snapshot{Switches: []Switch{later}})
		if err != nil {
			t.Fatal(err)
		}
		v := Evaluate(w, DefaultBounds())
		_ = v.String()
		if _, err := json.Marshal(v); err != nil {
			t.Fatalf("the verdict does not marshal: %v", err)
		}
	})
}
