package netns

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gswitch/gswitch/internal/fairness"
)

// concurrentIperf runs one iperf3 TCP client per sender to dst (one server
// port each) for secs seconds, and returns each one's goodput in bit/s.
func concurrentIperf(t *testing.T, senders []*Host, dst *Host, secs int, tos []int, during func()) []float64 {
	t.Helper()
	for i := range senders {
		dst.StartIperfServer(t, 5300+i)
	}
	res := make([]iperfResult, len(senders))
	var wg sync.WaitGroup
	for i, h := range senders {
		wg.Add(1)
		go func(i int, h *Host) {
			defer wg.Done()
			res[i] = h.iperfNoFatal(dst, 5300+i, secs, "-S", fmt.Sprint(tos[i]))
		}(i, h)
	}
	if during != nil {
		time.Sleep(time.Duration(secs) * time.Second / 2)
		during()
	}
	wg.Wait()
	g := make([]float64, len(senders))
	for i, r := range res {
		if r.Error != "" {
			t.Fatalf("iperf3 from %s: %s", senders[i].NS, r.Error)
		}
		g[i] = r.End.SumReceived.BitsPerSecond
	}
	return g
}

// TestDRRFairShareOfAShapedPort: three TCP flows from three hosts into one
// port shaped to 200 Mbit/s, each flow in its own DRR queue (by DSCP).
func TestDRRFairShareOfAShapedPort(t *testing.T) {
	tp := NewTopo(t, 4)
	sw := tp.StartSwitch("", PortOpts{3: "rate: 200Mbit\nscheduler: drr\nqueues: 8"})
	hs := tp.Hosts
	for _, h := range hs[:3] { // let the switch learn every host
		h.Exec(t, 5*time.Second, "ping", "-c", "1", "-W", "1", hs[3].IP)
	}
	// Mid-run, up to five looks 200 ms apart: one scrape can fall in a
	// moment when the queues happen to be empty (seen once in about 25
	// runs), which says nothing about where DRR puts the flows.
	busy := 0
	g := concurrentIperf(t, hs[:3], hs[3], 10, []int{8 << 2, 16 << 2, 24 << 2}, func() {
		for i := 0; i < 5 && busy < 2; i++ {
			if i > 0 {
				time.Sleep(200 * time.Millisecond)
			}
			n := 0
			for k, v := range sw.Scrape() {
				if strings.HasPrefix(k, `gswitch_queue_depth_bytes{port="p4"`) && v > 0 {
					n++
				}
			}
			busy = max(busy, n)
		}
	})
	j := fairness.Jain(g)
	t.Logf("DRR, 200 Mbit/s port: goodputs %.1f %.1f %.1f Mbit/s, Jain %.4f", g[0]/1e6, g[1]/1e6, g[2]/1e6, j)
	if j < 0.95 {
		t.Errorf("Jain index %.4f < 0.95", j)
	}
	if sum := (g[0] + g[1] + g[2]) / 1e6; sum < 170 || sum > 200 {
		t.Errorf("total %.1f Mbit/s through a 200 Mbit/s port", sum)
	}
	if busy < 2 {
		t.Errorf("mid-run, at most %d queues of p4 had a depth on the metrics endpoint in five looks", busy)
	}
	sw.CheckFramesBack()
}

// TestStrictPriority: an EF-marked flow (DSCP 46) and a best-effort flow
// share a 200 Mbit/s port with strict priority; the EF flow gets the port.
func TestStrictPriority(t *testing.T) {
	tp := NewTopo(t, 3)
	sw := tp.StartSwitch("", PortOpts{2: "rate: 200Mbit\nscheduler: prio\nqueues: 8"})
	hs := tp.Hosts
	for _, h := range hs[:2] {
		h.Exec(t, 5*time.Second, "ping", "-c", "1", "-W", "1", hs[2].IP)
	}
	g := concurrentIperf(t, hs[:2], hs[2], 8, []int{46 << 2, 0}, nil)
	// 200 Mbit/s on the wire carries 1448/1538 of it as TCP payload.
	line := 200e6 * 1448 / 1538
	t.Logf("strict priority: EF %.1f Mbit/s, best effort %.1f Mbit/s (payload line rate %.1f)", g[0]/1e6, g[1]/1e6, line/1e6)
	if g[0] < 0.9*line {
		t.Errorf("the EF flow got %.1f Mbit/s, under 90%% of the port", g[0]/1e6)
	}
	m := sw.Scrape()
	if m[`gswitch_port_tx_packets_total{port="p3"}`] == 0 {
		t.Fatal("nothing left p3")
	}
	sw.CheckFramesBack()
}

// TestAFQFairShare: three TCP flows into a 200 Mbit/s port run by AFQ (no
// DSCP marking: AFQ tells flows apart by their 5-tuple).
func TestAFQFairShare(t *testing.T) {
	tp := NewTopo(t, 4)
	sw := tp.StartSwitch("", PortOpts{3: "rate: 200Mbit\nscheduler: rsp\nmechanisms: {afq: {}}\nqueues: 32"})
	hs := tp.Hosts
	for _, h := range hs[:3] {
		h.Exec(t, 5*time.Second, "ping", "-c", "1", "-W", "1", hs[3].IP)
	}
	g := concurrentIperf(t, hs[:3], hs[3], 10, []int{0, 0, 0}, nil)
	j := fairness.Jain(g)
	m := sw.Scrape()
	t.Logf("AFQ, 200 Mbit/s port: goodputs %.1f %.1f %.1f Mbit/s, Jain %.4f; round %v, round-overflow drops %v",
		g[0]/1e6, g[1]/1e6, g[2]/1e6, j, m[`gswitch_rsp_round{port="p4"}`], m[`gswitch_drops_total{port="p4",reason="round_overflow"}`])
	if j < 0.95 {
		t.Errorf("Jain index %.4f < 0.95", j)
	}
	if m[`gswitch_rsp_round{port="p4"}`] == 0 {
		t.Error("the AFQ round never advanced")
	}
	sw.CheckFramesBack()
}
