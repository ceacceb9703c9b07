package bfc

import (
	"testing"
	"time"

	"github.com/gswitch/gswitch/units"
)

// TestPeriodClampIsFabricTime: the bitmap period's clamp [MinPeriod,
// MaxPeriod] is fabric time, so at timescale K it is K times longer on
// this machine; the budget and the watchdog's floor are wall time.
func TestPeriodClampIsFabricTime(t *testing.T) {
	c := defaultConfig().(*Config)
	us, ms := int64(time.Microsecond), int64(time.Millisecond)
	for _, x := range []struct {
		k                  units.Timescale
		delay              int64 // this machine's (already x K)
		hrtt, period, wdog int64
	}{
		// K = 1: 2 x 20us + 2 x 25us = 90us; 4 x 90us = 360us, within [100us, 1ms]; watchdog floor 200ms.
		{1, 20 * us, 90 * us, 360 * us, 200 * ms},
		// 1us links at K = 1000 (1ms here): HRTT 2ms + 50us; 4 x HRTT = 8.2ms is below the clamp's
		// 100ms here (the fabric's 100us), and the watchdog 3 x 100ms is above its 200ms floor.
		{1000, 1 * ms, 2*ms + 50*us, 100 * ms, 300 * ms},
		// 5us links at K = 100: HRTT 1ms + 50us; 4 x HRTT = 4.2ms is below the clamp's 10ms here.
		{100, 500 * us, 1*ms + 50*us, 10 * ms, 200 * ms},
		// 500us links at K = 10: HRTT 10.05ms, 4 x = 40.2ms, above the clamp's 10ms here.
		{10, 5 * ms, 10*ms + 50*us, 10 * ms, 200 * ms},
	} {
		h := c.hrtt(x.delay)
		if h != x.hrtt {
			t.Errorf("K %v: hrtt %v, want %v", x.k, time.Duration(h), time.Duration(x.hrtt))
		}
		p := c.period(h, x.k)
		if p != x.period {
			t.Errorf("K %v: period %v, want %v", x.k, time.Duration(p), time.Duration(x.period))
		}
		if w := c.watchdog(p); w != x.wdog {
			t.Errorf("K %v: watchdog %v, want %v", x.k, time.Duration(w), time.Duration(x.wdog))
		}
	}
	// A period the file gives is the file's (already scaled by the config).
	c.BitmapPeriod = units.Duration(7 * time.Millisecond)
	if p := c.period(90*us, 1000); p != 7*ms {
		t.Errorf("given period %v", time.Duration(p))
	}
}
