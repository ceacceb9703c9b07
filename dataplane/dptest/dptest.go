// Package dptest runs a gswitch switch in memory for tests: ports are
// dataplane.MemLinks, time is a fake clock, and the test drives the workers
// step by step, so a mechanism can be tested on real frames through the real
// pipeline, deterministically.
//
// A Harness is not safe for concurrent use: one test goroutine injects
// frames, advances the clock and steps the switch.
package dptest

import (
	"slices"
	"testing"

	"github.com/gswitch/gswitch/dataplane"
)

// FrameSize is the UMEM frame size of a harness.
const FrameSize = 2048

// Clock is a fake clock in nanoseconds.
type Clock struct{ T int64 }

// Now implements dataplane.Clock.
func (c *Clock) Now() int64 { return c.T }

// Harness is a switch over in-memory ports.
type Harness struct {
	SW    *dataplane.Switch
	Links []*dataplane.MemLink
	Clock *Clock
	Mem   []byte
}

// New builds a switch from cfg (its Ports set the number of ports; Clock is
// replaced by the harness's) over frames UMEM frames, one MemLink per port.
// The config is completed first as config.Parse completes a file
// (config.Config.Complete: a zero that means something keeps its meaning,
// alpha 0 is no dynamic threshold, catchup 0 none), and its errors fail
// the test.
func New(t testing.TB, cfg dataplane.Config, frames int) *Harness {
	t.Helper()
	h := &Harness{Clock: &Clock{T: 1}, Mem: make([]byte, frames*FrameSize)}
	cfg.Ports = slices.Clone(cfg.Ports) // Complete fills them in: not the caller's
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	cfg.Clock = h.Clock
	var links [][]dataplane.Link
	for range cfg.Ports {
		ml := dataplane.NewMemLink(h.Mem, FrameSize, 256)
		h.Links = append(h.Links, ml)
		links = append(links, []dataplane.Link{ml})
	}
	s, err := dataplane.New(cfg, h.Mem, FrameSize, links)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	h.SW = s
	h.Settle()
	return h
}

// Settle steps every worker until none has work left.
func (h *Harness) Settle() {
	for i := 0; i < 10000; i++ {
		busy := false
		for w := 0; w < h.SW.Workers(); w++ {
			if h.SW.Step(w) {
				busy = true
			}
		}
		if !busy {
			return
		}
	}
}

// Advance moves the clock by d ns in steps of step ns, settling after each.
func (h *Harness) Advance(d, step int64) {
	for end := h.Clock.T + d; h.Clock.T < end; {
		h.Clock.T = min(h.Clock.T+step, end)
		h.Settle()
	}
}

// Record makes every link keep copies of what it sends.
func (h *Harness) Record() {
	for _, l := range h.Links {
		l.Record = true
	}
}

// CheckFrames fails the test unless every UMEM frame is back in the pool
// (free or on a fill ring).
func (h *Harness) CheckFrames(t testing.TB) {
	t.Helper()
	c := h.SW.Frames()
	if c.Sum() != c.Total || c.InPool() != c.Total {
		t.Fatalf("frames not all back: %+v (sum %d)", c, c.Sum())
	}
}

// Fabric is several switches in memory on one fake clock, their ports
// wired to each other: what one switch sends on a wired port arrives at
// the port at the other end at once (a delay is the sending port's
// Delay). Ports not wired are hosts: the test injects into them and reads
// what they were sent.
type Fabric struct {
	Clock *Clock
	Nodes []*Harness
	// Lose, if set, is asked about every frame before it crosses a wire
	// (from port of switch h); true loses it, as a link that corrupts or
	// drops a frame would (counted in LostFrames).
	Lose       func(h *Harness, port int, frame []byte) bool
	LostFrames int
	wires      []wire
}

type wire struct {
	h        *Harness
	port     int
	from, to *dataplane.MemLink
}

// NewFabric returns an empty fabric.
func NewFabric() *Fabric { return &Fabric{Clock: &Clock{T: 1}} }

// Add builds a switch on the fabric's clock.
func (f *Fabric) Add(t testing.TB, cfg dataplane.Config, frames int) *Harness {
	t.Helper()
	h := New(t, cfg, frames)
	h.Clock = f.Clock
	h.SW.SetClock(f.Clock)
	f.Nodes = append(f.Nodes, h)
	return h
}

// Connect wires port pa of a and port pb of b, both ways.
func (f *Fabric) Connect(a *Harness, pa int, b *Harness, pb int) {
	a.Links[pa].Record, b.Links[pb].Record = true, true
	f.wires = append(f.wires, wire{a, pa, a.Links[pa], b.Links[pb]}, wire{b, pb, b.Links[pb], a.Links[pa]})
}

// Settle steps every switch and carries frames across the wires until
// nothing moves. A frame that finds no room at the far end is lost, as on a
// real link whose receiver has no buffer (counted in the link's Dropped).
func (f *Fabric) Settle() {
	for i := 0; i < 10000; i++ {
		for _, h := range f.Nodes {
			h.Settle()
		}
		moved := false
		for _, w := range f.wires {
			for _, fr := range w.from.Sent {
				moved = true
				if f.Lose != nil && f.Lose(w.h, w.port, fr) {
					f.LostFrames++
					continue
				}
				w.to.Inject(fr)
			}
			w.from.Sent = w.from.Sent[:0]
		}
		if !moved {
			return
		}
	}
}

// Advance moves the clock by d ns in steps of step ns, settling after each.
func (f *Fabric) Advance(d, step int64) {
	for end := f.Clock.T + d; f.Clock.T < end; {
		f.Clock.T = min(f.Clock.T+step, end)
		f.Settle()
	}
}
