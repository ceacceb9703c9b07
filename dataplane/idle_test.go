package dataplane

import (
	"testing"
	"time"

	"github.com/gswitch/gswitch/units"
)

// TestPausedPortSleeps: a port whose queues hold only paused frames gives
// its worker nothing to wake up for (it used to look every 20 µs, 50,000
// wake-ups a second per paused port); ResumeQueue, from any goroutine,
// tells the worker, which then sends the frames.
func TestPausedPortSleeps(t *testing.T) {
	s, l, clk := testSwitch(t, 2, 2, 4096, func(c *Config) { c.Ports[1].Rate = 100e6 })
	l[1].Inject(udp(1, 2, 10)) // learn host 2 on port 1
	settle(s)
	s.ports[1].PauseQueue(0)
	for i := 0; i < 20; i++ {
		l[0].Inject(udp(2, 1, 1000))
	}
	settle(s)
	clk.t += 1e6
	settle(s)
	w := s.workers[s.ports[1].eg.owner]
	if n := l[1].SentCount; n != 0 {
		t.Fatalf("%d frames left a paused queue", n)
	}
	if !s.ports[1].tm.Queued() || !s.ports[1].tm.Idle() {
		t.Fatalf("port 1 after the pass: queued %v, idle %v; want frames queued and nothing eligible", s.ports[1].tm.Queued(), s.ports[1].tm.Idle())
	}
	// MemLinks have no descriptor to poll, so the worker looks every
	// millisecond at most; the paused frames must not shorten that.
	if to := w.sleepTimeout(clk.t); to < 1e6 {
		t.Fatalf("the worker would sleep %d ns with only paused frames queued, want the 1 ms of an unpollable link", to)
	}
	if w.inboundPending() {
		t.Fatal("inbound work pending before the resume")
	}
	s.ResumeQueue(7, 0) // no such port: ignored
	s.ResumeQueue(-1, 0)
	if w.inboundPending() {
		t.Fatal("a resume of a port the switch does not have reached the worker")
	}
	done := make(chan struct{})
	go func() { s.ResumeQueue(1, 0); close(done) }() // another goroutine, as a BFC frame on another worker
	<-done
	if !w.inboundPending() {
		t.Fatal("the resume does not keep the worker from sleeping")
	}
	if w.inboundPending() {
		t.Fatal("the resume is seen twice")
	}
	settle(s)
	if l[1].SentCount == 0 || s.ports[1].tm.Idle() {
		t.Fatalf("after the resume: %d frames sent, idle %v", l[1].SentCount, s.ports[1].tm.Idle())
	}
	for i := 0; i < 10 && l[1].SentCount < 20; i++ {
		clk.t += 1e6
		settle(s)
	}
	if l[1].SentCount != 20 {
		t.Fatalf("%d of 20 frames sent after the resume", l[1].SentCount)
	}
	checkFrames(t, s)
}

// TestTxLate: a shaped, backlogged port whose worker comes back late
// makes up the line time within Config.CatchUp and counts the rest in
// TxLateNs.
func TestTxLate(t *testing.T) {
	for _, c := range []struct {
		catchup          int64
		stall            int64
		minSent          int // frames right after the stall
		minLate, maxLate uint64
	}{
		{0, 10e6, 8, 8.5e6, 9.5e6},    // only the 1 ms bucket: 9 ms lost
		{5e6, 10e6, 45, 3.5e6, 4.5e6}, // 6 ms made up (about 49 frames of 1538 B), 4 ms lost
		{20e6, 10e6, 75, 0, 0.2e6},    // all made up (81 frames)
	} {
		s, l, clk := testSwitch(t, 2, 1, 4096, func(cf *Config) {
			cf.Ports[1].Rate = 100e6
			cf.CatchUp = units.Duration(c.catchup)
		})
		l[1].Inject(udp(1, 2, 10))
		settle(s)
		for i := 0; i < 200; i++ {
			l[0].Inject(udp(2, 1, 1472)) // full frames: 1538 B on the wire
		}
		settle(s)
		before := l[1].SentCount
		clk.t += c.stall
		settle(s)
		sent := l[1].SentCount - before
		late := s.Counters(1).TxLateNs
		t.Logf("catch-up %v: %d sent after the stall, late %d, tokens %d", c.catchup, sent, late, s.ports[1].tm.Shaper().Tokens(clk.t))
		if sent < c.minSent || late < c.minLate || late > c.maxLate {
			t.Errorf("catch-up %v, stall %v: %d frames after the stall (want >= %d), %d ns late (want %d to %d)",
				c.catchup, c.stall, sent, c.minSent, late, c.minLate, c.maxLate)
		}
	}
}

// TestEventfdWakeDrains: a worker asleep in ppoll wakes when another
// worker writes its eventfd, and drains it, so that its next sleep blocks
// until its timeout instead of returning at once; a sleep that ends on the
// timeout reads nothing.
func TestEventfdWakeDrains(t *testing.T) {
	s, _, clk := testSwitch(t, 2, 1, 4096, nil)
	w := s.workers[0]
	w.buildPoll()
	if !w.nap.unpollable {
		t.Fatal("MemLinks should leave the worker unpollable (a 1 ms bound on its sleep)")
	}
	w.nap.wake()
	start := time.Now()
	w.sleep(clk.t)
	if got := w.stats.wakeups.Load(); got != 1 {
		t.Fatalf("a written eventfd gave %d wake-ups, want 1", got)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("the written eventfd did not end the sleep (%v)", d)
	}
	// Drained: this sleep lasts until its 1 ms bound and counts no wake-up.
	w.sleep(clk.t)
	if got := w.stats.wakeups.Load(); got != 1 {
		t.Fatalf("after the wake-up the next sleep returned early (%d wake-ups): the eventfd was not drained", got)
	}
	if got := w.stats.sleeps.Load(); got != 2 {
		t.Fatalf("%d sleeps, want 2", got)
	}
}
