package dataplane

import (
	"testing"
	"time"
)

// TestSpinner: a worker spins at first; nine idle periods in a row longer
// than the spin time stop it, eight that work ended within the spin time
// start it again, and the score stays within its bounds however long a
// run of either lasts.
func TestSpinner(t *testing.T) {
	sp := newSpinner()
	if !sp.on() {
		t.Fatal("a new worker does not spin")
	}
	for i := 1; i <= 9; i++ {
		sp.miss()
		if want := i < 9; sp.on() != want {
			t.Fatalf("after %d misses: spinning %v, want %v", i, sp.on(), want)
		}
	}
	for i := 0; i < 1000; i++ {
		sp.miss()
	}
	if sp.on() || sp.score != 0 {
		t.Fatalf("after many misses: spinning %v, score %d", sp.on(), sp.score)
	}
	for i := 1; i <= 8; i++ {
		sp.hit()
		if want := i >= 8; sp.on() != want {
			t.Fatalf("after %d hits: spinning %v, want %v", i, sp.on(), want)
		}
	}
	for i := 0; i < 1000; i++ {
		sp.hit()
	}
	if sp.score != spinScoreMax {
		t.Fatalf("score %d after many hits, want the bound %d", sp.score, spinScoreMax)
	}
	// Alternating hits and misses (frames about the spin time apart) hold
	// the state it was in.
	for i := 0; i < 100; i++ {
		sp.miss()
		sp.hit()
	}
	if !sp.on() {
		t.Fatal("alternating from spinning stopped it")
	}
}

// TestIdleWorkerStopsSpinning: a started worker with nothing to do stops
// spinning after its first idle periods and then only sleeps: a few passes
// per millisecond of its links' poll bound, not a CPU's worth.
func TestIdleWorkerStopsSpinning(t *testing.T) {
	s, _, _ := testSwitch(t, 2, 1, 1024, func(c *Config) { c.Clock = nil })
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	time.Sleep(50 * time.Millisecond)
	a := s.WorkerStats(0)
	time.Sleep(200 * time.Millisecond)
	b := s.WorkerStats(0)
	if b.Spinning {
		t.Error("an idle worker still spins")
	}
	if n := b.Passes - a.Passes; n > 2000 {
		t.Errorf("%d passes in 200 ms of idling (MemLinks: a sleep of 1 ms at a time), want a few hundred", n)
	}
	t.Logf("200 ms idle: %d passes, %d sleeps", b.Passes-a.Passes, b.Sleeps-a.Sleeps)
}
