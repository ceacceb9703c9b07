package netns

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cpuTicks is the user+system CPU time of process pid, in clock ticks.
func cpuTicks(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+2:])
	u, _ := strconv.Atoi(f[11])
	s, _ := strconv.Atoi(f[12])
	return u + s
}

// waitMetric polls the switch until cond holds for the metrics, or fails.
func waitMetric(t *testing.T, sw *Switch, what string, cond func(m map[string]float64) bool) map[string]float64 {
	t.Helper()
	var m map[string]float64
	for i := 0; i < 100; i++ {
		m = sw.Scrape()
		if cond(m) {
			return m
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: not within 5 s: port_up %v, frames %v", what, portUp(m), framesOf(m))
	return nil
}

func portUp(m map[string]float64) map[string]float64 {
	r := map[string]float64{}
	for k, v := range m {
		if strings.HasPrefix(k, "gswitch_port_up") {
			r[k] = v
		}
	}
	return r
}

// TestInterfaceDeletedAndRecreated: one of three switch ports loses its
// veth under a running gswitchd, as a user deleting it would. The port goes
// down in the metrics, the frames on its rings come back (they are no
// longer counted on a fill ring), the switch stays idle (no busy loop), the
// other two hosts keep talking, and when the veth is created again the port
// comes back and forwards.
func TestInterfaceDeletedAndRecreated(t *testing.T) {
	tp := NewTopo(t, 3)
	sw := tp.StartSwitch("", nil)
	h1, h3 := tp.Hosts[0], tp.Hosts[2]
	for _, h := range tp.Hosts[1:] {
		if out, err := h1.Exec(t, 5*time.Second, "ping", "-c", "2", "-i", "0.2", "-W", "1", h.IP); err != nil {
			t.Fatalf("ping %s: %v\n%s", h.IP, err, out)
		}
	}
	before := sw.Scrape()
	fill0 := before[`gswitch_umem_frames{state="fill"}`]
	mac := strings.TrimSpace(run(t, "ip", "netns", "exec", h3.NS, "cat", "/sys/class/net/eth0/address"))
	run(t, "ip", "link", "del", h3.Port)
	m := waitMetric(t, sw, "port p3 down", func(m map[string]float64) bool { return m[`gswitch_port_up{port="p3"}`] == 0 })
	m = waitMetric(t, sw, "frames of p3 back", func(m map[string]float64) bool {
		pool := m[`gswitch_umem_frames{state="free"}`] + m[`gswitch_umem_frames{state="fill"}`]
		return m[`gswitch_umem_frames{state="fill"}`] < fill0*0.75 && pool == m["gswitch_umem_size_frames"]
	})
	t.Logf("after the delete: fill %v -> %v frames, port_up %v", fill0, m[`gswitch_umem_frames{state="fill"}`], portUp(m))
	// Traffic toward the gone host (broadcasts, a stale ARP entry) must not make the switch spin.
	h1.Exec(t, 5*time.Second, "ping", "-c", "20", "-i", "0.05", "-W", "1", "-b", "255.255.255.255")
	pid := sw.cmd.Process.Pid
	c0 := cpuTicks(t, pid)
	time.Sleep(2 * time.Second)
	c1 := cpuTicks(t, pid)
	t.Logf("gswitchd CPU over 2 s idle with a port gone: %d ticks", c1-c0)
	if c1-c0 > 20 { // 0.1 s of CPU in 2 s, 100 ticks/s
		t.Fatalf("gswitchd used %d ticks of CPU in 2 s with a port gone: a busy loop", c1-c0)
	}
	if out, err := h1.Exec(t, 5*time.Second, "ping", "-c", "2", "-i", "0.2", "-W", "1", tp.Hosts[1].IP); err != nil {
		t.Fatalf("h1 -> h2 with p3 gone: %v\n%s", err, out)
	}
	// The veth comes back with the same name.
	run(t, "ip", "link", "add", h3.Port, "type", "veth", "peer", "name", "eth0", "netns", h3.NS)
	run(t, "ip", "-n", h3.NS, "link", "set", "eth0", "address", mac) // the same host, so h1's ARP entry holds
	run(t, "ip", "-n", h3.NS, "addr", "add", h3.IP+"/24", "dev", "eth0")
	run(t, "ip", "-n", h3.NS, "link", "set", "eth0", "up")
	run(t, "ip", "netns", "exec", h3.NS, "ethtool", "-K", "eth0", "tx", "off", "tso", "off", "gso", "off", "gro", "off")
	run(t, "ethtool", "-K", h3.Port, "tx", "off", "tso", "off", "gso", "off", "gro", "off")
	run(t, "ip", "link", "set", h3.Port, "up")
	waitMetric(t, sw, "port p3 up again", func(m map[string]float64) bool { return m[`gswitch_port_up{port="p3"}`] == 1 })
	var out string
	var err error
	for i := 0; i < 10; i++ {
		if out, err = h1.Exec(t, 5*time.Second, "ping", "-c", "2", "-i", "0.2", "-W", "1", h3.IP); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("h1 -> h3 after the veth came back: %v\n%s", err, out)
	}
	if !strings.Contains(sw.log.String(), "is back") {
		t.Fatalf("gswitchd did not log the interface coming back:\n%s", sw.log.String())
	}
	sw.CheckFramesBack()
	sw.Stop()
}

// TestInterfaceDownAndUp: a port whose interface is set down goes down in
// the metrics (its queues flushed), the switch stays idle, and it forwards
// again when the interface is set up.
func TestInterfaceDownAndUp(t *testing.T) {
	tp := NewTopo(t, 2)
	sw := tp.StartSwitch("", nil)
	h1, h2 := tp.Hosts[0], tp.Hosts[1]
	if out, err := h1.Exec(t, 5*time.Second, "ping", "-c", "2", "-i", "0.2", "-W", "1", h2.IP); err != nil {
		t.Fatalf("ping: %v\n%s", err, out)
	}
	run(t, "ip", "link", "set", h2.Port, "down")
	waitMetric(t, sw, "port p2 down", func(m map[string]float64) bool { return m[`gswitch_port_up{port="p2"}`] == 0 })
	h1.Exec(t, 3*time.Second, "ping", "-c", "10", "-i", "0.05", "-W", "1", h2.IP) // fails: the port is down
	pid := sw.cmd.Process.Pid
	c0 := cpuTicks(t, pid)
	time.Sleep(2 * time.Second)
	if d := cpuTicks(t, pid) - c0; d > 20 {
		t.Fatalf("gswitchd used %d ticks of CPU in 2 s with a port down", d)
	}
	run(t, "ip", "link", "set", h2.Port, "up")
	waitMetric(t, sw, "port p2 up", func(m map[string]float64) bool { return m[`gswitch_port_up{port="p2"}`] == 1 })
	var out string
	var err error
	for i := 0; i < 10; i++ {
		if out, err = h1.Exec(t, 5*time.Second, "ping", "-c", "2", "-i", "0.2", "-W", "1", h2.IP); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("ping after up: %v\n%s", err, out)
	}
	sw.CheckFramesBack()
	sw.Stop()
}
