package netns

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gswitch/gswitch/topo"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// gswitchdBin and gsperfBin are built once by TestMain;
// GSWITCH_TEST_GSWITCHD names another gswitchd binary to run instead.
var gswitchdBin, gsperfBin string

func TestMain(m *testing.M) {
	code := func() int {
		dir, err := os.MkdirTemp("", "gswitch-netns-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		gswitchdBin = filepath.Join(dir, "gswitchd")
		gsperfBin = filepath.Join(dir, "gsperf")
		for bin, pkg := range map[string]string{gswitchdBin: "cmd/gswitchd", gsperfBin: "cmd/gsperf"} {
			out, err := exec.Command("go", "build", "-o", bin, "github.com/gswitch/gswitch/"+pkg).CombinedOutput()
			if err != nil {
				fmt.Fprintf(os.Stderr, "building %s: %v\n%s", pkg, err, out)
				return 1
			}
		}
		if b := os.Getenv("GSWITCH_TEST_GSWITCHD"); b != "" {
			// Another build of gswitchd (A/B runs of a change).
			gswitchdBin = b
		}
		return m.Run()
	}()
	os.Exit(code)
}

// requireNetns skips the test unless it can create network namespaces.
func requireNetns(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces, veths and XDP programs")
	}
	name := "gsprobe" + randID()
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Skipf("network namespaces unavailable (ip netns add: %v: %s)", err, out)
	}
	exec.Command("ip", "netns", "del", name).Run()
	for _, tool := range []string{"iperf3", "ethtool", "ping"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not installed (apt-get install iperf3 ethtool iputils-ping; .ci/run does it)", tool)
		}
	}
}

func randID() string {
	b := make([]byte, 3)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Host is a network namespace with one interface, eth0, wired to a switch port.
type Host struct {
	NS   string
	IP   string
	Port string // the switch-side veth in the root namespace
}

// Topo is a set of hosts, each on its own switch port: an l2 star topology
// of package topo (the same code as gswitchctl topo and the scripts) brought
// up without its switch, so each test starts, stops and kills gswitchd
// itself with a config of its own (StartSwitch). Everything it makes is
// removed by t.Cleanup, also when the test fails.
type Topo struct {
	t     *testing.T
	ID    string
	Hosts []*Host
	// Topology and Running are the topology and what Up made.
	Topology *topo.Topology
	Running  *topo.Running
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// starTopology is an l2 topology of n hosts sub.1 .. sub.n (/24), each
// linked to one switch, sw.
func starTopology(name, sub string, n int) string { return starTopologyMTU(name, sub, n, 0) }

// starTopologyMTU is starTopology with every link's MTU mtu (0: the default).
func starTopologyMTU(name, sub string, n, mtu int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\nmode: l2\nswitches: {sw: {}}\n", name)
	if mtu > 0 {
		fmt.Fprintf(&b, "defaults: {link: {mtu: %d}}\n", mtu)
	}
	b.WriteString("hosts:\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  h%d: {addr: %s.%d/24}\n", i, sub, i)
	}
	b.WriteString("links:\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - {a: h%d, b: sw}\n", i)
	}
	return b.String()
}

// NewTopo creates n hosts 10.<x>.<y>.i/24 with no default route, offloads
// off, IPv6 off; host i's switch port is Hosts[i-1].Port.
func NewTopo(t *testing.T, n int) *Topo { return NewTopoMTU(t, n, 0) }

// NewTopoMTU is NewTopo with every veth (host and switch side) at MTU mtu.
func NewTopoMTU(t *testing.T, n, mtu int) *Topo {
	requireNetns(t)
	tp := &Topo{t: t, ID: randID()}
	sub := fmt.Sprintf("10.%d.%d", 100+int(tp.ID[0])%100, int(tp.ID[1])*7%250)
	top, err := topo.Parse([]byte(starTopologyMTU("t"+tp.ID[:5], sub, n, mtu)))
	if err != nil {
		t.Fatal(err)
	}
	tp.Topology = top
	tp.Running = upTopology(t, top, topo.UpOptions{NoSwitches: true})
	p, err := top.Plan()
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range p.Hosts {
		tp.Hosts = append(tp.Hosts, &Host{NS: h.Namespace, IP: h.Addr.Addr().String(), Port: p.Switches[0].Ports[i].Interface})
	}
	return tp
}

// upTopology brings top up with its state (and logs) in a directory of the
// test and takes it down at cleanup, also when the test fails.
func upTopology(t *testing.T, top *topo.Topology, o topo.UpOptions) *topo.Running {
	t.Helper()
	o.StateDir = t.TempDir()
	if o.Gswitchd == "" {
		o.Gswitchd = gswitchdBin
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := topo.Up(ctx, top, o)
	if err != nil {
		t.Fatalf("topology %s: %v", top.Name, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range r.Switches {
				if b, err := os.ReadFile(s.Log); err == nil {
					t.Logf("%s's log:\n%s", s.Name, b)
				}
			}
		}
		if err := r.Down(); err != nil {
			t.Errorf("taking topology %s down: %v", top.Name, err)
		}
	})
	return r
}

// Exec runs a command in host h and returns its output.
func (h *Host) Exec(t *testing.T, timeout time.Duration, name string, args ...string) (string, error) {
	t.Helper()
	full := append([]string{fmt.Sprintf("%.0f", timeout.Seconds()), "ip", "netns", "exec", h.NS, name}, args...)
	out, err := exec.Command("timeout", full...).CombinedOutput()
	return string(out), err
}

// Switch is a running gswitchd.
type Switch struct {
	t       *testing.T
	cmd     *exec.Cmd
	Metrics string
	log     *bytes.Buffer
	cfgPath string
	done    chan error
}

// PortOpts adds YAML lines to a port's entry.
type PortOpts map[int]string

// StartSwitch writes a config with one port per host and starts gswitchd.
func (tp *Topo) StartSwitch(extra string, opts PortOpts) *Switch {
	t := tp.t
	var b strings.Builder
	b.WriteString("ports:\n")
	for i, h := range tp.Hosts {
		fmt.Fprintf(&b, "  - name: p%d\n    interface: %s\n", i+1, h.Port)
		if o := opts[i]; o != "" {
			for _, l := range strings.Split(o, "\n") {
				fmt.Fprintf(&b, "    %s\n", l)
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	fmt.Fprintf(&b, "metrics: %s\n%s\n", addr, extra)
	if !strings.Contains(extra, "control:") {
		// The control socket goes in a directory of the test's, removed with
		// it: a gswitchd killed at cleanup leaves nothing in /run/gswitch.
		dir, err := os.MkdirTemp("", "gsw")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		fmt.Fprintf(&b, "control: {socket: %s}\n", filepath.Join(dir, "sw.sock"))
	}
	cfg := filepath.Join(t.TempDir(), "gswitchd.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sw := &Switch{t: t, Metrics: addr, cfgPath: cfg}
	sw.start()
	return sw
}

func (sw *Switch) start() {
	t := sw.t
	sw.log = &bytes.Buffer{}
	sw.cmd = exec.Command(gswitchdBin, "-config", sw.cfgPath)
	sw.cmd.Stdout, sw.cmd.Stderr = sw.log, sw.log
	if err := sw.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sw.done = make(chan error, 1)
	go func(c *exec.Cmd, done chan error) { done <- c.Wait() }(sw.cmd, sw.done)
	cmd := sw.cmd
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("gswitchd log:\n%s", sw.log.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-sw.done:
			t.Fatalf("gswitchd exited: %v\n%s", err, sw.log.String())
		default:
		}
		if resp, err := http.Get("http://" + sw.Metrics + "/metrics"); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("gswitchd did not serve metrics within 10 s\n%s", sw.log.String())
}

// Stop sends SIGTERM and waits for a clean exit.
func (sw *Switch) Stop() {
	sw.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-sw.done:
		if err != nil {
			sw.t.Fatalf("gswitchd exited with %v\n%s", err, sw.log.String())
		}
	case <-time.After(10 * time.Second):
		sw.t.Fatalf("gswitchd did not stop within 10 s of SIGTERM")
	}
}

// Kill9 kills gswitchd with SIGKILL and waits for it.
func (sw *Switch) Kill9() {
	sw.cmd.Process.Kill()
	<-sw.done
}

// Scrape returns every sample as "name{labels}" -> value, labels sorted as exposed.
func (sw *Switch) Scrape() map[string]float64 {
	sw.t.Helper()
	m, err := scrape(sw.Metrics)
	if err != nil {
		sw.t.Fatal(err)
	}
	return m
}

// scrape reads a gswitchd's metrics at addr (host:port) as Scrape does
// (a histogram as its count); safe off the test goroutine.
func scrape(addr string) (map[string]float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bufio.NewReader(resp.Body))
	if err != nil {
		return nil, err
	}
	m := map[string]float64{}
	for name, mf := range mfs {
		for _, s := range mf.Metric {
			var ls []string
			for _, l := range s.Label {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			key := name
			if len(ls) > 0 {
				key += "{" + strings.Join(ls, ",") + "}"
			}
			switch {
			case s.Counter != nil:
				m[key] = s.Counter.GetValue()
			case s.Gauge != nil:
				m[key] = s.Gauge.GetValue()
			case s.Untyped != nil:
				m[key] = s.Untyped.GetValue()
			case s.Histogram != nil:
				m[key] = float64(s.Histogram.GetSampleCount())
			}
		}
	}
	return m, nil
}

// CheckFramesBack waits until no frame is queued or in flight and every
// frame is free or on a fill ring.
func (sw *Switch) CheckFramesBack() {
	sw.t.Helper()
	var m map[string]float64
	for i := 0; i < 50; i++ {
		m = sw.Scrape()
		inFlight := m[`gswitch_umem_frames{state="queued"}`] + m[`gswitch_umem_frames{state="tx"}`] +
			m[`gswitch_umem_frames{state="handoff"}`] + m[`gswitch_umem_frames{state="returning"}`]
		pool := m[`gswitch_umem_frames{state="free"}`] + m[`gswitch_umem_frames{state="fill"}`]
		if inFlight == 0 && pool == m["gswitch_umem_size_frames"] && pool > 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	sw.t.Fatalf("UMEM frames not all back after traffic stopped: %v", framesOf(m))
}

func framesOf(m map[string]float64) map[string]float64 {
	r := map[string]float64{}
	for k, v := range m {
		if strings.HasPrefix(k, "gswitch_umem_frames") {
			r[k] = v
		}
	}
	return r
}

// iperf3 runs a client in from against a server in to and returns the parsed JSON summary.
type iperfResult struct {
	End struct {
		SumSent struct {
			BitsPerSecond float64 `json:"bits_per_second"`
			Retransmits   int     `json:"retransmits"`
		} `json:"sum_sent"`
		SumReceived struct {
			BitsPerSecond float64 `json:"bits_per_second"`
		} `json:"sum_received"`
		Sum struct {
			BitsPerSecond float64 `json:"bits_per_second"`
			LostPercent   float64 `json:"lost_percent"`
			Packets       int     `json:"packets"`
		} `json:"sum"`
	} `json:"end"`
	Error string `json:"error"`
}

// StartIperfServer starts iperf3 -s in h (killed with the namespace at cleanup).
func (h *Host) StartIperfServer(t *testing.T, port int) {
	t.Helper()
	run(t, "ip", "netns", "exec", h.NS, "iperf3", "-s", "-D", "-B", h.IP, "-p", fmt.Sprint(port))
	time.Sleep(200 * time.Millisecond)
}

// iperfNoFatal runs iperf3 -c from h to dst; errors come back in Error (safe off the test goroutine).
func (h *Host) iperfNoFatal(dst *Host, port int, secs int, args ...string) iperfResult {
	a := append([]string{fmt.Sprint(secs + 20), "ip", "netns", "exec", h.NS, "iperf3", "-c", dst.IP, "-p", fmt.Sprint(port), "-t", fmt.Sprint(secs), "-J"}, args...)
	out, err := exec.Command("timeout", a...).CombinedOutput()
	var r iperfResult
	if jerr := json.Unmarshal(out, &r); jerr != nil {
		r.Error = fmt.Sprintf("%v %v: %s", err, jerr, out)
	}
	return r
}

// Iperf runs iperf3 -c from h to dst.
func (h *Host) Iperf(t *testing.T, dst *Host, port int, secs int, args ...string) iperfResult {
	t.Helper()
	a := append([]string{"-c", dst.IP, "-p", fmt.Sprint(port), "-t", fmt.Sprint(secs), "-J"}, args...)
	out, err := h.Exec(t, time.Duration(secs+20)*time.Second, "iperf3", a...)
	var r iperfResult
	if jerr := json.Unmarshal([]byte(out), &r); jerr != nil || r.Error != "" {
		t.Fatalf("iperf3 %v: %v %v %s\n%s", a, err, jerr, r.Error, out)
	}
	return r
}
