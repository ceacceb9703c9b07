package dataplane

import (
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
)

type fakeClock struct{ t int64 }

func (c *fakeClock) Now() int64 { return c.t }

const frameSize = 2048

// testSwitch builds a switch of nports ports (one queue each) over MemLinks.
func testSwitch(t testing.TB, nports, workers, frames int, mod func(*Config)) (*Switch, []*MemLink, *fakeClock) {
	t.Helper()
	mem := make([]byte, frames*frameSize)
	clk := &fakeClock{t: 1}
	cfg := Config{Config: config.Config{Workers: workers}, Clock: clk}
	var links [][]Link
	var mls []*MemLink
	for i := 0; i < nports; i++ {
		cfg.Ports = append(cfg.Ports, config.Port{Name: string(rune('a' + i))})
		ml := NewMemLink(mem, frameSize, 256)
		mls = append(mls, ml)
		links = append(links, []Link{ml})
	}
	if mod != nil {
		mod(&cfg)
	}
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, mem, frameSize, links)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	settle(s)
	return s, mls, clk
}

// settle steps every worker until none has work left.
func settle(s *Switch) {
	for i := 0; i < 1000; i++ {
		busy := false
		for w := range s.workers {
			if s.Step(w) {
				busy = true
			}
		}
		if !busy {
			return
		}
	}
}

// checkFrames asserts that every frame is back in the pool.
func checkFrames(t *testing.T, s *Switch) {
	t.Helper()
	c := s.Frames()
	if c.Sum() != c.Total || c.InPool() != c.Total {
		t.Fatalf("frames not all back: %+v (sum %d)", c, c.Sum())
	}
}

var (
	ip1, ip2, ip3 = [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, [4]byte{10, 0, 0, 3}
)

func udp(dst, src byte, n int) []byte {
	return pkttest.UDP4(pkttest.MAC(dst), pkttest.MAC(src), ip1, ip2, 1, 2, make([]byte, n))
}

func TestFloodThenLearn(t *testing.T) {
	for _, workers := range []int{1, 2, 3} {
		s, l, _ := testSwitch(t, 3, workers, 4096, nil)
		for _, ml := range l {
			ml.Record = true
		}
		// Host 1 on port a sends to host 2, unknown yet: flooded to b and c.
		l[0].Inject(udp(2, 1, 10))
		settle(s)
		if len(l[1].Sent) != 1 || len(l[2].Sent) != 1 || len(l[0].Sent) != 0 {
			t.Fatalf("workers %d: flood sent a=%d b=%d c=%d", workers, len(l[0].Sent), len(l[1].Sent), len(l[2].Sent))
		}
		if string(l[1].Sent[0]) != string(udp(2, 1, 10)) || string(l[2].Sent[0]) != string(udp(2, 1, 10)) {
			t.Fatal("flooded copies differ from the frame")
		}
		// Host 2 answers from port b: host 1 is known, so only a gets it.
		l[1].Inject(udp(1, 2, 10))
		settle(s)
		if len(l[0].Sent) != 1 || len(l[2].Sent) != 1 {
			t.Fatalf("reply flooded: a=%d c=%d", len(l[0].Sent), len(l[2].Sent))
		}
		// And now host 1 to host 2 is unicast to b only.
		for i := 0; i < 10; i++ {
			l[0].Inject(udp(2, 1, 10))
		}
		settle(s)
		if len(l[1].Sent) != 11 || len(l[2].Sent) != 1 {
			t.Fatalf("after learning: b=%d c=%d", len(l[1].Sent), len(l[2].Sent))
		}
		if c := s.Counters(0); c.Flooded != 1 || c.RxPackets != 11 {
			t.Fatalf("port a counters: %+v", c)
		}
		if c := s.Counters(1); c.TxPackets != 11 || c.Flooded != 0 {
			t.Fatalf("port b counters: %+v", c)
		}
		checkFrames(t, s)
	}
}

func TestBroadcastFloodsAndSamePortFiltered(t *testing.T) {
	s, l, _ := testSwitch(t, 4, 2, 4096, nil)
	l[0].Inject(pkttest.ARP(pkttest.MAC(1), ip1, ip2))
	settle(s)
	for i := 1; i < 4; i++ {
		if l[i].SentCount != 1 {
			t.Fatalf("port %d got %d copies of the broadcast", i, l[i].SentCount)
		}
	}
	// Host 3 lives on port a too (behind a hub): a frame from a to it is filtered.
	l[0].Inject(udp(1, 3, 10))
	settle(s)
	l[0].Inject(udp(3, 1, 10))
	settle(s)
	// Both frames are filtered: host 1 was learnt on a from its ARP request.
	if c := s.Counters(0); c.Drops[pkt.ReasonSamePort] != 2 {
		t.Fatalf("same-port drops %d", c.Drops[pkt.ReasonSamePort])
	}
	checkFrames(t, s)
}

func TestMalformedCountedAndFreed(t *testing.T) {
	s, l, _ := testSwitch(t, 2, 2, 4096, nil)
	l[0].Inject([]byte{1, 2, 3})
	bad := udp(2, 1, 10)
	bad[14] = 0x44 // IHL 4
	l[0].Inject(bad)
	settle(s)
	c := s.Counters(0)
	if c.Drops[pkt.ReasonMalformed] != 2 || c.Malformed[pkt.ErrShort] != 1 || c.Malformed[pkt.ErrIPv4] != 1 {
		t.Fatalf("malformed counters: %+v", c)
	}
	if l[1].SentCount != 0 {
		t.Fatal("malformed frame forwarded")
	}
	checkFrames(t, s)
}

func TestQueueLimitDropsAndFrees(t *testing.T) {
	// Port b is shaped to 8 Mbit/s with a 10 KB buffer; the fake clock stands still.
	s, l, clk := testSwitch(t, 2, 2, 4096, func(c *Config) {
		c.Ports[1].Rate = 8e6
		c.Ports[1].Burst = 3000
		c.Ports[1].Buffer = 10000
	})
	l[1].Inject(udp(1, 2, 10)) // learn host 2 on b
	settle(s)
	for i := 0; i < 100; i++ {
		l[0].Inject(udp(2, 1, 958)) // 1000-byte frames
		if i%50 == 49 {
			settle(s)
		}
	}
	settle(s)
	c := s.Counters(1)
	q := s.Frames().Queued
	if c.TxPackets+c.Drops[pkt.ReasonPortLimit]+q != 100 || c.Drops[pkt.ReasonPortLimit] < 80 {
		t.Fatalf("tx %d + port_limit drops %d + queued %d != 100", c.TxPackets, c.Drops[pkt.ReasonPortLimit], q)
	}
	if d := s.Frames().Queued; d != 10 {
		t.Fatalf("%d frames queued, want 10 (10 KB of 1000 B frames)", d)
	}
	// Let time run: the queue drains at 8 Mbit/s (1024 B on the wire per ms).
	for i := 0; i < 20; i++ {
		clk.t += 1e6
		settle(s)
	}
	if c := s.Counters(1); c.TxPackets+c.Drops[pkt.ReasonPortLimit] != 100 || s.Frames().Queued != 0 {
		t.Fatalf("after draining: %+v queued %d", c, s.Frames().Queued)
	}
	checkFrames(t, s)
}

func TestShaperRateOnFakeClock(t *testing.T) {
	s, l, clk := testSwitch(t, 2, 1, 8192, func(c *Config) {
		c.Ports[1].Rate = 100e6
		c.Ports[1].Buffer = 4 << 20
	})
	l[1].Inject(udp(1, 2, 10))
	settle(s)
	start := s.Counters(1).TxBytes + s.Counters(1).TxPackets*24
	// Offer 200 Mbit/s for one simulated second in 100 µs steps.
	frame := udp(2, 1, 1472) // 1514 B
	for step := 0; step < 10000; step++ {
		clk.t += 100e3
		if step%2 == 0 {
			for k := 0; k < 3; k++ {
				l[0].Inject(frame)
			}
		}
		settle(s)
	}
	c := s.Counters(1)
	bits := float64(c.TxBytes+c.TxPackets*24-start) * 8
	if bits < 0.98*100e6 || bits > 1.02*100e6 {
		t.Fatalf("shaped port sent %.1f Mbit in 1 s, want 100 ± 2%%", bits/1e6)
	}
}

func TestHotPathDoesNotAllocate(t *testing.T) {
	s, l, _ := testSwitch(t, 2, 2, 4096, nil)
	l[1].Inject(udp(1, 2, 10))
	settle(s)
	frame := udp(2, 1, 100)
	allocs := testing.AllocsPerRun(1000, func() {
		for k := 0; k < 32; k++ {
			l[0].Inject(frame)
		}
		settle(s)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per batch of 32 forwarded frames", allocs)
	}
	if l[1].SentCount < 32000 {
		t.Fatalf("only %d frames forwarded", l[1].SentCount)
	}
	checkFrames(t, s)
}

func TestBadConfig(t *testing.T) {
	mem := make([]byte, 100*frameSize)
	ml := NewMemLink(mem, frameSize, 64)
	// build completes c, as a config built in Go must be, then builds it.
	build := func(c config.Config, mem []byte) error {
		if err := c.Complete(); err != nil {
			return err
		}
		_, err := New(Config{Config: c}, mem, frameSize, [][]Link{{ml}})
		return err
	}
	cases := map[string]config.Config{
		"too few frames": {Ports: []config.Port{{Name: "a"}}},
		"bad scheduler":  {Ports: []config.Port{{Name: "a", Scheduler: "nope"}}},
	}
	for name, c := range cases {
		if err := build(c, mem); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	big := make([]byte, 4096*frameSize)
	if _, err := New(Config{Config: config.Config{Ports: []config.Port{{Name: "a"}}}}, big, frameSize, [][]Link{{NewMemLink(big, frameSize, 64)}}); err == nil {
		t.Error("a config not completed accepted")
	}
	if err := build(config.Config{Ports: []config.Port{{Name: "a"}}}, mem[:1000]); err == nil {
		t.Error("ragged UMEM accepted")
	}
}

func BenchmarkForward(b *testing.B) {
	for _, w := range []int{1, 2} {
		b.Run(map[int]string{1: "1worker", 2: "2workers"}[w], func(b *testing.B) {
			s, l, _ := testSwitch(b, 2, w, 8192, func(c *Config) { c.Ports[0].SourceGuard = config.SourceGuard(*benchGuard) })
			l[1].Inject(udp(1, 2, 10))
			settle(s)
			frame := udp(2, 1, 18) // 64-byte frame
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += 64 {
				for k := 0; k < 64; k++ {
					l[0].Inject(frame)
				}
				settle(s)
			}
		})
	}
}
