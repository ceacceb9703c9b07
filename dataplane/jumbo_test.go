package dataplane

import (
	"bytes"
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane/afxdp"
	"github.com/gswitch/gswitch/pkt"
	"golang.org/x/sys/unix"
)

// jumboSwitch is a switch of nports in-memory ports that carry frames of up
// to 9018 bytes as multi-buffer chains.
func jumboSwitch(t *testing.T, nports, workers int, mod func(*Config)) (*Switch, []*MemLink, *fakeClock) {
	t.Helper()
	s, l, clk := testSwitch(t, nports, workers, 8192, func(c *Config) {
		c.MaxFrame = 9018
		if mod != nil {
			mod(c)
		}
	})
	for _, ml := range l {
		ml.SG = true
		ml.Record = true
	}
	return s, l, clk
}

// TestJumboFramesCrossWhole: 9000-byte frames arrive as chains of 2 KB
// buffers, cross the switch (unicast after learning, and flooded, whose
// copies need jumbo slots of their own) and leave as chains the kernel
// would take: each buffer within its UMEM frame, every byte in place.
// Every UMEM frame and slot comes home.
func TestJumboFramesCrossWhole(t *testing.T) {
	for _, workers := range []int{1, 2} {
		s, l, _ := jumboSwitch(t, 3, workers, nil)
		if !s.sg || s.slotChunks != 5 {
			t.Fatalf("workers %d: sg %v with %d frames per slot, want 5 frames of %d B for 9018 B", workers, s.sg, s.slotChunks, frameSize)
		}
		big := udp(2, 1, 9000-42)
		for i := 42; i < len(big); i++ {
			big[i] = byte(i * 7)
		}
		l[0].Inject(big) // unknown destination: flooded to b and c
		settle(s)
		for _, i := range []int{1, 2} {
			if len(l[i].Sent) != 1 || !bytes.Equal(l[i].Sent[0], big) {
				t.Fatalf("workers %d: port %d sent %d frames, first equal: %v", workers, i, len(l[i].Sent), len(l[i].Sent) > 0 && bytes.Equal(l[i].Sent[0], big))
			}
		}
		l[1].Inject(udp(1, 2, 10)) // host 2 answers: learnt
		settle(s)
		for i := 0; i < 500; i++ { // more than the slots of a worker: they must come back
			big[100] = byte(i)
			l[0].Inject(big)
			settle(s)
			if got := l[1].Sent[len(l[1].Sent)-1]; !bytes.Equal(got, big) {
				t.Fatalf("workers %d: frame %d changed on the way (len %d)", workers, i, len(got))
			}
		}
		if len(l[1].Sent) != 501 || len(l[2].Sent) != 1 {
			t.Fatalf("workers %d: b got %d frames, c %d", workers, len(l[1].Sent), len(l[2].Sent))
		}
		for i, ml := range l {
			if ml.Invalid != 0 {
				t.Fatalf("workers %d: port %d put %d descriptors on its tx ring that the kernel would refuse", workers, i, ml.Invalid)
			}
		}
		c := s.Counters(0)
		if c.RxPackets != 501 || c.RxBytes != 501*uint64(len(big)) {
			t.Fatalf("workers %d: port a counted %d frames, %d bytes", workers, c.RxPackets, c.RxBytes)
		}
		checkFrames(t, s)
	}
}

// TestJumboChainAcrossBatches: a chain whose buffers arrive in separate
// receive batches is gathered whole.
func TestJumboChainAcrossBatches(t *testing.T) {
	s, l, _ := jumboSwitch(t, 2, 1, nil)
	big := udp(0xff, 1, 5000)
	for i := 42; i < len(big); i++ {
		big[i] = byte(i)
	}
	l[0].Inject(big)
	// Hand the switch the chain one buffer per pass.
	rx := append([]afxdp.Desc(nil), l[0].rx...)
	l[0].rx = l[0].rx[:0]
	if len(rx) != 3 || rx[0].Options&unix.XDP_PKT_CONTD == 0 || rx[2].Options != 0 {
		t.Fatalf("the link did not deliver a chain of 3: %+v", rx)
	}
	for _, d := range rx {
		l[0].rx = append(l[0].rx, d)
		s.Step(0)
		if d.Options != 0 && s.Frames().Assembling != 1 {
			t.Fatalf("a frame in progress is not counted: %+v", s.Frames())
		}
	}
	settle(s)
	if len(l[1].Sent) != 1 || !bytes.Equal(l[1].Sent[0], big) {
		t.Fatalf("sent %d frames", len(l[1].Sent))
	}
	checkFrames(t, s)
}

// TestJumboTooLongAndNoSlot: a chain longer than max_frame is dropped as
// too_long, a chain that finds every slot taken as no_frames, and neither
// loses a UMEM frame; a small frame still leaves as one buffer.
func TestJumboTooLongAndNoSlot(t *testing.T) {
	s, l, _ := jumboSwitch(t, 2, 1, func(c *Config) { c.JumboSlots = 64 })
	l[0].Inject(udp(0xff, 1, 9018+500))
	settle(s)
	if c := s.Counters(0); c.Drops[pkt.ReasonTooLong] != 1 || len(l[1].Sent) != 0 {
		t.Fatalf("too long: drops %d, sent %d", c.Drops[pkt.ReasonTooLong], len(l[1].Sent))
	}
	checkFrames(t, s)
	// Take every slot, then send one more chain.
	w := s.workers[0]
	held := append([]uint64(nil), w.pool.jfree...)
	w.pool.jfree = w.pool.jfree[:0]
	l[0].Inject(udp(0xff, 1, 4000))
	settle(s)
	if c := s.Counters(0); c.Drops[pkt.ReasonNoFrames] != 1 || len(l[1].Sent) != 0 {
		t.Fatalf("no slot: drops %d, sent %d", c.Drops[pkt.ReasonNoFrames], len(l[1].Sent))
	}
	w.pool.jfree = append(w.pool.jfree, held...)
	s.Step(0) // publishes the free count
	checkFrames(t, s)
	// A frame that fits one UMEM frame still goes as one buffer.
	l[0].Inject(udp(0xff, 1, 1000))
	settle(s)
	if len(l[1].Sent) != 1 || l[1].Invalid != 0 {
		t.Fatalf("small frame: sent %d, invalid %d", len(l[1].Sent), l[1].Invalid)
	}
	checkFrames(t, s)
}

// TestJumboConfig: max_frame within one UMEM frame sets up no slots; slots
// that leave too few frames, or too few slots, are refused.
func TestJumboConfig(t *testing.T) {
	s, _, _ := testSwitch(t, 2, 1, 4096, func(c *Config) { c.MaxFrame = 1518 })
	if s.sg {
		t.Fatal("a 1518-byte max frame set up jumbo slots")
	}
	for _, js := range []int{8, 4096} {
		mem := make([]byte, 4096*frameSize)
		cfg := Config{Config: config.Config{Workers: 1, Ports: []config.Port{{Name: "a"}, {Name: "b"}}},
			Clock: &fakeClock{t: 1}, MaxFrame: 9018, JumboSlots: js}
		if err := cfg.Complete(); err != nil {
			t.Fatal(err)
		}
		links := [][]Link{{NewMemLink(mem, frameSize, 256)}, {NewMemLink(mem, frameSize, 256)}}
		if _, err := New(cfg, mem, frameSize, links); err == nil {
			t.Fatalf("jumbo slots %d accepted", js)
		}
	}
}

// TestJumboSmallFramesAllocateNothing: with jumbo slots set up, the
// per-frame path of ordinary frames still allocates nothing.
func TestJumboSmallFramesAllocateNothing(t *testing.T) {
	s, l, _ := jumboSwitch(t, 2, 1, nil)
	for _, ml := range l {
		ml.Record = false
	}
	l[1].Inject(udp(1, 2, 10))
	settle(s)
	small, big := udp(2, 1, 100), udp(2, 1, 8000)
	allocs := testing.AllocsPerRun(200, func() {
		l[0].Inject(small)
		l[0].Inject(big)
		settle(s)
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per pass", allocs)
	}
	checkFrames(t, s)
}

// FuzzJumboChains: any sequence of receive descriptors (any length, the
// continuation flag set or not, any offset in the UMEM frame) on a port
// that takes chains neither panics nor loses a frame, and nothing longer
// than the largest frame leaves the switch.
// Each 4 bytes of the input are one descriptor of a frame taken from the
// fill ring, as the kernel returns them: a 16-bit length (the full range,
// also past the UMEM frame's end), a flags byte (bit 0: XDP_PKT_CONTD;
// bits 1-7: the offset in the UMEM frame, in 32-byte steps) and the byte
// the buffer is filled with.
func FuzzJumboChains(f *testing.F) {
	f.Add([]byte{0x00, 0x06, 0x01, 0xff, 0x00, 0x06, 0x01, 0xff, 0x00, 0x02, 0x00, 0xff})
	f.Add([]byte{0xff, 0xff, 0x01, 0x00, 0x00, 0x40, 0xfe, 0x00})
	f.Add([]byte{0x00, 0x07, 0x05, 0xff, 0x00, 0x00, 0x01, 0x00, 0x00, 0x30, 0x00, 0x11})
	f.Fuzz(func(t *testing.T, in []byte) {
		s, l, _ := jumboSwitch(t, 2, 1, nil)
		l[1].Record = true
		mem := s.mem
		for len(in) >= 4 && len(l[0].fill) > 0 {
			n := uint32(in[0])<<8 | uint32(in[1])
			fl, fill := in[2], in[3]
			in = in[4:]
			d := afxdp.Desc{Len: n}
			if fl&1 != 0 {
				d.Options = unix.XDP_PKT_CONTD
			}
			base := l[0].fill[0] &^ (frameSize - 1)
			l[0].fill = l[0].fill[1:]
			d.Addr = base + uint64(fl>>1)*32%frameSize
			end := min(d.Addr+uint64(n), base+frameSize)
			for i := d.Addr; i < end; i++ {
				mem[i] = fill
			}
			if n >= 14 && d.Addr+14 <= end { // an Ethernet header the switch floods: broadcast from host 1
				copy(mem[d.Addr:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x08, 0x00})
			}
			l[0].rx = append(l[0].rx, d)
			if fill&3 == 0 {
				settle(s)
			}
		}
		settle(s)
		// End any chain left open with a last buffer, so its slot comes home.
		if len(l[0].fill) > 0 {
			l[0].rx = append(l[0].rx, afxdp.Desc{Addr: (l[0].fill[0] &^ (frameSize - 1)) + pkt.Headroom, Len: 60})
			l[0].fill = l[0].fill[1:]
			settle(s)
		}
		for _, fr := range l[1].Sent {
			if len(fr) > 9018 {
				t.Fatalf("a %d-byte frame left the switch (max 9018)", len(fr))
			}
		}
		if l[1].Invalid != 0 {
			t.Fatalf("%d descriptors the kernel would refuse", l[1].Invalid)
		}
		checkFrames(t, s)
	})
}

// TestJumboShapedAndDelayed: 9000-byte frames through a port shaped to 80
// Mbit/s with a 50 us link delay leave one every 9024 x 8 / 80e6 s (the
// shaper charges a jumbo frame its whole length plus 24 bytes), whole, and
// every frame and slot comes home.
func TestJumboShapedAndDelayed(t *testing.T) {
	s, l, clk := jumboSwitch(t, 2, 1, func(c *Config) {
		c.Ports[1].Rate = 80e6
		c.Ports[1].Delay = 50e3
	})
	l[1].Inject(udp(1, 2, 10))
	settle(s)
	clk.t += 1e6
	settle(s)
	sent0 := len(l[1].Sent)
	big := udp(2, 1, 9000-42)
	for i := 42; i < len(big); i++ {
		big[i] = byte(i * 3)
	}
	start := clk.t
	for i := 0; i < 20; i++ {
		l[0].Inject(big)
	}
	settle(s)
	var times []int64
	for clk.t < start+50e6 && len(times) < 20 {
		clk.t += 1e3
		settle(s)
		for len(times) < len(l[1].Sent)-sent0 {
			times = append(times, clk.t-start)
		}
	}
	if len(times) != 20 {
		t.Fatalf("sent %d of 20", len(times))
	}
	for _, f := range l[1].Sent[sent0:] {
		if !bytes.Equal(f, big) {
			t.Fatalf("a frame changed on the way (%d bytes)", len(f))
		}
	}
	gap := float64(times[19]-times[1]) / 18 // the first two leave together: the bucket starts full
	if want := 9024 * 8 / 80e6 * 1e9; gap < want*0.99 || gap > want*1.01 {
		t.Fatalf("frames %.0f ns apart, want %.0f", gap, want)
	}
	if times[0] < 50e3 {
		t.Fatalf("first frame after %d ns: the 50 us delay was skipped", times[0])
	}
	checkFrames(t, s)
}

// TestGiantsDroppedAtEgress: a frame longer than the egress port's link
// takes (MaxFrame) is dropped there as too_long, not handed to a device
// that would drop it unseen; frames that fit pass.
func TestGiantsDroppedAtEgress(t *testing.T) {
	s, l, _ := jumboSwitch(t, 2, 1, func(c *Config) { c.PortMaxFrame = []int{0, 1518} })
	l[1].Inject(udp(1, 2, 10))
	settle(s)
	l[0].Inject(udp(2, 1, 1518-42))
	l[0].Inject(udp(2, 1, 1519-42))
	l[0].Inject(udp(2, 1, 9000-42))
	settle(s)
	if len(l[1].Sent) != 1 || len(l[1].Sent[0]) != 1518 {
		t.Fatalf("port b sent %d frames", len(l[1].Sent))
	}
	if d := s.Counters(1).Drops[pkt.ReasonTooLong]; d != 2 {
		t.Fatalf("%d too_long drops at port b, want 2", d)
	}
	checkFrames(t, s)
}
