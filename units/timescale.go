package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// MaxTimescale is the largest timescale a config takes: a microsecond of
// the fabric becomes a second on this machine, and a 1 Tbit/s link 1 Mbit/s.
const MaxTimescale = 1e6

// Timescale is a fabric's time dilation K (gswitchd's timescale key; a
// topology's). A fabric described in its own units (a 10 Gbit/s link with
// a 4 us delay) runs on this machine K times slower: every rate is divided
// by K and every time multiplied by K (10 Mbit/s and 4 ms at K = 1000), so
// that byte counts (buffers, thresholds, bandwidth-delay products) are the
// same on both clocks while the machine's own lateness, a worker that wakes
// late, shrinks against a frame time by K.
//
// Two clocks therefore run side by side: the fabric's (what a file says,
// what reports are given in) and the wall clock (what this machine runs).
// The zero value is K = 1: both clocks are the same.
type Timescale float64

// The wall-clock marker. gswitchd's config loader scales every Duration
// and Rate field of the config and of each mechanism's config by the
// switch's timescale (a Duration x K, a Rate / K), except the fields
// tagged
//
//	`timescale:"wall"`
//
// which are properties of this machine rather than of the fabric (how long
// a worker spins, the line time a shaper makes up after a late worker, a
// switch's own traversal time): they keep the value the file gives.
const (
	// TimescaleTag is the struct tag's key.
	TimescaleTag = "timescale"
	// WallClock is its value for a field that must not scale.
	WallClock = "wall"
)

// ParseTimescale reads a timescale written as a number ("1000", "1e3",
// "2.5"): finite, from 1 to MaxTimescale.
func ParseTimescale(s string) (Timescale, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number (write K from 1 to %g, e.g. timescale: 1000; 1 = no dilation)", s, float64(MaxTimescale))
	}
	return NewTimescale(v)
}

// NewTimescale checks k: a finite number from 1 to MaxTimescale.
func NewTimescale(k float64) (Timescale, error) {
	switch {
	case math.IsNaN(k) || math.IsInf(k, 0):
		return 0, fmt.Errorf("%v is not a number from 1 to %g", k, float64(MaxTimescale))
	case k < 1:
		return 0, fmt.Errorf("%v is below 1 (K >= 1 runs the fabric K times slower than its units say; 1 = no dilation; a fabric cannot run faster than this machine)", k)
	case k > MaxTimescale:
		return 0, fmt.Errorf("%v is more than %g (a microsecond of the fabric would last over a second here)", k, float64(MaxTimescale))
	}
	return Timescale(k), nil
}

// UnmarshalYAML implements yaml.Unmarshaler: a number, as ParseTimescale.
func (k *Timescale) UnmarshalYAML(n *yaml.Node) error {
	s, err := Scalar(n, "a timescale", "1, 100, 1000")
	if err != nil || s == "" {
		return err
	}
	v, err := ParseTimescale(s)
	if err != nil {
		return Errorf(n, "%v", err)
	}
	*k = v
	return nil
}

// K is the factor (1 for the zero value).
func (k Timescale) K() float64 {
	if k == 0 {
		return 1
	}
	return float64(k)
}

// One says both clocks are the same (K = 1).
func (k Timescale) One() bool { return k.K() == 1 }

// String writes K as a config would ("1", "1000", "2.5").
func (k Timescale) String() string { return strconv.FormatFloat(k.K(), 'f', -1, 64) }

// integral is K as an integer when K is a whole number: durations are then
// multiplied exactly.
func (k Timescale) integral() (int64, bool) {
	f := k.K()
	if f == math.Trunc(f) {
		return int64(f), true
	}
	return 0, false
}

// Wall converts a fabric duration to this machine's clock (x K),
// saturating at the int64 range.
func (k Timescale) Wall(fabric time.Duration) time.Duration {
	if n, ok := k.integral(); ok {
		switch {
		case n == 1 || fabric == 0:
			return fabric
		case fabric > 0 && fabric > math.MaxInt64/time.Duration(n):
			return math.MaxInt64
		case fabric < 0 && fabric < math.MinInt64/time.Duration(n):
			return math.MinInt64
		}
		return fabric * time.Duration(n)
	}
	w := math.Round(float64(fabric) * k.K())
	switch {
	case w >= math.MaxInt64:
		return math.MaxInt64
	case w <= math.MinInt64:
		return math.MinInt64
	}
	return time.Duration(w)
}

// Fabric converts a wall duration to the fabric's clock (/ K, to the
// nearest ns).
func (k Timescale) Fabric(wall time.Duration) time.Duration {
	if k.One() {
		return wall
	}
	return time.Duration(math.Round(float64(wall) / k.K()))
}

// WallBits converts a fabric rate in bit/s to this machine's (/ K, to the
// nearest bit/s; a positive rate stays at least 1, since 0 means
// unlimited).
func (k Timescale) WallBits(fabric uint64) uint64 {
	if k.One() || fabric == 0 {
		return fabric
	}
	return max(1, uint64(math.Round(float64(fabric)/k.K())))
}

// FabricBits converts a wall rate in bit/s to the fabric's (x K),
// saturating.
func (k Timescale) FabricBits(wall uint64) uint64 {
	if k.One() || wall == 0 {
		return wall
	}
	f := math.Round(float64(wall) * k.K())
	if f >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(f)
}

// DurationClocks writes a wall duration on both clocks for reports,
// "4 ms wall = 4 us fabric"; at K = 1 only "4 ms".
func (k Timescale) DurationClocks(wall time.Duration) string {
	if k.One() {
		return FormatDuration(wall)
	}
	return FormatDuration(wall) + " wall = " + FormatDuration(k.Fabric(wall)) + " fabric"
}

// RateClocks writes a wall rate in bit/s on both clocks for reports,
// "10 Mbit/s wall = 10 Gbit/s fabric"; at K = 1 only "10 Mbit/s".
func (k Timescale) RateClocks(wallBits uint64) string {
	if k.One() {
		return FormatRate(wallBits)
	}
	return FormatRate(wallBits) + " wall = " + FormatRate(k.FabricBits(wallBits)) + " fabric"
}

// FormatDuration writes a duration for people with three significant
// digits and an ASCII unit: "4 us", "1.23 ms", "3 s", "850 ns".
func FormatDuration(d time.Duration) string {
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	for _, u := range []struct {
		div  time.Duration
		name string
	}{{time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "us"}} {
		if d >= u.div {
			return sign + sig3(float64(d)/float64(u.div)) + " " + u.name
		}
	}
	return sign + strconv.FormatInt(int64(d), 10) + " ns"
}

// FormatRate writes a rate in bit/s for people with three significant
// digits: "10 Mbit/s", "2.5 Gbit/s", "840 bit/s"; 0 is "unlimited".
func FormatRate(bits uint64) string {
	if bits == 0 {
		return "unlimited"
	}
	for _, u := range []struct {
		div  float64
		name string
	}{{1e12, "Tbit/s"}, {1e9, "Gbit/s"}, {1e6, "Mbit/s"}, {1e3, "kbit/s"}} {
		if float64(bits) >= u.div {
			return sig3(float64(bits)/u.div) + " " + u.name
		}
	}
	return strconv.FormatUint(bits, 10) + " bit/s"
}

// sig3 writes x (at least 1) with three significant digits, never with an
// exponent: 1.23, 45.6, 789, 3600.
func sig3(x float64) string {
	if x >= 100 {
		return strconv.FormatFloat(math.Round(x), 'f', -1, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}
