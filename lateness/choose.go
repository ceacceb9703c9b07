package lateness

import (
	"fmt"
	"math"
	"time"

	"github.com/gswitch/gswitch/units"
)

// Ladder is the timescales auto chooses from: 1, 2, 5, 10, 20, 50, ... up
// to units.MaxTimescale.
func Ladder() []units.Timescale {
	var l []units.Timescale
	for dec := 1.0; dec <= units.MaxTimescale; dec *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if k := m * dec; k <= units.MaxTimescale {
				l = append(l, units.Timescale(k))
			}
		}
	}
	return l
}

// FrameTime is the time a full frame (FrameBytes on the wire) takes at
// rateBits bit/s (0 for an unlimited rate).
func FrameTime(rateBits float64) time.Duration {
	if rateBits <= 0 {
		return 0
	}
	return time.Duration(math.Round(FrameBytes * 8 * 1e9 / rateBits))
}

// Choose returns the smallest timescale of the Ladder at which p99 is less
// than one frame time of a link of fastestBits (the fabric's rate) run at
// fastestBits / K. With no rate (0) there is no frame time to compare: K
// is 1. ok is false when not even units.MaxTimescale is enough.
func Choose(p99 time.Duration, fastestBits uint64) (k units.Timescale, ok bool) {
	if fastestBits == 0 {
		return 1, true
	}
	for _, k := range Ladder() {
		if float64(p99) < FrameBytes*8*1e9*k.K()/float64(fastestBits) {
			return k, true
		}
	}
	return units.MaxTimescale, false
}

// Choice is auto's decision with its reasons.
type Choice struct {
	// Measured is the lateness the choice rests on.
	Measured Result
	// FastestBits is the fastest link's rate in the fabric's units (0: no
	// link has a rate).
	FastestBits uint64
	// K is the timescale chosen.
	K units.Timescale
	// Enough says K puts the p99 under a frame time (false: even
	// units.MaxTimescale does not, and K is that).
	Enough bool
}

// Decide chooses K for a measured lateness and the fastest link's rate.
func Decide(r Result, fastestBits uint64) Choice {
	k, ok := Choose(r.P99, fastestBits)
	return Choice{Measured: r, FastestBits: fastestBits, K: k, Enough: ok}
}

// FrameTime is the fastest link's frame time on this machine at K.
func (c Choice) FrameTime() time.Duration {
	return FrameTime(float64(c.K.WallBits(c.FastestBits)))
}

// String says what was chosen and why: "timescale auto: lateness p50 12
// us, p99 420 us, max 3.1 ms over 3 s (...); fastest link 10 Gbit/s; K =
// 1000 gives a frame time of 1.23 ms".
func (c Choice) String() string {
	s := "timescale auto: " + c.Measured.String()
	switch {
	case c.FastestBits == 0:
		return s + "; no link has a rate, so no frame time to compare: K = 1"
	case !c.Enough:
		return s + fmt.Sprintf("; fastest link %s; even K = %s gives a frame time of only %s: the machine is too busy", units.FormatRate(c.FastestBits), c.K, units.FormatDuration(c.FrameTime()))
	}
	return s + fmt.Sprintf("; fastest link %s; K = %s gives a frame time of %s", units.FormatRate(c.FastestBits), c.K, units.FormatDuration(c.FrameTime()))
}
