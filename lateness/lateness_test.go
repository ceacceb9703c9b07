package lateness

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gswitch/gswitch/units"
)

func TestLadder(t *testing.T) {
	l := Ladder()
	want := []units.Timescale{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}
	for i, k := range want {
		if l[i] != k {
			t.Fatalf("ladder %v, want it to start %v", l, want)
		}
	}
	if last := l[len(l)-1]; last != units.MaxTimescale || len(l) != 19 {
		t.Fatalf("ladder ends at %v after %d steps", last, len(l))
	}
}

func TestFrameTime(t *testing.T) {
	for bits, want := range map[float64]time.Duration{10e9: 1230 * time.Nanosecond, 100e6: 123040 * time.Nanosecond, 10e6: 1230400 * time.Nanosecond, 0: 0} {
		if got := FrameTime(bits); got != want {
			t.Errorf("FrameTime(%v) = %v, want %v", bits, got, want)
		}
	}
}

// TestChoose: the smallest K of the ladder at which the p99 lateness is
// under one frame time of the fastest link at its rate / K.
func TestChoose(t *testing.T) {
	us, ms := time.Microsecond, time.Millisecond
	for _, c := range []struct {
		p99     time.Duration
		fastest uint64
		k       units.Timescale
		ok      bool
	}{
		{0, 10e9, 1, true},                            // a perfect machine: 1.23 us frames are fine
		{1 * us, 10e9, 1, true},                       // under 1.23 us
		{2 * us, 10e9, 2, true},                       // 2.46 us at K 2
		{420 * us, 10e9, 500, true},                   // 0.615 ms at 500 (0.246 ms at 200 is too short)
		{1 * ms, 10e9, 1000, true},                    // 1.23 ms at 1000
		{1230400 * time.Nanosecond, 10e9, 2000, true}, // exactly a frame at 1000 is not under it
		{20 * ms, 100e9, 2e5, true},                   // BFC's 100 Gbit/s: 24.6 ms at 200000
		{100 * us, 100e6, 1, true},                    // 123 us frames at 100 Mbit/s
		{150 * us, 100e6, 2, true},                    //
		{5 * ms, 0, 1, true},                          // no rate: no frame time
		{time.Hour, 1e12, units.MaxTimescale, false},
	} {
		k, ok := Choose(c.p99, c.fastest)
		if k != c.k || ok != c.ok {
			t.Errorf("Choose(%v, %d) = %v, %v; want %v, %v", c.p99, c.fastest, k, ok, c.k, c.ok)
		}
	}
}

func TestSummarize(t *testing.T) {
	var late []time.Duration
	for i := 1; i <= 1000; i++ {
		late = append(late, time.Duration(i)*time.Microsecond)
	}
	r := Summarize(late)
	if r.Wakeups != 1000 || r.P50 != 501*time.Microsecond || r.P99 != 991*time.Microsecond || r.Max != time.Millisecond {
		t.Fatalf("%+v", r)
	}
	if late[0] != time.Microsecond {
		t.Fatal("Summarize sorted its argument")
	}
	if r := Summarize(nil); r.Wakeups != 0 {
		t.Fatalf("%+v", r)
	}
}

func TestDecideSaysWhy(t *testing.T) {
	r := Result{Duration: 3 * time.Second, Period: DefaultPeriod, Nice: -10, Wakeups: 20000, P50: 12 * time.Microsecond, P99: 420 * time.Microsecond, Max: 3100 * time.Microsecond}
	c := Decide(r, 10e9)
	want := "timescale auto: lateness p50 12 us, p99 420 us, max 3.1 ms over 3 s (20000 wake-ups 123 us apart, nice -10); fastest link 10 Gbit/s; K = 500 gives a frame time of 615 us"
	if c.K != 500 || !c.Enough || c.String() != want {
		t.Fatalf("%v\n%s\nwant\n%s", c.K, c, want)
	}
	if s := Decide(r, 0).String(); !strings.HasSuffix(s, "no link has a rate, so no frame time to compare: K = 1") {
		t.Fatal(s)
	}
	if c := Decide(Result{P99: time.Hour}, 1e12); c.Enough || !strings.Contains(c.String(), "the machine is too busy") {
		t.Fatal(c)
	}
}

// TestMeasure samples for a short while at the thread's own nice value.
func TestMeasure(t *testing.T) {
	r, err := Measure(context.Background(), Options{Duration: 100 * time.Millisecond, Period: 200 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.Wakeups < 10 || r.Period != 200*time.Microsecond || r.Duration < 100*time.Millisecond || r.P50 > r.P99 || r.P99 > r.Max {
		t.Fatalf("%+v", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Measure(ctx, Options{Duration: time.Second}); err == nil {
		t.Fatal("a cancelled measurement with no sample returned no error")
	}
}
