package netns

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// imageCaps are the capabilities the image's gswitchd runs with, and no
// more (deploy/container/README.md says why each): CAP_NET_ADMIN,
// CAP_NET_RAW, CAP_IPC_LOCK and CAP_BPF, bits 12, 13, 14 and 39.
const (
	imageCaps    = "NET_ADMIN,NET_RAW,BPF,IPC_LOCK"
	imageCapMask = 1<<12 | 1<<13 | 1<<14 | 1<<39
	imageTag     = "gswitch:netns-test"
)

// TestImage builds the container image with scripts/image.sh (a cached
// build is reused), puts a switch's two ports in a network namespace of
// their own, runs the image there with only imageCaps and podman's seccomp
// profile with bpf() allowed to CAP_BPF (image.sh -seccomp), and sends
// ping and iperf3 between two host namespaces through it. The container,
// the namespaces and their veths go at cleanup, also when it fails.
func TestImage(t *testing.T) {
	requireNetns(t)
	if _, err := exec.LookPath("podman"); err != nil {
		t.Fatal("podman is not installed (apt-get install podman runc; scripts/install-deps.sh does it)")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is not installed (apt-get install curl; scripts/install-deps.sh does it)")
	}
	dir := t.TempDir()
	seccomp := filepath.Join(dir, "seccomp.json")
	start := time.Now()
	build := exec.Command("bash", "scripts/image.sh", "-seccomp", seccomp)
	build.Dir = filepath.Join("..", "..")
	build.Env = append(os.Environ(), "IMAGE="+imageTag)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/image.sh: %v\n%s", err, out)
	} else {
		t.Logf("scripts/image.sh (%.1f s): %s", time.Since(start).Seconds(), imageLines(string(out)))
	}

	id := randID()
	sw, h1, h2 := "gi"+id+"-sw", "gi"+id+"-h1", "gi"+id+"-h2"
	name := "gi" + id
	t.Cleanup(func() {
		if t.Failed() {
			if out, err := exec.Command("podman", "logs", name).CombinedOutput(); err == nil {
				t.Logf("the container's log:\n%s", tail(string(out), 30))
			}
		}
		exec.Command("podman", "rm", "-f", "-t", "2", name).Run()
		for _, ns := range []string{h1, h2, sw} {
			exec.Command("ip", "netns", "del", ns).Run() // takes the veths in it along
		}
	})
	for _, ns := range []string{sw, h1, h2} {
		run(t, "ip", "netns", "add", ns)
		run(t, "ip", "-n", ns, "link", "set", "lo", "up")
		// IPv4 only: no router solicitations or DAD on the ports.
		for _, k := range []string{"all", "default"} {
			run(t, "ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf."+k+".disable_ipv6=1")
		}
	}
	hosts := []*Host{{NS: h1, IP: "10.98.0.1", Port: "p1"}, {NS: h2, IP: "10.98.0.2", Port: "p2"}}
	for _, h := range hosts {
		veth := "gi" + id + h.Port
		run(t, "ip", "link", "add", veth, "type", "veth", "peer", "name", h.Port, "netns", sw)
		run(t, "ip", "link", "set", veth, "netns", h.NS)
		run(t, "ip", "-n", h.NS, "link", "set", veth, "name", "eth0")
		run(t, "ip", "-n", h.NS, "addr", "add", h.IP+"/24", "dev", "eth0")
		run(t, "ip", "-n", h.NS, "link", "set", "eth0", "up")
		run(t, "ip", "-n", sw, "link", "set", h.Port, "up")
		// Offloads off on the hosts' ends only, as the Kubernetes example
		// can (the image has no ethtool): the hosts fill in their own
		// checksums, and the kernel turns GSO off on a veth whose peer
		// carries an XDP program.
		run(t, "ip", "netns", "exec", h.NS, "ethtool", "-K", "eth0", "tx", "off", "tso", "off", "gso", "off", "gro", "off")
	}
	cfg := filepath.Join(dir, "cfg")
	if err := os.Mkdir(cfg, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := "ports:\n  - {name: p1, interface: p1}\n  - {name: p2, interface: p2}\nworkers: 1\nmetrics: 0.0.0.0:9100\n"
	if err := os.WriteFile(filepath.Join(cfg, "gswitchd.yaml"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}

	args := []string{"run", "-d", "--name", name, "--network", "ns:/run/netns/" + sw,
		"--cap-drop", "all", "--cap-add", imageCaps, "--security-opt", "seccomp=" + seccomp,
		"-v", cfg + ":/etc/gswitch:ro"}
	args = append(args, podmanMachineArgs(t)...)
	args = append(args, imageTag)
	start = time.Now()
	run(t, "podman", args...)
	// Up when its metrics answer (in the switch's namespace).
	var m map[string]float64
	for {
		var err error
		if m, err = nsMetrics(sw); err == nil {
			break
		}
		if st := strings.TrimSpace(runOut("podman", "inspect", "-f", "{{.State.Status}}", name)); st != "running" || time.Since(start) > 20*time.Second {
			t.Fatalf("the container is %s and its metrics do not answer after %.1f s: %v", st, time.Since(start).Seconds(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("container up, metrics answering, in %.1f s", time.Since(start).Seconds())

	// gswitchd runs with exactly the capabilities listed.
	pid := strings.TrimSpace(runOut("podman", "inspect", "-f", "{{.State.Pid}}", name))
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			eff, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil || eff != imageCapMask {
				t.Errorf("gswitchd's effective capabilities are %s, want %x (%s)", strings.TrimSpace(v), uint64(imageCapMask), imageCaps)
			}
		}
	}
	// The image's gswitchctl talks to it over its control socket.
	if out, err := exec.Command("podman", "exec", name, "gswitchctl", "health").CombinedOutput(); err != nil {
		t.Errorf("gswitchctl health in the container: %v\n%s", err, out)
	}

	if out, err := hosts[0].Exec(t, 10*time.Second, "ping", "-c", "3", "-i", "0.2", "-W", "2", hosts[1].IP); err != nil {
		t.Fatalf("ping through the containerised gswitchd: %v\n%s", err, out)
	} else {
		t.Logf("ping h1 -> h2: %s", pingSummary(out))
	}
	hosts[1].StartIperfServer(t, 5201)
	tcp := hosts[0].Iperf(t, hosts[1], 5201, 3)
	t.Logf("TCP h1->h2: %.2f Gbit/s, %d retransmits", tcp.End.SumReceived.BitsPerSecond/1e9, tcp.End.SumSent.Retransmits)
	if tcp.End.SumReceived.BitsPerSecond < 200e6 {
		t.Errorf("TCP goodput %.0f Mbit/s: far below what the switch forwards here", tcp.End.SumReceived.BitsPerSecond/1e6)
	}
	rev := hosts[0].Iperf(t, hosts[1], 5201, 3, "-R")
	t.Logf("TCP h2->h1: %.2f Gbit/s, %d retransmits", rev.End.SumReceived.BitsPerSecond/1e9, rev.End.SumSent.Retransmits)
	if rev.End.SumReceived.BitsPerSecond < 200e6 {
		t.Errorf("reverse TCP goodput %.0f Mbit/s", rev.End.SumReceived.BitsPerSecond/1e6)
	}
	if m, err = nsMetrics(sw); err != nil {
		t.Fatal(err)
	}
	rx, tx := m[portMetric("gswitch_port_rx_packets_total", "p1")], m[portMetric("gswitch_port_tx_packets_total", "p2")]
	t.Logf("metrics: p1 received %.0f frames, p2 sent %.0f", rx, tx)
	if rx < 10000 || tx < 10000 {
		t.Errorf("p1 rx %v, p2 tx %v frames: the traffic did not go through the switch", rx, tx)
	}

	// podman stop sends SIGTERM: gswitchd detaches its XDP programs.
	run(t, "podman", "stop", "-t", "10", name)
	for _, p := range []string{"p1", "p2"} {
		if out := run(t, "ip", "-n", sw, "link", "show", "dev", p); strings.Contains(out, "prog/xdp") {
			t.Errorf("%s still carries an XDP program after the container stopped:\n%s", p, out)
		}
	}
	if code := strings.TrimSpace(runOut("podman", "inspect", "-f", "{{.State.ExitCode}}", name)); code != "0" {
		t.Errorf("gswitchd exited with status %s on SIGTERM", code)
	}
}

// podmanMachineArgs are the flags this machine needs beyond the run line
// of deploy/container/README.md, each logged with the reason:
//   - --runtime runc where runc is installed: crun refuses a cgroup v1
//     hierarchy whose cgroup v2 mount has controllers (a hybrid), as some
//     virtual machines have.
//   - --ulimit nofile and nproc when this root lacks CAP_SYS_RESOURCE (a
//     sandbox): rootful podman raises both limits to its defaults in the
//     container, which needs that capability; the values given are ones the
//     runtime may set. A root container's processes are not counted
//     against nproc, so its value changes nothing for gswitchd.
func podmanMachineArgs(t *testing.T) []string {
	var args []string
	if _, err := exec.LookPath("runc"); err == nil {
		args = append(args, "--runtime", "runc")
		t.Log("podman --runtime runc (crun refuses hybrid cgroup hierarchies)")
	}
	if !hasCap(unix.CAP_SYS_RESOURCE) {
		var nofile unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--ulimit", fmt.Sprintf("nofile=%d:%d", nofile.Max, nofile.Max), "--ulimit", "nproc=4096:4096")
		t.Logf("this root has no CAP_SYS_RESOURCE: podman --ulimit nofile=%d:%d --ulimit nproc=4096:4096 (podman's defaults cannot be set)", nofile.Max, nofile.Max)
	}
	return args
}

// hasCap reports whether this process holds capability c (effective).
func hasCap(c int) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			eff, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && eff&(1<<c) != 0
		}
	}
	return false
}

// nsMetrics reads the metrics of a gswitchd listening on :9100 in network
// namespace ns, as Scrape keys them for the port counters.
func nsMetrics(ns string) (map[string]float64, error) {
	out, err := exec.Command("ip", "netns", "exec", ns, "curl", "-sf", "--max-time", "2", "http://127.0.0.1:9100/metrics").Output()
	if err != nil {
		return nil, fmt.Errorf("curl in %s: %v", ns, err)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || l[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		if v, err := strconv.ParseFloat(l[i+1:], 64); err == nil {
			m[l[:i]] = v
		}
	}
	return m, sc.Err()
}

// runOut runs a command and returns its output, whatever its status.
func runOut(name string, args ...string) string {
	out, _ := exec.Command(name, args...).CombinedOutput()
	return string(out)
}

// imageLines is what scripts/image.sh said of its work (built, up to date, wrote).
func imageLines(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "image.sh: ") {
			keep = append(keep, strings.TrimPrefix(l, "image.sh: "))
		}
	}
	return strings.Join(keep, "; ")
}

// pingSummary is ping's loss and RTT lines.
func pingSummary(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "packet loss") || strings.HasPrefix(l, "rtt") {
			keep = append(keep, strings.TrimSpace(l))
		}
	}
	return strings.Join(keep, "; ")
}
