package results

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
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
