package netns

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/topo"
	"github.com/gswitch/gswitch/wire"
	"golang.org/x/sys/unix"
)

// upTopologyText brings up a topology file whose text names itself NAME and
// its metrics BASE (replaced by a random name and base), with the gswitchd
// built by TestMain, and takes it down at cleanup. The BFC tests' files
// run their switches' workers under SCHED_FIFO (realtime:) at a
// timescale, so that a switch keeps time while the hosts load the machine.
func upTopologyText(t *testing.T, text string) (*topo.Running, string) {
	t.Helper()
	requireNetns(t)
	name := "b" + randID()[:5]
	base := 20000 + rand.Intn(30000)
	text = strings.NewReplacer("NAME", name, "BASE", fmt.Sprint(base)).Replace(text)
	tp, err := topo.Parse([]byte(text))
	if err != nil {
		t.Fatalf("topology: %v\n%s", err, text)
	}
	dir := t.TempDir()
	r, err := topo.Up(context.Background(), tp, topo.UpOptions{Gswitchd: gswitchdBin, StateDir: dir, LogDir: dir})
	if err != nil {
		t.Fatalf("topo up: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range r.Switches {
				if b, err := os.ReadFile(s.Log); err == nil {
					t.Logf("%s log:\n%s", s.Name, tail(string(b), 3000))
				}
			}
		}
		if err := r.Down(); err != nil {
			t.Errorf("topo down: %v", err)
		}
	})
	return r, name
}

// reniceAll sets the nice value of every thread of process pid: on Linux
// setpriority(PRIO_PROCESS, pid) changes one thread only, and a gswitchd's
// workers are not its main thread. (The ExpressPass tests use it.)
func reniceAll(t *testing.T, pid, nice int) {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatalf("threads of %d: %v", pid, err)
	}
	for _, e := range tasks {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil && err != syscall.ESRCH {
			t.Fatalf("renice thread %d of %d: %v", tid, pid, err)
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func scrapeOf(t *testing.T, r *topo.Running, sw string) map[string]float64 {
	t.Helper()
	for _, s := range r.Switches {
		if s.Name == sw {
			return (&Switch{t: t, Metrics: s.Metrics}).Scrape()
		}
	}
	t.Fatalf("no switch %s", sw)
	return nil
}

// sumOf adds the samples of metric name whose labels contain every one of with.
func sumOf(m map[string]float64, name string, with ...string) float64 {
	var v float64
	for k, x := range m {
		if !strings.HasPrefix(k, name+"{") && k != name {
			continue
		}
		ok := true
		for _, w := range with {
			ok = ok && strings.Contains(k, w)
		}
		if ok {
			v += x
		}
	}
	return v
}

// tmDrops counts the traffic manager's drops on a switch's port (every
// reason that means the queues had no room).
func tmDrops(m map[string]float64, port string) float64 {
	var v float64
	for _, r := range []string{"buffer_full", "frame_limit", "port_limit", "queue_limit", "evicted", "handoff_full", "no_frames"} {
		v += m[fmt.Sprintf(`gswitch_drops_total{port=%q,reason=%q}`, port, r)]
	}
	return v
}

// bfcLineTopology is the BFC testbed (the paper's Fig. 6) at the paper's
// parameters, as topologies/bfc-testbed.yaml: S1 and S2 on Sw1, S3 on
// Sw3, Sw1 -> Sw2 <- Sw3, R1 and R2 on Sw2, each host a subnet of its own;
// 100 Gbit/s links with 1 us of propagation, 16 queues per port,
// timescale 10000 (10 Mbit/s and 10 ms on this machine), the workers under
// SCHED_FIFO. Sw2's port toward R2 is the congested one: 50 Gbit/s, with
// R2BUF of buffer; the other ports have 8 MB. MECH is the port
// mechanisms. The one-hop RTT BFC uses is 2 x 1 us + 2 x 25 us of this
// machine's (budget) = 2.005 us of the fabric on every link.
const bfcLineTopology = `
name: NAME
mode: l3
metrics_base: BASE
timescale: 10000
defaults:
  link: {rate: 100Gbit, delay: 1us, mtu: 1500}
  switch: {workers: 1, realtime: 10, spin: 0us}
  port: {scheduler: drr, queues: 16, buffer: 8MB, mechanisms: MECH}
switches: {sw1: {}, sw2: {}, sw3: {}}
hosts:
  s1: {addr: 10.71.1.1/24}
  s2: {addr: 10.71.2.1/24}
  s3: {addr: 10.71.3.1/24}
  r1: {addr: 10.71.4.1/24}
  r2: {addr: 10.71.5.1/24}
links:
  - {a: s1, b: sw1}
  - {a: s2, b: sw1}
  - {a: s3, b: sw3}
  - {a: r1, b: sw2}
  - {a: r2, b: sw2, rate: 50Gbit, b_port: {buffer: R2BUF}}
  - {a: sw1, b: sw2}
  - {a: sw3, b: sw2}
`

// The line's figures in the fabric's units (bfcLineTopology).
const (
	lineK      = 10000                  // its timescale
	lineHRTT   = 2*1e-6 + 2*25e-6/lineK // s: the one-hop RTT of every BFC port (2 x delay + 2 x budget)
	lineR2Rate = 50e9                   // bit/s: Sw2's port toward R2
	lineRate   = 100e9                  // bit/s: every other link
	wireFrame  = 1538                   // bytes: a full frame on the wire
)

// lineAt is the instant of this machine us microseconds of the line's
// fabric after at.
func lineAt(at time.Time, us float64) time.Time { return at.Add(time.Duration(us * 1e3 * lineK)) }

// queuePeaks scrapes a switch every 10 us of the line's fabric (five
// HRTTs) from at for us microseconds of the fabric, and returns, for the
// given port, the largest peak of one of its queues and the largest sum
// of its queues' peaks over one interval (at least the port's own peak
// then: the queues' watermarks are cleared by each scrape).
func queuePeaks(addr, port string, at time.Time, us float64) <-chan [2]float64 {
	var when []time.Time
	for x := 0.0; x <= us; x += 10 {
		when = append(when, lineAt(at, x))
	}
	with := fmt.Sprintf(`port=%q`, port)
	c := scrapeAt(addr, func(n string) bool {
		return strings.HasPrefix(n, "gswitch_bfc_queue_watermark_bytes{") && strings.Contains(n, with)
	}, when...)
	out := make(chan [2]float64, 1)
	go func() {
		var one, sum float64
		for _, s := range <-c {
			one = max(one, largest(s.M, "gswitch_bfc_queue_watermark_bytes{"))
			sum = max(sum, total(s.M, "gswitch_bfc_queue_watermark_bytes{"))
		}
		out <- [2]float64{one, sum}
	}()
	return out
}

// lineTopology is bfcLineTopology with its mechanisms and R2's buffer;
// GSWITCH_TEST_MECH_OFF=bfc leaves BFC out.
func lineTopology(t *testing.T, mechs, r2buf string) string {
	t.Helper()
	if strings.Contains(mechs, "bfc") && mechOff(t, "bfc") {
		mechs = "{}"
	}
	return strings.NewReplacer("MECH", mechs, "R2BUF", r2buf).Replace(bfcLineTopology)
}

// incast runs one gsperf client in each of s1, s2 and s3 toward r2 at the
// line's timescale, all starting together at at (this machine's clock),
// paced at their links' 100 Gbit/s, and returns what they printed. With
// complete, every client must have finished its flows.
func incast(t *testing.T, r *topo.Running, complete bool, at time.Time, args ...string) []string {
	t.Helper()
	srv := exec.Command("ip", "netns", "exec", r.Host("r2").Namespace, gsperfBin, "server", "-bind", "10.71.5.1:5500", "-report", "0", "-timescale", fmt.Sprint(lineK))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	time.Sleep(300 * time.Millisecond)
	outs := make([]string, 3)
	var wg sync.WaitGroup
	for i, h := range []string{"s1", "s2", "s3"} {
		a := append([]string{"120", "ip", "netns", "exec", r.Host(h).Namespace, gsperfBin, "client", "-src", h, "-to", "10.71.5.1:5500",
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
	return outs
}

// TestBFCIncastNoDropsAtTheCongestedSwitch: six 256 KB flows from three
// senders behind two switches burst into R2's 50 Gbit/s port (256 KB of
// buffer), each flow with its whole size as its window (1.5 MB at once;
// the senders are hosts that ignore pauses: gsperf -mode plain). Without
// BFC the port drops. With BFC it drops nothing and no switch does: Sw2
// pauses the upstream queues of Sw1 and Sw3, which hold the excess; the
// pauses stay fresh (no watchdog resumes); and each of Sw2's queues holds
// at most what the design lets into it (the bound below).
//
// With GSWITCH_TEST_MECH_OFF=bfc both runs are without BFC and the second
// fails: the congested port drops.
func TestBFCIncastNoDropsAtTheCongestedSwitch(t *testing.T) {
	const r2buf = 256 << 10
	args := []string{"-size", "256KB", "-flows", "2", "-mode", "plain", "-init-window", "256KB"}
	for _, on := range []bool{false, true} {
		mechs := "{}"
		if on {
			mechs = "{bfc: {}}"
		}
		r, _ := upTopologyText(t, lineTopology(t, mechs, fmt.Sprint(r2buf)))
		fw := watchFidelity(t, r)
		at := time.Now().Add(3 * time.Second)
		peaks := queuePeaks(r.Switches[1].Metrics, "r2", at, 400) // 1.5 MB take 240 us at 50 Gbit/s
		if on {
			incast(t, r, true, at, append(args, "-timeout", "1ms")...) // 10 s here; the incast needs 240 us
		} else {
			// Without BFC the flows lose segments and back off: give up after
			// 0.5 ms of the fabric (5 s here), the drops are what counts.
			incast(t, r, false, at, append(args, "-timeout", "500us")...)
		}
		p := <-peaks
		m := map[string]map[string]float64{}
		for _, sw := range []string{"sw1", "sw2", "sw3"} {
			m[sw] = scrapeOf(t, r, sw)
		}
		fw.require()
		sw2 := m["sw2"]
		drops := tmDrops(sw2, "r2")
		pauses := sumOf(sw2, "gswitch_bfc_pauses_sent_total")
		t.Logf("bfc %v: %v drops at sw2's port toward r2, %v pauses sent; its largest queue %.1f KB, its queues' peaks summed over 10 us %.1f KB at most",
			on, drops, pauses, p[0]/1e3, p[1]/1e3)
		if !on {
			if drops == 0 {
				t.Fatal("without BFC the congested port dropped nothing: the test does not congest it")
			}
			r.Down()
			continue
		}
		for sw, x := range m {
			if d := congestionDrops(x); d != 0 {
				t.Errorf("with BFC %s dropped %v frames for want of room", sw, d)
			}
		}
		if drops != 0 || pauses == 0 {
			t.Fatalf("with BFC: %v drops at the congested port, %v pauses sent", drops, pauses)
		}
		for _, up := range []string{"sw1", "sw3"} {
			if sumOf(m[up], "gswitch_bfc_pauses_received_total", `port="sw2"`) == 0 {
				t.Errorf("%s received no pause", up)
			}
			if n := sumOf(m[up], "gswitch_bfc_watchdog_resumes_total"); n != 0 {
				t.Errorf("%s: %v watchdog resumes: bitmaps did not keep the pauses fresh", up, n)
			}
		}
		// What a queue of Sw2's port may hold. It is paused once it holds
		// more than Th = HRTT x rate / N_active, at most HRTT x 50 Gbit/s
		// (one active queue); its upstreams keep sending for one HRTT after
		// that, at most the 2 x 100 Gbit/s of the two upstream links (two
		// flows may share a queue: a flow that comes back after its sticky
		// time and finds its queue taken shares it, section 3.3.2, counted
		// as sticky_reuse); plus two frames (the frame that finds the queue
		// above Th is counted with it, and the upstream port's frame already
		// on the line when the PAUSE arrives). The queues' peaks summed over
		// an interval (logged) is no bound on the port: they need not come
		// at once.
		one := lineHRTT*lineR2Rate/8 + lineHRTT*2*lineRate/8 + 2*wireFrame
		if p[0] > one {
			t.Errorf("a queue of sw2's port toward r2 held %.1f KB, more than the %.1f KB BFC lets in (HRTT x 50 Gbit/s + HRTT x 200 Gbit/s + 2 frames)",
				p[0]/1e3, one/1e3)
		}
	}
}

// rawSocket opens an AF_PACKET socket on eth0 of namespace ns; the frames
// it receives go to got (until closed).
func rawSocket(t *testing.T, ns string) (send func([]byte), got func() [][]byte) {
	t.Helper()
	type res struct {
		fd, ifindex int
		err         error
	}
	c := make(chan res, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine, outside our namespace
		f, err := os.Open(filepath.Join("/var/run/netns", ns))
		if err == nil {
			err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
			f.Close()
		}
		if err != nil {
			c <- res{err: err}
			return
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			c <- res{err: err}
			return
		}
		ifc, err := net.InterfaceByName("eth0")
		if err == nil {
			err = unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifc.Index})
		}
		if err == nil { // reads wake every 100 ms, so the reader can stop (closing the fd does not wake it)
			err = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 100000})
		}
		if err != nil {
			unix.Close(fd)
			c <- res{err: err}
			return
		}
		c <- res{fd: fd, ifindex: ifc.Index}
	}()
	r := <-c
	if r.err != nil {
		t.Fatalf("raw socket in %s: %v", ns, r.err)
	}
	var mu sync.Mutex
	var frames [][]byte
	done := make(chan struct{})
	var stop atomic.Bool
	go func() {
		defer close(done)
		b := make([]byte, 2048)
		for !stop.Load() {
			n, from, err := unix.Recvfrom(r.fd, b, 0)
			if err != nil {
				continue
			}
			if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
				continue
			}
			mu.Lock()
			frames = append(frames, append([]byte(nil), b[:n]...))
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		stop.Store(true)
		<-done
		unix.Close(r.fd)
	})
	to := &unix.SockaddrLinklayer{Ifindex: r.ifindex, Protocol: htons(unix.ETH_P_ALL)}
	return func(f []byte) {
			if err := unix.Sendto(r.fd, f, 0, to); err != nil {
				t.Errorf("send: %v", err)
			}
		}, func() [][]byte {
			mu.Lock()
			defer mu.Unlock()
			return append([][]byte(nil), frames...)
		}
}

// TestBFCFramesOnTheWire: one switch at the paper's parameters (100
// Gbit/s links, 1 us of propagation, timescale 10000 as bfcLineTopology);
// the test plays the upstream BFC switch from a namespace on a fabric port
// (peer bfc), sending tagged data toward a host behind a 50 Gbit/s port.
// The PAUSE and RESUME of the upstream queue it tagged, and the BITMAPs in
// between (bitmap_period 20 us of the fabric, 200 ms here, so that a few
// come while the queue drains), arrive on that fabric veth (captured with
// AF_PACKET) and parse as docs/wire-formats.md says. A PAUSE from that
// port pauses the switch's queue toward it; a PAUSE from a host port
// changes nothing and is counted as forged.
//
// With GSWITCH_TEST_MECH_OFF=bfc no PAUSE comes, and the test fails there.
func TestBFCFramesOnTheWire(t *testing.T) {
	mechs := "{bfc: {bitmap_period: 20us}}"
	if mechOff(t, "bfc") {
		mechs = "{}"
	}
	r, name := upTopologyText(t, strings.Replace(`
name: NAME
mode: l3
metrics_base: BASE
timescale: 10000
defaults:
  link: {rate: 100Gbit, delay: 1us}
  switch: {workers: 1, realtime: 10, spin: 0us}
  port: {scheduler: drr, queues: 8, buffer: 1MB, mechanisms: MECH}
switches: {sw: {id: 42}}
hosts:
  up: {addr: 10.72.1.1/24}
  r: {addr: 10.72.2.1/24}
  h: {addr: 10.72.3.1/24}
links:
  - {a: up, b: sw, b_port: {role: fabric}}
  - {a: r, b: sw, rate: 50Gbit}
  - {a: h, b: sw}
`, "MECH", mechs, 1))
	fw := watchFidelity(t, r)
	// Port 0 of switch 1 faces "up": its interface, <name>-1p1, is in our namespace.
	swPort, err := net.InterfaceByName(name + "-1p1")
	if err != nil {
		t.Fatal(err)
	}
	upNS := r.Host("up").Namespace
	upIf, err := exec.Command("ip", "netns", "exec", upNS, "cat", "/sys/class/net/eth0/address").Output()
	if err != nil {
		t.Fatal(err)
	}
	upMAC, _ := net.ParseMAC(strings.TrimSpace(string(upIf)))
	send, got := rawSocket(t, upNS)
	// 300 tagged frames of upstream queue 37 at once: far more than a 50 Gbit/s port drains in an HRTT.
	data := pkttest.UDP4([6]byte(swPort.HardwareAddr), [6]byte(upMAC), [4]byte{10, 72, 1, 1}, [4]byte{10, 72, 2, 1}, 4000, 4001, make([]byte, 1000))
	tagged := make([]byte, len(data)+wire.TagLen)
	copy(tagged[wire.TagLen:], data)
	if _, err := wire.InsertTag(tagged, 37); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		send(tagged)
	}
	var pause, resume *wire.BFC
	bitmaps, between := 0, 0
	deadline := time.Now().Add(10 * time.Second)
	for resume == nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		pause, resume, bitmaps, between = nil, nil, 0, 0
		for _, f := range got() {
			if len(f) < 14 || binary.BigEndian.Uint16(f[12:]) != wire.EtherType {
				continue
			}
			m, err := wire.ParseBFCFrame(f)
			if err != nil {
				t.Fatalf("a BFC frame off the wire does not parse: %v\n% x", err, f)
			}
			if [6]byte(f[6:12]) != [6]byte(swPort.HardwareAddr) || m.Switch != 42 || m.Port != 0 || len(f) < 60 {
				t.Fatalf("frame %+v from %x, %d bytes: want switch 42 port 0 from %s, padded to 60", m, f[6:12], len(f), swPort.HardwareAddr)
			}
			switch m.Type {
			case wire.TypeBFCPause:
				if pause == nil {
					pause = &m
				}
			case wire.TypeBFCResume:
				if pause != nil && resume == nil {
					resume = &m
				}
			case wire.TypeBFCBitmap:
				bitmaps++
				if pause != nil && resume == nil {
					between++
					if !wire.BitmapGet(m.Bitmap, 37) {
						t.Fatalf("a BITMAP between PAUSE and RESUME does not pause queue 37: %+v", m)
					}
				}
			}
		}
	}
	if pause == nil || resume == nil || pause.Queue != 37 || resume.Queue != 37 || !wire.SeqAfter(resume.Seq, pause.Seq) {
		t.Fatalf("PAUSE %+v, RESUME %+v: want both for upstream queue 37, in order", pause, resume)
	}
	t.Logf("PAUSE seq %d, RESUME seq %d, %d BITMAPs (%d between them), all of queue 37", pause.Seq, resume.Seq, bitmaps, between)
	if between == 0 {
		t.Errorf("no BITMAP between the PAUSE and the RESUME: the queue stayed paused for 300 frames at 50 Gbit/s (51 us of the fabric), more than two bitmap periods")
	}
	m := scrapeOf(t, r, "sw")
	if tmDrops(m, "r") != 0 || m[`gswitch_port_tx_packets_total{port="r"}`] < 300 {
		t.Fatalf("the congested port dropped %v, sent %v", tmDrops(m, "r"), m[`gswitch_port_tx_packets_total{port="r"}`])
	}

	// The neighbour pauses the switch's queue 3 toward it, then resumes it.
	frame := func(ty wire.Type, seq uint32, q uint16, src net.HardwareAddr) []byte {
		b := make([]byte, wire.MaxBFCFrameLen)
		n, err := wire.BuildBFC(b, [6]byte(src), wire.BFC{Type: ty, Seq: seq, Switch: 7, Port: 1, Queue: q})
		if err != nil {
			t.Fatal(err)
		}
		return b[:n]
	}
	paused := func(port string, q int) float64 {
		return scrapeOf(t, r, "sw")[fmt.Sprintf(`gswitch_queue_paused{port=%q,queue="%d"}`, port, q)]
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for i := 0; i < 40 && !cond(); i++ {
			time.Sleep(50 * time.Millisecond)
		}
		if !cond() {
			t.Fatalf("%s", what)
		}
	}
	send(frame(wire.TypeBFCPause, 1, 3, upMAC))
	waitFor("a PAUSE from the fabric neighbour did not pause queue 3 toward it", func() bool { return paused("up", 3) == 1 })
	send(frame(wire.TypeBFCResume, 2, 3, upMAC))
	waitFor("the RESUME did not restart it", func() bool { return paused("up", 3) == 0 })

	// A host forges a PAUSE: dropped, counted, nothing paused.
	hSend, _ := rawSocket(t, r.Host("h").Namespace)
	hMAC, _ := exec.Command("ip", "netns", "exec", r.Host("h").Namespace, "cat", "/sys/class/net/eth0/address").Output()
	hm, _ := net.ParseMAC(strings.TrimSpace(string(hMAC)))
	before := scrapeOf(t, r, "sw")
	hSend(frame(wire.TypeBFCPause, 100, 0, hm))
	hSend(frame(wire.TypeBFCPause, 101, 1, hm))
	waitFor("the forged pauses were not counted as forged", func() bool {
		return scrapeOf(t, r, "sw")[`gswitch_drops_total{port="h",reason="forged"}`] == 2
	})
	after := scrapeOf(t, r, "sw")
	for _, port := range []string{"up", "r", "h"} {
		for q := 0; q < 8; q++ {
			if after[fmt.Sprintf(`gswitch_queue_paused{port=%q,queue="%d"}`, port, q)] != 0 {
				t.Fatalf("port %s queue %d paused after a forged PAUSE from a host", port, q)
			}
		}
	}
	if a, b := sumOf(after, "gswitch_bfc_pauses_received_total"), sumOf(before, "gswitch_bfc_pauses_received_total"); a != b {
		t.Fatalf("BFC saw the forged pauses (%v -> %v received)", b, a)
	}
	if after[`gswitch_control_received_total{kind="bfc_pause",port="h"}`] != 2 {
		t.Fatalf("forged pauses not counted as control messages received on h")
	}
	fw.require()
}

// TestBFCHostsHonourPauses: the three senders run gsperf -mode bfc (two
// 256 KB flows each, paced at their 100 Gbit/s links), each flow with its
// whole size as its window (above the default of one BDP, so the hosts'
// pauses, not their windows, hold them back): each flow names its queue
// in the gsperf header, Sw1 and Sw3 pause the hosts' flows by those ids
// when their ports toward Sw2 back up, the hosts read the pauses off the
// wire and hold the flows. No switch drops anything, every flow completes,
// and the senders' switches hold little: what a queue takes before its
// host stops, not the hosts' windows (a host that ignored the pauses would
// leave them in Sw1's and Sw3's queues toward Sw2).
//
// With GSWITCH_TEST_MECH_OFF=bfc no switch pauses anyone and the test
// fails there.
func TestBFCHostsHonourPauses(t *testing.T) {
	r, _ := upTopologyText(t, lineTopology(t, "{bfc: {}}", "2MB"))
	fw := watchFidelity(t, r)
	at := time.Now().Add(3 * time.Second)
	peaks := map[string]<-chan [2]float64{ // 1.5 MB take 240 us at 50 Gbit/s
		"sw1": queuePeaks(r.Switches[0].Metrics, "sw2", at, 400),
		"sw3": queuePeaks(r.Switches[2].Metrics, "sw2", at, 400),
	}
	outs := incast(t, r, true, at, "-size", "256KB", "-flows", "2", "-mode", "bfc", "-init-window", "256KB", "-timeout", "1ms")
	m := map[string]map[string]float64{}
	for _, sw := range []string{"sw1", "sw2", "sw3"} {
		m[sw] = scrapeOf(t, r, sw)
	}
	fw.require()
	held := 0
	for _, o := range outs {
		var pauses, resumes, bitmaps, stale, malformed, foreign, badQueue, wd, hold, most int
		parsed := false
		for _, l := range strings.Split(o, "\n") {
			if i := strings.Index(l, " bfc: "); i >= 0 {
				n, _ := fmt.Sscanf(l[i+6:], "%d PAUSE, %d RESUME, %d BITMAP received (%d stale, %d malformed); refused: %d not from the switch, %d naming ids not ours; %d watchdog resumes; %d times a segment was held; at most %d queues",
					&pauses, &resumes, &bitmaps, &stale, &malformed, &foreign, &badQueue, &wd, &hold, &most)
				parsed = n == 10
			}
		}
		if !parsed {
			t.Fatalf("a host's report has no bfc line in the form this test reads (perf/bfc Stats.Format):\n%s", o)
		}
		if malformed != 0 || foreign != 0 || badQueue != 0 || wd != 0 {
			t.Errorf("a host: %d malformed pause frames, %d refused as not from its switch, %d naming ids not its own, %d watchdog resumes\n%s", malformed, foreign, badQueue, wd, o)
		}
		held += hold
		t.Logf("host: %d PAUSE, %d RESUME, %d BITMAP (%d stale), held %d times, at most %d queues paused at once", pauses, resumes, bitmaps, stale, hold, most)
	}
	sent := 0.0
	for _, sw := range []string{"sw1", "sw2", "sw3"} {
		for k, v := range m[sw] {
			if strings.HasPrefix(k, "gswitch_drops_total{") && !strings.Contains(k, `reason="link_local"`) && v != 0 {
				t.Errorf("%s: %s = %v", sw, k, v)
			}
		}
		if sw != "sw2" {
			sent += sumOf(m[sw], "gswitch_bfc_pauses_sent_total", `port="s`)
		}
	}
	if sent == 0 || held == 0 {
		t.Fatalf("the senders' switches sent %v pauses to the hosts; the hosts held segments %d times", sent, held)
	}
	// What the senders' switches hold toward Sw2. A queue is paused once
	// it holds more than Th = HRTT x 100 Gbit/s / N_active (at most HRTT x
	// 100 Gbit/s: a queue whose neighbours Sw2 paused is the only active
	// one), and its hosts keep sending for the HRTT the pause takes to stop
	// them, at most their links' 100 Gbit/s each (the flows of two hosts
	// may share a queue, as in the incast test); plus two frames (the frame
	// that finds it above Th, the one on the host's line) and the four
	// segments a paced host sends back to back (gsperf -pace-burst). Hosts
	// that ignored the pauses would leave their windows there (1 MB on Sw1).
	for _, c := range []struct {
		sw    string
		hosts float64
	}{{"sw1", 2}, {"sw3", 1}} {
		p := <-peaks[c.sw]
		one := lineHRTT*lineRate/8 + c.hosts*lineHRTT*lineRate/8 + (2+4)*wireFrame
		t.Logf("%s toward sw2: its largest queue %.1f KB (bound %.1f KB); its queues' peaks summed over 10 us %.1f KB at most", c.sw, p[0]/1e3, one/1e3, p[1]/1e3)
		if p[0] > one {
			t.Errorf("a queue of %s toward sw2 held %.1f KB: more than a pause lets in before its host stops (%.1f KB)", c.sw, p[0]/1e3, one/1e3)
		}
	}
}
