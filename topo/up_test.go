package topo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/gswitch/gswitch/control"
)

// gswitchdBin is built by TestMain when the tests run as root.
var gswitchdBin string

func TestMain(m *testing.M) {
	code := func() int {
		if os.Geteuid() != 0 {
			return m.Run()
		}
		dir, err := os.MkdirTemp("", "gswitch-topo-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		gswitchdBin = filepath.Join(dir, "gswitchd")
		if out, err := exec.Command("go", "build", "-o", gswitchdBin, "github.com/gswitch/gswitch/cmd/gswitchd").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building gswitchd: %v\n%s", err, out)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// requireRoot skips tests that make namespaces, veths and gswitchd processes.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces, veths and gswitchd processes")
	}
	for _, tool := range []string{"ethtool", "nsenter", "ping"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not installed (apt-get install ethtool util-linux iputils-ping)", tool)
		}
	}
}

// lineTopology is an l2 line of three switches, one host on each, with a
// shaped link and no delays or roles: today's L2 gswitchd runs it. Its name
// and metrics ports are random, so tests do not meet each other.
func lineTopology(t *testing.T) *Topology {
	t.Helper()
	b := make([]byte, 3)
	rand.Read(b)
	name := "t" + hex.EncodeToString(b)[:5]
	n, _ := rand.Int(rand.Reader, big.NewInt(20000))
	src := fmt.Sprintf(`
name: %s
mode: l2
metrics_base: %d
defaults:
  switch: {workers: 1, frames: 4096}
switches: {s1: {}, s2: {}, s3: {}}
hosts:
  h1: {addr: 10.77.0.1/24}
  h2: {addr: 10.77.0.2/24, cc: reno}
  h3: {addr: 10.77.0.3/24}
links:
  - {a: h1, b: s1}
  - {a: s1, b: s2, rate: 200Mbit}
  - {a: s2, b: s3}
  - {a: h2, b: s2}
  - {a: h3, b: s3}
`, name, 20000+n.Int64())
	tp, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func testOptions(t *testing.T) UpOptions {
	return UpOptions{Gswitchd: gswitchdBin, StateDir: t.TempDir(), Wait: 10 * time.Second}
}

// cleanup takes the topology down when the test ends, also when it fails,
// and then kills by PID any gswitchd still running one of its configs.
func cleanup(t *testing.T, tp *Topology, o UpOptions) {
	t.Cleanup(func() {
		if err := Down(tp, o); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		dir := filepath.Join(o.StateDir, tp.Name) + "/"
		for _, pid := range pids() {
			if a := procCmdline(pid); len(a) == 3 && a[0] == o.Gswitchd && strings.HasPrefix(a[2], dir) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		// The switches' control sockets, which a killed gswitchd leaves
		// behind (gswitchctl topo down removes them the same way): only
		// sockets nobody answers on go.
		if p, err := tp.Plan(); err == nil {
			for _, s := range p.Switches {
				if _, err := control.RemoveStale(SocketPath(tp.Name, s.Name)); err != nil {
					t.Errorf("cleanup: %v", err)
				}
			}
		}
	})
}

// assertGone checks that nothing of the topology is left: namespaces,
// interfaces, gswitchd processes, the state directory.
func assertGone(t *testing.T, tp *Topology, o UpOptions, pids []int) {
	t.Helper()
	p, err := tp.Plan()
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range p.Namespaces {
		if _, err := os.Stat(nsPath(ns)); err == nil {
			t.Errorf("namespace %s is left", ns)
		}
	}
	for _, s := range p.Switches {
		for _, port := range s.Ports {
			if _, err := netlink.LinkByName(port.Interface); err == nil {
				t.Errorf("interface %s is left", port.Interface)
			}
		}
	}
	for _, pid := range pids {
		if procAlive(pid) {
			t.Errorf("process %d (%v) is left", pid, procCmdline(pid))
		}
	}
	configs := map[string]bool{}
	for _, s := range p.Switches {
		configs[filepath.Join(o.StateDir, tp.Name, s.Name+".yaml")] = true
	}
	if left := procsRunningConfigs(configs); len(left) > 0 {
		t.Errorf("gswitchd processes %v are left", left)
	}
	if _, err := os.Stat(filepath.Join(o.StateDir, tp.Name)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state directory %s is left (%v)", filepath.Join(o.StateDir, tp.Name), err)
	}
}

func ping(t *testing.T, r *Running, from, to string) {
	t.Helper()
	dst := r.Host(to).Addr.Addr().String()
	var out []byte
	var err error
	for try := 0; try < 3; try++ { // the first may wait for ARP through three learning switches
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		out, err = r.Exec(ctx, from, "ping", "-c", "1", "-W", "2", dst).CombinedOutput()
		cancel()
		if err == nil {
			return
		}
	}
	t.Errorf("ping %s -> %s (%s): %v\n%s", from, to, dst, err, out)
}

func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestUpDown brings an l2 line of three switches up, pings between all
// hosts through the switches, checks the hosts' set-up and targets.json,
// refuses a second Up, takes it down and finds nothing left.
func TestUpDown(t *testing.T) {
	requireRoot(t)
	tp := lineTopology(t)
	o := testOptions(t)
	cleanup(t, tp, o)
	start := time.Now()
	r, err := Up(context.Background(), tp, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("up in %s", time.Since(start).Round(time.Millisecond))
	p, _ := tp.Plan()
	var pids []int
	for i, s := range r.Switches {
		if a := procCmdline(s.PID); len(a) != 3 || a[0] != gswitchdBin || a[2] != s.Config || s.Metrics != p.Switches[i].Metrics {
			t.Errorf("switch %s: pid %d runs %v, metrics %s", s.Name, s.PID, a, s.Metrics)
		}
		pids = append(pids, s.PID)
	}
	hosts := []string{"h1", "h2", "h3"}
	for i, a := range hosts {
		for _, b := range hosts[i+1:] {
			ping(t, r, a, b)
		}
	}
	// The pings crossed the switches: s2 received on its ports toward s1 and s3.
	m := scrape(t, r.Switches[1].Metrics)
	for _, port := range []string{"s1", "s3", "h2"} {
		if !strings.Contains(m, fmt.Sprintf(`gswitch_port_rx_packets_total{port="%s"}`, port)) || strings.Contains(m, fmt.Sprintf(`gswitch_port_rx_packets_total{port="%s"} 0`+"\n", port)) {
			t.Errorf("s2 received nothing on port %s", port)
		}
	}
	if !strings.Contains(m, `gswitch_port_rate_bytes_per_second{port="s1"} 2.5e+07`) {
		t.Errorf("s2's port to s1 is not shaped to 200Mbit")
	}
	// Hosts: planned MAC and address, no default route, offloads off, cc, IPv6 off.
	for _, hp := range p.Hosts {
		nh, err := nsHandle(hp.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		l, err := nh.LinkByName("eth0")
		if err != nil {
			t.Fatal(err)
		}
		if l.Attrs().HardwareAddr.String() != hp.MAC.String() || l.Attrs().MTU != 1500 {
			t.Errorf("%s eth0: MAC %s mtu %d, want %s 1500", hp.Name, l.Attrs().HardwareAddr, l.Attrs().MTU, hp.MAC)
		}
		as, _ := nh.AddrList(l, netlink.FAMILY_V4)
		if len(as) != 1 || as[0].IPNet.String() != hp.Addr.String() {
			t.Errorf("%s addresses %v, want %s", hp.Name, as, hp.Addr)
		}
		routes, _ := nh.RouteList(nil, netlink.FAMILY_V4)
		for _, rt := range routes {
			if rt.Dst == nil || rt.Dst.IP.IsUnspecified() {
				t.Errorf("%s has a default route: %v", hp.Name, rt)
			}
		}
		nh.Close()
		out, err := r.Exec(context.Background(), hp.Name, "ethtool", "-k", "eth0").CombinedOutput()
		if err != nil {
			t.Fatalf("ethtool in %s: %v %s", hp.Name, err, out)
		}
		for _, f := range []string{"tx-checksumming: off", "tcp-segmentation-offload: off", "generic-segmentation-offload: off", "generic-receive-offload: off"} {
			if !strings.Contains(string(out), f) {
				t.Errorf("%s eth0: not %q", hp.Name, f)
			}
		}
		out, _ = r.Exec(context.Background(), hp.Name, "cat", "/proc/sys/net/ipv4/tcp_congestion_control", "/proc/sys/net/ipv6/conf/all/disable_ipv6").Output()
		if f := strings.Fields(string(out)); len(f) != 2 || f[1] != "1" || hp.Name == "h2" && f[0] != "reno" {
			t.Errorf("%s: tcp_congestion_control, disable_ipv6 = %q", hp.Name, out)
		}
	}
	// Switch ports: planned MAC, offloads off, IPv6 off.
	port := p.Switches[0].Ports[1]
	if l, err := netlink.LinkByName(port.Interface); err != nil || l.Attrs().HardwareAddr.String() != port.MAC.String() || l.Attrs().Alias != alias(tp.Name) {
		t.Errorf("%s: %v %v", port.Interface, l, err)
	}
	if b, _ := os.ReadFile("/proc/sys/net/ipv6/conf/" + port.Interface + "/disable_ipv6"); strings.TrimSpace(string(b)) != "1" {
		t.Errorf("%s: disable_ipv6 %q", port.Interface, b)
	}
	if out, _ := exec.Command("ethtool", "-k", port.Interface).Output(); !bytes.Contains(out, []byte("tx-checksumming: off")) {
		t.Errorf("%s: tx checksum offload on", port.Interface)
	}
	// targets.json: the plan's file_sd list, every target serving metrics.
	b, err := os.ReadFile(r.Targets)
	if err != nil {
		t.Fatal(err)
	}
	var targets []Target
	if err := json.Unmarshal(b, &targets); err != nil || len(targets) != 3 || !bytes.Equal(b, p.TargetsJSON()) {
		t.Fatalf("targets.json %s: %v", b, err)
	}
	for i, tg := range targets {
		if tg.Labels["switch"] != r.Switches[i].Name || tg.Labels["topology"] != tp.Name || len(tg.Targets) != 1 {
			t.Errorf("target %v", tg)
		}
		if !strings.Contains(scrape(t, tg.Targets[0]), "gswitch_port_rx_packets_total") {
			t.Errorf("%s serves no gswitch metrics", tg.Targets[0])
		}
	}
	// Attach finds the same switches; a second Up is refused and leaves the first alone.
	a, err := Attach(tp, o)
	if err != nil || len(a.Switches) != 3 || a.Switches[2].PID != r.Switches[2].PID {
		t.Fatalf("Attach: %+v %v", a, err)
	}
	if _, err := Up(context.Background(), tp, o); err == nil || !strings.Contains(err.Error(), "state file") || !strings.Contains(err.Error(), "left over from this topology") {
		t.Fatalf("second Up: %v", err)
	}
	ping(t, r, "h1", "h3")
	if err := r.Exec(context.Background(), "h9", "true").Run(); err == nil || !strings.Contains(err.Error(), `no host "h9"`) {
		t.Errorf("Exec in an unknown host: %v", err)
	}
	start = time.Now()
	if err := r.Down(); err != nil {
		t.Fatal(err)
	}
	t.Logf("down in %s", time.Since(start).Round(time.Millisecond))
	assertGone(t, tp, o, pids)
	if err := Down(tp, o); err != nil {
		t.Errorf("a second Down: %v", err)
	}
}

// TestUpRefusesClash: a namespace, interface or metrics port of the
// topology that exists already makes Up refuse with an error naming it;
// the thing stays, and nothing is made.
func TestUpRefusesClash(t *testing.T) {
	requireRoot(t)
	t.Run("namespace", func(t *testing.T) {
		tp := lineTopology(t)
		o := testOptions(t)
		cleanup(t, tp, o)
		ns := Namespace(tp.Name, "h2")
		if err := newNamespace(ns, func() error { return nil }, func() error { return nil }); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { netns.DeleteNamed(ns) })
		_, err := Up(context.Background(), tp, o)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("network namespace %s (hosts.h2) exists, made by something else", ns)) || !strings.Contains(err.Error(), "nothing was changed") {
			t.Fatalf("Up: %v", err)
		}
		if _, err := os.Stat(nsPath(ns)); err != nil {
			t.Errorf("the existing namespace is gone: %v", err)
		}
		if err := Down(tp, o); err != nil { // Down leaves a namespace it did not make
			t.Fatal(err)
		}
		if _, err := os.Stat(nsPath(ns)); err != nil {
			t.Errorf("Down removed a namespace it did not make: %v", err)
		}
		netns.DeleteNamed(ns)
		assertGone(t, tp, o, nil)
	})
	t.Run("interface", func(t *testing.T) {
		tp := lineTopology(t)
		o := testOptions(t)
		cleanup(t, tp, o)
		name := PortInterface(tp.Name, 2, 1)
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: tp.Name + "-other"}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if l, err := netlink.LinkByName(name); err == nil {
				netlink.LinkDel(l)
			}
		})
		_, err := Up(context.Background(), tp, o)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("interface %s (switch s2 port s1) exists, made by something else", name)) {
			t.Fatalf("Up: %v", err)
		}
		if err := Down(tp, o); err != nil {
			t.Fatal(err)
		}
		if _, err := netlink.LinkByName(name); err != nil {
			t.Errorf("the existing interface is gone: %v", err)
		}
		for _, ns := range []string{Namespace(tp.Name, "h1"), Namespace(tp.Name, "h2")} {
			if _, err := os.Stat(nsPath(ns)); err == nil {
				t.Errorf("Up made %s although it refused", ns)
			}
		}
	})
	t.Run("metrics", func(t *testing.T) {
		tp := lineTopology(t)
		o := testOptions(t)
		cleanup(t, tp, o)
		addr := fmt.Sprintf("127.0.0.1:%d", tp.MetricsBase+3)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("port taken already: %v", err)
		}
		defer ln.Close()
		_, err = Up(context.Background(), tp, o)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("metrics address %s (switch s3) is in use", addr)) {
			t.Fatalf("Up: %v", err)
		}
		assertGone(t, tp, o, nil)
	})
}

// TestUpFailureCleansUp: when a step fails half-way, Up removes what it made.
func TestUpFailureCleansUp(t *testing.T) {
	requireRoot(t)
	t.Run("gswitchd fails to start", func(t *testing.T) {
		tp := lineTopology(t)
		o := testOptions(t)
		o.Gswitchd = filepath.Join(t.TempDir(), "gswitchd")
		if err := os.WriteFile(o.Gswitchd, []byte("#!/bin/sh\necho \"bogus gswitchd: $*\"\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		cleanup(t, tp, o)
		_, err := Up(context.Background(), tp, o)
		if err == nil || !strings.Contains(err.Error(), "gswitchd exited during start-up") || !strings.Contains(err.Error(), "bogus gswitchd: -config") {
			t.Fatalf("Up: %v", err)
		}
		assertGone(t, tp, o, nil)
	})
	t.Run("no gswitchd binary", func(t *testing.T) {
		tp := lineTopology(t)
		o := testOptions(t)
		o.Gswitchd = "/nonexistent/gswitchd"
		cleanup(t, tp, o)
		if _, err := Up(context.Background(), tp, o); err == nil || !strings.Contains(err.Error(), "gswitchd binary") {
			t.Fatalf("Up: %v", err)
		}
		assertGone(t, tp, o, nil)
	})
	for _, step := range []string{"namespaces", "veths", "hosts", "switches"} {
		t.Run("failure after "+step, func(t *testing.T) {
			tp := lineTopology(t)
			o := testOptions(t)
			cleanup(t, tp, o)
			var pids []int
			upHook = func(s string) error {
				if s != step {
					return nil
				}
				st, err := readState(filepath.Join(o.StateDir, tp.Name))
				if err != nil {
					return err
				}
				for _, pr := range st.Processes {
					pids = append(pids, pr.PID)
				}
				return errors.New("injected failure after " + s)
			}
			defer func() { upHook = nil }()
			_, err := Up(context.Background(), tp, o)
			if err == nil || !strings.Contains(err.Error(), "injected failure after "+step) {
				t.Fatalf("Up: %v", err)
			}
			if step == "switches" && len(pids) != 3 {
				t.Errorf("%d gswitchd recorded when the failure came, want 3", len(pids))
			}
			assertGone(t, tp, o, pids)
		})
	}
	t.Run("context cancelled", func(t *testing.T) {
		tp := lineTopology(t)
		o := testOptions(t)
		cleanup(t, tp, o)
		ctx, cancel := context.WithCancel(context.Background())
		upHook = func(s string) error {
			if s == "veths" {
				cancel()
			}
			return nil
		}
		defer func() { upHook = nil }()
		if _, err := Up(ctx, tp, o); !errors.Is(err, context.Canceled) {
			t.Fatalf("Up: %v", err)
		}
		assertGone(t, tp, o, nil)
	})
}

// TestDownAfterCrash: Down removes everything after the gswitchd processes
// were killed and the Running was lost, and also when the state file is
// gone (from the names the file implies and the marks on the links).
func TestDownAfterCrash(t *testing.T) {
	requireRoot(t)
	t.Run("gswitchd killed", func(t *testing.T) {
		tp := lineTopology(t)
		o := testOptions(t)
		cleanup(t, tp, o)
		r, err := Up(context.Background(), tp, o)
		if err != nil {
			t.Fatal(err)
		}
		var pids []int
		for _, s := range r.Switches {
			pids = append(pids, s.PID)
			syscall.Kill(s.PID, syscall.SIGKILL)
		}
		// A process left in a host's namespace must not keep it alive.
		sleeper := r.Exec(context.Background(), "h1", "sleep", "60")
		if err := sleeper.Start(); err != nil {
			t.Fatal(err)
		}
		go sleeper.Wait()
		pids = append(pids, sleeper.Process.Pid)
		for i := 0; i < 100; i++ { // until nsenter has entered the namespace and exec'd sleep
			if a := procCmdline(sleeper.Process.Pid); len(a) > 0 && a[0] == "sleep" {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		r = nil
		if err := Down(tp, o); err != nil {
			t.Fatal(err)
		}
		assertGone(t, tp, o, pids)
	})
	t.Run("state file lost", func(t *testing.T) {
		tp := lineTopology(t)
		o := testOptions(t)
		cleanup(t, tp, o)
		r, err := Up(context.Background(), tp, o)
		if err != nil {
			t.Fatal(err)
		}
		var pids []int
		for _, s := range r.Switches {
			pids = append(pids, s.PID)
		}
		syscall.Kill(pids[0], syscall.SIGKILL)
		if err := os.Remove(statePath(r.Dir)); err != nil {
			t.Fatal(err)
		}
		if err := Down(tp, o); err != nil {
			t.Fatal(err)
		}
		assertGone(t, tp, o, pids)
	})
}

// TestL3HostPlumbing brings an l3 topology up to the point before gswitchd
// starts (today's gswitchd has no L3 keys) and checks what the hosts and
// switch ports got: address, routes to the other subnets via the gateway,
// no default route, a permanent neighbour entry for the gateway with the
// switch port's MAC.
func TestL3HostPlumbing(t *testing.T) {
	requireRoot(t)
	b := make([]byte, 3)
	rand.Read(b)
	name := "l" + hex.EncodeToString(b)[:5]
	tp, err := Parse([]byte(fmt.Sprintf(`
name: %s
metrics_base: %d
switches: {sw1: {}, sw2: {}}
hosts:
  h1: {addr: 10.1.1.1/24}
  h2: {addr: 10.1.2.1/24, gateway: 10.1.2.1, mtu: 1400}
links: [{a: h1, b: sw1}, {a: sw1, b: sw2, mtu: 3000}, {a: h2, b: sw2, mtu: 3000}]
`, name, 41000+int(b[0])*20)))
	if err == nil || !strings.Contains(err.Error(), "hosts.h2.gateway: 10.1.2.1 is the address of hosts.h2") {
		t.Fatalf("gateway = own address: %v", err)
	}
	tp, err = Parse([]byte(fmt.Sprintf(`
name: %s
metrics_base: %d
switches: {sw1: {}, sw2: {}}
hosts:
  h1: {addr: 10.1.1.1/24}
  h2: {addr: 10.1.2.1/24, gateway: 10.1.2.100, mtu: 1400}
links: [{a: h1, b: sw1}, {a: sw1, b: sw2, mtu: 3000}, {a: h2, b: sw2, mtu: 3000}]
`, name, 41000+int(b[0])*20)))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Plan()
	o := testOptions(t)
	cleanup(t, tp, o)
	checked := false
	upHook = func(step string) error {
		if step != "hosts" {
			return nil
		}
		checked = true
		for _, hp := range p.Hosts {
			nh, err := nsHandle(hp.Namespace)
			if err != nil {
				return err
			}
			defer nh.Close()
			l, err := nh.LinkByName("eth0")
			if err != nil {
				return err
			}
			if l.Attrs().MTU != hp.MTU || l.Attrs().OperState == netlink.OperDown {
				t.Errorf("%s eth0: mtu %d state %s, want %d and up", hp.Name, l.Attrs().MTU, l.Attrs().OperState, hp.MTU)
			}
			routes, _ := nh.RouteList(l, netlink.FAMILY_V4)
			var got []string
			for _, rt := range routes {
				if rt.Gw != nil {
					got = append(got, rt.Dst.String()+" via "+rt.Gw.String())
				} else if rt.Dst == nil {
					t.Errorf("%s has a default route", hp.Name)
				}
			}
			want := []string{hp.Routes[0].Prefix.String() + " via " + hp.Gateway.String()}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("%s routes %v, want %v", hp.Name, got, want)
			}
			neighs, _ := nh.NeighList(l.Attrs().Index, netlink.FAMILY_V4)
			found := false
			for _, n := range neighs {
				if n.IP.String() == hp.Gateway.String() && n.HardwareAddr.String() == hp.GatewayMAC.String() && n.State == netlink.NUD_PERMANENT {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: no permanent neighbour %s %s in %v", hp.Name, hp.Gateway, hp.GatewayMAC, neighs)
			}
		}
		port := p.Switches[1].Ports[0] // sw2's end of the 3000-byte fabric link
		if l, err := netlink.LinkByName(port.Interface); err != nil || l.Attrs().MTU != 3000 || l.Attrs().HardwareAddr.String() != port.MAC.String() {
			t.Errorf("%s: %v %v", port.Interface, l, err)
		}
		return errors.New("stop before gswitchd")
	}
	defer func() { upHook = nil }()
	if _, err := Up(context.Background(), tp, o); err == nil || !strings.Contains(err.Error(), "stop before gswitchd") {
		t.Fatalf("Up: %v", err)
	}
	if !checked {
		t.Fatal("Up did not reach the hosts step")
	}
	assertGone(t, tp, o, nil)
}

// TestCCMustBeAllowed: a host's cc outside the root namespace's
// tcp_allowed_congestion_control is refused before anything is made, naming
// the field and the sysctl that would allow it.
func TestCCMustBeAllowed(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
	if err != nil {
		t.Skipf("no tcp_allowed_congestion_control: %v", err)
	}
	allowed := strings.Fields(string(b))
	_, p := mustPlan(t, strings.Replace(small, "h3: {addr: 10.1.2.1/24}", "h3: {addr: 10.1.2.1/24, cc: nosuchcc}", 1))
	err = checkCC(p)
	if err == nil || !strings.Contains(err.Error(), "hosts.h3.cc: nosuchcc is not in net.ipv4.tcp_allowed_congestion_control") || !strings.Contains(err.Error(), "sysctl -w") {
		t.Errorf("got %v", err)
	}
	if len(allowed) > 0 {
		_, p = mustPlan(t, strings.Replace(small, "h3: {addr: 10.1.2.1/24}", "h3: {addr: 10.1.2.1/24, cc: "+allowed[0]+"}", 1))
		if err := checkCC(p); err != nil {
			t.Errorf("cc %s (allowed): %v", allowed[0], err)
		}
	}
}

// TestUpNoSwitches: with NoSwitches, Up makes the hosts and links and
// writes the configs but starts no gswitchd (it needs no binary); the
// caller's own gswitchd on those configs forwards, and Down stops it with
// the rest.
func TestUpNoSwitches(t *testing.T) {
	requireRoot(t)
	tp := lineTopology(t)
	o := testOptions(t)
	o.Gswitchd = "/nonexistent/gswitchd"
	o.NoSwitches = true
	cleanup(t, tp, o)
	r, err := Up(context.Background(), tp, o)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Plan()
	if r.Targets != "" {
		t.Errorf("targets %q without switches", r.Targets)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, "targets.json")); err == nil {
		t.Error("targets.json written without switches")
	}
	var pids []int
	for i, s := range r.Switches {
		if s.PID != 0 {
			t.Errorf("switch %s has pid %d", s.Name, s.PID)
		}
		if b, err := os.ReadFile(s.Config); err != nil || !bytes.Equal(b, p.Switches[i].Config) {
			t.Errorf("switch %s config %s: %v", s.Name, s.Config, err)
		}
		if left := procsRunningConfigs(map[string]bool{s.Config: true}); len(left) > 0 {
			t.Errorf("a gswitchd runs %s: %v", s.Config, left)
		}
		cmd := exec.Command(gswitchdBin, "-config", s.Config)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go cmd.Wait()
		pids = append(pids, cmd.Process.Pid)
	}
	for _, s := range r.Switches {
		deadline := time.Now().Add(10 * time.Second)
		for {
			resp, err := http.Get("http://" + s.Metrics + "/metrics")
			if err == nil {
				resp.Body.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("our gswitchd for %s: %v", s.Name, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	ping(t, r, "h1", "h3")
	if att, err := Attach(tp, o); err != nil || att.Targets != "" || len(att.Hosts) != 3 {
		t.Errorf("attach: %v %+v", err, att)
	}
	if err := r.Down(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, tp, o, pids)
}
