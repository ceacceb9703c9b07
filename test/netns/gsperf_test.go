package netns

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gswitch/gswitch/fidelity"
	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/perf/results"
	"golang.org/x/sys/unix"
)

// gsperfServer starts `gsperf server` in h and returns a function that
// stops it and returns what it printed.
func gsperfServer(t *testing.T, h *Host) func() string {
	t.Helper()
	return gsperfServerArgs(t, h)
}

// gsperfServerArgs is gsperfServer with more flags (-timescale).
func gsperfServerArgs(t *testing.T, h *Host, flags ...string) func() string {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command("ip", append([]string{"netns", "exec", h.NS, gsperfBin, "server", "-bind", h.IP + ":5500"}, flags...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	time.Sleep(200 * time.Millisecond)
	return func() string {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		return out.String()
	}
}

// gsperfClients runs one client per sender (in parallel) to the given destinations and returns the JSON paths.
func gsperfClients(t *testing.T, senders []*Host, dsts func(i int) []*Host, args ...string) []string {
	t.Helper()
	return gsperfClientsEach(t, senders, dsts, nil, args...)
}

// gsperfClientsEach is gsperfClients with arguments of each sender's own
// (each(i), after args), if each is not nil.
func gsperfClientsEach(t *testing.T, senders []*Host, dsts func(i int) []*Host, each func(i int) []string, args ...string) []string {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	var wg sync.WaitGroup
	errs := make([]error, len(senders))
	outs := make([][]byte, len(senders))
	for i, h := range senders {
		var to []string
		for _, d := range dsts(i) {
			to = append(to, d.IP+":5500")
		}
		p := filepath.Join(dir, fmt.Sprintf("h%d.json", i+1))
		paths = append(paths, p)
		a := append([]string{"300", "ip", "netns", "exec", h.NS, gsperfBin, "client", "-src", fmt.Sprintf("h%d", i+1),
			"-to", strings.Join(to, ","), "-seed", fmt.Sprint(i + 1), "-id-base", fmt.Sprint((i + 1) * 1000000), "-out", p}, args...)
		if each != nil {
			a = append(a, each(i)...)
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			outs[i], errs[i] = exec.Command("timeout", a...).CombinedOutput()
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("client %d: %v\n%s", i+1, err, outs[i])
		}
	}
	return paths
}

// TestGsperfAllToAll: 2,000 web-search flows all-to-all among four hosts at
// 50% load of 200 Mbit/s ports; every flow completes with its bytes.
func TestGsperfAllToAll(t *testing.T) {
	tp := NewTopo(t, 4)
	opts := PortOpts{}
	for i := 0; i < 4; i++ {
		opts[i] = "rate: 200Mbit"
	}
	tp.StartSwitch("", opts)
	var stops []func() string
	for _, h := range tp.Hosts {
		stops = append(stops, gsperfServer(t, h))
	}
	others := func(i int) []*Host {
		var o []*Host
		for j, h := range tp.Hosts {
			if j != i {
				o = append(o, h)
			}
		}
		return o
	}
	start := time.Now()
	paths := gsperfClients(t, tp.Hosts, others, "-workload", "WebSearch_distribution", "-flows", "500", "-load", "0.5", "-rate", "200Mbit")
	merged := filepath.Join(t.TempDir(), "all.json")
	out, err := exec.Command(gsperfBin, append([]string{"merge", "-name", "fifo", "-out", merged, "-csv", merged + ".csv"}, paths...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("merge: %v\n%s", err, out)
	}
	t.Logf("2,000 flows in %.0f s; summary:\n%s", time.Since(start).Seconds(), out)
	r, err := results.ReadJSON(merged)
	if err != nil {
		t.Fatal(err)
	}
	var bytesSent uint64
	for _, f := range r.Flows {
		if !f.Complete {
			t.Errorf("flow %d (%d B %s->%s) did not complete", f.ID, f.Size, f.Src, f.Dst)
		}
		bytesSent += f.Size
	}
	if len(r.Flows) != 2000 {
		t.Fatalf("%d flows", len(r.Flows))
	}
	var received, corrupt uint64
	for _, stop := range stops {
		s := stop()
		var fl, cm, by, co uint64
		if _, err := fmt.Sscanf(s[strings.Index(s, "gsperf server:"):], "gsperf server: %d flows, %d complete, %d bytes, %d corrupt segments", &fl, &cm, &by, &co); err != nil {
			t.Fatalf("server output %q: %v", s, err)
		}
		received += by
		corrupt += co
	}
	if received != bytesSent || corrupt != 0 {
		t.Fatalf("servers received %d bytes (%d corrupt segments); clients sent %d", received, corrupt, bytesSent)
	}
	png := filepath.Join(t.TempDir(), "slowdown.png")
	if out, err := exec.Command(gsperfBin, "plot", "-out", png, merged).CombinedOutput(); err != nil {
		t.Fatalf("plot: %v\n%s", err, out)
	}
	if st, err := os.Stat(png); err != nil || st.Size() < 5000 {
		t.Fatalf("plot: %v", err)
	}
}

// TestGsperfIncast: eight senders each start one 512 KB flow to one receiver
// at once, behind a 200 Mbit/s port with 256 KB of buffer: the queue lasts
// about 170 ms (64 KB flows kept it for 15 ms, three samples of a 5 ms
// watch, and a scrape that a loaded machine delays can miss that).
func TestGsperfIncast(t *testing.T) {
	tp := NewTopo(t, 9)
	sw := tp.StartSwitch("", PortOpts{8: "rate: 200Mbit\nbuffer: 256KB"})
	stop := gsperfServer(t, tp.Hosts[8])
	// Watch the receiver's port while the incast runs.
	dir := t.TempDir()
	queues := filepath.Join(dir, "queues.json")
	// The senders start together 2 s from now (starting eight processes on a
	// loaded machine takes a while); the watch covers that and 3 s more.
	at := time.Now().Add(2 * time.Second).UnixNano()
	watch := exec.Command(gsperfBin, "watch", "-metrics", "http://"+sw.Metrics+"/metrics", "-interval", "5ms", "-duration", "5s", "-out", queues)
	var wout bytes.Buffer
	watch.Stdout, watch.Stderr = &wout, &wout
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { watch.Process.Kill() })
	time.Sleep(200 * time.Millisecond)
	paths := gsperfClients(t, tp.Hosts[:8], func(int) []*Host { return tp.Hosts[8:] },
		"-size", "512KB", "-flows", "1", "-arrivals", "burst", "-rate", "200Mbit", "-timeline", "1ms", "-at", fmt.Sprint(at))
	if err := watch.Wait(); err != nil {
		t.Fatalf("watch: %v\n%s", err, wout.String())
	}
	seen, samples, peak := queueSamples(t, queues, "p9/")
	t.Logf("gsperf watch: %d samples, %d of them with a queue at p9 (peak %.0f B)", samples, seen, peak)
	if seen == 0 {
		t.Fatalf("gsperf watch saw no queue at p9 in %d samples: %s", samples, wout.String())
	}
	for _, args := range [][]string{{"-kind", "queue", queues}, {"-kind", "throughput", paths[0]}} {
		png := filepath.Join(dir, args[1]+".png")
		if out, err := exec.Command(gsperfBin, append([]string{"plot", "-out", png}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("plot %v: %v\n%s", args, err, out)
		}
		if st, err := os.Stat(png); err != nil || st.Size() < 5000 {
			t.Fatalf("plot %v: %v", args, err)
		}
	}
	n := 0
	for _, p := range paths {
		r, err := results.ReadJSON(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range r.Flows {
			if !f.Complete || f.Size != 512000 {
				t.Fatalf("incast flow %+v", f)
			}
			n++
		}
	}
	s := stop()
	t.Logf("8-to-1 incast of 512 KB flows: %d complete; %s", n, strings.TrimSpace(s[strings.Index(s, "gsperf server:"):]))
	if n != 8 || !strings.Contains(s, "8 complete") || !strings.Contains(s, "4096000 bytes") {
		t.Fatalf("server: %s", s)
	}
}

// queueSamples reads a gsperf watch file and returns how many samples
// found any queue whose key starts with prefix non-empty, how many samples
// there were, and the largest depth seen.
func queueSamples(t *testing.T, path, prefix string) (seen, samples int, peak float64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Bytes map[string][]float64 `json:"bytes"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var nonEmpty []bool // per sample: some queue under prefix held bytes
	for k, v := range s.Bytes {
		samples = max(samples, len(v))
		for len(nonEmpty) < len(v) {
			nonEmpty = append(nonEmpty, false)
		}
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		for i, x := range v {
			if x > 0 {
				nonEmpty[i] = true
				peak = max(peak, x)
			}
		}
	}
	for _, e := range nonEmpty {
		if e {
			seen++
		}
	}
	return seen, samples, peak
}

// capture opens an AF_PACKET socket on eth0 inside h's namespace (a
// packet capture without tcpdump) and collects up to max frames until stop.
func capture(t *testing.T, h *Host) (frames func() [][]byte) {
	t.Helper()
	fdc := make(chan int, 1)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // the thread goes back into its namespace never: it exits locked
		ns, err := os.Open("/var/run/netns/" + h.NS)
		if err != nil {
			errc <- err
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			errc <- err
			return
		}
		ifc, err := net.InterfaceByName("eth0")
		if err == nil {
			err = unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifc.Index})
		}
		if err != nil {
			errc <- err
			return
		}
		fdc <- fd
	}()
	var fd int
	select {
	case fd = <-fdc:
	case err := <-errc:
		t.Fatalf("capture socket in %s: %v", h.NS, err)
	}
	var mu sync.Mutex
	var got [][]byte
	go func() {
		b := make([]byte, 2048)
		for {
			n, _, err := unix.Recvfrom(fd, b, 0)
			if err != nil {
				return
			}
			mu.Lock()
			got = append(got, append([]byte(nil), b[:n]...))
			mu.Unlock()
		}
	}()
	return func() [][]byte {
		unix.Shutdown(fd, unix.SHUT_RDWR)
		unix.Close(fd)
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// TestGsperfPFabricStampsRemainingSize captures the frames of a pfabric-mode
// flow at the receiver and checks each data segment's priority field.
func TestGsperfPFabricStampsRemainingSize(t *testing.T) {
	tp := NewTopo(t, 2)
	tp.StartSwitch("", nil)
	stop := gsperfServer(t, tp.Hosts[1])
	frames := capture(t, tp.Hosts[1])
	gsperfClients(t, tp.Hosts[:1], func(int) []*Host { return tp.Hosts[1:] }, "-size", "100KB", "-flows", "1", "-arrivals", "burst", "-mode", "pfabric", "-rate", "1Gbit")
	time.Sleep(200 * time.Millisecond)
	t.Logf("%s", strings.TrimSpace(stop()))
	checked := 0
	for _, frame := range frames() {
		// Ethernet 14 + IPv4 20 + UDP 8, then the gsperf header; only frames to port 5500.
		if len(frame) < 42+proto.HeaderLen || binary.BigEndian.Uint16(frame[12:]) != 0x0800 || frame[23] != 17 || binary.BigEndian.Uint16(frame[36:]) != 5500 {
			continue
		}
		h, _, err := proto.Decode(frame[42:])
		if err != nil {
			t.Fatalf("bad gsperf header in a captured frame: %v", err)
		}
		if h.Type != proto.TypeData {
			continue
		}
		if want := uint32(h.Size - h.Seq); h.Priority != want {
			t.Fatalf("segment at %d of %d carries priority %d, want %d", h.Seq, h.Size, h.Priority, want)
		}
		checked++
	}
	t.Logf("checked the priority of %d captured data segments", checked)
	if checked < 72 { // 100,000 B in 1,408-byte segments: 72 at least
		t.Fatalf("only %d data segments captured", checked)
	}
}

// pFabric's fabric in TestPFabricServesFlowsOneAtATime (seed 002, section
// 5: 10 Gbit/s edge links, a fabric RTT of 14.6 us, qSize = 2 BDP = 36 KB,
// RTO = 3 RTT = 45 us), run at timescale 5000 (2 Mbit/s on this machine, a
// frame time of 6 ms): the hosts' gsperf runs its timers on ordinary
// threads of a loaded machine, which wake up to 20 ms late at times; that
// is 4 us of the fabric here (at timescale 2000, 10 us: a switch from one
// flow to the next came 10 us past its bound in one run of five).
const (
	pfK     = 5000
	pfRate  = 10e9    // bit/s
	pfSize  = 500_000 // bytes per flow: 27 BDPs
	pfDelay = "3us"   // each link, both ways: 4 x 3 us + two frames' time = a 14.5 us RTT
)

// TestPFabricServesFlowsOneAtATime: three equal pfabric-mode transfers
// from three hosts, each paced to the 10 Gbit/s line rate, start 5 us of
// the fabric apart into a 10 Gbit/s pfabric port (buffer 2 x rate x 15 us
// = 37.5 KB, RTO 3 x 15 us = 45 us: the paper's). pFabric serves the flow
// with the least left first (the first to start, then the second), so they finish
// one after the other, the i-th at about i times one flow's ideal time T
// (its bytes at 10 Gbit/s), and the last when all the bytes could have
// left: 3T. The i-th completion (since the first start) must be at least
// i T less 2% (no flow is faster than the bytes before it and its own;
// the ideal counts headers approximately) and at most i T + (i - 1) x (RTO
// + RTT) + RTT + 6 us: the first flow takes its bytes and an RTT, each
// switch to the next flow costs at most an RTO (the next flow's probe finds
// the port free within one) and the RTT it takes to fill the port again,
// and the hosts' own time, on this machine's clock, adds up to 30 ms of it
// (an ordinary thread's late wake-up under load: 6 us of the fabric). A
// port that shared among the flows would finish the first at 3T.
//
// With GSWITCH_TEST_MECH_OFF=pfabric the port runs DRR over the flows
// instead, they share it and finish late, and the test fails on all three.
func TestPFabricServesFlowsOneAtATime(t *testing.T) {
	tp := NewTopo(t, 4)
	port := "rate: 10Gbit\nrtt: 15us\nscheduler: pfabric\nmechanisms: {pfabric: {rank: gsperf}}"
	if mechOff(t, "pfabric") {
		port = "rate: 10Gbit\nrtt: 15us\nscheduler: drr"
	}
	opts := PortOpts{}
	for i := 0; i < 4; i++ {
		opts[i] = "delay: " + pfDelay + "\nrx_delay: " + pfDelay
	}
	opts[3] += "\n" + port
	sw := tp.StartSwitch(fmt.Sprintf("timescale: %d\nrealtime: 10\nspin: 0us", pfK), opts)
	for _, h := range tp.Hosts[:3] {
		h.Exec(t, 5*time.Second, "ping", "-c", "1", "-W", "1", tp.Hosts[3].IP)
	}
	fw := watchTargets(t, fidelity.Target{Name: "sw", URL: "http://" + sw.Metrics + "/metrics"})
	fct := pfabricThree(t, tp)
	fw.require()
	T := results.Ideal(pfSize, pfRate, 0, 1408, 130) / 1e9 // s of the fabric
	t.Logf("pFabric, three %d KB flows: completions since the first start %.1f, %.1f, %.1f us of the fabric = %.3f, %.3f, %.3f T (T = %.1f us, one flow's bytes at 10 Gbit/s); evictions %v",
		pfSize/1000, fct[0]*1e6, fct[1]*1e6, fct[2]*1e6, fct[0]/T, fct[1]/T, fct[2]/T, T*1e6, sw.Scrape()[`gswitch_drops_total{port="p4",reason="evicted"}`])
	const rto, rtt, hosts = 45e-6, 15e-6, 30e-3 / pfK
	for i, c := range fct {
		lo, hi := 0.98*float64(i+1)*T, float64(i+1)*T+float64(i)*(rto+rtt)+rtt+hosts
		if c < lo || c > hi {
			t.Errorf("flow %d finished %.1f us after the first start, want %.1f to %.1f us (%d T - 2%% to %d T + %d (RTO + RTT) + RTT + 6 us)", i+1, c*1e6, lo*1e6, hi*1e6, i+1, i+1, i)
		}
	}
}

// pfabricThree runs three pfSize pfabric-mode flows from the first three
// hosts to the fourth at timescale pfK, starting 5 us of the fabric apart,
// and returns their completion times since the first start, sorted, in
// seconds of the fabric.
func pfabricThree(t *testing.T, tp *Topo) []float64 {
	t.Helper()
	stop := gsperfServerArgs(t, tp.Hosts[3], "-timescale", fmt.Sprint(pfK))
	defer stop()
	// Start instants fixed in advance (starting three processes on a
	// loaded machine can take longer than a flow); flows that start in the
	// same microsecond have the same remaining size and share the port
	// until one pulls ahead.
	at := time.Now().Add(2 * time.Second).UnixNano()
	paths := gsperfClientsEach(t, tp.Hosts[:3], func(int) []*Host { return tp.Hosts[3:] },
		func(i int) []string { return []string{"-at", fmt.Sprint(at + int64(i)*5e3*pfK)} },
		"-timescale", fmt.Sprint(pfK), "-size", fmt.Sprint(pfSize), "-flows", "1", "-arrivals", "burst", "-mode", "pfabric",
		"-rate", "10Gbit", "-pace", "10Gbit", "-base-rtt", "15us", "-timeout", "20ms")
	var first int64
	var ends []int64
	for _, p := range paths {
		r, err := results.ReadJSON(p)
		if err != nil {
			t.Fatal(err)
		}
		f := r.Flows[0]
		if !f.Complete {
			t.Fatalf("%s: flow did not complete", p)
		}
		start := f.StartUnixNs / pfK // fabric ns
		if first == 0 || start < first {
			first = start
		}
		ends = append(ends, start+f.FCTFabricNs)
	}
	var fct []float64
	for _, e := range ends {
		fct = append(fct, float64(e-first)/1e9)
	}
	sort.Float64s(fct)
	return fct
}
