package dataplane

import (
	"testing"
)

// sentIn counts the frames port 1 sends in d ns of fake time while port 0
// keeps it backlogged with 1000-byte frames.
func sentIn(s *Switch, l []*MemLink, clk *fakeClock, d int64) int {
	start := l[1].SentCount
	for end := clk.t + d; clk.t < end; clk.t += 100_000 {
		for i := 0; i < 4; i++ {
			l[0].Inject(udp(2, 1, 1000))
		}
		settle(s)
	}
	return l[1].SentCount - start
}

// TestSetPortRateWhileRunning: a rate change posted while the workers run
// waits for the port's egress worker, which installs it at its next pass;
// the port then sends at the new rate, frames already queued included.
func TestSetPortRateWhileRunning(t *testing.T) {
	s, l, clk := testSwitch(t, 2, 1, 4096, func(c *Config) {
		c.Ports[1].Rate = 100e6
		c.Ports[1].Buffer = 64 << 10
	})
	l[1].Inject(udp(1, 2, 10)) // learn host 2 on port 1
	settle(s)
	sentIn(s, l, clk, 2e6) // the bucket's burst goes first
	// 100 Mbit/s for 10 ms: 125,000 B, 1062 B on the wire each (1038 + 24): 117 frames.
	if n := sentIn(s, l, clk, 10e6); n < 110 || n > 125 {
		t.Fatalf("at 100 Mbit/s: %d frames in 10 ms, want ~117", n)
	}
	s.started = true // as after Start, without goroutines: the test steps the worker
	defer func() { s.started = false }()
	if err := s.SetPortRate(1, 20e6, 0); err != nil {
		t.Fatal(err)
	}
	if !s.Pending(1) || s.Ports()[1].RateBits() != 100e6 {
		t.Fatalf("applied before the worker ran: pending %v rate %d", s.Pending(1), s.Ports()[1].RateBits())
	}
	s.Step(0)
	if s.Pending(1) || s.Ports()[1].RateBits() != 20e6 {
		t.Fatalf("not applied by the worker: pending %v rate %d", s.Pending(1), s.Ports()[1].RateBits())
	}
	sentIn(s, l, clk, 2e6)
	if n := sentIn(s, l, clk, 10e6); n < 21 || n > 28 {
		t.Fatalf("at 20 Mbit/s: %d frames in 10 ms, want ~23.5", n)
	}
	if err := s.SetPortRate(1, 0, 0); err != nil { // unlimited
		t.Fatal(err)
	}
	s.Step(0)
	if n := sentIn(s, l, clk, 1e6); n != 40 {
		t.Fatalf("unlimited: %d frames in 1 ms, want all 40 offered", n)
	}
	if err := s.SetPortRate(1, 10, 0); err == nil {
		t.Fatal("10 bit/s accepted")
	}
	if err := s.SetPortRate(7, 10e6, 0); err == nil {
		t.Fatal("port 7 of 2 accepted")
	}
}

// TestSetQuantum: drr takes a new quantum (two changes posted before the
// worker runs both apply); fifo has none and says so.
func TestSetQuantum(t *testing.T) {
	s, _, _ := testSwitch(t, 2, 1, 4096, func(c *Config) {
		c.Ports[0].Scheduler = "drr"
		c.Ports[0].Queues = 4
	})
	if q := s.Ports()[0].Quantum(); q != 1514 {
		t.Fatalf("default quantum %d", q)
	}
	if err := s.SetQuantum(0, 3000); err != nil {
		t.Fatal(err)
	}
	if q := s.Ports()[0].Quantum(); q != 3000 {
		t.Fatalf("quantum %d after SetQuantum before Start", q)
	}
	s.started = true
	defer func() { s.started = false }()
	if err := s.SetPortRate(0, 50e6, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.SetQuantum(0, 9000); err != nil {
		t.Fatal(err)
	}
	s.Step(0)
	if q, r := s.Ports()[0].Quantum(), s.Ports()[0].RateBits(); q != 9000 || r != 50e6 {
		t.Fatalf("after the worker ran: quantum %d rate %d, want 9000 and 50e6", q, r)
	}
	if err := s.SetQuantum(0, 10); err == nil {
		t.Fatal("quantum 10 accepted")
	}
	if err := s.SetQuantum(1, 3000); err == nil || s.Ports()[1].Quantum() != 0 {
		t.Fatalf("fifo took a quantum: %v", err)
	}
}
