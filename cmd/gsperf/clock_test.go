package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gswitch/gswitch/fidelity"
	"github.com/gswitch/gswitch/perf/results"
	"github.com/gswitch/gswitch/perf/timescale"
	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/perf/udp"
	"github.com/gswitch/gswitch/perf/xpass"
)

// At timescale 1 the protocol timers are the constants gsperf always had.
func TestTimersAtOneAreTheOldConstants(t *testing.T) {
	got := timersAt(timescale.Scale{})
	want := protocolTimers{
		RTO: 10 * time.Millisecond, MaxRTO: time.Second,
		BFCMinRTO: 10 * time.Millisecond, BFCPoll: 2 * time.Millisecond, BFCWatchdog: 200 * time.Millisecond,
		XPSender: xpass.SenderConfig{MSS: 1408, RetransmitTimeout: 100 * time.Microsecond, MaxRetransmit: 10 * time.Millisecond,
			StopTimeout: 2 * time.Millisecond, MinRTO: 10 * time.Millisecond, CreditTimeout: 10 * time.Millisecond},
		XPLinger:     50 * time.Millisecond,
		XPRetransmit: 100 * time.Microsecond, XPStop: 2 * time.Millisecond, XPIdleStop: 100 * time.Millisecond,
		Linger:     30 * time.Second,
		DCQCNAlpha: 55 * time.Microsecond, CNP: 50 * time.Microsecond,
	}
	if got != want {
		t.Fatalf("timers at K 1:\n%+v\nwant\n%+v", got, want)
	}
	if got != timersAt(timescale.MustNew(1)) {
		t.Fatal("the zero Scale and K 1 differ")
	}
}

// At timescale 100 every protocol timer is 100 times longer, one by one.
func TestTimersScaleWithK(t *testing.T) {
	one, k := timersAt(timescale.Scale{}), timersAt(timescale.MustNew(100))
	for _, c := range []struct {
		name      string
		one, hund time.Duration
	}{
		{"plain RTO", one.RTO, k.RTO},
		{"plain RTO cap", one.MaxRTO, k.MaxRTO},
		{"bfc RTO floor", one.BFCMinRTO, k.BFCMinRTO},
		{"bfc poll", one.BFCPoll, k.BFCPoll},
		{"bfc watchdog", one.BFCWatchdog, k.BFCWatchdog},
		{"xpass sender request retry", one.XPSender.RetransmitTimeout, k.XPSender.RetransmitTimeout},
		{"xpass sender retry cap", one.XPSender.MaxRetransmit, k.XPSender.MaxRetransmit},
		{"xpass sender StopTimeout", one.XPSender.StopTimeout, k.XPSender.StopTimeout},
		{"xpass sender MinRTO", one.XPSender.MinRTO, k.XPSender.MinRTO},
		{"xpass sender CreditTimeout", one.XPSender.CreditTimeout, k.XPSender.CreditTimeout},
		{"xpass linger", one.XPLinger, k.XPLinger},
		{"xpass host RetransmitTimeout", one.XPRetransmit, k.XPRetransmit},
		{"xpass host StopTimeout", one.XPStop, k.XPStop},
		{"xpass host IdleStop", one.XPIdleStop, k.XPIdleStop},
		{"server linger", one.Linger, k.Linger},
		{"dcqcn alpha timer", one.DCQCNAlpha, k.DCQCNAlpha},
		{"dcqcn CNP interval", one.CNP, k.CNP},
	} {
		if c.hund != 100*c.one || c.one <= 0 {
			t.Errorf("%s: %v at K 1, %v at K 100", c.name, c.one, c.hund)
		}
	}
	if k.XPSender.MSS != one.XPSender.MSS {
		t.Error("a size changed with K")
	}
}

func planOf(t *testing.T, args ...string) *clientSetup {
	t.Helper()
	c, err := parseClient(append([]string{"-to", "127.0.0.1:5500", "-src", "h1"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Every rate and time flag of the client, and every default that follows
// from them, at K 1 (the values gsperf always used) and at K 100.
func TestClientFlagsOnBothClocks(t *testing.T) {
	flags := []string{"-rate", "10Gbit", "-pace", "10Gbit", "-base-rtt", "4us", "-timeout", "2s", "-timeline", "10us"}
	one := planOf(t, flags...).plan
	if one.RateBits != 10e9 || one.Pace != 10e9 || one.BaseRTT != 4*time.Microsecond || one.Timeout != 2*time.Second ||
		one.Timeline != 10*time.Microsecond || one.RTO != 10*time.Millisecond || one.MaxRTO != time.Second ||
		one.XPLinger != 50*time.Millisecond || one.XPSender != xpass.DefaultSenderConfig() || one.InitWindow != 0 {
		t.Fatalf("K 1: %+v", one)
	}
	c := planOf(t, append(flags, "-timescale", "100")...)
	p := c.plan
	for _, v := range []struct {
		name      string
		got, want float64
	}{
		{"-rate", p.RateBits, 100e6},
		{"-pace", p.Pace, 100e6},
		{"-base-rtt", float64(p.BaseRTT), float64(400 * time.Microsecond)},
		{"-timeout", float64(p.Timeout), float64(200 * time.Second)},
		{"-timeline", float64(p.Timeline), float64(time.Millisecond)},
		{"plain RTO", float64(p.RTO), float64(time.Second)},
		{"RTO cap", float64(p.MaxRTO), float64(100 * time.Second)},
		{"xpass linger", float64(p.XPLinger), float64(5 * time.Second)},
		{"xpass MinRTO", float64(p.XPSender.MinRTO), float64(time.Second)},
	} {
		if v.got != v.want {
			t.Errorf("%s at K 100: %v, want %v", v.name, v.got, v.want)
		}
	}
	if c.params["rate"] != "10Gbit" || c.params["base_rtt"] != "4µs" || c.clock.Scale.K() != 100 {
		t.Errorf("params hold the flags as given: %v", c.params)
	}

	// Modes' defaults: pfabric's RTO is 3 base RTTs, bfc's 10 (at least
	// 10 ms of fabric time); sfc's and bfc's windows are one BDP, the same
	// bytes on both clocks.
	for _, k := range []string{"1", "100"} {
		n := time.Duration(map[string]int{"1": 1, "100": 100}[k])
		if p := planOf(t, "-timescale", k, "-mode", "pfabric", "-base-rtt", "500us").plan; p.RTO != 1500*time.Microsecond*n {
			t.Errorf("pfabric RTO at K %s: %v", k, p.RTO)
		}
		if p := planOf(t, "-timescale", k, "-mode", "bfc", "-base-rtt", "500us").plan; p.RTO != 10*time.Millisecond*n || p.InitWindow != 62500 {
			t.Errorf("bfc at K %s: RTO %v, window %d", k, p.RTO, p.InitWindow)
		}
		if p := planOf(t, "-timescale", k, "-mode", "bfc", "-base-rtt", "2ms").plan; p.RTO != 20*time.Millisecond*n {
			t.Errorf("bfc RTO at K %s: %v", k, p.RTO)
		}
		if p := planOf(t, "-timescale", k, "-mode", "sfc", "-rate", "10Mbit", "-base-rtt", "2ms").plan; p.InitWindow != 2500 {
			t.Errorf("sfc window at K %s: %d", k, p.InitWindow)
		}
		if p := planOf(t, "-timescale", k, "-rto", "5s").plan; p.RTO != 5*time.Second*n {
			t.Errorf("-rto at K %s: %v", k, p.RTO)
		}
		if c := planOf(t, "-timescale", k, "-mode", "bfc", "-bfc-watchdog", "50ms"); c.bfc.watchdog.Wall != 50*time.Millisecond*n {
			t.Errorf("-bfc-watchdog at K %s: %v", k, c.bfc.watchdog.Wall)
		}
		// sfc's longest pause: 256 base RTTs, or -max-pause, both fabric time.
		if c := planOf(t, "-timescale", k, "-mode", "sfc", "-base-rtt", "2ms"); c.maxPause != 512*time.Millisecond*n || c.params["max_pause"] != "512ms" {
			t.Errorf("sfc max pause at K %s: %v (params %q)", k, c.maxPause, c.params["max_pause"])
		}
		if c := planOf(t, "-timescale", k, "-mode", "sfc", "-max-pause", "5ms"); c.maxPause != 5*time.Millisecond*n {
			t.Errorf("-max-pause at K %s: %v", k, c.maxPause)
		}
	}
}

// The server's fabric flags: -idle-timeout and -xp-link; -xp-spin and
// -report are this machine's.
func TestServerFlagsOnBothClocks(t *testing.T) {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	clock := addClock(fs)
	idle := clock.duration("idle-timeout", udp.DefaultIdleTimeout, "")
	xp := addXPFlags(fs)
	if err := fs.Parse([]string{"-timescale", "100", "-idle-timeout", "2s", "-xp-link", "10Gbit", "-xp-spin", "30us"}); err != nil {
		t.Fatal(err)
	}
	if err := clock.resolve(); err != nil {
		t.Fatal(err)
	}
	cfg, err := serverConfig(4096, "8MiB", "256MiB", idle)
	if err != nil || cfg.IdleTimeout != 200*time.Second {
		t.Fatalf("%+v %v", cfg, err)
	}
	xc, err := xp.config(clock, timersAt(clock.Scale))
	if err != nil {
		t.Fatal(err)
	}
	if xc.Params.LinkBits != 100e6 || xc.Spin != 30*time.Microsecond || xc.Params.RetransmitTimeout != 10*time.Millisecond ||
		xc.Params.StopTimeout != 200*time.Millisecond || xc.Params.IdleStop != 10*time.Second || xc.Timescale.K() != 100 {
		t.Fatalf("%+v", xc)
	}
	fs = flag.NewFlagSet("server", flag.ContinueOnError)
	clock = addClock(fs)
	xp = addXPFlags(fs)
	fs.Parse([]string{"-timescale", "1000", "-xp-link", "100Mbit"})
	clock.resolve()
	if _, err := xp.config(clock, timersAt(clock.Scale)); err == nil || !strings.Contains(err.Error(), "100 kbit/s on this machine") {
		t.Fatalf("a link too slow on this machine: %v", err)
	}
}

// -timescale below 1 (or not a number) is refused by every command that has it.
func TestTimescaleBelowOneIsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"client", "-to", "127.0.0.1:1", "-timescale", "0.5"},
		{"server", "-bind", "127.0.0.1:0", "-timescale", "0"},
		{"watch", "-timescale", "-3", "-duration", "1ms"},
		{"client", "-to", "127.0.0.1:1", "-timescale", "fast"},
	} {
		var stderr bytes.Buffer
		cmd := gsperf(args...)
		cmd.Stderr = &stderr
		err := cmd.Run()
		if err == nil || !strings.Contains(stderr.String(), "-timescale: ") || !strings.Contains(stderr.String(), "from 1") {
			t.Errorf("gsperf %v: %v, stderr %q", args, err, stderr.String())
		}
	}
}

// fakeSwitch serves a gswitchd's fidelity metrics at timescale 10 on a
// 10 Mbit/s port (100 Mbit/s fabric; a frame takes 1.23 ms): each scrape
// finds 100 more wake-ups of 1.024 ms or less (p99 0.831 frame times) and 1 µs
// more of line time lost.
func fakeSwitch(t *testing.T) *httptest.Server {
	var n atomic.Int64
	bounds := fidelity.BucketBounds()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := n.Add(1)
		fmt.Fprintf(w, "# TYPE gswitch_timescale gauge\ngswitch_timescale 10\n")
		fmt.Fprintf(w, "# TYPE gswitch_port_rate_bytes_per_second gauge\ngswitch_port_rate_bytes_per_second{port=\"r1\"} 1.25e+06\n")
		fmt.Fprintf(w, "# TYPE gswitch_port_tx_late_seconds_total counter\ngswitch_port_tx_late_seconds_total{port=\"r1\"} %g\n", float64(k)*1e-6)
		fmt.Fprintf(w, "# TYPE gswitch_worker_wake_late_seconds histogram\n")
		for i, le := range bounds {
			c := int64(0)
			if i >= 40 {
				c = 100 * k
			}
			fmt.Fprintf(w, "gswitch_worker_wake_late_seconds_bucket{worker=\"0\",le=%q} %d\n", strconv.FormatFloat(le, 'g', -1, 64), c)
		}
		fmt.Fprintf(w, "gswitch_worker_wake_late_seconds_bucket{worker=\"0\",le=\"+Inf\"} %d\ngswitch_worker_wake_late_seconds_sum{worker=\"0\"} %g\ngswitch_worker_wake_late_seconds_count{worker=\"0\"} %d\n",
			100*k, float64(k)*0.1, 100*k)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A run at timescale 10 through loopback: the records carry both clocks,
// the slowdown is the same on both, the summary and the CSV say both, and
// -fidelity puts the verdict in the report and the JSON.
func TestClientReportsBothClocksAndTheVerdict(t *testing.T) {
	sw := fakeSwitch(t)
	srv := gsperf("server", "-bind", "127.0.0.1:0", "-timescale", "10", "-report", "0", "-fidelity", "sw1="+sw.URL+"/metrics")
	var srvOut bytes.Buffer
	srv.Stdout = &srvOut
	stderr, _ := srv.StderrPipe()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	errs := bufio.NewReader(stderr)
	line, _ := errs.ReadString('\n')
	if !strings.Contains(line, "timescale 10") {
		t.Fatalf("server start line %q", line)
	}
	addr := strings.Fields(strings.SplitAfter(line, "serving on ")[1])[0]
	addr = strings.TrimSuffix(addr, ";")
	if _, _, err := net.SplitHostPort(addr); err != nil {
		t.Fatalf("%q: %v", line, err)
	}

	dir := t.TempDir()
	out, csv := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.csv")
	cl := gsperf("client", "-to", addr, "-src", "h1", "-size", "200KB", "-flows", "3", "-arrivals", "burst", "-rate", "1Gbit",
		"-base-rtt", "20us", "-timeline", "1ms", "-timescale", "10", "-out", out, "-csv", csv, "-fidelity", "sw1="+sw.URL+"/metrics")
	stdout, err := cl.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("client: %v\n%s\n%s", err, stdout, stderr)
	}
	run, err := results.ReadJSON(out)
	if err != nil {
		t.Fatal(err)
	}
	if run.Params["timescale"] != "10" || run.Params["rate"] != "1Gbit" || run.Params["base_rtt"] != "20µs" {
		t.Errorf("params %v", run.Params)
	}
	for _, f := range run.Flows {
		if !f.Complete {
			t.Fatalf("flow %d did not complete", f.ID)
		}
		if math.Abs(float64(f.FCTFabricNs)-float64(f.FCTNs)/10) > 0.5 || f.TimelineStepNs != 10e6 || f.TimelineStepFabricNs != 1e6 ||
			math.Abs(float64(f.StartFabricNs)-float64(f.StartNs)/10) > 0.5 {
			t.Errorf("flow %d: fct %d wall, %d fabric; step %d, %d; start %d, %d", f.ID, f.FCTNs, f.FCTFabricNs, f.TimelineStepNs, f.TimelineStepFabricNs, f.StartNs, f.StartFabricNs)
		}
		// Slowdown: wall FCT over the ideal at the wall rate and base RTT,
		// which is fabric FCT over the ideal at the fabric's.
		wall := float64(f.FCTNs) / results.Ideal(f.Size, 100e6, 200e3, udp.MSS, udp.Overhead)
		fabric := float64(f.FCTFabricNs) / results.Ideal(f.Size, 1e9, 20e3, udp.MSS, udp.Overhead)
		if math.Abs(f.Slowdown-wall) > 1e-9*wall || math.Abs(f.Slowdown-fabric) > 1e-5*wall /* the fabric FCT is rounded to whole ns */ {
			t.Errorf("flow %d: slowdown %v, wall %v, fabric %v", f.ID, f.Slowdown, wall, fabric)
		}
	}
	v := run.Fidelity
	if v == nil || !v.Valid || v.Timescale != 10 || v.FastestFabricBits != 100e6 || v.WakeLateCount != 100 || !strings.HasPrefix(v.String(), "fidelity: VALID") {
		t.Fatalf("verdict %+v", v)
	}
	text := string(stdout)
	for _, want := range []string{"completion times, timescale 10 (fabric = wall / 10", "fabric avg", "wall avg", "fidelity: VALID  lateness p99 "} {
		if !strings.Contains(text, want) {
			t.Errorf("the summary lacks %q:\n%s", want, text)
		}
	}
	c, _ := os.ReadFile(csv)
	if !strings.HasPrefix(string(c), "id,src,dst,size,start_ns,fct_ns,slowdown,retransmits,timeouts,complete,start_fabric_ns,fct_fabric_ns\n") {
		t.Errorf("CSV header: %q", strings.SplitN(string(c), "\n", 2)[0])
	}

	srv.Process.Signal(syscall.SIGTERM)
	io.Copy(io.Discard, errs)
	srv.Wait()
	if !strings.Contains(srvOut.String(), "gsperf server: 3 flows, 3 complete") || !strings.Contains(srvOut.String(), "fidelity: VALID") {
		t.Errorf("server output %q", srvOut.String())
	}
}

// gsperf fidelity: a snapshot saved, a verdict against it, and a window of
// its own.
func TestFidelityCommand(t *testing.T) {
	sw := fakeSwitch(t)
	dir := t.TempDir()
	snap := filepath.Join(dir, "before.json")
	if out, err := gsperf("fidelity", "-metrics", "sw1="+sw.URL, "-save", snap).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	time.Sleep(10 * time.Millisecond)
	js := filepath.Join(dir, "v.json")
	out, err := gsperf("fidelity", "-metrics", "sw1="+sw.URL, "-before", snap, "-json", js).Output()
	if err != nil || !strings.HasPrefix(string(out), "fidelity: VALID  lateness p99 0.831 frame times (1.02 ms wall; fastest link 10 Mbit/s wall = 100 Mbit/s fabric at timescale 10)") {
		t.Fatalf("%v: %s", err, out)
	}
	if b, _ := os.ReadFile(js); !strings.Contains(string(b), `"valid": true`) {
		t.Errorf("JSON %s", b)
	}
	// Declared bounds below the lateness: INVALID, and with -strict the exit status says so.
	cmd := gsperf("fidelity", "-metrics", "sw1="+sw.URL, "-duration", "50ms", "-strict", "-bounds", "lateness=0.5")
	out, err = cmd.Output()
	if ee, ok := err.(interface{ ExitCode() int }); !ok || ee.ExitCode() != 3 || !strings.HasPrefix(string(out), "fidelity: INVALID") {
		t.Fatalf("%v: %s", err, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-metrics", "nope"}, "-metrics"},
		{[]string{"-metrics", sw.URL}, "give -duration"},
		{[]string{"-metrics", sw.URL, "-duration", "1ms", "-bounds", "x=1"}, "-bounds"},
		{[]string{"-metrics", sw.URL, "-before", filepath.Join(dir, "none.json")}, "-before"},
	} {
		var stderr bytes.Buffer
		cmd := gsperf(append([]string{"fidelity"}, c.args...)...)
		cmd.Stderr = &stderr
		if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("gsperf fidelity %v: %v %q", c.args, err, stderr.String())
		}
	}
	var stderr bytes.Buffer
	cmd = gsperf("client", "-to", "127.0.0.1:1", "-fidelity", "http://127.0.0.1:1/metrics")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "-fidelity: 127.0.0.1:1") {
		t.Errorf("a switch that does not answer: %v %q", err, stderr.String())
	}
}

// The plain sender's backoff stops at the scaled cap.
func TestPlanCapsTheBackoff(t *testing.T) {
	p := planOf(t, "-timescale", "3").plan
	if p.MaxRTO != 3*time.Duration(transport.DefaultMaxRTO) || p.RTO != 3*time.Duration(transport.DefaultRTO) {
		t.Fatalf("%v %v", p.RTO, p.MaxRTO)
	}
}
