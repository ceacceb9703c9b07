package netns

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gswitch/gswitch/internal/fairness"
	"github.com/gswitch/gswitch/perf/udp"
)

// DCTCP, the baseline ExpressPass and BFC compare with, on ExpressPass's
// N-to-1 fabric (topologies/expresspass/incast.yaml: 10 Gbit/s links of
// 1 us, 250-packet port buffers, timescale 1000) with ECN step marking
// (mech/ecn) instead of ExpressPass on every port, and gsperf -mode dctcp
// on the hosts (perf/transport's DCTCP: alpha with g = 1/16, the window
// cut by alpha/2 once per window of data).
//
// K is the DCTCP paper's at 10 Gbit/s: 65 packets (Alizadeh et al.,
// section 4; ExpressPass's Fig. 5 normalises buffers by the same K,
// 100 KB). The paper's analysis (section 3.3) gives the queue of N
// synchronised flows a peak of K + N packets (each flow adds one segment
// in the round trip before the marks reach it) and an amplitude
// A = (1/2) sqrt(2N(C x RTT + K)) below it: here, N = 16 and a base RTT of
// about 3 packets, Qmax = 81 and A = 23. The bars: no drop anywhere, the
// shared port's queue at p99 within Qmax plus one histogram bucket (8
// packets: the hosts' gsperf runs as ordinary processes and a late host
// sends what its window held at once), its median at least Qmax - 2A
// (the queue swings about K and does not drain, which is what keeps the
// link busy) and goodput at least 90% of what the link carries as
// gsperf payload.
//
// GSWITCH_TEST_MECH_OFF=ecn runs the fabric without the marking: DCTCP
// then sees no ECN and behaves as Reno, which fills the 250-packet buffer
// and drops (the test must fail so).
const (
	dctcpK      = 65
	dctcpBucket = 8 // packets: the ecn queue histogram's bucket width around K
)

// dctcpPayload is the share of the line gsperf's payload gets with no
// credits: 1408 bytes of payload in a 1538-byte frame on the wire.
const dctcpPayload = float64(udp.MSS) / float64(udp.MSS+udp.Overhead)

func TestDCTCPIncast16(t *testing.T) {
	const n = 16
	off := mechOff(t, "ecn")
	mechs := regexp.MustCompile(`mechanisms: \{expresspass: \{[^}]*\}\}`)
	f := upXP(t, "incast.yaml", func(s string) string {
		if !mechs.MatchString(s) {
			t.Fatalf("incast.yaml: no ExpressPass mechanisms line to replace")
		}
		m := fmt.Sprintf("mechanisms: {ecn: {k_packets: %d}}", dctcpK)
		if off {
			m = "mechanisms: {}"
		}
		return mechs.ReplaceAllString(s, m)
	})
	k := strconv.FormatFloat(f.k, 'g', -1, 64)
	var flows []xpFlow
	for i := 1; i <= n; i++ {
		flows = append(flows, xpFlow{fmt.Sprintf("s%d", i), "r1"})
	}
	payload := f.rateBits * dctcpPayload
	size := int64(payload / 8 * xpIncastFor.Seconds() / n)
	server := func(dst string) []string {
		return []string{"server", "-bind", f.addr(dst) + ":5500", "-timescale", k, "-report", "0"}
	}
	from, to := xpIncastFrom, xpIncastFor-xpIncastFrom
	run := f.runHosts(flows, server, []string{"-mode", "dctcp"}, size, 3*xpIncastFor, from, to)
	rates := windowRates(run.flows, from, to)
	var sum, slowest float64
	var ece, cuts uint64
	for i, fl := range run.flows {
		sum += rates[i]
		if !fl.Complete {
			t.Errorf("flow %d from %s did not complete", i, flows[i].src)
			continue
		}
		slowest = max(slowest, float64(fl.FCTFabricNs)/1e6)
		ece += fl.Mech["ece_acks"]
		cuts += fl.Mech["reductions"]
	}
	util := sum / payload
	drops, where := run.dataDrops()
	marked := run.delta("sw1", `gswitch_ecn_marked_total{port="sw2"}`)
	if len(run.marks) != 2 {
		t.Fatalf("the switches were not scraped at %v and %v", from, to)
	}
	// The queue the packets found in the steady window, after the flows'
	// slow start (16 initial windows of 10 segments at once) and before
	// the first flows end.
	steady := xpRun{before: run.marks[0], after: run.marks[1]}
	p50, p99, most, count := steady.histQuantiles("gswitch_ecn_queue_packets", "sw1", "sw2")
	_, s99, smost, _ := run.histQuantiles("gswitch_ecn_queue_packets", "sw1", "sw2")
	qmax := float64(dctcpK + n)
	amp := 0.5 * math.Sqrt(2*n*(3+dctcpK))
	t.Logf("%d-to-1 DCTCP, K %d packets: goodput %.3f Gbit/s in [%v, %v] = %.3f of the link's %.3f Gbit/s of payload; Jain %.3f; slowest flow %.2f ms (fair share %v)",
		n, dctcpK, sum/1e9, from, to, util, payload/1e9, fairness.Jain(rates), slowest, xpIncastFor)
	t.Logf("sw1->sw2: %.0f packets marked CE; queue in [%v, %v] p50 %.0f p99 %.0f max bucket %.0f (%.0f packets), over the whole run p99 %.0f max bucket %.0f; the paper's Qmax = K + N = %.0f, amplitude %.0f; senders saw %d ECE acks and cut their windows %d times; drops %.0f %s",
		marked, from, to, p50, p99, most, count, s99, smost, qmax, amp, ece, cuts, drops, strings.Join(where, ", "))
	t.Logf("flows' Gbit/s in [%v, %v]: %s", from, to, fmtRates(rates, 1e9))
	if drops != 0 {
		t.Errorf("DCTCP over step marking dropped %.0f packets: %v", drops, where)
	}
	if !(marked > 0) || ece == 0 || cuts == 0 {
		t.Errorf("no congestion signal went round: %.0f marked, %d ECE acks, %d window cuts", marked, ece, cuts)
	}
	if !(p99 <= qmax+dctcpBucket) {
		t.Errorf("queue p99 %.0f packets at the shared port, want at most K + N + %d = %.0f", p99, dctcpBucket, qmax+dctcpBucket)
	}
	if !(p50 >= qmax-2*amp) {
		t.Errorf("queue p50 %.0f packets at the shared port, want at least Qmax - 2A = %.0f (the queue should swing about K, not drain)", p50, qmax-2*amp)
	}
	if util < xpGoodputMin {
		t.Errorf("goodput %.3f of the shared link's payload rate, want at least %.2f", util, xpGoodputMin)
	}
}
