package netns

import (
	"context"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gswitch/gswitch/perf/results"
	"github.com/gswitch/gswitch/topo"
	"github.com/gswitch/gswitch/wire"
	"golang.org/x/sys/unix"
)

// sfcParams are what sfcTopology varies.
type sfcParams struct {
	senders   int
	timescale int    // K (1: none)
	rate      string // host links
	shared    string // the sw1 - sw2 link ("unlimited": not shaped)
	delay     string // every link
	mode, rtt string // SFC's mode and rtt (T_F) on every port
	buffer    string // every port's
	sw        string // more switch keys (e.g. realtime)
}

// sfcTopology is SFC's dumbbell (topologies/sfc-dumbbell.yaml without the
// background hosts) under a random name and metrics base: senders s1..sN
// (10.1.i.1/24) on sw1, r1 (10.2.1.1/24) on sw2, SFC on every port.
func sfcTopology(t *testing.T, p sfcParams) *topo.Topology {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "name: s%s\nmode: l3\nmetrics_base: %d\ntimescale: %d\n", randID()[:5], 20000+rand.Intn(40000), max(p.timescale, 1))
	fmt.Fprintf(&b, "defaults:\n  link: {rate: %s, delay: %s}\n  switch: {workers: 1%s}\n", p.rate, p.delay, p.sw)
	fmt.Fprintf(&b, "  port: {buffer: %s, mechanisms: {sfc: {mode: %s, rtt: %s}}}\n", p.buffer, p.mode, p.rtt)
	b.WriteString("switches: {sw1: {}, sw2: {}}\nhosts:\n")
	for i := 1; i <= p.senders; i++ {
		fmt.Fprintf(&b, "  s%d: {addr: 10.1.%d.1/24}\n", i, i)
	}
	fmt.Fprintf(&b, "  r1: {addr: 10.2.1.1/24}\nlinks:\n  - {a: sw1, b: sw2, rate: %s}\n", p.shared)
	for i := 1; i <= p.senders; i++ {
		fmt.Fprintf(&b, "  - {a: s%d, b: sw1}\n", i)
	}
	b.WriteString("  - {a: r1, b: sw2}\n")
	tp, err := topo.Parse([]byte(b.String()))
	if err != nil {
		t.Fatalf("topology: %v\n%s", err, b.String())
	}
	return tp
}

// sfcUp brings tp up and takes it down when the test ends.
func sfcUp(t *testing.T, tp *topo.Topology) *topo.Running {
	t.Helper()
	o := topo.UpOptions{Gswitchd: gswitchdBin, StateDir: t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := topo.Up(ctx, tp, o)
	if err != nil {
		t.Fatalf("topology up: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Down(); err != nil {
			t.Errorf("topology down: %v", err)
		}
	})
	return r
}

// sfcScrape returns every sample of a switch's metrics endpoint as
// "name{labels}" -> value, and histograms as name{labels} -> count.
func sfcScrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	m, err := scrape(addr)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// congestionDrops sums the drops of frames the switch had to throw away for
// lack of room (not forged or malformed frames).
func congestionDrops(m map[string]float64) float64 {
	d := 0.0
	for k, v := range m {
		if strings.HasPrefix(k, "gswitch_drops_total{") {
			for _, r := range []string{"buffer_full", "frame_limit", "port_limit", "queue_limit", "handoff_full", "lane_full", "no_frames"} {
				if strings.Contains(k, `reason="`+r+`"`) {
					d += v
				}
			}
		}
		if strings.HasPrefix(k, "gswitch_xsk_kernel_total{") && strings.Contains(k, `counter="rx_dropped"`) {
			d += v
		}
	}
	return d
}

// inNetns runs f on a thread that has entered namespace ns (the thread is
// never returned to the root namespace: it exits when the goroutine ends).
func inNetns(t *testing.T, ns string, f func() error) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		h, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			errc <- err
			return
		}
		defer h.Close()
		if err := unix.Setns(int(h.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	return <-errc
}

func sfcHtons(v uint16) uint16 { return v<<8 | v>>8 }

// sfcCapture collects the frames arriving at eth0 in namespace ns (an
// AF_PACKET socket) until the returned function is called.
func sfcCapture(t *testing.T, ns string) (stop func() [][]byte) {
	t.Helper()
	var fd int
	err := inNetns(t, ns, func() error {
		var err error
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(sfcHtons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		ifc, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		// A blocked recvfrom does not return when another thread closes the
		// socket: wake every 50 ms to see whether to stop.
		tv := unix.NsecToTimeval(50e6)
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: sfcHtons(unix.ETH_P_ALL), Ifindex: ifc.Index})
	})
	if err != nil {
		t.Fatalf("capture in %s: %v", ns, err)
	}
	var mu sync.Mutex
	var got [][]byte
	var quit atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 2048)
		for !quit.Load() {
			n, from, err := unix.Recvfrom(fd, b, 0)
			if err == unix.EAGAIN || err == unix.EINTR {
				continue
			}
			if err != nil {
				return
			}
			if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
				continue
			}
			mu.Lock()
			got = append(got, append([]byte(nil), b[:n]...))
			mu.Unlock()
		}
	}()
	closed := false
	stop = func() [][]byte {
		if !closed {
			closed = true
			quit.Store(true)
			<-done
			unix.Close(fd)
		}
		mu.Lock()
		defer mu.Unlock()
		return got
	}
	t.Cleanup(func() { stop() })
	return stop
}

// The incast of TestSFCIncastHalvesThePeakBuffer in the fabric's units:
// the paper's Fig. 1 (section 2.3.1) at 16 senders, run at timescale 10000
// (10 Mbit/s and 10 ms on this machine).
const (
	incastK      = 10000
	incastN      = 16
	incastRate   = 100e9   // bit/s: every host link, so the receiver's port too
	incastSize   = 400_000 // bytes a sender sends
	incastWindow = 50e-6   // s: the senders start one by one over it (the paper's synchronisation window)
	incastRTT    = 10e-6   // s: SFC's rtt, T_F for its thresholds: the paper's 10 us (BDP 125 KB at 100 Gbit/s)
	incastTA     = 2e-6    // s: a sender to the bottleneck: its link and the shared one, 1 us each
)

// sfcIncast runs one incastSize flow from each sender to r1 (gsperf at
// the topology's timescale, no congestion control: paced at the host rate,
// a window larger than the flow), the senders starting one by one over
// incastWindow of the fabric from at (this machine's clock), with gsperf in
// mode (plain or sfc), and returns the flows.
func sfcIncast(t *testing.T, r *topo.Running, at time.Time, mode string) []results.Flow {
	t.Helper()
	dir := t.TempDir()
	k := fmt.Sprint(incastK)
	srv := exec.Command("nsenter", "--net=/var/run/netns/"+r.Host("r1").Namespace, gsperfBin, "server", "-bind", "10.2.1.1:5500", "-timescale", k)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	var wg sync.WaitGroup
	errs := make([]error, incastN)
	outs := make([][]byte, incastN)
	for i := 1; i <= incastN; i++ {
		start := at.Add(time.Duration(incastWindow * float64(i-1) / (incastN - 1) * incastK * 1e9))
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			outs[i-1], errs[i-1] = r.Exec(ctx, fmt.Sprintf("s%d", i), gsperfBin, "client", "-src", fmt.Sprintf("s%d", i), "-timescale", k,
				"-to", "10.2.1.1:5500", "-size", fmt.Sprint(incastSize), "-flows", "1", "-arrivals", "burst", "-mode", mode,
				"-rate", "100Gbit", "-pace", "100Gbit", "-base-rtt", "10us", "-init-window", "4MB", "-rto", "1ms", "-timeout", "5ms",
				"-at", fmt.Sprint(start.UnixNano()), "-id-base", fmt.Sprint(i*1000), "-out", fmt.Sprintf("%s/s%d.json", dir, i)).CombinedOutput()
		}(i)
	}
	wg.Wait()
	var flows []results.Flow
	for i, err := range errs {
		if err != nil {
			t.Fatalf("client s%d: %v\n%s", i+1, err, outs[i])
		}
		run, err := results.ReadJSON(fmt.Sprintf("%s/s%d.json", dir, i+1))
		if err != nil {
			t.Fatal(err)
		}
		flows = append(flows, run.Flows...)
	}
	return flows
}

// TestSFCIncastHalvesThePeakBuffer is SFC's Fig. 1 (section 2.3.1) at the
// paper's parameters, 16 senders: a two-switch dumbbell, every link 100
// Gbit/s with 1 us of propagation (the shared link not shaped: full
// bisection), SFC's rtt 10 us (Q_Th = 2 BDP = 250 KB, Q_Tg = 125 KB at 100
// Gbit/s), a buffer that does not overflow (8 MB); the 16 senders behind
// sw1 each send one 400 KB flow to r1 behind sw2, starting one by one over
// a 50 us synchronisation window, at their line rate with no congestion
// control (gsperf with a window larger than the flow). Run at timescale
// 10000, once without SFC (mode off, gsperf -mode plain) and once with it
// (mode ingress_cache, gsperf -mode sfc). Without SFC the queue at sw2's
// port to r1 takes most of the incast. With SFC:
//   - its peak is at least 2x lower (the bar; the paper's
//     simulations, with congestion control, show 2.5-3x);
//   - and at most what appendix C allows: the queue triggers at Q_Th, and
//     each of the N senders sends at its line rate R until the BTS reaches
//     it, T_F = 2 T_A + T_S later (T_A: 2 us of propagation to the
//     bottleneck, T_S: a frame's time), so the peak is at most
//     Q_Th + N x R x T_F (equation 3), 1.07 MB here;
//   - no switch drops a frame; BTS come from sw2's congested port and from
//     sw1's cache; the BTS frames a sender receives parse as
//     docs/wire-formats.md says: from r1's address to the sender's, UDP
//     19020, DSCP 48, quoting the sender's own flow, from the congested
//     switch (sw2, cacheable) or from sw1's cache (from_cache).
//
// With GSWITCH_TEST_MECH_OFF=sfc the second run is in mode off too: no BTS,
// the same peak, and the test fails on all of these.
func TestSFCIncastHalvesThePeakBuffer(t *testing.T) {
	requireNetns(t)
	run := func(mode string) float64 {
		gmode := map[string]string{"off": "plain", "ingress_cache": "sfc"}[mode]
		if mode != "off" && mechOff(t, "sfc") {
			mode = "off"
		}
		tp := sfcTopology(t, sfcParams{senders: incastN, timescale: incastK, rate: "100Gbit", shared: "unlimited", delay: "1us",
			mode: mode, rtt: "10us", buffer: "8MB", sw: ", realtime: 10, spin: 0us"})
		r := sfcUp(t, tp)
		defer r.Down()
		var stop func() [][]byte
		if gmode == "sfc" {
			stop = sfcCapture(t, r.Host(fmt.Sprintf("s%d", incastN)).Namespace)
		}
		for i := 1; i <= incastN; i++ { // every path resolved before the clock starts
			if out, err := r.Exec(context.Background(), fmt.Sprintf("s%d", i), "ping", "-c", "1", "-W", "2", "10.2.1.1").CombinedOutput(); err != nil {
				t.Fatalf("s%d cannot reach r1: %v\n%s", i, err, out)
			}
		}
		fw := watchFidelity(t, r)
		flows := sfcIncast(t, r, time.Now().Add(5*time.Second), gmode) // starting 16 processes takes seconds on a loaded machine
		fw.require()
		for _, f := range flows {
			if !f.Complete {
				t.Fatalf("%s: flow %d did not complete", mode, f.ID)
			}
		}
		m1, m2 := sfcScrape(t, r.Switches[0].Metrics), sfcScrape(t, r.Switches[1].Metrics)
		peak := m2[`gswitch_sfc_queue_peak_bytes{port="r1"}`]
		drops := congestionDrops(m1) + congestionDrops(m2)
		sent2 := m2[`gswitch_sfc_bts_sent_total{port="r1",source="queue"}`]
		cache1 := m1[`gswitch_sfc_bts_sent_total{port="sw2",source="cache"}`]
		supp := m2[`gswitch_sfc_bts_suppressed_total{port="r1",reason="bloom"}`]
		hits := m1[`gswitch_sfc_cache_hits_total{port="sw2"}`]
		t.Logf("%s (gsperf %s): peak %.0f KB at sw2's port to r1; %.0f congestion drops; BTS from sw2 %.0f (%.0f suppressed), from sw1's cache %.0f (%.0f hits)",
			mode, gmode, peak/1000, drops, sent2, supp, cache1, hits)
		if gmode == "plain" {
			if sent2+cache1 != 0 {
				t.Fatalf("mode off sent BTS")
			}
			return peak
		}
		if drops != 0 {
			t.Errorf("SFC: %.0f frames dropped for lack of room", drops)
		}
		if sent2 == 0 || cache1 == 0 {
			t.Errorf("SFC: %.0f BTS from the congested port, %.0f from sw1's cache: want both", sent2, cache1)
		}
		checkCapturedBTS(t, tp, stop(), incastN)
		return peak
	}
	off := run("off")
	on := run("ingress_cache")
	// Appendix C, equation 3 (and the trigger): Q_Th + N x R x T_F.
	qth := 2 * incastRTT * incastRate / 8
	tf := 2*incastTA + 1538*8/incastRate
	bound := qth + incastN*incastRate/8*tf
	t.Logf("peak buffer at the incast port: %.0f KB without SFC, %.0f KB with: %.1fx lower; appendix C's bound with SFC %.0f KB (Q_Th %.0f KB + %d x 100 Gbit/s x T_F %.2f us)",
		off/1000, on/1000, off/on, bound/1000, qth/1000, incastN, tf*1e6)
	if off < 2*on {
		t.Errorf("peak buffer without SFC %.0f KB, with SFC %.0f KB: not 2x lower", off/1000, on/1000)
	}
	if on > bound {
		t.Errorf("peak buffer with SFC %.0f KB, more than appendix C's Q_Th + N x R x T_F = %.0f KB", on/1000, bound/1000)
	}
}

// checkCapturedBTS checks the BTS frames sender s<n> received.
func checkCapturedBTS(t *testing.T, tp *topo.Topology, frames [][]byte, n int) {
	t.Helper()
	plan, err := tp.Plan()
	if err != nil {
		t.Fatal(err)
	}
	var gwMAC [6]byte
	for _, h := range plan.Hosts {
		if h.Name == fmt.Sprintf("s%d", n) {
			gwMAC = [6]byte(h.GatewayMAC)
		}
	}
	me := [4]byte{10, 1, byte(n), 1}
	var queue, cache int
	for _, f := range frames {
		ip, msg, err := wire.ParseIPv4UDP(f)
		if err != nil || ip.DstPort != wire.BTSPort {
			continue
		}
		m, err := wire.ParseBTS(msg)
		if err != nil {
			t.Fatalf("captured BTS does not parse: %v\n% x", err, f)
		}
		want := wire.FiveTuple{Src: me, Dst: [4]byte{10, 2, 1, 1}, DstPort: 5500, Proto: wire.ProtoUDP, SrcPort: m.Flow.SrcPort}
		if ip.Src != want.Dst || ip.Dst != me || ip.SrcPort != wire.BTSPort || ip.DSCP() != wire.DefaultBTSDSCP || ip.SrcMAC != gwMAC ||
			m.Flow != want || !m.HasFlowID || m.FlowID != uint64(n*1000) || m.Pause == 0 {
			t.Fatalf("BTS %+v in %+v: want from 10.2.1.1 to %v by %x, DSCP 48, quoting flow %d of %v, a pause", m, ip, me, gwMAC, n*1000, want)
		}
		switch {
		case m.Switch == 2 && m.Flags == wire.BTSCacheable:
			queue++
		case m.Switch == 1 && m.Flags == wire.BTSFromCache:
			cache++
		case m.Switch == 1 && m.Flags == 0: // sw1's uplink queue (a fabric port: not cacheable)
		default:
			t.Fatalf("BTS from switch %d with flags %#x", m.Switch, m.Flags)
		}
	}
	t.Logf("s%d received %d BTS from sw2's congested port and %d from sw1's cache", n, queue, cache)
	if queue+cache == 0 {
		t.Errorf("s%d received no BTS", n)
	}
}

// TestSFCForgedBTSFromAHost: a host sends a well-formed, cacheable BTS
// claiming that r1 is congested toward another host. sw1 drops it on the
// host port and counts it as forged (gswitch_control_forged_total); it
// changes nothing: sw1's cache stays empty, the other host's packets to r1
// get no BTS from the cache, and nothing arrives at the other host.
func TestSFCForgedBTSFromAHost(t *testing.T) {
	requireNetns(t)
	tp := sfcTopology(t, sfcParams{senders: 2, rate: "100Mbit", shared: "1Gbit", delay: "100us", mode: "ingress_cache", rtt: "2ms", buffer: "8MB"})
	r := sfcUp(t, tp)
	stop := sfcCapture(t, r.Host("s2").Namespace)
	// The BTS s1 forges: about a flow of s2 to r1, a long pause, cacheable.
	orig := make([]byte, 14+20+8+64)
	ipH := orig[14:]
	ipH[0], ipH[9] = 0x45, wire.ProtoUDP
	ipH[2], ipH[3] = 0, byte(len(orig)-14)
	copy(ipH[12:], []byte{10, 1, 2, 1})
	copy(ipH[16:], []byte{10, 2, 1, 1})
	msg := make([]byte, 200)
	nm, err := wire.PutBTS(msg, wire.BTS{Flags: wire.BTSCacheable, Pause: 1e6, Switch: 2, Quote: orig[14 : 14+20+8+16]})
	if err != nil {
		t.Fatal(err)
	}
	const forged = 5
	err = inNetns(t, r.Host("s1").Namespace, func() error {
		c, err := net.DialUDP("udp4", &net.UDPAddr{Port: wire.BTSPort}, &net.UDPAddr{IP: net.IPv4(10, 1, 2, 1), Port: wire.BTSPort})
		if err != nil {
			return err
		}
		defer c.Close()
		for i := 0; i < forged; i++ {
			if _, err := c.Write(msg[:nm]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	// s2 then sends to r1: with a cache entry it would be paused by sw1.
	if out, err := r.Exec(context.Background(), "s2", "ping", "-c", "3", "-i", "0.05", "10.2.1.1").CombinedOutput(); err != nil {
		t.Fatalf("s2 -> r1: %v\n%s", err, out)
	}
	m1 := sfcScrape(t, r.Switches[0].Metrics)
	if got := m1[`gswitch_control_forged_total{kind="sfc_bts",port="s1"}`]; got != forged {
		t.Fatalf("forged BTS counted %v, want %d (metrics: %v)", got, forged, m1[`gswitch_drops_total{port="s1",reason="forged"}`])
	}
	if m1[`gswitch_drops_total{port="s1",reason="forged"}`] != forged {
		t.Fatalf("forged drops %v", m1[`gswitch_drops_total{port="s1",reason="forged"}`])
	}
	if e, c := m1["gswitch_sfc_cache_entries"], m1[`gswitch_sfc_bts_sent_total{port="sw2",source="cache"}`]; e != 0 || c != 0 {
		t.Fatalf("the forged BTS changed sw1: %v cache entries, %v BTS from the cache", e, c)
	}
	for _, f := range stop() {
		if ip, _, err := wire.ParseIPv4UDP(f); err == nil && ip.DstPort == wire.BTSPort {
			t.Fatalf("s2 received a BTS: % x", f)
		}
	}
	if m1[`gswitch_sfc_bts_received_total{port="sw2"}`] != 0 {
		t.Fatal("a BTS reached sw1 from the fabric")
	}
}
