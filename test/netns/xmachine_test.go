package netns

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gswitch/gswitch/topo"
	"github.com/gswitch/gswitch/wire"
	"golang.org/x/sys/unix"
)

// A fabric over two machines, emulated on this one: each "machine" is a
// network namespace holding its end of an underlay veth (192.0.2.1/24 and
// .2/24) and runs gswitchctl topo up -machine NAME inside it (under
// nsenter --net, which keeps the mount namespace, so the hosts' namespaces
// it binds under /run/netns are everyone's). The switches' metrics are on
// 127.0.0.1 of their machine's namespace, read through a socket opened
// there.

// xmachine is an emulated machine: its name in the topology and its namespace.
type xmachine struct {
	name, ns, addr string
}

// xmClient is an HTTP client whose connections are opened in namespace ns.
func xmClient(ns string) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var c net.Conn
			err := inNamespace(ns, func() error {
				var err error
				c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
				return err
			})
			return c, err
		}}}
}

// xmScrape reads every sample of a switch's metrics (as "name{labels}") in namespace ns.
func xmScrape(t *testing.T, ns, addr string) map[string]float64 {
	t.Helper()
	m, err := scrapeLines(context.Background(), xmClient(ns), addr, func(string) bool { return true })
	if err != nil {
		t.Fatalf("metrics of %s in %s: %v", addr, ns, err)
	}
	return m
}

// xmFrame is a frame seen on an interface: its direction and its first bytes.
type xmFrame struct {
	out bool
	b   []byte
}

// xmCapture records the frames of interface dev in namespace ns (AF_PACKET,
// both directions; the first 600 bytes of each, a whole BFC frame) until
// the test ends.
func xmCapture(t *testing.T, ns, dev string) func() []xmFrame {
	t.Helper()
	var fd int
	err := inNamespace(ns, func() error {
		var err error
		if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL))); err != nil {
			return err
		}
		ifc, err := net.InterfaceByName(dev)
		if err == nil {
			err = unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifc.Index})
		}
		if err == nil {
			unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20)
			err = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 100000})
		}
		if err != nil {
			unix.Close(fd)
		}
		return err
	})
	if err != nil {
		t.Fatalf("capture on %s in %s: %v", dev, ns, err)
	}
	var mu sync.Mutex
	var frames []xmFrame
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 600)
		for !stop.Load() {
			n, from, err := unix.Recvfrom(fd, b, unix.MSG_TRUNC)
			if err != nil {
				continue
			}
			ll, _ := from.(*unix.SockaddrLinklayer)
			mu.Lock()
			frames = append(frames, xmFrame{out: ll != nil && ll.Pkttype == unix.PACKET_OUTGOING, b: append([]byte(nil), b[:min(n, len(b))]...)})
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		stop.Store(true)
		<-done
		unix.Close(fd)
	})
	return func() []xmFrame {
		mu.Lock()
		defer mu.Unlock()
		return append([]xmFrame(nil), frames...)
	}
}

// xmLinkStats are an interface's counters in namespace ns (ip -s -j).
type xmLinkStats struct {
	Stats64 struct {
		Rx, Tx struct {
			Packets, Bytes, Errors, Dropped uint64
		}
	} `json:"stats64"`
}

func xmStats(t *testing.T, ns, dev string) xmLinkStats {
	t.Helper()
	out := run(t, "ip", "-n", ns, "-s", "-j", "link", "show", "dev", dev)
	var s []xmLinkStats
	if err := json.Unmarshal([]byte(out), &s); err != nil || len(s) != 1 {
		t.Fatalf("ip -s -j link show %s in %s: %v\n%s", dev, ns, err, out)
	}
	return s[0]
}

// xmReassembled is how many IPv4 packets namespace ns had to reassemble
// from fragments (/proc/net/snmp, Ip: ReasmReqds).
func xmReassembled(t *testing.T, ns string) int {
	t.Helper()
	lines := strings.Split(run(t, "nsenter", "--net=/run/netns/"+ns, "cat", "/proc/net/snmp"), "\n")
	for i := 0; i+1 < len(lines); i++ {
		if strings.HasPrefix(lines[i], "Ip: ") && strings.HasPrefix(lines[i+1], "Ip: ") {
			names, vals := strings.Fields(lines[i]), strings.Fields(lines[i+1])
			for j, n := range names {
				if n == "ReasmReqds" && j < len(vals) {
					v, _ := strconv.Atoi(vals[j])
					return v
				}
			}
		}
	}
	t.Fatalf("no Ip: ReasmReqds in /proc/net/snmp of %s", ns)
	return 0
}

// TestBFCTestbedOverTwoMachines: topologies/bfc-testbed-2m.yaml, the BFC
// testbed split over two machines (m1: S1, S2, Sw1; m2: the rest; Sw1 ->
// Sw2 in a VXLAN tunnel over the underlay), brought up by gswitchctl
// topo up -machine on each, passes TestBFCIncastNoDropsAtTheCongestedSwitch's
// checks: the same incast (six 256 KB flows from S1, S2, S3 into R2's port,
// 50 Gbit/s with 256 KB of buffer, senders that ignore pauses) drops at
// R2's port without BFC; with BFC no switch drops anything, Sw2 pauses
// Sw1 across the tunnel and Sw1 receives the pauses, Sw3 too, no watchdog
// resumes, and each of Sw2's queues toward R2 holds at most what BFC lets
// in. On the tunnel's inner side (m1's VXLAN device) the PAUSEs of Sw2's
// port arrive as sent (EtherType 0x88B6 to 01:80:C2:00:00:0E) and Sw1's
// tagged data (0x88B5) leaves. The underlay lost nothing (each side's
// frames sent = the other's received) and fragmented nothing at an MTU of
// exactly 1554, the tunnel's need; at 1500 up refused, naming the link, the
// MTUs and the fix, and made nothing.
//
// With GSWITCH_TEST_MECH_OFF=bfc both runs are without BFC and the second
// fails: the congested port drops.
func TestBFCTestbedOverTwoMachines(t *testing.T) {
	requireNetns(t)
	ctlBin := gswitchctlBin(t)
	id := randID()[:5]
	name := "x" + id
	ms := []*xmachine{{"m1", "gsxm1" + id, "192.0.2.1"}, {"m2", "gsxm2" + id, "192.0.2.2"}}
	for _, m := range ms {
		run(t, "ip", "netns", "add", m.ns)
	}
	t.Cleanup(func() {
		for _, m := range ms {
			if out, err := exec.Command("ip", "netns", "del", m.ns).CombinedOutput(); err != nil {
				t.Errorf("ip netns del %s: %v %s", m.ns, err, out)
			}
		}
	})
	run(t, "ip", "link", "add", "ul", "netns", ms[0].ns, "type", "veth", "peer", "name", "ul", "netns", ms[1].ns)
	for _, m := range ms {
		run(t, "ip", "-n", m.ns, "link", "set", "lo", "up")
		run(t, "ip", "-n", m.ns, "addr", "add", m.addr+"/24", "dev", "ul")
		run(t, "ip", "-n", m.ns, "link", "set", "ul", "up")
	}
	state := t.TempDir()
	gsctl := func(m *xmachine, args ...string) (string, error) {
		out, err := exec.Command("nsenter", append([]string{"--net=/run/netns/" + m.ns, ctlBin, "topo"}, args...)...).CombinedOutput()
		return string(out), err
	}
	text := func(bfcOn bool) string {
		s := shipped(t, "bfc-testbed-2m.yaml")
		s = nameLine.ReplaceAllString(s, "name: "+name)
		s = edit(t, s, "- {a: r2, b: sw2}", "- {a: r2, b: sw2, rate: 50Gbit, b_port: {buffer: 262144}}")
		if !bfcOn || mechOff(t, "bfc") {
			s = edit(t, s, "mechanisms: {bfc: {assign: dynamic}}", "mechanisms: {}")
		}
		return s
	}
	// up brings both machines' parts up (m1 first: its tunnel waits for m2's
	// half like a cable plugged in at one end) and returns the plan; down
	// takes them down again (also at cleanup, also after a failure).
	up := func(src string) (string, *topo.Plan, func()) {
		file := filepath.Join(t.TempDir(), "bfc-testbed-2m.yaml")
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		tp, err := topo.Parse([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		p, _ := tp.Plan()
		var once sync.Once
		down := func() {
			once.Do(func() {
				if t.Failed() {
					for _, m := range ms {
						for _, s := range p.Switches {
							if b, err := os.ReadFile(filepath.Join(state, name+"-"+m.name, s.Name+".log")); err == nil {
								t.Logf("%s's log on %s:\n%s", s.Name, m.name, tail(string(b), 3000))
							}
						}
					}
				}
				for _, m := range ms {
					if out, err := gsctl(m, "down", file, "-machine", m.name, "-state", state); err != nil {
						t.Errorf("down on %s: %v\n%s", m.name, err, out)
					}
				}
			})
		}
		t.Cleanup(down)
		for _, m := range ms {
			start := time.Now()
			out, err := gsctl(m, "up", file, "-machine", m.name, "-state", state, "-gswitchd", gswitchdBin)
			if err != nil {
				t.Fatalf("up on %s: %v\n%s", m.name, err, out)
			}
			t.Logf("up on %s in %.1f s:\n%s", m.name, time.Since(start).Seconds(), out)
		}
		return file, p, down
	}
	machineOf := func(p *topo.Plan, sw string) *xmachine {
		for _, s := range p.Switches {
			if s.Name == sw {
				for _, m := range ms {
					if m.name == s.Machine {
						return m
					}
				}
			}
		}
		t.Fatalf("no switch %s", sw)
		return nil
	}
	metricsOf := func(p *topo.Plan, sw string) string {
		for _, s := range p.Switches {
			if s.Name == sw {
				return s.Metrics
			}
		}
		return ""
	}

	// An underlay MTU of 1500 cannot carry the link's 1500-byte frames
	// with 50 bytes of VXLAN and the 4-byte tag: up says so and makes nothing.
	{
		file := filepath.Join(t.TempDir(), "mtu.yaml")
		os.WriteFile(file, []byte(text(true)), 0o644)
		out, err := gsctl(ms[0], "up", file, "-machine", "m1", "-state", state, "-gswitchd", gswitchdBin)
		want := "links[5] (sw1 on m1 to sw2 on m2): the underlay interface ul has MTU 1500, the tunnel needs 1554: the link's mtu 1500 + 50 of VXLAN over IPv4 + 4 of gswitch's 0x88B5 tag (raise the underlay's MTU to 1554 or more on both machines, e.g. ip link set ul mtu 1554, or lower links[5].mtu to 1446)"
		if err == nil || !strings.Contains(out, want) {
			t.Fatalf("up over an underlay of MTU 1500: %v\n%s\nwant %q", err, out, want)
		}
		if _, err := os.Stat("/run/netns/" + name + "-s1"); err == nil {
			t.Fatalf("the refused up made s1's namespace")
		}
		t.Logf("underlay MTU 1500: up refused: %s", strings.TrimSpace(out))
		for _, m := range ms {
			run(t, "ip", "-n", m.ns, "link", "set", "ul", "mtu", "1554")
		}
	}
	reasm := map[string]int{}
	for _, m := range ms {
		reasm[m.ns] = xmReassembled(t, m.ns)
	}

	const r2buf = 256 << 10
	args := []string{"-size", "256KB", "-flows", "2", "-mode", "plain", "-init-window", "256KB"}
	for _, on := range []bool{true, false} {
		file, p, down := up(text(on))
		dev := topo.TunnelDevice(name, 5)
		frames := xmCapture(t, ms[0].ns, dev)
		// The tunnel's counters before the incast: frames m1 sent before m2's
		// half was up were lost, as a cable's frames are before both ends are in.
		b1, b2 := xmStats(t, ms[0].ns, dev), xmStats(t, ms[1].ns, dev)
		sw2 := machineOf(p, "sw2")
		at := time.Now().Add(3 * time.Second)
		peaks := xmQueuePeaks(xmClient(sw2.ns), metricsOf(p, "sw2"), "r2", at, 400)
		if on {
			xmIncast(t, name, true, at, append(args, "-timeout", "1ms")...)
		} else {
			xmIncast(t, name, false, at, append(args, "-timeout", "500us")...)
		}
		pk := <-peaks
		m := map[string]map[string]float64{}
		for _, sw := range []string{"sw1", "sw2", "sw3"} {
			m[sw] = xmScrape(t, machineOf(p, sw).ns, metricsOf(p, sw))
		}
		drops := tmDrops(m["sw2"], "r2")
		pausesSent := sumOf(m["sw2"], "gswitch_bfc_pauses_sent_total", `port="sw1"`)
		pausesRx := sumOf(m["sw1"], "gswitch_bfc_pauses_received_total", `port="sw2"`)
		t.Logf("bfc %v: %v drops at sw2's port toward r2; sw2 sent %v pauses to sw1 across the tunnel, sw1 received %v; sw2's largest queue toward r2 %.1f KB",
			on, drops, pausesSent, pausesRx, pk/1e3)
		for _, mm := range ms {
			if out, err := gsctl(mm, "status", file, "-machine", mm.name, "-state", state); err != nil {
				t.Errorf("status on %s: %v\n%s", mm.name, err, out)
			} else {
				t.Logf("gswitchctl topo status on %s:\n%s", mm.name, out)
			}
		}
		if !on {
			if drops == 0 {
				t.Fatal("without BFC the congested port dropped nothing: the test does not congest it")
			}
			down()
			continue
		}
		for sw, x := range m {
			if d := congestionDrops(x); d != 0 {
				t.Errorf("with BFC %s dropped %v frames for want of room", sw, d)
			}
		}
		if drops != 0 || pausesSent == 0 {
			t.Fatalf("with BFC: %v drops at the congested port, %v pauses sent to sw1 across the tunnel", drops, pausesSent)
		}
		for _, upstream := range []string{"sw1", "sw3"} {
			if n := sumOf(m[upstream], "gswitch_bfc_pauses_received_total", `port="sw2"`); n == 0 {
				t.Errorf("%s received no pause from sw2", upstream)
			}
			if n := sumOf(m[upstream], "gswitch_bfc_watchdog_resumes_total"); n != 0 {
				t.Errorf("%s: %v watchdog resumes: bitmaps did not keep the pauses fresh", upstream, n)
			}
		}
		one := lineHRTT*lineR2Rate/8 + lineHRTT*2*lineRate/8 + 2*wireFrame // as TestBFCIncastNoDropsAtTheCongestedSwitch
		if pk > one {
			t.Errorf("a queue of sw2's port toward r2 held %.1f KB, more than the %.1f KB BFC lets in", pk/1e3, one/1e3)
		}

		// The tunnel's inner side on m1: what sw2's port toward sw1 sent, as it sent it.
		var sw2mac net.HardwareAddr
		for _, s := range p.Switches {
			for _, port := range s.Ports {
				if s.Name == "sw2" && port.Name == "sw1" {
					sw2mac = port.MAC
				}
			}
		}
		kinds := map[string]int{}
		for _, f := range frames() {
			if len(f.b) < 14 {
				continue
			}
			switch et := binary.BigEndian.Uint16(f.b[12:]); {
			case et == wire.TagTPID && f.out:
				kinds["tagged out"]++ // sw1's data toward r2
			case et == wire.TagTPID:
				kinds["tagged in"]++ // sw2's: r2's acknowledgements
			case et == wire.EtherType && !f.out:
				b, err := wire.ParseBFCFrame(f.b)
				if err != nil || [6]byte(f.b[6:12]) != [6]byte(sw2mac) || b.Switch != 2 {
					t.Errorf("a BFC frame from the tunnel: %+v, %v, from %x; want one of sw2 (id 2) from %s to %x", b, err, f.b[6:12], sw2mac, wire.LinkLocalDst)
					continue
				}
				kinds[fmt.Sprint(b.Type)]++
			default:
				kinds[fmt.Sprintf("%#04x out %v", et, f.out)]++
			}
		}
		t.Logf("frames on %s (m1, the tunnel's inner side): %v", dev, kinds)
		if kinds[fmt.Sprint(wire.TypeBFCPause)] == 0 {
			t.Errorf("no PAUSE from sw2 came out of the tunnel on m1 (frames seen: %v)", kinds)
		}
		if kinds["tagged out"] == 0 {
			t.Errorf("no tagged (0x88B5) frame of sw1 went into the tunnel (frames seen: %v)", kinds)
		}

		// The underlay lost nothing and fragmented nothing.
		time.Sleep(200 * time.Millisecond)
		s1, s2 := xmStats(t, ms[0].ns, dev), xmStats(t, ms[1].ns, dev)
		t.Logf("tunnel counters over the incast: m1 sent %d received %d; m2 sent %d received %d (before it: m1 %d/%d, m2 %d/%d)",
			s1.Stats64.Tx.Packets-b1.Stats64.Tx.Packets, s1.Stats64.Rx.Packets-b1.Stats64.Rx.Packets, s2.Stats64.Tx.Packets-b2.Stats64.Tx.Packets, s2.Stats64.Rx.Packets-b2.Stats64.Rx.Packets,
			b1.Stats64.Tx.Packets, b1.Stats64.Rx.Packets, b2.Stats64.Tx.Packets, b2.Stats64.Rx.Packets)
		for _, c := range []struct {
			what       string
			sent, recv uint64
		}{{"m1 -> m2", s1.Stats64.Tx.Packets - b1.Stats64.Tx.Packets, s2.Stats64.Rx.Packets - b2.Stats64.Rx.Packets},
			{"m2 -> m1", s2.Stats64.Tx.Packets - b2.Stats64.Tx.Packets, s1.Stats64.Rx.Packets - b1.Stats64.Rx.Packets}} {
			if c.sent == 0 || c.sent > c.recv+2 || c.recv > c.sent+2 {
				t.Errorf("tunnel %s: %d frames sent, %d received", c.what, c.sent, c.recv)
			}
		}
		lost := func(s xmLinkStats) uint64 {
			return s.Stats64.Tx.Errors + s.Stats64.Tx.Dropped + s.Stats64.Rx.Errors + s.Stats64.Rx.Dropped
		}
		if lost(s1) != lost(b1) || lost(s2) != lost(b2) {
			t.Errorf("the tunnel devices dropped or failed frames over the incast: m1 %+v, m2 %+v", s1.Stats64, s2.Stats64)
		}
		for _, mm := range ms {
			if n := xmReassembled(t, mm.ns) - reasm[mm.ns]; n != 0 {
				t.Errorf("%s reassembled %d fragmented packets: the underlay fragmented the tunnel's", mm.name, n)
			}
		}
		down()
	}
}

// xmQueuePeaks is queuePeaks through client: the largest peak of one of
// port's queues on the switch at addr, scraped every 10 us of the line's
// fabric from at for us microseconds.
func xmQueuePeaks(client *http.Client, addr, port string, at time.Time, us float64) <-chan float64 {
	with := fmt.Sprintf(`port=%q`, port)
	keep := func(n string) bool {
		return strings.HasPrefix(n, "gswitch_bfc_queue_watermark_bytes{") && strings.Contains(n, with)
	}
	out := make(chan float64, 1)
	go func() {
		peak := 0.0
		for x := 0.0; x <= us; x += 10 {
			time.Sleep(time.Until(lineAt(at, x)))
			if m, err := scrapeLines(context.Background(), client, addr, keep); err == nil {
				peak = max(peak, largest(m, "gswitch_bfc_queue_watermark_bytes{"))
			}
		}
		out <- peak
	}()
	return out
}

// xmIncast is incast on bfc-testbed-2m.yaml's addresses: one gsperf
// client in each of s1, s2 and s3 (on both machines) toward r2, all
// starting at at, paced at their links' 100 Gbit/s.
func xmIncast(t *testing.T, name string, complete bool, at time.Time, args ...string) {
	t.Helper()
	srv := exec.Command("ip", "netns", "exec", topo.Namespace(name, "r2"), gsperfBin, "server", "-bind", "10.82.5.1:5500", "-report", "0", "-timescale", fmt.Sprint(lineK))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	time.Sleep(300 * time.Millisecond)
	outs := make([]string, 3)
	var wg sync.WaitGroup
	for i, h := range []string{"s1", "s2", "s3"} {
		a := append([]string{"120", "ip", "netns", "exec", topo.Namespace(name, h), gsperfBin, "client", "-src", h, "-to", "10.82.5.1:5500",
			"-timescale", fmt.Sprint(lineK), "-arrivals", "burst", "-at", fmt.Sprint(at.UnixNano()), "-rate", "50Gbit", "-pace", "100Gbit",
			"-base-rtt", "6us", "-id-base", fmt.Sprint((i + 1) * 1000)}, args...)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			out, err := exec.Command("timeout", a...).CombinedOutput()
			outs[i] = string(out)
			if err != nil {
				outs[i] += "\nexit: " + err.Error()
			}
		}(i)
	}
	wg.Wait()
	for i, o := range outs {
		if complete && (strings.Contains(o, "exit:") || !strings.Contains(o, "2/2 flows done")) {
			t.Fatalf("client %d:\n%s", i+1, o)
		}
	}
}
