package dataplane

import (
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/internal/fairness"
	"github.com/gswitch/gswitch/mech"
	_ "github.com/gswitch/gswitch/mech/all"
	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/sched"
)

func tcpDSCP(dst, src byte, dscp uint8, n int) []byte {
	return pkttest.TCP4(pkttest.MAC(dst), pkttest.MAC(src), ip1, ip2, uint16(src), 80, dscp<<2, make([]byte, n))
}

// TestDRRSharesAShapedPort sends three backlogged flows of different frame
// sizes from three ports into one port shaped to 10 Mbit/s, with DRR over
// DSCP classes, on a fake clock, and checks the bytes each flow gets.
func TestDRRSharesAShapedPort(t *testing.T) {
	for _, workers := range []int{1, 2} {
		s, l, clk := testSwitch(t, 4, workers, 8192, func(c *Config) {
			c.Alpha = 1
			c.Ports[3].Rate = 10e6
			c.Ports[3].Scheduler = "drr"
			c.Ports[3].Queues = 8
			c.Ports[3].Buffer = 256 << 10
		})
		l[3].Inject(udp(9, 4, 10)) // learn host 4 on port d
		settle(s)
		sizes := []int{100, 700, 1400}
		dscps := []uint8{8, 16, 24}
		for step := 0; step < 2000; step++ { // 2000 x 1 ms
			clk.t += 1e6
			for f := 0; f < 3; f++ {
				for k := 0; k < 4; k++ {
					l[f].Inject(tcpDSCP(4, byte(f+1), dscps[f], sizes[f]))
				}
			}
			settle(s)
		}
		// Measure one more second, telling the flows apart by frame size.
		var got [3]float64
		rec := map[int]int{}
		for f := range sizes {
			rec[len(tcpDSCP(4, byte(f+1), dscps[f], sizes[f]))] = f
		}
		l[3].Record = true
		for step := 0; step < 1000; step++ {
			clk.t += 1e6
			for f := 0; f < 3; f++ {
				for k := 0; k < 4; k++ {
					l[f].Inject(tcpDSCP(4, byte(f+1), dscps[f], sizes[f]))
				}
			}
			settle(s)
		}
		for _, fr := range l[3].Sent {
			if f, ok := rec[len(fr)]; ok {
				got[f] += float64(len(fr))
			}
		}
		if j := fairness.Jain(got[:]); j < 0.99 {
			t.Errorf("workers %d: DRR byte shares %v, Jain %.3f", workers, got, j)
		}
		if c := s.Counters(3); c.Drops[pkt.ReasonPortLimit]+c.Drops[pkt.ReasonQueueLimit] == 0 {
			t.Errorf("no queue drops while offering 3x the port rate: %+v", c.Drops)
		}
	}
}

func TestPausedQueueHoldsAndControlGoesFirst(t *testing.T) {
	s, l, clk := testSwitch(t, 2, 1, 4096, func(c *Config) {
		c.Ports[1].Scheduler = "prio"
		c.Ports[1].Queues = 8
		c.Ports[1].Rate = 8e6
	})
	l[1].Inject(udp(1, 2, 10))
	settle(s)
	port := s.Ports()[1]
	q := int(sched.DefaultClassifier(8).Map[0]) // best effort
	port.PauseQueue(q)
	for i := 0; i < 20; i++ {
		l[0].Inject(tcpDSCP(2, 1, 0, 500))
	}
	clk.t += 1e9
	settle(s)
	if l[1].SentCount != 0 {
		t.Fatalf("%d frames left a paused queue", l[1].SentCount)
	}
	if _, n := port.Scheduler().Depth(q); n != 20 {
		t.Fatalf("paused queue holds %d packets, want 20", n)
	}
	// A frame the switch emits leaves although the data queue is paused and backlogged.
	l[1].Record = true
	ctrl := pkttest.Eth(pkttest.MAC(2), pkttest.MAC(0xfe), 0x8808, 0, 0)
	ctrl = append(ctrl, make([]byte, 46)...)
	em := s.Emitter(port.eg.owner)
	buf := em.Frame(1, 1)
	if buf == nil || !em.Send(copy(buf, ctrl), pkt.LaneControl) {
		t.Fatal("emit failed")
	}
	settle(s)
	if len(l[1].Sent) != 1 || string(l[1].Sent[0]) != string(ctrl) {
		t.Fatalf("control frame not sent first: %d frames", len(l[1].Sent))
	}
	port.ResumeQueue(q)
	for i := 0; i < 100; i++ {
		clk.t += 1e6
		settle(s)
	}
	if l[1].SentCount != 21 {
		t.Fatalf("after resume %d frames sent, want 21", l[1].SentCount)
	}
	checkFrames(t, s)
}

func TestPFabricEvictionsThroughTheSwitch(t *testing.T) {
	s, l, clk := testSwitch(t, 2, 2, 4096, func(c *Config) {
		c.Ports[1].Scheduler = "pfabric"
		c.Ports[1].Mechanisms = mechFor("pfabric")
		c.Ports[1].Buffer = 10 * 1514
		c.Ports[1].Rate = 8e6
	})
	l[1].Inject(udp(1, 2, 10))
	settle(s)
	// Packets that are not gsperf segments have rank 0: once full, arrivals are dropped, never evict.
	for i := 0; i < 30; i++ {
		l[0].Inject(udp(2, 1, 1472))
	}
	settle(s)
	c := s.Counters(1)
	if c.Drops[pkt.ReasonPortLimit] == 0 || c.Drops[pkt.ReasonEvicted] != 0 {
		t.Fatalf("drops %+v", c.Drops)
	}
	for i := 0; i < 100; i++ {
		clk.t += 1e7
		settle(s)
	}
	checkFrames(t, s)
}

// gsperfUDP is a gsperf segment of flow (its UDP source port) with a pFabric
// rank and payload bytes after the 64-byte gsperf header.
func gsperfUDP(dst, src byte, flow uint16, rank uint32, payload int) []byte {
	b := make([]byte, proto.HeaderLen+payload)
	h := proto.Header{Type: proto.TypeData, Flow: uint64(flow), Priority: rank}
	h.Encode(b)
	return pkttest.UDP4(pkttest.MAC(dst), pkttest.MAC(src), ip1, ip2, flow, 5500, b)
}

// TestPFabricFullSizeArrivalEvictsSmallPackets: a pfabric port whose
// buffer holds many small low-priority frames (pFabric probes) takes a
// full-size frame of the most urgent flow by evicting as many of them as it
// needs, counts each eviction, and gets every frame back to the pool.
func TestPFabricFullSizeArrivalEvictsSmallPackets(t *testing.T) {
	s, l, clk := testSwitch(t, 2, 1, 4096, func(c *Config) {
		c.Ports[1].Scheduler = "pfabric"
		c.Ports[1].Mechanisms = mechFor("pfabric")
		c.Ports[1].Buffer = 4 * 1514
		c.Ports[1].BufferPackets = 100 // the default, 4 x 1514 / 128, would hold only 47 probes
		c.Ports[1].Rate = 8e6
	})
	l[1].Inject(udp(1, 2, 10))
	settle(s)
	port := s.Ports()[1]
	port.PauseQueue(0) // hold everything in the buffer
	const probes, probeLen = 50, 14 + 20 + 8 + proto.HeaderLen + 1
	for i := 0; i < probes; i++ {
		l[0].Inject(gsperfUDP(2, 1, uint16(100+i), 1_000_000+uint32(i), 1))
	}
	settle(s)
	if b, n := port.Scheduler().Depth(0); n != probes || b != probes*probeLen {
		t.Fatalf("buffer holds %d packets, %d bytes; want %d, %d (drops %+v, sent %d)", n, b, probes, probes*probeLen, s.Counters(1).Drops, l[1].SentCount)
	}
	l[0].Inject(gsperfUDP(2, 1, 7, 5, 1514-14-20-8-proto.HeaderLen))
	settle(s)
	need := probes*probeLen + 1514 - 4*1514 // bytes the arrival must free
	want := (need + probeLen - 1) / probeLen
	c := s.Counters(1)
	if c.Drops[pkt.ReasonEvicted] != uint64(want) || c.Drops[pkt.ReasonPortLimit] != 0 {
		t.Fatalf("drops %+v: want %d evictions and no port_limit drop", c.Drops, want)
	}
	if _, n := port.Scheduler().Depth(0); n != uint32(probes-want+1) {
		t.Fatalf("buffer holds %d packets, want %d", n, probes-want+1)
	}
	port.ResumeQueue(0)
	for i := 0; i < 100; i++ {
		clk.t += 1e7
		settle(s)
	}
	checkFrames(t, s)
}

func TestSchedulersDoNotAllocateInTheSwitch(t *testing.T) {
	for _, name := range sched.Names() {
		s, l, _ := testSwitch(t, 2, 2, 4096, func(c *Config) { c.Ports[1].Scheduler = name; c.Ports[1].Mechanisms = mechFor(name) })
		l[1].Inject(udp(1, 2, 10))
		settle(s)
		frame := tcpDSCP(2, 1, 10, 100)
		if a := testing.AllocsPerRun(200, func() {
			for k := 0; k < 32; k++ {
				l[0].Inject(frame)
			}
			settle(s)
		}); a != 0 {
			t.Errorf("%s: %v allocations per batch", name, a)
		}
		checkFrames(t, s)
	}
}

// mechFor enables the mechanism a rank scheduler needs, with its defaults.
func mechFor(scheduler string) config.Mechanisms {
	name := map[string]string{"pfabric": "pfabric", "rsp": "afq"}[scheduler]
	if name == "" {
		return nil
	}
	spec, _ := mech.Lookup(name)
	return config.Mechanisms{{Name: name, Config: spec.Config()}}
}
