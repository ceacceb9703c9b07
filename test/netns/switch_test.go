package netns

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func portMetric(name, port string) string { return fmt.Sprintf("%s{port=%q}", name, port) }

func TestPingAndIperf(t *testing.T) {
	tp := NewTopo(t, 2)
	sw := tp.StartSwitch("", nil)
	h1, h2 := tp.Hosts[0], tp.Hosts[1]
	if out, err := h1.Exec(t, 10*time.Second, "ping", "-c", "3", "-i", "0.2", "-W", "2", h2.IP); err != nil {
		t.Fatalf("ping through gswitchd: %v\n%s", err, out)
	}
	h2.StartIperfServer(t, 5201)

	tcp := h1.Iperf(t, h2, 5201, 3)
	t.Logf("TCP h1->h2: %.2f Gbit/s, %d retransmits", tcp.End.SumReceived.BitsPerSecond/1e9, tcp.End.SumSent.Retransmits)
	if tcp.End.SumReceived.BitsPerSecond < 200e6 {
		t.Errorf("TCP goodput %.0f Mbit/s: far below what the switch forwards here", tcp.End.SumReceived.BitsPerSecond/1e6)
	}
	rev := h1.Iperf(t, h2, 5201, 3, "-R")
	t.Logf("TCP h2->h1: %.2f Gbit/s", rev.End.SumReceived.BitsPerSecond/1e9)
	if rev.End.SumReceived.BitsPerSecond < 200e6 {
		t.Errorf("reverse TCP goodput %.0f Mbit/s", rev.End.SumReceived.BitsPerSecond/1e6)
	}
	udp := h1.Iperf(t, h2, 5201, 3, "-u", "-b", "100M", "-l", "1400")
	t.Logf("UDP h1->h2 at 100 Mbit/s: %d datagrams, %.2f%% lost", udp.End.Sum.Packets, udp.End.Sum.LostPercent)
	if udp.End.Sum.Packets < 20000 || udp.End.Sum.LostPercent > 1 {
		t.Errorf("UDP: %d datagrams, %.2f%% lost", udp.End.Sum.Packets, udp.End.Sum.LostPercent)
	}
	m := sw.Scrape()
	if rx := m[portMetric("gswitch_port_rx_packets_total", "p1")]; rx < 20000 {
		t.Errorf("p1 rx packets %v", rx)
	}
	if tx := m[portMetric("gswitch_port_tx_packets_total", "p2")]; tx < 20000 {
		t.Errorf("p2 tx packets %v", tx)
	}
	sw.CheckFramesBack()
	sw.Stop()
	// SIGTERM detached the programs: the interfaces carry no XDP program any more.
	for _, h := range tp.Hosts {
		if out := run(t, "ip", "link", "show", "dev", h.Port); strings.Contains(out, "prog/xdp") {
			t.Errorf("%s still has an XDP program after SIGTERM:\n%s", h.Port, out)
		}
	}
}

func TestLearningStopsFlooding(t *testing.T) {
	tp := NewTopo(t, 3)
	sw := tp.StartSwitch("", nil)
	h1, h2 := tp.Hosts[0], tp.Hosts[1]
	// The first ping floods (ARP broadcast, unknown unicast); the replies teach the switch both hosts.
	if out, err := h1.Exec(t, 10*time.Second, "ping", "-c", "2", "-i", "0.2", h2.IP); err != nil {
		t.Fatalf("ping: %v\n%s", err, out)
	}
	before := sw.Scrape()
	if before[portMetric("gswitch_port_flooded_total", "p1")] == 0 {
		t.Fatal("the first frames from h1 were not flooded")
	}
	if before[portMetric("gswitch_port_tx_packets_total", "p3")] == 0 {
		t.Fatal("h3's port got none of the flooded frames")
	}
	if before["gswitch_mac_table_entries"] < 2 {
		t.Fatalf("MAC table has %v entries", before["gswitch_mac_table_entries"])
	}
	h2.StartIperfServer(t, 5202)
	r := h1.Iperf(t, h2, 5202, 2, "-u", "-b", "20M", "-l", "1000")
	after := sw.Scrape()
	sent := after[portMetric("gswitch_port_tx_packets_total", "p2")] - before[portMetric("gswitch_port_tx_packets_total", "p2")]
	leaked := after[portMetric("gswitch_port_tx_packets_total", "p3")] - before[portMetric("gswitch_port_tx_packets_total", "p3")]
	flooded := after[portMetric("gswitch_port_flooded_total", "p1")] - before[portMetric("gswitch_port_flooded_total", "p1")]
	t.Logf("unicast after learning: %v frames to h2, %v to h3, %v flooded (iperf3: %d datagrams)", sent, leaked, flooded, r.End.Sum.Packets)
	if sent < 4000 {
		t.Fatalf("only %v frames reached h2's port", sent)
	}
	// A few broadcast frames (ARP refresh) may still flood; unicast must not.
	if leaked > 5 || flooded > 5 {
		t.Fatalf("learnt unicast still flooded: %v frames to h3, %v floods", leaked, flooded)
	}
	sw.CheckFramesBack()
}

func TestShapedPort100Mbit(t *testing.T) {
	tp := NewTopo(t, 2)
	sw := tp.StartSwitch("", PortOpts{1: "rate: 100Mbit"})
	h1, h2 := tp.Hosts[0], tp.Hosts[1]
	h2.StartIperfServer(t, 5203)
	r := h1.Iperf(t, h2, 5203, 8)
	g := r.End.SumReceived.BitsPerSecond / 1e6
	t.Logf("TCP goodput through a 100 Mbit/s port: %.1f Mbit/s (%d retransmits)", g, r.End.SumSent.Retransmits)
	if g < 90 || g > 100 {
		t.Fatalf("goodput %.1f Mbit/s, want 90..100", g)
	}
	m := sw.Scrape()
	if m[portMetric("gswitch_port_rate_bytes_per_second", "p2")] != 100e6/8 {
		t.Fatalf("rate metric %v", m[portMetric("gswitch_port_rate_bytes_per_second", "p2")])
	}
	sw.CheckFramesBack()
}

func TestRestartAfterKill9(t *testing.T) {
	tp := NewTopo(t, 2)
	sw := tp.StartSwitch("", nil)
	h1, h2 := tp.Hosts[0], tp.Hosts[1]
	if out, err := h1.Exec(t, 10*time.Second, "ping", "-c", "2", "-i", "0.2", h2.IP); err != nil {
		t.Fatalf("ping: %v\n%s", err, out)
	}
	sw.Kill9()
	// A second gswitchd on the same ports starts and forwards.
	sw2 := &Switch{t: t, Metrics: sw.Metrics, cfgPath: sw.cfgPath}
	sw2.start()
	if out, err := h1.Exec(t, 10*time.Second, "ping", "-c", "3", "-i", "0.2", "-W", "2", h2.IP); err != nil {
		t.Fatalf("ping after kill -9 and restart: %v\n%s", err, out)
	}
	sw2.Stop()
}

func TestSecondInstanceRefused(t *testing.T) {
	tp := NewTopo(t, 2)
	sw := tp.StartSwitch("", nil)
	out, err := exec.Command("timeout", "10", gswitchdBin, "-config", sw.cfgPath, "-metrics", "off").CombinedOutput()
	if err == nil {
		t.Fatalf("a second gswitchd on the same ports started:\n%s", out)
	}
	if !strings.Contains(string(out), "another") {
		t.Errorf("error does not say another process holds the port:\n%s", out)
	}
	// The first one is untouched.
	if out, err := tp.Hosts[0].Exec(t, 10*time.Second, "ping", "-c", "2", "-i", "0.2", tp.Hosts[1].IP); err != nil {
		t.Fatalf("first instance broken by the second: %v\n%s", err, out)
	}
}

func TestMissingInterfaceIsAClearError(t *testing.T) {
	dir := t.TempDir()
	cfg := dir + "/bad.yaml"
	exec.Command("sh", "-c", "printf 'ports:\\n  - interface: gsnosuch0\\n' > "+cfg).Run()
	out, err := exec.Command(gswitchdBin, "-config", cfg).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "ports[0].interface: gsnosuch0") {
		t.Fatalf("err %v, output:\n%s", err, out)
	}
}

// TestTwoWorkers runs each port on its own worker, so every frame crosses
// between workers on a handoff ring and goes home on a return ring.
func TestTwoWorkers(t *testing.T) {
	tp := NewTopo(t, 2)
	sw := tp.StartSwitch("workers: 2", nil)
	h1, h2 := tp.Hosts[0], tp.Hosts[1]
	h2.StartIperfServer(t, 5204)
	r := h1.Iperf(t, h2, 5204, 2, "-u", "-b", "200M", "-l", "1400")
	t.Logf("UDP at 200 Mbit/s over two workers: %d datagrams, %.2f%% lost", r.End.Sum.Packets, r.End.Sum.LostPercent)
	if r.End.Sum.Packets < 30000 || r.End.Sum.LostPercent > 2 {
		t.Errorf("UDP: %d datagrams, %.2f%% lost", r.End.Sum.Packets, r.End.Sum.LostPercent)
	}
	tcp := h1.Iperf(t, h2, 5204, 2, "-R")
	if tcp.End.SumReceived.BitsPerSecond < 200e6 {
		t.Errorf("TCP over two workers: %.0f Mbit/s", tcp.End.SumReceived.BitsPerSecond/1e6)
	}
	if m := sw.Scrape(); m[`gswitch_worker_passes_total{worker="1"}`] == 0 {
		t.Fatal("worker 1 never ran")
	}
	sw.CheckFramesBack()
}

// TestReplacesStaleProgram leaves a netlink-attached XDP program on a port,
// as a crashed tool using the old attach API would, and checks that
// gswitchd replaces it, forwards, and leaves the port clean on exit.
func TestReplacesStaleProgram(t *testing.T) {
	tp := NewTopo(t, 2)
	run(t, "ip", "link", "set", "dev", tp.Hosts[0].Port, "xdp", "obj", "../../bpf/xdp_bpfel.o", "sec", "xdp")
	if out := run(t, "ip", "link", "show", "dev", tp.Hosts[0].Port); !strings.Contains(out, "prog/xdp") {
		t.Fatalf("could not plant a stale program:\n%s", out)
	}
	sw := tp.StartSwitch("", nil)
	if out, err := tp.Hosts[0].Exec(t, 10*time.Second, "ping", "-c", "3", "-i", "0.2", "-W", "2", tp.Hosts[1].IP); err != nil {
		t.Fatalf("ping with the stale program replaced: %v\n%s", err, out)
	}
	sw.Stop()
	if out := run(t, "ip", "link", "show", "dev", tp.Hosts[0].Port); strings.Contains(out, "prog/xdp") {
		t.Fatalf("a program is left after SIGTERM:\n%s", out)
	}
}

// TestJumboFrames: with two hosts' veths at MTU 9000, gswitchd carries
// 9000-byte frames as multi-buffer chains: a ping of 8972 bytes that may
// not be fragmented gets through both ways, TCP with 8948-byte segments
// runs both ways at a rate no switch that lost them could reach, and the
// ports count jumbo frames. A third host at MTU 1500 gets full-size frames,
// while jumbo frames for it are dropped at its port as too_long. Every UMEM
// frame and jumbo slot comes home. An MTU beyond what gswitchd carries is
// still a clear error.
func TestJumboFrames(t *testing.T) {
	tp := NewTopoMTU(t, 3, 9000)
	h1, h2, h3 := tp.Hosts[0], tp.Hosts[1], tp.Hosts[2]
	// Host 3's link stays at MTU 1500: jumbo frames for it are giants.
	run(t, "ip", "link", "set", h3.Port, "mtu", "1500")
	run(t, "ip", "-n", h3.NS, "link", "set", "eth0", "mtu", "1500")
	sw := tp.StartSwitch("", nil)
	if !strings.Contains(sw.log.String(), "multi-buffer chains") {
		t.Errorf("gswitchd did not say it uses multi-buffer frames:\n%s", sw.log.String())
	}
	for _, p := range [][2]*Host{{h1, h2}, {h2, h1}} {
		if out, err := p[0].Exec(t, 15*time.Second, "ping", "-c", "5", "-i", "0.2", "-W", "2", "-M", "do", "-s", "8972", p[1].IP); err != nil {
			t.Fatalf("8972-byte ping %s -> %s through gswitchd: %v\n%s", p[0].IP, p[1].IP, err, out)
		}
	}
	h2.StartIperfServer(t, 5201)
	for _, rev := range []bool{false, true} {
		var args []string
		if rev {
			args = []string{"-R"}
		}
		r := h1.Iperf(t, h2, 5201, 3, args...)
		t.Logf("TCP at MTU 9000 (reverse %v): %.2f Gbit/s, %d retransmits", rev, r.End.SumReceived.BitsPerSecond/1e9, r.End.SumSent.Retransmits)
		if r.End.SumReceived.BitsPerSecond < 200e6 {
			t.Errorf("TCP at MTU 9000 (reverse %v): %.0f Mbit/s", rev, r.End.SumReceived.BitsPerSecond/1e6)
		}
	}
	m := sw.Scrape()
	for _, p := range []string{"p1", "p2"} {
		pk, by := m[portMetric("gswitch_port_rx_packets_total", p)], m[portMetric("gswitch_port_rx_bytes_total", p)]
		if pk == 0 || by/pk < 4000 {
			t.Errorf("%s received %v frames, %v bytes: not jumbo frames", p, pk, by)
		}
		if d := m[`gswitch_drops_total{port="`+p+`",reason="too_long"}`]; d != 0 {
			t.Errorf("%s dropped %v frames as too long", p, d)
		}
	}
	// Toward the MTU 1500 port, full-size frames pass and jumbo frames are
	// dropped at its egress as too_long (the kernel would drop them unseen).
	if out, err := h1.Exec(t, 15*time.Second, "ping", "-c", "3", "-i", "0.2", "-W", "2", "-M", "do", "-s", "1472", h3.IP); err != nil {
		t.Fatalf("1472-byte ping to the MTU 1500 host: %v\n%s", err, out)
	}
	if out, err := h1.Exec(t, 15*time.Second, "ping", "-c", "3", "-i", "0.2", "-W", "1", "-M", "do", "-s", "8972", h3.IP); err == nil {
		t.Fatalf("an 8972-byte ping reached the MTU 1500 host:\n%s", out)
	}
	if d := sw.Scrape()[`gswitch_drops_total{port="p3",reason="too_long"}`]; d < 3 {
		t.Errorf("p3 counted %v too_long drops, want the 3 jumbo pings", d)
	}
	sw.CheckFramesBack()
	sw.Stop()

	// Beyond the largest frame gswitchd carries, the MTU is refused by name.
	if err := checkMTUError(t, 9500); err != nil {
		t.Fatal(err)
	}
}

// checkMTUError starts gswitchd on a veth of MTU mtu and expects it to
// refuse the port, naming the MTU and the command that fixes it.
func checkMTUError(t *testing.T, mtu int) error {
	a, b := "gsj"+randID()[:5]+"a", "gsj"+randID()[:5]+"b"
	if out, err := exec.Command("ip", "link", "add", a, "mtu", fmt.Sprint(mtu), "type", "veth", "peer", "name", b, "mtu", fmt.Sprint(mtu)).CombinedOutput(); err != nil {
		return fmt.Errorf("veth: %v: %s", err, out)
	}
	defer exec.Command("ip", "link", "del", a).Run()
	exec.Command("ip", "link", "set", a, "up").Run()
	exec.Command("ip", "link", "set", b, "up").Run()
	cfg := filepath.Join(t.TempDir(), "jumbo.yaml")
	if err := os.WriteFile(cfg, []byte("ports:\n  - interface: "+a+"\nmetrics: off\ncontrol: {socket: off}\n"), 0o644); err != nil {
		return err
	}
	out, err := exec.Command("timeout", "20", gswitchdBin, "-config", cfg).CombinedOutput()
	if err == nil || !strings.Contains(string(out), fmt.Sprintf("ports[0].interface: %s has MTU %d", a, mtu)) || !strings.Contains(string(out), "ip link set "+a+" mtu") {
		return fmt.Errorf("MTU %d: err %v, output:\n%s", mtu, err, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
	return nil
}
