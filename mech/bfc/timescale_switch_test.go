package bfc_test

import (
	"github.com/gswitch/gswitch/config"
	"testing"
	"time"

	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/mech/bfc"
	"github.com/gswitch/gswitch/units"
)

// TestSwitchHandsBFCItsTimescale: the switch gives each mechanism its
// timescale (mech.Port.Timescale), so BFC's default bitmap period on a
// switch at K = 1000 is clamped to the fabric's [100us, 1ms], 100ms to 1s
// here.
func TestSwitchHandsBFCItsTimescale(t *testing.T) {
	for _, x := range []struct {
		k      units.Timescale
		period time.Duration
	}{{1, 208 * time.Microsecond}, {1000, 100 * time.Millisecond}} {
		// A 1us link of the fabric (BFC's simulations): HRTT 2 x 1us x K +
		// 2 x 25us (the budget is wall time), 52us or 2.05ms; 4 x HRTT is
		// 208us, or 8.2ms, below the clamp's 100ms at K = 1000.
		delay := x.k.Wall(time.Microsecond)
		h := dptest.New(t, dataplane.Config{Config: config.Config{Workers: 1, SwitchID: 7, Timescale: x.k, Ports: []config.Port{
			{Name: "up", Role: mech.RoleFabric, Scheduler: "drr", Queues: 8, Delay: units.Duration(delay), Mechanisms: mechs(&bfc.Config{})},
			{Name: "out", Scheduler: "drr", Queues: 8},
		}}}, 4096)
		if p, _ := inst(h).Period(0); time.Duration(p) != x.period {
			t.Errorf("K %v: bitmap period %v, want %v", x.k, time.Duration(p), x.period)
		}
	}
}
