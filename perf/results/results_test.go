package results

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gswitch/gswitch/perf/timescale"
)

func TestSummarizeBuckets(t *testing.T) {
	r := &Run{}
	for i := 1; i <= 100; i++ {
		r.Flows = append(r.Flows, Flow{Size: 1000, Slowdown: float64(i), Complete: true})
	}
	r.Flows = append(r.Flows, Flow{Size: 500_000, Slowdown: 2, Complete: true}, Flow{Size: 5_000_000, Complete: false})
	r.Summarize()
	small := r.Summary[1]
	if small.Bucket != "<100KB" || small.Flows != 100 || small.Avg != 50.5 || small.Median != 50 || small.P95 != 95 || small.P99 != 99 {
		t.Fatalf("%+v", small)
	}
	if r.Summary[2].Flows != 1 || r.Summary[3].Incomplete != 1 || r.Summary[0].Flows != 102 {
		t.Fatalf("%+v", r.Summary)
	}
	var b bytes.Buffer
	r.WriteCSV(&b)
	if strings.Count(b.String(), "\n") != 103 {
		t.Fatal("csv lines")
	}
	p := filepath.Join(t.TempDir(), "r.json")
	if err := r.WriteJSON(p); err != nil {
		t.Fatal(err)
	}
	if r2, err := ReadJSON(p); err != nil || len(r2.Flows) != 102 {
		t.Fatal(err)
	}
}

func TestIdeal(t *testing.T) {
	// 1400 B in one 1400+138 B frame at 100 Mbit/s: 123.04 µs, plus 100 µs.
	if got := Ideal(1400, 100e6, 100e3, 1400, 138); got < 223.03e3 || got > 223.05e3 {
		t.Fatalf("%v", got)
	}
}

// At timescale 1 the fabric fields equal the wall ones; at 100 they are a
// hundredth, mech times get twins, and the summary, table and CSV carry
// both clocks.
func TestTwoClocks(t *testing.T) {
	mk := func() *Run {
		return &Run{Name: "h1", Params: map[string]string{"rate": "10Gbit"}, Flows: []Flow{
			{ID: 1, Size: 1000, StartNs: 2_000_000, FCTNs: 50_000_000, Slowdown: 3, Complete: true, TimelineStepNs: 10_000_000,
				Mech: map[string]uint64{"credits": 7, "first_credit_ns": 300_000}},
			{ID: 2, Size: 2000, StartNs: 3_000_050, FCTNs: 70_000_000, Slowdown: 5, Complete: true},
		}}
	}
	one := mk()
	if sc, err := one.Timescale(); err != nil || !sc.One() {
		t.Fatalf("a run without a timescale is at 1: %v %v", sc, err)
	}
	one.SetTimescale(timescale.Scale{})
	f := one.Flows[0]
	if one.Params["timescale"] != "1" || f.FCTFabricNs != f.FCTNs || f.StartFabricNs != f.StartNs || f.TimelineStepFabricNs != f.TimelineStepNs ||
		f.Mech["first_credit_fabric_ns"] != 300_000 || f.Mech["credits"] != 7 || len(f.Mech) != 3 {
		t.Fatalf("K 1: %+v", f)
	}
	r := mk()
	r.SetTimescale(timescale.MustNew(100))
	r.SetTimescale(timescale.MustNew(100)) // twice changes nothing (no twin of a twin)
	f = r.Flows[0]
	if r.Params["timescale"] != "100" || f.FCTFabricNs != 500_000 || f.StartFabricNs != 20_000 || f.TimelineStepFabricNs != 100_000 ||
		f.Mech["first_credit_fabric_ns"] != 3000 || len(f.Mech) != 3 || r.Flows[1].StartFabricNs != 30_001 {
		t.Fatalf("K 100: %+v", f)
	}
	if sc, err := r.Timescale(); err != nil || sc.K() != 100 {
		t.Fatalf("%v %v", sc, err)
	}
	r.Summarize()
	all := r.Summary[0]
	if all.FCTAvgNs != 60e6 || all.FCTMedianNs != 50e6 || all.FCTP99Ns != 70e6 || all.FCTFabricAvgNs != 600e3 || all.FCTFabricP99Ns != 700e3 || all.Avg != 4 {
		t.Fatalf("%+v", all)
	}
	var b bytes.Buffer
	r.Table(&b)
	for _, want := range []string{"completion times, timescale 100 (fabric = wall / 100; slowdown is the same on both clocks)",
		"all             600µs      500µs      700µs         60ms       50ms       70ms"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	r.WriteCSV(&b)
	if lines := strings.Split(b.String(), "\n"); !strings.HasSuffix(lines[0], ",complete,start_fabric_ns,fct_fabric_ns") || !strings.HasSuffix(lines[1], ",true,20000,500000") {
		t.Fatalf("CSV %q", lines[:2])
	}
	r.Params["timescale"] = "0.5"
	if _, err := r.Timescale(); err == nil {
		t.Fatal("a timescale below 1 read back")
	}
}
