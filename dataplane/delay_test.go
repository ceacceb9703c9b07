package dataplane

import (
	"testing"

	"github.com/gswitch/gswitch/units"
)

// sendTimes runs five 1000-byte frames through a port shaped to 80 Mbit/s
// with the given delay and returns when each left (ns after injection), on
// a fake clock in 1 us steps.
func sendTimes(t *testing.T, delay int64) []int64 {
	s, l, clk := testSwitch(t, 2, 1, 4096, func(c *Config) {
		c.Ports[1].Delay = units.Duration(delay)
		c.Ports[1].Rate = 80e6
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

// TestRxDelay: frames received on a port with a 100 us rx delay enter the
// pipeline 100 us later than on a port without, in order, and come back.
func TestRxDelay(t *testing.T) {
	times := func(rx int64) []int64 {
		s, l, clk := testSwitch(t, 2, 1, 4096, func(c *Config) { c.Ports[0].RxDelay = units.Duration(rx) })
		l[1].Inject(udp(1, 2, 10))
		settle(s)
		clk.t += 1e6 // host 2's frame is through
		settle(s)
		sent0 := l[1].SentCount
		start := clk.t
		var got []int64
		for i := 0; i < 10; i++ {
			l[0].Inject(udp(2, 1, 100))
			for k := 0; k < 20; k++ { // 20 us between frames
				clk.t += 1e3
				settle(s)
				for len(got) < l[1].SentCount-sent0 {
					got = append(got, clk.t-start)
				}
			}
		}
		for clk.t < start+1e6 {
			clk.t += 1e3
			settle(s)
			for len(got) < l[1].SentCount-sent0 {
				got = append(got, clk.t-start)
			}
		}
		checkFrames(t, s)
		return got
	}
	plain, delayed := times(0), times(100e3)
	if len(plain) != 10 || len(delayed) != 10 {
		t.Fatalf("sent %d and %d of 10", len(plain), len(delayed))
	}
	for k := range plain {
		if d := delayed[k] - plain[k]; d < 99e3 || d > 101e3 {
			t.Fatalf("frame %d: %d ns apart, want 100 us", k, d)
		}
	}
}
