package pfc

import (
	"testing"

	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/wire"
)

var sw = [6]byte{0x02, 0x67, 0x73, 0, 1, 2}

func frame(src [6]byte, enable uint8, times map[int]uint16) []byte {
	m := wire.PFC{Enable: enable}
	for p, t := range times {
		m.Time[p] = t
	}
	b := make([]byte, wire.MinFrameLen)
	if _, err := wire.BuildPFC(b, src, m); err != nil {
		panic(err)
	}
	return b
}

type clock struct{ t int64 }

func (c *clock) now() int64 { return c.t }

func newHost(t *testing.T, c Config) (*Host, *clock) {
	t.Helper()
	clk := &clock{t: 1000}
	c.Clock = clk.now
	if c.RateBits == 0 {
		c.RateBits = 1e9
	}
	h, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return h, clk
}

// TestPauseAndResume: a pause of the host's priority holds its flows for
// quanta x 512 bit times at the link's rate, the gate asks again at its
// end; a zero time resumes and wakes the flows; other priorities do not
// hold them; a later frame replaces the time left.
func TestPauseAndResume(t *testing.T) {
	h, clk := newHost(t, Config{Priority: 3})
	woken := 0
	g, end := h.FlowHook(1, &transport.Config{}, nil, func() { woken++ })
	defer end()
	h.Handle(frame(sw, 1<<2, map[int]uint16{2: 1000}))
	if ok, _ := g.Allow(50, 1000); !ok {
		t.Fatal("held by another priority's pause")
	}
	h.Handle(frame(sw, 1<<3, map[int]uint16{3: 1000})) // 512 us at 1 Gbit/s
	ok, wake := g.Allow(50, 1000)
	if ok || wake != 50+512_000 {
		t.Fatalf("paused: allow %v, wake %d (flow clock), want false, %d", ok, wake, 50+512_000)
	}
	clk.t += 511_999
	if p, left := h.Paused(); !p || left != 1 {
		t.Fatalf("1 ns before the end: %v %d", p, left)
	}
	clk.t++
	if ok, _ := g.Allow(60, 1000); !ok {
		t.Fatal("held after the pause ran out")
	}
	h.Handle(frame(sw, 1<<3, map[int]uint16{3: 0xffff}))
	h.Handle(frame(sw, 1<<3, map[int]uint16{3: 10})) // replaces: 5.12 us
	if p, left := h.Paused(); !p || left != 5120 {
		t.Fatalf("replaced: %v %d", p, left)
	}
	h.Handle(frame(sw, 1<<3, nil))
	if p, _ := h.Paused(); p || woken != 1 {
		t.Fatalf("after a zero time: paused %v, woken %d", p, woken)
	}
	s := h.Stats()
	if s.Frames != 5 || s.Pauses != 3 || s.Resumes != 1 || s.Held != 1 || s.PausedNs != 512_000 {
		t.Fatalf("stats %+v", s)
	}
}

// TestRefused: frames from another source, to another address, short or
// of another opcode change nothing and are counted.
func TestRefused(t *testing.T) {
	h, _ := newHost(t, Config{Switch: sw})
	other := [6]byte{0x02, 0, 0, 0, 0, 9}
	h.Handle(frame(other, 1, map[int]uint16{0: 100}))
	bad := frame(sw, 1, map[int]uint16{0: 100})
	bad[5] = 0x0e
	h.Handle(bad)
	h.Handle(frame(sw, 1, map[int]uint16{0: 100})[:20])
	pause := frame(sw, 1, map[int]uint16{0: 100})
	pause[15] = 0x01
	pause[14] = 0x00
	h.Handle(pause)
	if p, _ := h.Paused(); p {
		t.Fatal("paused by a refused frame")
	}
	if s := h.Stats(); s.Foreign != 2 || s.Malformed != 1 || s.Other != 1 || s.Frames != 0 {
		t.Fatalf("stats %+v", s)
	}
	// The first frame names the switch when none is configured.
	h2, _ := newHost(t, Config{})
	h2.Handle(frame(sw, 1, map[int]uint16{0: 100}))
	h2.Handle(frame(other, 1, nil))
	if p, _ := h2.Paused(); !p || h2.Stats().Foreign != 1 {
		t.Fatalf("learnt switch: paused %v, %+v", p, h2.Stats())
	}
}

// TestLowRateBound: a pause never lasts longer than MaxPause.
func TestLowRateBound(t *testing.T) {
	h, _ := newHost(t, Config{RateBits: 1})
	h.Handle(frame(sw, 1, map[int]uint16{0: 0xffff}))
	if p, left := h.Paused(); !p || left != int64(MaxPause) {
		t.Fatalf("paused %v for %d", p, left)
	}
	if _, err := New(Config{}); err == nil {
		t.Fatal("no rate accepted")
	}
	if _, err := New(Config{RateBits: 1, Priority: 8}); err == nil {
		t.Fatal("priority 8 accepted")
	}
}

// FuzzHandle: any bytes, no panic; a pause never outlasts MaxPause.
func FuzzHandle(f *testing.F) {
	f.Add(frame(sw, 0xff, map[int]uint16{0: 0xffff}))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, _ := newHost(t, Config{RateBits: 1000})
		h.Handle(b)
		if _, left := h.Paused(); left > int64(MaxPause) {
			t.Fatalf("paused for %d", left)
		}
	})
}
