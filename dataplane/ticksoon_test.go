package dataplane

import (
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/mech"
)

// tickCounter is a mechanism whose timer asks to run an hour later.
type tickCounter struct{ calls int }

func (c *tickCounter) Tick(w int, now int64) int64 { c.calls++; return now + 3600e9 }

func init() {
	mech.Register(mech.Spec{Name: "dataplane-test-ticker", Config: func() any { return &struct{}{} },
		New: func(mech.Switch, []mech.Port) (mech.Instance, error) { return &tickCounter{}, nil }})
}

// TestTickSoon: a Tick runs when it asked, and at the next pass after
// TickSoon, once; the request wakes a worker about to sleep.
func TestTickSoon(t *testing.T) {
	s, _, clk := testSwitch(t, 2, 1, 4096, func(c *Config) {
		c.Ports[0].Mechanisms = config.Mechanisms{{Name: "dataplane-test-ticker", Config: &struct{}{}}}
	})
	inst := s.Mechanisms()["dataplane-test-ticker"].(*tickCounter)
	if inst.calls != 1 {
		t.Fatalf("%d ticks after the start, want the first one", inst.calls)
	}
	clk.t += 1e9
	settle(s)
	if inst.calls != 1 {
		t.Fatalf("%d ticks a second later; it asked for an hour", inst.calls)
	}
	s.TickSoon(0, inst)
	if !s.workers[0].inboundPending() {
		t.Fatal("a worker about to sleep does not see the request")
	}
	settle(s)
	if inst.calls != 2 {
		t.Fatalf("%d ticks after TickSoon, want 2", inst.calls)
	}
	settle(s)
	s.TickSoon(5, inst)           // no such worker: ignored
	s.TickSoon(0, &tickCounter{}) // not a ticker of this switch: ignored
	if settle(s); inst.calls != 2 {
		t.Fatalf("%d ticks: TickSoon ran more than once", inst.calls)
	}
}
