package metrics

import (
	"bytes"
	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/units"
	"reflect"
	"testing"
	"time"

	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/fidelity"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// TestFidelityMetrics: the collector exports the metrics package fidelity
// reads, under the names it reads them by, and what fidelity parses out of
// the exposition is what the switch counted: the timescale, each worker's
// histograms in fidelity's buckets, every port's lost line time, and the
// delay error of the ports that have a delay line (only those).
func TestFidelityMetrics(t *testing.T) {
	const fs = 2048
	mem := make([]byte, 2048*fs)
	cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{{Name: "a"}, {Name: "b", Rate: 10e6, Delay: units.Duration(100 * time.Microsecond)}}}}
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	sw, err := dataplane.New(cfg, mem, fs, [][]dataplane.Link{{dataplane.NewMemLink(mem, fs, 64)}, {dataplane.NewMemLink(mem, fs, 64)}})
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	for i := 0; i < 5; i++ {
		sw.Step(0)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(New(sw, nil))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	enc := expfmt.NewEncoder(&text, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	got, err := fidelity.ParseBytes("sw", text.Bytes(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	st := sw.WorkerStats(0)
	if st.PassGap.Total() < 4 {
		t.Fatalf("%d pass gaps after 5 steps", st.PassGap.Total())
	}
	want := fidelity.Switch{Name: "sw", Time: got.Time, Timescale: 1,
		WakeLate:   map[string]fidelity.Histogram{"0": st.WakeLate.Histogram()},
		PassGap:    map[string]fidelity.Histogram{"0": st.PassGap.Histogram()},
		TxLate:     map[string]float64{"a": 0, "b": 0},
		CreditLate: map[string]float64{"a": 0, "b": 0},
		Rate:       map[string]float64{"a": 0, "b": 10e6 / 8},
	}
	de, ok := sw.DelayErrors(1)
	if !ok {
		t.Fatal("port b has a delay but no delay error histogram")
	}
	want.DelayError = map[string]fidelity.Histogram{"b": de.Histogram()}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fidelity parsed\n%+v\nwant\n%+v", got, want)
	}
	// The tick histogram is there too (fidelity does not judge by it).
	if n := count(t, reg, "gswitch_worker_tick_late_seconds"); n != 1 {
		t.Fatalf("%d tick lateness histograms, want one per worker", n)
	}
}

func count(t *testing.T, reg *prometheus.Registry, name string) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return len(mf.GetMetric())
		}
	}
	return 0
}
