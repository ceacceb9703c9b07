// Package timescale converts between a fabric's clock and this machine's
// clock (time dilation). A fabric run at timescale K runs K times slower
// than the fabric it describes: every rate is divided by K and every time
// multiplied by K, so byte counts (windows, buffers, bandwidth-delay
// products) and ratios (slowdown, utilisation, loss) stay what they are,
// while the machine's own lateness (a thread that wakes late) shrinks
// against a frame time by K.
//
// Two clocks therefore run side by side:
//
//   - fabric time and rates: what the experiment describes (a 10 Gbit/s
//     link, a 4 us delay, a 10 ms minimum RTO);
//   - wall time and rates: what this machine runs (10 Mbit/s, 4 ms, 10 s at
//     K = 1000).
//
// Scale is the one place gsperf converts between them; every value is
// decided to be either fabric (converted) or wall (a property of this
// machine: a spin before a due credit, a bound on a poll, a progress
// print; used as it is). The table of every gsperf value and its clock is
// in the README's gsperf section and in cmd/gsperf/clock.go.
package timescale

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// MaxK is the largest timescale accepted: a second of fabric time becomes
// 11.6 days of wall time, and a 1 Tbit/s link 1 Mbit/s.
const MaxK = 1e6

// Scale is a timescale K. The zero value is K = 1 (the fabric's clock is
// the wall clock).
type Scale struct {
	k float64 // 0 means 1
}

// New returns the timescale k: a finite number from 1 to MaxK.
func New(k float64) (Scale, error) {
	if math.IsNaN(k) || k < 1 || k > MaxK {
		return Scale{}, fmt.Errorf("%v (want a number from 1 to %g: the fabric runs K times slower than it is described, every rate divided by K and every time multiplied by K; 1 = no dilation)", k, MaxK)
	}
	return Scale{k: k}, nil
}

// Parse reads a timescale written as a number ("1000", "1e3", "2.5").
func Parse(s string) (Scale, error) {
	k, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return Scale{}, fmt.Errorf("%q is not a number (want K from 1 to %g, e.g. 1000)", s, MaxK)
	}
	return New(k)
}

// MustNew is New that panics: for constants in tests and tables.
func MustNew(k float64) Scale {
	s, err := New(k)
	if err != nil {
		panic(err)
	}
	return s
}

// K is the factor (1 for the zero Scale).
func (s Scale) K() float64 {
	if s.k == 0 {
		return 1
	}
	return s.k
}

// One reports whether the scale is 1 (the two clocks are the same).
func (s Scale) One() bool { return s.K() == 1 }

// String is K as gsperf prints and records it ("1", "1000", "2.5").
func (s Scale) String() string { return strconv.FormatFloat(s.K(), 'g', -1, 64) }

// integral is K as an integer when K is a whole number: durations are then
// multiplied exactly.
func (s Scale) integral() (int64, bool) {
	k := s.K()
	if k == math.Trunc(k) {
		return int64(k), true
	}
	return 0, false
}

// WallNs converts a fabric duration in ns to wall ns (x K), saturating at
// the int64 range.
func (s Scale) WallNs(fabric int64) int64 {
	if n, ok := s.integral(); ok {
		if fabric == 0 || n == 1 {
			return fabric
		}
		if fabric > 0 && fabric > math.MaxInt64/n {
			return math.MaxInt64
		}
		if fabric < 0 && fabric < math.MinInt64/n {
			return math.MinInt64
		}
		return fabric * n
	}
	w := math.Round(float64(fabric) * s.K())
	switch {
	case w >= math.MaxInt64:
		return math.MaxInt64
	case w <= math.MinInt64:
		return math.MinInt64
	}
	return int64(w)
}

// FabricNs converts a wall duration in ns to fabric ns (/ K, rounded to the
// nearest ns).
func (s Scale) FabricNs(wall int64) int64 {
	if n, ok := s.integral(); ok && n == 1 {
		return wall
	}
	return int64(math.Round(float64(wall) / s.K()))
}

// Wall converts a fabric duration to the wall clock (x K).
func (s Scale) Wall(fabric time.Duration) time.Duration {
	return time.Duration(s.WallNs(int64(fabric)))
}

// Fabric converts a wall duration to the fabric's clock (/ K).
func (s Scale) Fabric(wall time.Duration) time.Duration {
	return time.Duration(s.FabricNs(int64(wall)))
}

// WallRate converts a fabric rate (any unit per second) to the wall clock (/ K).
func (s Scale) WallRate(fabric float64) float64 {
	if s.One() {
		return fabric
	}
	return fabric / s.K()
}

// FabricRate converts a wall rate to the fabric's clock (x K).
func (s Scale) FabricRate(wall float64) float64 {
	if s.One() {
		return wall
	}
	return wall * s.K()
}

// WallBits converts a fabric rate in bit/s to a whole wall rate in bit/s
// (/ K, rounded to the nearest bit/s, at least 1 for a positive rate).
func (s Scale) WallBits(fabric uint64) uint64 {
	if s.One() || fabric == 0 {
		return fabric
	}
	return max(1, uint64(math.Round(float64(fabric)/s.K())))
}

// FormatRate writes a rate in bit/s with its SI prefix and three
// significant digits: "10 Mbit/s", "2.5 Gbit/s", "840 bit/s".
func FormatRate(bits float64) string {
	for _, u := range []struct {
		div  float64
		name string
	}{{1e12, "Tbit/s"}, {1e9, "Gbit/s"}, {1e6, "Mbit/s"}, {1e3, "kbit/s"}} {
		if bits >= u.div {
			return strconv.FormatFloat(bits/u.div, 'g', 3, 64) + " " + u.name
		}
	}
	return strconv.FormatFloat(bits, 'g', 3, 64) + " bit/s"
}
