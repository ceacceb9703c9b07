package dataplane

import "testing"

// sendTimes runs five 1000-byte frames through a port shaped to 80 Mbit/s
// with the given delay and returns when each left (ns after injection), on
// a fake clock in 1 us steps.
func sendTimes(t *testing.T, delay int64) []int64 {
	s, l, clk := testSwitch(t, 2, 1, 4096, func(c *Config) {
		c.Ports[1].DelayNs = delay
		c.Ports[1].RateBits = 80e6
	})
	l[1].Inject(udp(1, 2, 10))
	settle(s)
	sent0 := l[1].SentCount
	start := clk.t
	for i := 0; i < 40; i++ {
		l[0].Inject(udp(2, 1, 958))
	}
	settle(s)
	var times []int64
	for clk.t < start+10e6 {
		clk.t += 1e3
		settle(s)
		for len(times) < l[1].SentCount-sent0 {
			times = append(times, clk.t-start)
		}
	}
	if f := s.Frames(); f.Delayed != 0 {
		t.Fatalf("frames still on the wire: %+v", f)
	}
	checkFrames(t, s)
	return times
}

// TestLinkDelay: a port with a 100 us delay sends each frame exactly 100 us
// after it would leave without the delay: the shaper's pace, the order and
// the count are those of the undelayed port, and every frame comes back.
func TestLinkDelay(t *testing.T) {
	plain, delayed := sendTimes(t, 0), sendTimes(t, 100e3)
	if len(plain) != 40 || len(delayed) != 40 {
		t.Fatalf("sent %d and %d of 40", len(plain), len(delayed))
	}
	for k := range plain {
		if d := delayed[k] - plain[k]; d < 99e3 || d > 101e3 {
			t.Fatalf("frame %d: %d ns without delay, %d with: %d ns apart, want 100 us", k, plain[k], delayed[k], d)
		}
	}
	t.Logf("last frame at %d us without delay, %d us with", plain[39]/1000, delayed[39]/1000)
}
