package dataplane

import (
	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/units"
	"testing"
	"time"

	"github.com/gswitch/gswitch/fidelity"
)

// only checks that c holds n observations, all in the bucket of ns.
func only(t *testing.T, what string, c fidelity.Counts, n uint64, ns int64) {
	t.Helper()
	if got := c.Total(); got != n || c.N[fidelity.Bucket(ns)] != n {
		t.Fatalf("%s: %d observations, %d in the bucket of %v (%d); want %d there: %v", what, got, c.N[fidelity.Bucket(ns)], time.Duration(ns), fidelity.Bucket(ns), n, c.N)
	}
}

// tickerSwitch is a one-worker switch whose worker has one mechanism timer
// (the test ticker, which asks for an hour later; tests set its next).
func tickerSwitch(t *testing.T) (*Switch, *worker, *fakeClock) {
	t.Helper()
	s, _, clk := testSwitch(t, 2, 1, 4096, func(c *Config) {
		c.Ports[0].Mechanisms = config.Mechanisms{{Name: "dataplane-test-ticker", Config: &struct{}{}}}
	})
	w := s.workers[0]
	if len(w.tickers) != 1 {
		t.Fatalf("%d tickers", len(w.tickers))
	}
	return s, w, clk
}

// TestWakeLate: a worker asleep for a timer that wakes after its deadline
// counts how late, by the switch's clock; one woken by an event before the
// deadline counts nothing, one woken by an event after it counts; a sleep
// bounded by something that is no timer (a link it cannot poll) counts
// only once the timer's deadline has passed; a sleep with no timer at all
// (the idle bound) counts nothing.
func TestWakeLate(t *testing.T) {
	s, w, clk := tickerSwitch(t)
	if st := s.WorkerStats(0); st.WakeLate.Total() != 0 || st.TickLate.Total() != 0 {
		t.Fatalf("lateness counted before any timer was due: wake %v tick %v", st.WakeLate.N, st.TickLate.N)
	}
	now := clk.t
	w.tickers[0].next = now + 50e3 // a tick due in 50 µs
	if to, timer := w.sleepBounds(now); to != 50e3 || timer != 50e3 {
		t.Fatalf("sleep bounds %d, %d; want the tick's 50 µs", to, timer)
	}

	// ppoll times out after 50 µs; the switch's clock then says 300 µs
	// past the deadline (the thread waited that long for a CPU).
	clk.t = now + 50e3 + 300e3
	if woke := w.sleep(now); woke != clk.t {
		t.Fatalf("sleep returned %d, want the clock after it, %d", woke, clk.t)
	}
	only(t, "timed wake-up 300 µs late", s.WorkerStats(0).WakeLate, 1, 300e3)
	if w.lastPass != noPass {
		t.Fatal("a sleep leaves the next pass's gap counted")
	}

	// Woken by an event 10 µs into the sleep: not late for anything.
	w.nap.wake()
	clk.t = now + 10e3
	w.sleep(now)
	only(t, "after an early event", s.WorkerStats(0).WakeLate, 1, 300e3)

	// Woken by an event, but 20 µs after the deadline: late all the same.
	w.nap.wake()
	clk.t = now + 50e3 + 20e3
	w.sleep(now)
	st := s.WorkerStats(0)
	if st.WakeLate.Total() != 2 || st.WakeLate.N[fidelity.Bucket(20e3)] != 1 || st.WakeLate.SumNs != 320e3 {
		t.Fatalf("after a late event: %v, sum %d", st.WakeLate.N, st.WakeLate.SumNs)
	}
	if st.Wakeups != 2 || st.Sleeps != 3 {
		t.Fatalf("%d wake-ups, %d sleeps; want 2, 3", st.Wakeups, st.Sleeps)
	}

	// The tick is 5 ms away; a link without a descriptor bounds the sleep
	// at 1 ms. Back at 2 ms: the tick is not due, nothing is late.
	if !w.nap.unpollable {
		t.Fatal("MemLinks should leave the worker unpollable")
	}
	w.tickers[0].next = now + 5e6
	if to, timer := w.sleepBounds(now); to != 1e6 || timer != 5e6 {
		t.Fatalf("sleep bounds %d, %d; want 1 ms to look again and the tick's 5 ms", to, timer)
	}
	clk.t = now + 2e6
	w.sleep(now)
	if n := s.WorkerStats(0).WakeLate.Total(); n != 2 {
		t.Fatalf("a wake-up to look again, before the tick was due, counted (%d)", n)
	}
	// Back only 100 µs after the tick was due: that counts.
	clk.t = now + 5e6 + 100e3
	w.sleep(now)
	st = s.WorkerStats(0)
	if st.WakeLate.Total() != 3 || st.WakeLate.N[fidelity.Bucket(100e3)] != 1 {
		t.Fatalf("a wake-up after the tick's deadline did not count: %v", st.WakeLate.N)
	}

	// No timer: the idle bound is no deadline, however long the sleep.
	w.tickers = nil
	if _, timer := w.sleepBounds(now); timer != noTimer {
		t.Fatalf("timer %d with no timer", timer)
	}
	w.nap.wake()
	clk.t = now + 5e9
	w.sleep(now)
	if n := s.WorkerStats(0).WakeLate.Total(); n != 3 {
		t.Fatalf("a sleep without a timer counted (%d)", n)
	}
}

// TestTickLate: a mechanism's tick that runs 70 µs after the time it asked
// for counts 70 µs; its first tick, which asked for no time, counts
// nothing.
func TestTickLate(t *testing.T) {
	s, w, clk := tickerSwitch(t)
	w.tickers[0].next = clk.t + 100e3
	clk.t += 170e3
	settle(s)
	only(t, "tick 70 µs late", s.WorkerStats(0).TickLate, 1, 70e3)
	if s.WorkerStats(0).WakeLate.Total() != 0 {
		t.Fatal("a tick run by a pass counted as a wake-up")
	}
}

// TestPassGap: passes the worker makes without sleeping count the time
// from one's start to the next's; the first pass after a sleep counts
// nothing.
func TestPassGap(t *testing.T) {
	s, _, clk := testSwitch(t, 2, 1, 4096, nil)
	w := s.workers[0]
	base := s.WorkerStats(0).PassGap
	s.Step(0)
	clk.t += 300e3 // the thread was away 300 µs
	s.Step(0)
	st := s.WorkerStats(0).PassGap
	if st.Total() != base.Total()+2 || st.N[fidelity.Bucket(300e3)] != base.N[fidelity.Bucket(300e3)]+1 || st.SumNs != base.SumNs+300e3 {
		t.Fatalf("gaps %v (sum %d), before %v (sum %d): want one more of 300 µs and one of 0", st.N, st.SumNs, base.N, base.SumNs)
	}
	// A sleep in between: the next pass has no gap to count.
	w.nap.wake()
	w.sleep(clk.t)
	if w.stats.sleeps.Load() != 1 {
		t.Fatal("the worker did not sleep")
	}
	clk.t += 500e3
	s.Step(0)
	if got := s.WorkerStats(0).PassGap; got.Total() != st.Total() {
		t.Fatalf("the pass after a sleep counted a gap: %v", got.N)
	}
	clk.t += 500e3
	s.Step(0)
	got := s.WorkerStats(0).PassGap
	if got.Total() != st.Total()+1 || got.N[fidelity.Bucket(500e3)] != 1 {
		t.Fatalf("gaps %v: want one of 500 µs more", got.N)
	}
}

// TestDelayErrors: frames that leave a port's delay line (egress delay)
// or a socket's (rx_delay) after they were due count how late; a port
// with no delay has no such histogram.
func TestDelayErrors(t *testing.T) {
	s, l, clk := testSwitch(t, 3, 1, 4096, func(c *Config) {
		c.Ports[1].Delay = units.Duration(100 * time.Microsecond)
		c.Ports[2].RxDelay = units.Duration(100 * time.Microsecond)
	})
	if _, ok := s.DelayErrors(0); ok {
		t.Fatal("port a has no delay, yet a delay error histogram")
	}
	// Learn host 1 on port b (through b's rx: no delay) and host 3 on c.
	l[1].Inject(udp(1, 2, 10))
	l[2].Inject(udp(1, 3, 10))
	settle(s)
	for i := 0; i < 2; i++ { // through c's rx line, then b's line (flooded)
		clk.t += 1e6
		settle(s)
	}
	before, _ := s.DelayErrors(1)
	beforeRx, _ := s.DelayErrors(2)

	// Five frames to b go on its line due 100 µs later; the worker comes
	// back 250 µs after that.
	for i := 0; i < 5; i++ {
		l[0].Inject(udp(2, 1, 100))
	}
	settle(s)
	clk.t += 100e3 + 250e3
	settle(s)
	got, ok := s.DelayErrors(1)
	if !ok {
		t.Fatal("port b has a delay but no histogram")
	}
	if got.Total()-before.Total() != 5 || got.N[fidelity.Bucket(250e3)]-before.N[fidelity.Bucket(250e3)] != 5 {
		t.Fatalf("port b: %v, before %v: want 5 more of 250 µs", got.N, before.N)
	}
	// On time: the worker is back exactly when they are due.
	for i := 0; i < 3; i++ {
		l[0].Inject(udp(2, 1, 100))
	}
	settle(s)
	clk.t += 100e3
	settle(s)
	if g, _ := s.DelayErrors(1); g.N[0]-got.N[0] != 3 || g.SumNs != got.SumNs {
		t.Fatalf("frames on time: %v (sum %d), before %v (sum %d)", g.N, g.SumNs, got.N, got.SumNs)
	}

	// Frames received on c wait 100 µs on its socket's line; 40 µs late.
	for i := 0; i < 4; i++ {
		l[2].Inject(udp(2, 3, 100))
	}
	settle(s)
	clk.t += 100e3 + 40e3
	settle(s)
	rx, ok := s.DelayErrors(2)
	if !ok || rx.Total()-beforeRx.Total() != 4 || rx.N[fidelity.Bucket(40e3)]-beforeRx.N[fidelity.Bucket(40e3)] != 4 {
		t.Fatalf("port c (rx_delay): %v %v, before %v", ok, rx.N, beforeRx.N)
	}
	clk.t += 1e6
	settle(s)
	checkFrames(t, s)
}

// TestCreditLateNs: a credit lane whose worker stays away 10 ms while
// credits wait loses that time beyond its bucket (no catch-up), and
// CreditLateNs counts it; the data shaper lost nothing.
func TestCreditLateNs(t *testing.T) {
	const rateBits = 8 * 84 * 10000 // 10,000 credits/s: a credit every 100 µs
	s, l, clk := testSwitch(t, 2, 1, 4096, func(c *Config) {
		c.Ports[1].Mechanisms = config.Mechanisms{{Name: "test-credit-lane", Config: &laneTesterConfig{Rate: rateBits, Burst: 168, Queue: 64}}}
	})
	l[1].Inject(udp(1, 2, 10))
	settle(s)
	for i := 0; i < 40; i++ {
		l[0].Inject(udp(2, 1, 10)) // credits
	}
	settle(s) // two leave (the bucket's depth), the rest wait
	if late := s.Counters(1).CreditLateNs; late != 0 {
		t.Fatalf("%d ns lost before the worker was away", late)
	}
	clk.t += 10e6
	settle(s)
	c := s.Counters(1)
	// The bucket held 2 credits (200 µs of line time) when the worker
	// left, so it banks nothing of the 10 ms it was away: all 10 ms but
	// the instant it was empty at the start are lost.
	if c.CreditLateNs < 9.7e6 || c.CreditLateNs > 10e6 {
		t.Fatalf("credit lane lost %v, want about 10 ms", time.Duration(c.CreditLateNs))
	}
	if c.TxLateNs != 0 {
		t.Fatalf("the unshaped port lost %d ns", c.TxLateNs)
	}
	t.Logf("lost %v of 10 ms", time.Duration(c.CreditLateNs))
}
