package netns

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gswitch/gswitch/internal/fairness"
	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/perf/udp"
)

// HPCC keeps the queue near zero at high utilisation: ExpressPass's N-to-1
// fabric (topologies/expresspass/incast.yaml: 10 Gbit/s links of 1 us,
// 250-packet port buffers, timescale 1000) with the int stage (package
// mech/telemetry) on every port instead of ExpressPass, and gsperf -mode
// hpcc on 8 senders to one receiver (perf/transport's HPCC: Algorithm 1 of
// Li et al., SIGCOMM 2019, eta 0.95, maxStage 5).
//
// Every port also runs ecn with K at the buffer (250 packets), as an
// observer only: HPCC's datagrams are not ECN-capable and no queue exceeds
// the buffer, so it marks nothing, but its histogram of the depth each
// arriving packet found (gswitch_ecn_queue_packets, the source DCTCP's
// test reads) gives the shared port's queue.
//
// The parameters. T is the base RTT: 3 links of 1 us and a data frame's
// 1.23 us each way out, 3 links of 1 us and an ack's 0.21 us back, 10.3 us,
// taken as 12 us for the hosts and the switches' own time. W_AI is the
// paper's guideline for N flows on a link, W_init (1 - eta) / N with
// N = 8, the flows of the test (section 3.3): together the flows then add
// the headroom 1 - eta per RTT, and U settles at eta + N W_AI / W_init = 1
// (perf/transport's TestHPCCKeepsTheQueueNearZero derives it and
// measures it). Each segment reserves the default 5 INT slots (2 are
// written: sw1's port toward sw2 and sw2's toward r1) and carries
// 1408 - 128 = 1280 bytes of payload in a 1538-byte frame on the wire.
//
// The bars, for the steady window (as DCTCP's test: after the flows'
// start, before the first ends):
//
//   - every flow completes, every one saw both hops, and nothing is
//     dropped anywhere;
//   - the shared port's queue p99 at most 8 packets, N: below U = 1 the
//     line is not saturated and no queue stands, so what waits is the
//     collisions of the paced senders, about a packet of each at most
//     (HPCC's pacing sends no burst after a late wake-up: the next
//     segment leaves a whole gap after the last). The model with 8
//     senders two frame times late at random: p99 2 to 3, at most 5;
//   - goodput at least 0.9 of the line's payload rate (line x 1280/1538):
//     eta less 0.05. HPCC counts what the collisions leave waiting as
//     inflight (min(qlen, qlen') / (B x T): a frame is a tenth of B x T
//     here), so late hosts take the line's share below U: the model gives
//     0.946 to 0.951 of the line (4 and 8 senders).
//
// GSWITCH_TEST_MECH_OFF=int runs the fabric without the int stage (ecn
// still observes): no hop is ever written, HPCC never learns, every
// sender keeps W_init in flight at the line rate, and the shared port's
// queue stands at about N x W_init less the path's BDP, some 85 packets:
// the test fails on the hops and on the queue.
const (
	hpccN       = 8
	hpccT       = 12 * time.Microsecond
	hpccHops    = transport.DefaultINTHops
	hpccObserve = "ecn: {k_packets: 250}"
	hpccQueue   = hpccN // packets: the p99 bar
	hpccGoodput = transport.DefaultHPCCEta - 0.05
)

func TestHPCCIncast8(t *testing.T) {
	off := mechOff(t, "int")
	mechs := regexp.MustCompile(`mechanisms: \{expresspass: \{[^}]*\}\}`)
	f := upXP(t, "incast.yaml", func(s string) string {
		if !mechs.MatchString(s) {
			t.Fatalf("incast.yaml: no ExpressPass mechanisms line to replace")
		}
		m := "mechanisms: {int: {}, " + hpccObserve + "}"
		if off {
			m = "mechanisms: {" + hpccObserve + "}"
		}
		return mechs.ReplaceAllString(s, m)
	})
	k := strconv.FormatFloat(f.k, 'g', -1, 64)
	var flows []xpFlow
	for i := 1; i <= hpccN; i++ {
		flows = append(flows, xpFlow{fmt.Sprintf("s%d", i), "r1"})
	}
	mss := udp.MSS - udp.INTLen(hpccHops)
	payload := f.rateBits * float64(mss) / float64(udp.MSS+udp.Overhead)
	size := int64(payload / 8 * xpIncastFor.Seconds() / hpccN)
	wInit := f.rateBits / 8 * hpccT.Seconds()
	wai := wInit * (1 - transport.DefaultHPCCEta) / hpccN
	server := func(dst string) []string {
		return []string{"server", "-mode", "hpcc", "-bind", f.addr(dst) + ":5500", "-timescale", k, "-report", "0"}
	}
	mode := []string{"-mode", "hpcc", "-base-rtt", hpccT.String(), "-int-hops", strconv.Itoa(hpccHops), "-hpcc-wai", fmt.Sprintf("%.0fB", wai)}
	from, to := xpIncastFrom, xpIncastFor-xpIncastFrom
	run := f.runHosts(flows, server, mode, size, 3*xpIncastFor, from, to)
	rates := windowRates(run.flows, from, to)
	var sum, slowest float64
	var us, ws []string
	for i, fl := range run.flows {
		sum += rates[i]
		us = append(us, fmt.Sprintf("%.3f", float64(fl.Mech["u_ppm"])/1e6))
		ws = append(ws, fmt.Sprint(fl.Mech["wc_bytes"]))
		if !fl.Complete {
			t.Errorf("flow %d from %s did not complete", i, flows[i].src)
			continue
		}
		slowest = max(slowest, float64(fl.FCTFabricNs)/1e6)
		if fl.Mech["hops"] != 2 || fl.Mech["samples"] == 0 {
			t.Errorf("flow %d from %s: its acks carried %d hops (want 2: sw1 -> sw2, sw2 -> r1), %d measured: %v",
				i, flows[i].src, fl.Mech["hops"], fl.Mech["samples"], fl.Mech)
		}
	}
	util := sum / payload
	drops, where := run.dataDrops()
	written := run.delta("sw1", `gswitch_int_hops_written_total{port="sw2"}`)
	if len(run.marks) != 2 {
		t.Fatalf("the switches were not scraped at %v and %v", from, to)
	}
	steady := xpRun{before: run.marks[0], after: run.marks[1]}
	p50, p99, most, count := steady.histQuantiles("gswitch_ecn_queue_packets", "sw1", "sw2")
	_, s99, smost, _ := run.histQuantiles("gswitch_ecn_queue_packets", "sw1", "sw2")
	t.Logf("%d-to-1 HPCC, T %v, W_init %.0f B, W_AI %.0f B: goodput %.3f Gbit/s in [%v, %v] = %.3f of the link's %.3f Gbit/s of payload; Jain %.3f; slowest flow %.2f ms (fair share %v)",
		hpccN, hpccT, wInit, wai, sum/1e9, from, to, util, payload/1e9, fairness.Jain(rates), slowest, xpIncastFor)
	t.Logf("sw1->sw2: %.0f INT hops written; queue in [%v, %v] p50 %.0f p99 %.0f max bucket %.0f (%.0f packets), over the whole run p99 %.0f max bucket %.0f; drops %.0f %s",
		written, from, to, p50, p99, most, count, s99, smost, drops, strings.Join(where, ", "))
	t.Logf("flows' Gbit/s in [%v, %v]: %s; U at the end %v; Wc at the end %v B", from, to, fmtRates(rates, 1e9), us, ws)
	if !(written > 0) {
		t.Errorf("sw1's port toward sw2 wrote no INT hop")
	}
	if drops != 0 {
		t.Errorf("HPCC dropped %.0f packets: %v", drops, where)
	}
	if !(p99 <= hpccQueue) {
		t.Errorf("queue p99 %.0f packets at the shared port, want at most %d (a packet of each sender)", p99, hpccQueue)
	}
	if util < hpccGoodput {
		t.Errorf("goodput %.3f of the shared link's payload rate, want at least eta - 0.05 = %.2f", util, hpccGoodput)
	}
}
