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

// sfcTopology is SFC's dumbbell (topologies/sfc-dumbbell.yaml without the
// background hosts) under a random name and metrics base: senders s1..sN
// (10.1.i.1/24) on sw1, r1 (10.2.1.1/24) on sw2, host links at rate, the
// shared link at 1 Gbit/s, 100 us on every link, SFC on every port in mode.
func sfcTopology(t *testing.T, senders int, rate, mode string) *topo.Topology {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "name: s%s\nmode: l3\nmetrics_base: %d\n", randID()[:5], 20000+rand.Intn(40000))
	fmt.Fprintf(&b, "defaults:\n  link: {rate: %s, delay: 100us}\n  switch: {workers: 1}\n", rate)
	fmt.Fprintf(&b, "  port: {buffer: 8MB, mechanisms: {sfc: {mode: %s, rtt: 2ms}}}\n", mode)
	b.WriteString("switches: {sw1: {}, sw2: {}}\nhosts:\n")
	for i := 1; i <= senders; i++ {
		fmt.Fprintf(&b, "  s%d: {addr: 10.1.%d.1/24}\n", i, i)
	}
	b.WriteString("  r1: {addr: 10.2.1.1/24}\nlinks:\n  - {a: sw1, b: sw2, rate: 1Gbit}\n")
	for i := 1; i <= senders; i++ {
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

// sfcIncast runs one SIZE flow from each sender to r1 (gsperf, no
// congestion control: paced at the host rate, window larger than the
// flow), the senders starting 200 us apart, with gsperf in mode (plain or
// sfc), and returns the flows.
func sfcIncast(t *testing.T, r *topo.Running, senders int, rate, size, mode string) []results.Flow {
	t.Helper()
	dir := t.TempDir()
	srv := exec.Command("nsenter", "--net=/var/run/netns/"+r.Host("r1").Namespace, gsperfBin, "server", "-bind", "10.2.1.1:5500")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	for i := 1; i <= senders; i++ { // every path resolved before the clock starts
		if out, err := r.Exec(context.Background(), fmt.Sprintf("s%d", i), "ping", "-c", "1", "-W", "2", "10.2.1.1").CombinedOutput(); err != nil {
			t.Fatalf("s%d cannot reach r1: %v\n%s", i, err, out)
		}
	}
	at := time.Now().Add(8 * time.Second).UnixNano() // starting 16 processes takes seconds on a loaded machine
	var wg sync.WaitGroup
	errs := make([]error, senders)
	outs := make([][]byte, senders)
	for i := 1; i <= senders; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			outs[i-1], errs[i-1] = r.Exec(ctx, fmt.Sprintf("s%d", i), gsperfBin, "client", "-src", fmt.Sprintf("s%d", i),
				"-to", "10.2.1.1:5500", "-size", size, "-flows", "1", "-arrivals", "burst", "-mode", mode,
				"-rate", rate, "-pace", rate, "-base-rtt", "2ms", "-init-window", "4MB", "-rto", "5s", "-timeout", "30s",
				"-at", fmt.Sprint(at+int64(i-1)*200e3), "-id-base", fmt.Sprint(i*1000), "-out", fmt.Sprintf("%s/s%d.json", dir, i)).CombinedOutput()
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

// TestSFCIncastHalvesThePeakBuffer: 16 senders behind sw1 each send one
// flow to r1 behind sw2, starting one by one within 3 ms, at their line rate
// with no congestion control. Without SFC the queue at sw2's port to r1
// takes most of the incast; with SFC (mode ingress_cache, gsperf -mode sfc)
// the peak there is at least 2x lower (the paper: 2.5-3x) and no switch drops
// a frame. The BTS frames a sender receives during the incast parse as
// docs/wire-formats.md says: from r1's address to the sender's, UDP 19020,
// DSCP 48, quoting the sender's own flow, from the congested switch (sw2,
// cacheable) or from sw1's cache (from_cache).
func TestSFCIncastHalvesThePeakBuffer(t *testing.T) {
	requireNetns(t)
	const n, rate, size = 16, "10Mbit", "100KB"
	run := func(mode string) float64 {
		tp := sfcTopology(t, n, rate, mode)
		r := sfcUp(t, tp)
		defer r.Down()
		gmode := map[string]string{"off": "plain", "ingress_cache": "sfc"}[mode]
		var stop func() [][]byte
		if mode != "off" {
			stop = sfcCapture(t, r.Host(fmt.Sprintf("s%d", n)).Namespace)
		}
		flows := sfcIncast(t, r, n, rate, size, gmode)
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
		t.Logf("%s: peak %.0f KB at sw2's port to r1; %.0f congestion drops; BTS from sw2 %.0f (%.0f suppressed), from sw1's cache %.0f",
			mode, peak/1000, drops, sent2, supp, cache1)
		if mode == "off" {
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
		checkCapturedBTS(t, tp, stop(), n)
		return peak
	}
	off := run("off")
	on := run("ingress_cache")
	if off < 2*on {
		// About one run in ten (before gsperf's raw waits) the pauses did not
		// hold the queue: the 16 senders took both cores as the incast began,
		// the switches' frames waited in their receive rings, and reached
		// sw2's queue after the senders were done (docs/results.md, SFC).
		// The scenario gets a second run in case a busy machine does it again.
		t.Logf("peak buffer without SFC %.0f KB, with SFC %.0f KB: not 2x lower; once more", off/1000, on/1000)
		on = run("ingress_cache")
	}
	if off < 2*on {
		t.Fatalf("peak buffer without SFC %.0f KB, with SFC %.0f KB: not 2x lower", off/1000, on/1000)
	}
	t.Logf("peak buffer at the incast port: %.0f KB without SFC, %.0f KB with: %.1fx lower", off/1000, on/1000, off/on)
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
		t.Fatalf("s%d received no BTS", n)
	}
}

// TestSFCForgedBTSFromAHost: a host sends a well-formed, cacheable BTS
// claiming that r1 is congested toward another host. sw1 drops it on the
// host port and counts it as forged (gswitch_control_forged_total); it
// changes nothing: sw1's cache stays empty, the other host's packets to r1
// get no BTS from the cache, and nothing arrives at the other host.
func TestSFCForgedBTSFromAHost(t *testing.T) {
	requireNetns(t)
	tp := sfcTopology(t, 2, "100Mbit", "ingress_cache")
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
