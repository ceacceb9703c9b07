package netns

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gswitch/gswitch/perf/udp"
)

// PFC (mech/pfc, IEEE 802.1Qbb) on the BFC testbed without a mechanism
// (topologies/bfc-line.yaml: S1 and S2 on Sw1, S3 on Sw3, Sw1 -> Sw2 <-
// Sw3, R1 and R2 on Sw2; 100 Gbit/s links of 1 us, timescale 10000), with
// pfc at its defaults on every port but the response time its headroom
// allows the senders (pfcHostResponse), and gsperf -pfc on
// the senders (their NICs honour the pauses, as a RoCE fabric's do): the
// congestion spreading BFC's paper starts from (section 2, "Existing
// Solutions are Insufficient": PFC pauses the whole input, "even those
// flows that are destined to other uncongested egress ports").
//
// Incast: S1 -> R1 and S3 -> R1, so Sw2's port toward R1 is the congested
// one. Victim: S2 -> R2, the same priority (every flow carries DSCP 0,
// priority 0), whose path Sw1 -> Sw2 -> R2 reaches an idle port. Plain
// mode, every host paced at its link's 100 Gbit/s, one long flow each
// (pfcFor of the line's payload), all starting together. The defaults
// give every port xoff = headroom = 2 x 1 us x 100 Gbit/s + 2 x 1514 +
// 25 us of this machine at its rate = 28 KB, xon 3 KB lower: the file's
// 1 MB port buffers hold xoff + headroom many times over, so the edit
// leaves them. The watchdog (200 ms of fabric time) never acts: the whole
// run lasts a few ms of the fabric.
//
// R1's link runs at a quarter of the line (pfcR1Share, 25 Gbit/s: the
// edit sets it), so the incast's bottleneck leaves Sw1 -> Sw2 most of its
// room: S1 can have at most R1's quarter, and the victim's path
// (Sw1 -> Sw2 -> R2, both at the full line) leaves it three quarters of
// the line or more. With a queue per flow and no pause stopping
// Sw1 -> Sw2 (BFC's aim), that is what the victim would get. Under PFC,
// Sw1 -> Sw2's priority is one FIFO that S1 and S2 fill alike (both send
// at the line and Sw1 pauses each at the same xoff), so the link carries
// them 1:1 whatever their destinations: the victim gets what S1 gets,
// and S1 gets at most R1's quarter less S3's part of it. The link is
// paused the rest of the time: while S1's packets wait at Sw2 for R1,
// the bytes Sw2 holds from Sw1 stay above xoff and every packet behind
// them, the victim's too, waits at Sw1. Head-of-line blocking: the
// victim gets at most a quarter of the line (plus a margin), tied to S1,
// while its path leaves it three quarters; Sw1 -> Sw2 is paused at least
// 1 - 2 x (1/4) x pfcTie of the time.
//
// The bars, over the steady window [pfcFrom, pfcTo] (after slow start,
// before the first flow ends), in shares of the line's gsperf payload:
//   - no drop on any switch (PFC is lossless and the hosts honour it);
//   - Sw2 paused Sw1 and Sw3 (pauses sent on its ports toward them,
//     received on theirs toward Sw2), and the pause spread one hop
//     further: Sw1 paused S1 and S2, Sw3 paused S3, and every sender's
//     NIC took pauses from its switch and refused none;
//   - Sw1's port toward Sw2 paused at least pfcPausedMin of the window
//     (gswitch_pfc_paused_seconds_total);
//   - the victim at most pfcVictimMax (R1's quarter plus a fifth of it),
//     within pfcTie of S1's goodput either way (the FIFO's 1:1), and
//     below what its path leaves it (the line less S1);
//   - S1 + victim at most (1 - f) of the line plus pfcSlack: Sw1 sends
//     nothing to Sw2 while paused (the pause is honoured) but the frame
//     it is sending when a pause comes;
//   - S1 + S3 at least xpGoodputMin of R1's port: it stays busy (pausing
//     its inputs costs the congested port nothing);
//   - every flow completes (no loss, no timeout), and the run is valid.
//
// GSWITCH_TEST_MECH_OFF=pfc runs the fabric without PFC (every port's
// mechanisms empty, the clients unchanged): Sw2's port toward R1 then
// overflows and drops, no pause goes anywhere, the victim runs free, and
// the test fails on all three.
const (
	pfcR1Share   = 0.25                    // R1's link: this share of the line
	pfcFor       = 600 * time.Microsecond  // each flow's size: this long of the line's payload (S1 and the victim at about 0.1 of the line run 6 ms)
	pfcFrom      = 500 * time.Microsecond  // the steady window's start (fabric)
	pfcTo        = 3 * time.Millisecond    // its end: before the first flow ends
	pfcTimeout   = 20 * time.Millisecond   // the clients give up (fabric)
	pfcTie       = 1.25                    // victim / S1 within [1/pfcTie, pfcTie]
	pfcPausedMin = 1 - 2*pfcR1Share*pfcTie // Sw1 -> Sw2 paused at least this share of the window
	pfcVictimMax = 1.2 * pfcR1Share        // the victim's goodput at most this share of the line's payload
	pfcSlack     = 0.03                    // S1 + victim above (1 - f) of the line's payload by at most this
	// pfcHostResponse is the senders' response to a pause (wall): the
	// most a thread like the hosts' woke up late beside a busy loop (7.6
	// ms) and a pacer burst, rounded up.
	pfcHostResponse = 15 * time.Millisecond
)

// pfcPayload is the share of the line gsperf's payload gets: 1408 bytes
// of payload in a 1538-byte frame on the wire.
const pfcPayload = float64(udp.MSS) / float64(udp.MSS+udp.Overhead)

func TestPFCCongestionSpreading(t *testing.T) {
	off := mechOff(t, "pfc")
	port := regexp.MustCompile(`(?m)^  port: \{(scheduler: drr, .*)\}$`)
	// upXP reads topologies/expresspass/FILE: bfc-line.yaml is one up.
	f := upXP(t, "../bfc-line.yaml", func(s string) string {
		if !port.MatchString(s) {
			t.Fatalf("bfc-line.yaml: no defaults.port line with scheduler drr to add pfc to")
		}
		// response: how late a sender reacts to a pause, which the
		// headroom must hold; wall time (the timescale does not scale
		// it): the hosts' gsperf is an ordinary process that wakes up to
		// several ms late under load (their lateness is logged), where a
		// NIC stops within microseconds.
		m := fmt.Sprintf("mechanisms: {pfc: {response: %v}}", pfcHostResponse)
		if off {
			m = "mechanisms: {}"
		}
		r1 := regexp.MustCompile(`(?m)^  - \{a: r1, b: sw2\}`)
		if !r1.MatchString(s) {
			t.Fatalf("bfc-line.yaml: no r1 - sw2 link to slow down")
		}
		s = r1.ReplaceAllString(s, fmt.Sprintf("  - {a: r1, b: sw2, rate: %dGbit}", int(100*pfcR1Share)))
		return port.ReplaceAllString(s, "  port: {$1, "+m+"}")
	})
	k := strconv.FormatFloat(f.k, 'g', -1, 64)
	flows := []xpFlow{{"s1", "r1"}, {"s3", "r1"}, {"s2", "r2"}}
	const s1, s3, victim = 0, 1, 2
	payload := f.rateBits * pfcPayload
	size := int64(payload / 8 * pfcFor.Seconds())
	server := func(dst string) []string {
		return []string{"server", "-bind", f.addr(dst) + ":5500", "-timescale", k, "-report", "0"}
	}
	run := f.runHosts(flows, server, []string{"-mode", "plain", "-pfc"}, size, pfcTimeout, pfcFrom, pfcTo)
	if len(run.marks) != 2 {
		t.Fatalf("the switches were not scraped at %v and %v", pfcFrom, pfcTo)
	}
	steady := xpRun{before: run.marks[0], after: run.marks[1]}
	window := (pfcTo - pfcFrom).Seconds()
	rates := windowRates(run.flows, pfcFrom, pfcTo)
	share := make([]float64, len(rates))
	for i, r := range rates {
		share[i] = r / payload
	}
	const prio0 = `,priority="0"}`
	// Sw1's port toward Sw2: the time Sw2 had it paused in the window,
	// a share of the window (the metric is this machine's time: / K).
	paused := steady.delta("sw1", `gswitch_pfc_paused_seconds_total{port="sw2"`+prio0) / f.k / window
	drops, where := run.dataDrops()

	for i, fl := range run.flows {
		t.Logf("%s -> %s: %.2f Gbit/s in [%v, %v] = %.3f of the line's %.2f Gbit/s of payload; complete %v in %.2f ms; host: %s",
			flows[i].src, flows[i].dst, rates[i]/1e9, pfcFrom, pfcTo, share[i], payload/1e9, fl.Complete, float64(fl.FCTFabricNs)/1e6, pfcHostFigures(run.params[i]))
	}
	t.Logf("victim s2 -> r2: %.3f of the line (s1 %.3f, ratio %.2f); its path left it 1 - s1 = %.3f; Sw1 -> Sw2 paused %.3f of the window, s1 + victim %.3f (1 - paused %.3f); s1 + s3 %.3f of the line, %.3f of R1's port",
		share[victim], share[s1], share[victim]/share[s1], 1-share[s1], paused, share[s1]+share[victim], 1-paused, share[s1]+share[s3], (share[s1]+share[s3])/pfcR1Share)
	t.Logf("PFC over the run (pauses/refreshes/resumes sent, pauses/resumes received, paused time here = fabric):\n%s", pfcPorts(run, f.k))
	t.Logf("drops %.0f %s", drops, strings.Join(where, ", "))

	if drops != 0 {
		t.Errorf("%.0f packets dropped, with PFC on every port and the hosts honouring it: %v", drops, where)
	}
	for _, p := range []struct{ sw, port, what string }{
		{"sw2", "sw1", "sent"}, {"sw2", "sw3", "sent"}, {"sw1", "sw2", "received"}, {"sw3", "sw2", "received"},
		{"sw1", "s1", "sent"}, {"sw1", "s2", "sent"}, {"sw3", "s3", "sent"},
	} {
		if n := run.delta(p.sw, fmt.Sprintf(`gswitch_pfc_pauses_%s_total{port=%q`, p.what, p.port)+prio0); !(n > 0) {
			t.Errorf("%s's port toward %s %s no pause of priority 0 (%.0f)", p.sw, p.port, p.what, n)
		}
	}
	for i, fl := range flows {
		ps := run.params[i]
		if n, _ := strconv.Atoi(ps["pfc_pauses"]); n == 0 || ps["pfc_foreign"] != "0" || ps["pfc_malformed"] != "0" {
			t.Errorf("%s's NIC: %s (want pauses from its switch, none refused)", fl.src, pfcHostFigures(ps))
		}
	}
	var underflows float64
	for sw := range run.after {
		for key := range run.after[sw] {
			if strings.HasPrefix(key, "gswitch_pfc_held_underflows_total{") {
				underflows += run.delta(sw, key)
			}
		}
	}
	if underflows != 0 {
		t.Errorf("%.0f held-count underflows: the ingress accounting lost track", underflows)
	}
	for i, fl := range run.flows {
		if !fl.Complete {
			t.Errorf("%s -> %s did not complete", flows[i].src, flows[i].dst)
		}
	}
	if !(paused >= pfcPausedMin) {
		t.Errorf("Sw1's port toward Sw2 paused %.3f of the window, want at least %.2f", paused, pfcPausedMin)
	}
	if !(share[victim] <= pfcVictimMax) {
		t.Errorf("victim s2 -> r2 got %.3f of the line, want at most %.2f: no head-of-line blocking", share[victim], pfcVictimMax)
	}
	if r := share[victim] / share[s1]; !(r >= 1/pfcTie && r <= pfcTie) {
		t.Errorf("victim %.3f of the line and s1 %.3f: ratio %.2f, want within [%.2f, %.2f] (one FIFO carries both 1:1)", share[victim], share[s1], r, 1/pfcTie, pfcTie)
	}
	if !(share[victim] < 1-share[s1]) {
		t.Errorf("victim %.3f of the line, its path left it 1 - s1 = %.3f: it lost nothing to the pauses", share[victim], 1-share[s1])
	}
	if !(share[s1]+share[victim] <= 1-paused+pfcSlack) {
		t.Errorf("s1 + victim = %.3f of the line through Sw1 -> Sw2, paused %.3f of the window: more than 1 - paused + %.2f (pauses not honoured)", share[s1]+share[victim], paused, pfcSlack)
	}
	if r1 := (share[s1] + share[s3]) / pfcR1Share; !(r1 >= xpGoodputMin) {
		t.Errorf("s1 + s3 = %.3f of R1's port, want at least %.2f (pausing its inputs should not idle it)", r1, xpGoodputMin)
	}
}

// pfcHostFigures is a client's PFC counters from its run's params.
func pfcHostFigures(ps map[string]string) string {
	if ps["pfc"] != "true" {
		return "no -pfc"
	}
	return fmt.Sprintf("%s PFC frames, %s pauses, %s resumes, held %s times, paused %s; refused %s malformed, %s other opcodes, %s foreign",
		ps["pfc_frames"], ps["pfc_pauses"], ps["pfc_resumes"], ps["pfc_held"], ps["pfc_paused"], ps["pfc_malformed"], ps["pfc_other"], ps["pfc_foreign"])
}

// pfcPorts lists, per switch port that sent or received PFC frames in the
// run, its priority-0 pauses, refreshes and resumes sent, pauses and
// resumes received, and the time it was paused (fabric: the metric / K).
func pfcPorts(run xpRun, k float64) string {
	var out []string
	for sw, m := range run.after {
		for key := range m {
			p, ok := strings.CutPrefix(key, `gswitch_pfc_frames_sent_total{port="`)
			if !ok {
				continue
			}
			p = strings.TrimSuffix(p, `"}`)
			l := fmt.Sprintf(`{port=%q}`, p)
			l0 := fmt.Sprintf(`{port=%q,priority="0"}`, p)
			sent, rx := run.delta(sw, "gswitch_pfc_frames_sent_total"+l), run.delta(sw, "gswitch_pfc_frames_received_total"+l)
			if sent+rx == 0 {
				continue
			}
			out = append(out, fmt.Sprintf("  %s port %s: %.0f frames sent (%.0f/%.0f/%.0f), %.0f received (%.0f/%.0f), paused %v",
				sw, p, sent, run.delta(sw, "gswitch_pfc_pauses_sent_total"+l0), run.delta(sw, "gswitch_pfc_refreshes_sent_total"+l0),
				run.delta(sw, "gswitch_pfc_resumes_sent_total"+l0), rx, run.delta(sw, "gswitch_pfc_pauses_received_total"+l0),
				run.delta(sw, "gswitch_pfc_resumes_received_total"+l0),
				time.Duration(run.delta(sw, "gswitch_pfc_paused_seconds_total"+l0)/k*1e9).Round(time.Nanosecond)))
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "  none"
	}
	return strings.Join(out, "\n")
}
