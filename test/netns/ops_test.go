package netns

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/gswitch/gswitch/control"
)

var (
	gswitchctlOnce sync.Once
	gswitchctlPath string
	gswitchctlErr  error
)

// gswitchctlBin builds gswitchctl once (next to gswitchd, which TestMain built).
func gswitchctlBin(t *testing.T) string {
	t.Helper()
	gswitchctlOnce.Do(func() {
		gswitchctlPath = filepath.Join(filepath.Dir(gswitchdBin), "gswitchctl")
		out, err := exec.Command("go", "build", "-o", gswitchctlPath, "github.com/gswitch/gswitch/cmd/gswitchctl").CombinedOutput()
		if err != nil {
			gswitchctlErr = fmt.Errorf("building gswitchctl: %v\n%s", err, out)
		}
	})
	if gswitchctlErr != nil {
		t.Fatal(gswitchctlErr)
	}
	return gswitchctlPath
}

// ctl runs gswitchctl against the switch's socket and returns its stdout;
// a non-zero exit fails the test unless wantCode says otherwise.
func ctl(t *testing.T, sock string, wantCode int, args ...string) string {
	t.Helper()
	cmd := exec.Command(gswitchctlBin(t), args...)
	cmd.Env = append(os.Environ(), "GSWITCH_SOCKET="+sock)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("gswitchctl %v: %v", args, err)
	}
	if code != wantCode {
		t.Fatalf("gswitchctl %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, wantCode, out, stderr.String())
	}
	return string(out) + stderr.String()
}

func ctlJSON(t *testing.T, sock string, v any, args ...string) {
	t.Helper()
	out := ctl(t, sock, 0, append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("gswitchctl %v -o json: %v\n%s", args, err, out)
	}
}

// startCtlSwitch starts gswitchd with a control socket in a directory of
// the test's: p2 shaped to 100 Mbit/s under drr, p3 rsp with afq.
func startCtlSwitch(tp *Topo) (*Switch, string) {
	sock := filepath.Join(tp.t.TempDir(), "sw.sock")
	sw := tp.StartSwitch("control: {socket: "+sock+"}", PortOpts{
		1: "rate: 100Mbit\nscheduler: drr\nqueues: 4",
		2: "scheduler: rsp\nqueues: 8\nmechanisms: {afq: {bytes_per_round: 1514}}",
	})
	return sw, sock
}

// TestGswitchctlAgainstARunningSwitch: every view from a real gswitchd
// while iperf3 runs through it; a capture of 10 pings as pcapng that pcapgo
// and tshark read with the right frames; a rate change by gswitchctl that
// a shaped iperf3 run shows; a refused change; SIGHUP reload.
func TestGswitchctlAgainstARunningSwitch(t *testing.T) {
	tp := NewTopo(t, 3)
	sw, sock := startCtlSwitch(tp)
	h1, h2, h3 := tp.Hosts[0], tp.Hosts[1], tp.Hosts[2]
	if out := ctl(t, sock, 0, "health", "-wait", "5s"); !strings.HasPrefix(out, "ok: 3 of 3 ports up") {
		t.Fatalf("health: %s", out)
	}
	for _, d := range []*Host{h2, h3} {
		if out, err := h1.Exec(t, 10*time.Second, "ping", "-c", "2", "-i", "0.2", "-W", "2", d.IP); err != nil {
			t.Fatalf("ping %s: %v\n%s", d.IP, err, out)
		}
	}
	h2.StartIperfServer(t, 5201)

	// Views while iperf3 fills p2.
	done := make(chan iperfResult, 1)
	go func() { done <- h1.iperfNoFatal(h2, 5201, 4) }()
	time.Sleep(1200 * time.Millisecond)
	var ports []control.PortView
	ctlJSON(t, sock, &ports, "ports")
	if len(ports) != 3 || ports[1].RateBits != 100e6 || ports[1].Scheduler != "drr" || ports[1].Interface != h2.Port || ports[2].Mechanisms[0] != "afq" {
		t.Fatalf("ports: %+v", ports)
	}
	for _, p := range ports {
		if !p.Up || p.RxPackets == 0 || p.XDPMode == "" {
			t.Fatalf("port %+v", p)
		}
	}
	if ports[1].TxBytes < 5e6 {
		t.Fatalf("p2 sent %d bytes 1.2 s into iperf3", ports[1].TxBytes)
	}
	var q control.QueuesView
	ctlJSON(t, sock, &q, "queues", "p2")
	if q.Port != "p2" || q.Scheduler != "drr" || q.Quantum != 1514 || len(q.Queues) != 4 || q.RateBits != 100e6 {
		t.Fatalf("queues p2: %+v", q)
	}
	if out := ctl(t, sock, 0, "queues"); !strings.Contains(out, "p2: up, scheduler drr (quantum 1514 B), rate 100.0Mbit") || !strings.Contains(out, "p3: up, scheduler rsp (round ") || !strings.Contains(out, "afq: bytes_per_round=1514") {
		t.Fatalf("queues table:\n%s", out)
	}
	var mac control.MACView
	ctlJSON(t, sock, &mac, "mac")
	ports2 := map[string]string{}
	for _, e := range mac.Entries {
		ports2[e.MAC] = e.Port
	}
	for i, h := range tp.Hosts {
		out, err := exec.Command("ip", "netns", "exec", h.NS, "cat", "/sys/class/net/eth0/address").Output()
		if err != nil {
			t.Fatalf("%s's MAC: %v", h.NS, err)
		}
		m := strings.TrimSpace(string(out))
		if ports2[m] != fmt.Sprintf("p%d", i+1) {
			t.Fatalf("mac: %s (%s) on %q, want p%d: %+v", m, h.NS, ports2[m], i+1, mac)
		}
	}
	var fl []control.MechView
	ctlJSON(t, sock, &fl, "flows")
	if len(fl) != 1 || fl[0].Mechanism != "afq" || fl[0].Port != "p3" || fl[0].State["bytes_per_round"] != float64(1514) {
		t.Fatalf("flows: %+v", fl)
	}
	if out := ctl(t, sock, 0, "routes"); !strings.Contains(out, "an L2 switch") {
		t.Fatalf("routes: %s", out)
	}
	top := ctl(t, sock, 0, "top", "-n", "2", "-i", "300ms", "-o", "json")
	var last struct {
		Ports []struct {
			Port   string  `json:"port"`
			TxBits float64 `json:"tx_bits_per_second"`
			Load   float64 `json:"load"`
		} `json:"ports"`
	}
	lines := strings.Split(strings.TrimSpace(top), "\n")
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &last) != nil || last.Ports[1].Port != "p2" || last.Ports[1].TxBits < 50e6 || last.Ports[1].Load < 0.5 {
		t.Fatalf("top during iperf3:\n%s", top)
	}
	before := <-done
	if r := before; r.Error != "" || r.End.SumReceived.BitsPerSecond > 100e6 || r.End.SumReceived.BitsPerSecond < 60e6 {
		t.Fatalf("iperf3 at 100 Mbit/s: %+v", r)
	}

	// Capture 10 pings on p1: 10 requests received, 10 replies sent.
	file := filepath.Join(t.TempDir(), "ping.pcapng")
	capCmd := exec.Command(gswitchctlBin(t), "capture", "p1", "-w", file, "-c", "20", "icmp")
	capCmd.Env = append(os.Environ(), "GSWITCH_SOCKET="+sock)
	var capOut strings.Builder
	capCmd.Stdout, capCmd.Stderr = &capOut, &capOut
	if err := capCmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if capCmd.ProcessState == nil {
			capCmd.Process.Kill()
		}
	})
	time.Sleep(300 * time.Millisecond)
	if out, err := h1.Exec(t, 10*time.Second, "ping", "-c", "10", "-i", "0.05", "-W", "2", h2.IP); err != nil {
		t.Fatalf("ping: %v\n%s", err, out)
	}
	capDone := make(chan error, 1)
	go func() { capDone <- capCmd.Wait() }()
	select {
	case err := <-capDone:
		if err != nil {
			t.Fatalf("capture: %v\n%s", err, capOut.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("capture did not end after 20 frames:\n%s", capOut.String())
	}
	if !strings.Contains(capOut.String(), "20 frames captured") || !strings.Contains(capOut.String(), "0 mirror copies dropped") {
		t.Fatalf("capture output: %s", capOut.String())
	}
	checkPingCapture(t, file, h1.IP, h2.IP)

	// A rate change shows in a shaped iperf3 run; a scheduler change is refused.
	if out := ctl(t, sock, 0, "set", "p2", "rate", "30Mbit"); !strings.Contains(out, "p2 rate: 100Mbit -> 30Mbit") {
		t.Fatalf("set: %s", out)
	}
	if r := h1.Iperf(t, h2, 5201, 2); r.End.SumReceived.BitsPerSecond > 30e6 || r.End.SumReceived.BitsPerSecond < 22e6 {
		t.Fatalf("iperf3 after set p2 rate 30Mbit: %.1f Mbit/s", r.End.SumReceived.BitsPerSecond/1e6)
	} else {
		t.Logf("iperf3 through p2: %.1f Mbit/s at 100 Mbit/s, %.1f Mbit/s after gswitchctl set p2 rate 30Mbit",
			before.End.SumReceived.BitsPerSecond/1e6, r.End.SumReceived.BitsPerSecond/1e6)
	}
	if out := ctl(t, sock, 1, "set", "p2", "scheduler", "fifo"); !strings.Contains(out, "scheduler cannot change while gswitchd runs") {
		t.Fatalf("set scheduler: %s", out)
	}
	if m := sw.Scrape(); m[portMetric("gswitch_port_rate_bytes_per_second", "p2")] != 30e6/8 {
		t.Fatalf("metric after set: %v", m[portMetric("gswitch_port_rate_bytes_per_second", "p2")])
	}

	// SIGHUP applies the file's new rate and refuses its new queue count.
	b, err := os.ReadFile(sw.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(b), "rate: 100Mbit", "rate: 60Mbit", 1)
	cfg = strings.Replace(cfg, "queues: 4", "queues: 6", 1)
	if err := os.WriteFile(sw.cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	sw.cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(sw.log.String(), "reload: refused ports[1].queues") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	ctlJSON(t, sock, &ports, "ports")
	if ports[1].RateBits != 60e6 || ports[1].Queues != 4 || !strings.Contains(sw.log.String(), "reload: applied ports[1].rate: 30Mbit -> 60Mbit") {
		t.Fatalf("after SIGHUP: p2 %+v\n%s", ports[1], sw.log.String())
	}
	sw.Stop()
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("control socket left after gswitchd stopped: %v", err)
	}
	if out := ctl(t, sock, 2, "health"); !strings.Contains(out, "no gswitchd control socket") {
		t.Fatalf("health of a stopped switch: %s", out)
	}
}

// checkPingCapture reads the pcapng with pcapgo and tshark: 10 echo
// requests from a to b received on the port, 10 replies sent on it.
func checkPingCapture(t *testing.T, file, a, b string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	if r.LinkType() != layers.LinkTypeEthernet {
		t.Fatalf("link type %v", r.LinkType())
	}
	var req, rep int
	for {
		data, _, opts, err := r.ReadPacketDataWithOptions()
		if err != nil {
			break
		}
		if len(data) < 42 || data[23] != 1 {
			t.Fatalf("not ICMP: % x", data)
		}
		in := opts.Flags != nil && opts.Flags.Direction == pcapgo.NgEpbFlagDirectionInbound
		switch {
		case data[34] == 8 && in:
			req++
		case data[34] == 0 && !in:
			rep++
		default:
			t.Fatalf("ICMP type %d, inbound %v", data[34], in)
		}
	}
	if req != 10 || rep != 10 {
		t.Fatalf("pcapgo read %d requests in, %d replies out; want 10 and 10", req, rep)
	}
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Log("tshark not installed (scripts/install-deps.sh installs it): the capture is checked with pcapgo only")
		return
	}
	out, err := exec.Command(tshark, "-n", "-r", file, "-T", "fields", "-e", "icmp.type", "-e", "ip.src", "-e", "ip.dst").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	want := map[string]int{"8\t" + a + "\t" + b: 10, "0\t" + b + "\t" + a: 10}
	got := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		got[l]++
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("tshark read %v, want %v", got, want)
	}
}
