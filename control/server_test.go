package control

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/dataplane/metrics"
	_ "github.com/gswitch/gswitch/mech/all"
	"github.com/gswitch/gswitch/pkt/pkttest"
)

const testYAML = `
switch_id: 7
ports:
  - {name: p1, interface: veth-a}
  - {name: p2, interface: veth-b, rate: 100Mbit, scheduler: drr, queues: 4}
  - name: p3
    interface: veth-c
    scheduler: rsp
    queues: 8
    mechanisms: {afq: {bytes_per_round: 1514}}
`

// dpConfig is the switch's config for a parsed config, as gswitchd gives
// it (one worker: the tests step it).
func dpConfig(c *config.Config) dataplane.Config {
	d := dataplane.Config{Config: *c}
	d.Workers = 1
	return d
}

type fixture struct {
	h    *dptest.Harness
	srv  *Server
	cl   *Client
	sock string
	cfg  string
}

// newFixture runs a control server over an in-memory switch built from
// yaml (also written to a file, for reload). The test goroutine steps the
// switch between calls; the server reads it only while a call is in flight.
func newFixture(t *testing.T, yaml string) *fixture {
	t.Helper()
	return newFixtureWith(t, yaml, nil, nil)
}

// newFixtureWith is newFixture with the server's options changed by opt,
// and the server by srv before it serves (both may be nil).
func newFixtureWith(t *testing.T, yaml string, opt func(*Options), srv func(*Server)) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{sock: filepath.Join(dir, "sw.sock"), cfg: filepath.Join(dir, "sw.yaml")}
	if err := os.WriteFile(f.cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.h = dptest.New(t, dpConfig(c), 4096)
	var info []metrics.PortInfo
	for _, p := range c.Ports {
		info = append(info, metrics.PortInfo{Interface: p.Interface, XDPMode: "native"})
	}
	o := Options{Config: c, ConfigPath: f.cfg, Info: info, Logf: t.Logf}
	if opt != nil {
		opt(&o)
	}
	f.srv = NewServer(f.h.SW, o)
	if err := f.srv.Listen(f.sock); err != nil {
		t.Fatal(err)
	}
	if srv != nil {
		srv(f.srv)
	}
	done := make(chan error, 1)
	go func() { done <- f.srv.Serve() }()
	t.Cleanup(func() {
		f.srv.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if _, err := os.Stat(f.sock); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("socket file left behind: %v", err)
		}
	})
	if f.cl, err = Dial(f.sock, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.cl.Close() })
	return f
}

func (f *fixture) call(t *testing.T, req Request, out any) {
	t.Helper()
	if err := f.cl.Call(req, out); err != nil {
		t.Fatalf("%s: %v", req.Cmd, err)
	}
}

func (f *fixture) refused(t *testing.T, req Request, want string) {
	t.Helper()
	err := f.cl.Call(req, nil)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("%+v: error %v, want it to contain %q", req, err, want)
	}
}

var (
	ipA, ipB, ipC = [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, [4]byte{10, 0, 0, 3}
	mA, mB, mC    = pkttest.MAC(0xa), pkttest.MAC(0xb), pkttest.MAC(0xc)
)

// TestViews: every view reports what the switch holds, through the socket.
func TestViews(t *testing.T) {
	f := newFixture(t, testYAML)
	// Hosts announce themselves; then A sends 30 frames to B on the shaped
	// port p2, whose clock does not move: most of them wait in its queue.
	f.h.Links[0].Inject(pkttest.ARP(mA, ipA, ipB))
	f.h.Links[1].Inject(pkttest.ARP(mB, ipB, ipA))
	f.h.Links[2].Inject(pkttest.ARP(mC, ipC, ipA))
	f.h.Settle()
	for i := 0; i < 30; i++ {
		f.h.Links[0].Inject(pkttest.UDP4(mB, mA, ipA, ipB, 1, 2, make([]byte, 1000)))
	}
	f.h.Links[0].Inject([]byte{1, 2, 3}) // malformed
	f.h.Settle()

	var info Info
	f.call(t, Request{Cmd: "info"}, &info)
	if info.SwitchID != 7 || info.Ports != 3 || info.Workers != 1 || len(info.Mechanisms) != 1 || info.Mechanisms[0] != "afq" || info.PID != os.Getpid() {
		t.Fatalf("info %+v", info)
	}
	var h Health
	f.call(t, Request{Cmd: "health"}, &h)
	if h.Status != "ok" || h.PortsUp != 3 || h.Frames.Total != 4096 {
		t.Fatalf("health %+v", h)
	}
	var ports []PortView
	f.call(t, Request{Cmd: "ports"}, &ports)
	if len(ports) != 3 {
		t.Fatalf("ports %+v", ports)
	}
	for i, p := range ports {
		k := f.h.SW.Counters(i)
		if p.RxPackets != k.RxPackets || p.TxPackets != k.TxPackets || p.RxBytes != k.RxBytes || p.Name != fmt.Sprintf("p%d", i+1) || !p.Up {
			t.Fatalf("port %d: %+v, counters %+v", i, p, k)
		}
	}
	if p := ports[1]; p.RateBits != 100e6 || p.Scheduler != "drr" || p.Queues != 4 || p.Interface != "veth-b" || p.MAC != "02:67:73:00:07:01" {
		t.Fatalf("p2 %+v", p)
	}
	if ports[0].RxPackets != 32 || ports[0].Drops != 1 || ports[2].Mechanisms[0] != "afq" {
		t.Fatalf("p1 %+v p3 %+v", ports[0], ports[2])
	}

	var q QueuesView
	f.call(t, Request{Cmd: "queues", Port: "p2"}, &q)
	var queued uint32
	for _, x := range q.Queues {
		queued += x.Packets
	}
	if q.Scheduler != "drr" || q.Quantum != 1514 || len(q.Queues) != 4 || queued == 0 || q.Round != nil {
		t.Fatalf("queues p2 %+v", q)
	}
	if sent := f.h.SW.Counters(1).TxPackets; uint64(queued)+sent != 32 { // 30 frames, and the ARPs of p1 and p3 flooded
		t.Fatalf("p2: %d queued + %d sent, want 32 frames", queued, sent)
	}
	f.call(t, Request{Cmd: "queues", Port: "p1"}, &q)
	if q.Drops["malformed"] != 1 || len(q.Drops) != 1 {
		t.Fatalf("p1 drops %v", q.Drops)
	}
	f.call(t, Request{Cmd: "queues", Port: "p3"}, &q)
	if q.Round == nil || q.Mechanisms["afq"]["bytes_per_round"] != float64(1514) {
		t.Fatalf("p3 %+v", q)
	}
	f.refused(t, Request{Cmd: "queues", Port: "p9"}, `no port "p9"`)

	var mac MACView
	f.call(t, Request{Cmd: "mac"}, &mac)
	want := map[string]string{"02:00:00:00:00:0a": "p1", "02:00:00:00:00:0b": "p2", "02:00:00:00:00:0c": "p3"}
	if mac.Total != 3 || len(mac.Entries) != 3 || mac.Learned != 3 {
		t.Fatalf("mac %+v", mac)
	}
	for _, e := range mac.Entries {
		if want[e.MAC] != e.Port {
			t.Fatalf("mac entry %+v, want port %q", e, want[e.MAC])
		}
	}
	f.call(t, Request{Cmd: "mac", Limit: 2}, &mac)
	if len(mac.Entries) != 2 || mac.Total != 3 {
		t.Fatalf("mac limit 2: %+v", mac)
	}
	var rv RoutesView
	f.call(t, Request{Cmd: "routes"}, &rv)
	if rv.L3 || len(rv.Routes) != 0 {
		t.Fatalf("routes of an L2 switch: %+v", rv)
	}
	var fl []MechView
	f.call(t, Request{Cmd: "flows"}, &fl)
	if len(fl) != 1 || fl[0].Mechanism != "afq" || fl[0].Port != "p3" || fl[0].State["sketch_rows"] != float64(4) || fl[0].Lists {
		t.Fatalf("flows %+v", fl)
	}
	var st Stats
	f.call(t, Request{Cmd: "stats"}, &st)
	if len(st.Ports) != 3 || st.Ports[1].QueuePackets != uint64(queued) || st.Ports[0].RxPackets != 32 || time.Since(st.Time) > time.Minute {
		t.Fatalf("stats %+v", st)
	}
}

func TestRoutesAndNeighbors(t *testing.T) {
	f := newFixture(t, `
ports:
  - {name: h1, interface: a, addr: 10.1.1.254/24}
  - {name: up, interface: b, addr: 10.255.0.0/31, role: fabric}
routes:
  - {prefix: 10.9.0.0/16, via: [10.255.0.1]}
`)
	f.h.Links[0].Inject(pkttest.ARP(mA, [4]byte{10, 1, 1, 1}, [4]byte{10, 1, 1, 254}))
	f.h.Settle()
	var rv RoutesView
	f.call(t, Request{Cmd: "routes"}, &rv)
	got := map[string]string{}
	for _, r := range rv.Routes {
		got[r.Prefix] = fmt.Sprint(r.NextHops)
	}
	if !rv.L3 || got["10.9.0.0/16"] != "[{10.255.0.1 up}]" {
		t.Fatalf("routes %+v", rv)
	}
	var nv NeighborsView
	f.call(t, Request{Cmd: "neighbors"}, &nv)
	if !nv.L3 || len(nv.Entries) != 1 || nv.Entries[0].IP != "10.1.1.1" || nv.Entries[0].Port != "h1" || nv.Entries[0].MAC != "02:00:00:00:00:0a" || nv.Entries[0].Static {
		t.Fatalf("neighbors %+v", nv)
	}
}

// TestSet: rate, burst and quantum change; queues pause and resume where
// no mechanism owns them; everything else is refused with the reason.
func TestSet(t *testing.T) {
	f := newFixture(t, testYAML)
	var r SetResult
	f.call(t, Request{Cmd: "set", Port: "p2", Key: "rate", Value: "250Mbit"}, &r)
	if r.Old != "100Mbit" || r.New != "250Mbit" || !r.Applied || f.h.SW.Ports()[1].RateBits() != 250e6 {
		t.Fatalf("set rate: %+v, switch %d", r, f.h.SW.Ports()[1].RateBits())
	}
	var ports []PortView
	f.call(t, Request{Cmd: "ports"}, &ports)
	if ports[1].RateBits != 250e6 {
		t.Fatalf("ports after set: %+v", ports[1])
	}
	f.call(t, Request{Cmd: "set", Port: "p2", Key: "rate", Value: "unlimited"}, &r)
	if f.h.SW.Ports()[1].RateBits() != 0 {
		t.Fatal("rate unlimited")
	}
	f.call(t, Request{Cmd: "set", Port: "p3", Key: "rate", Value: "1Gbit"}, &r) // afq follows rate changes
	f.call(t, Request{Cmd: "set", Port: "p1", Key: "burst", Value: "64KB"}, &r)
	if r.New != "64000B" {
		t.Fatalf("burst %+v", r)
	}
	f.call(t, Request{Cmd: "set", Port: "p2", Key: "quantum", Value: "3000"}, &r)
	if r.Old != "1514" || f.h.SW.Ports()[1].Quantum() != 3000 {
		t.Fatalf("quantum %+v", r)
	}
	f.call(t, Request{Cmd: "set", Port: "p2", Key: "queue", Queue: 2, Value: "pause"}, &r)
	if !f.h.SW.Scheduler(1).Paused(2) || r.New != "paused" {
		t.Fatalf("pause %+v", r)
	}
	var q QueuesView
	f.call(t, Request{Cmd: "queues", Port: "p2"}, &q)
	if !q.Queues[2].Paused || q.Queues[1].Paused || q.Quantum != 3000 {
		t.Fatalf("queues after pause %+v", q)
	}
	f.call(t, Request{Cmd: "set", Port: "p2", Key: "queue", Queue: 2, Value: "resume"}, &r)
	if f.h.SW.Scheduler(1).Paused(2) {
		t.Fatal("resume")
	}
	f.refused(t, Request{Cmd: "set", Port: "p2", Key: "scheduler", Value: "fifo"}, "p2: scheduler cannot change while gswitchd runs: its queues hold packets")
	f.refused(t, Request{Cmd: "set", Port: "p2", Key: "queues", Value: "8"}, "change ports[1].queues in the config and restart gswitchd")
	f.refused(t, Request{Cmd: "set", Port: "p1", Key: "quantum", Value: "3000"}, "scheduler fifo has no quantum")
	f.refused(t, Request{Cmd: "set", Port: "p2", Key: "quantum", Value: "10"}, "out of range")
	f.refused(t, Request{Cmd: "set", Port: "p2", Key: "rate", Value: "100MB"}, "p2: rate:")
	f.refused(t, Request{Cmd: "set", Port: "p3", Key: "queue", Queue: 1, Value: "pause"}, "belongs to the mechanisms on the port (afq)")
	f.refused(t, Request{Cmd: "set", Port: "p2", Key: "queue", Queue: 9, Value: "pause"}, "no queue 9")
	f.refused(t, Request{Cmd: "set", Port: "p2", Key: "colour", Value: "red"}, `unknown key "colour"`)
	f.refused(t, Request{Cmd: "set", Port: "nope", Key: "rate", Value: "1Gbit"}, `no port "nope"`)
}

// TestReload: the file's rate and quantum changes apply; its scheduler and
// top-level changes are refused and the switch keeps running as it was.
func TestReload(t *testing.T) {
	f := newFixture(t, testYAML)
	var rr ReloadResult
	f.call(t, Request{Cmd: "reload"}, &rr)
	if len(rr.Applied) != 0 || len(rr.Refused) != 0 {
		t.Fatalf("reload of the same file: %+v", rr)
	}
	changed := strings.Replace(testYAML, "rate: 100Mbit, scheduler: drr, queues: 4", "rate: 40Mbit, scheduler: drr, queues: 4, quantum: 4000", 1)
	changed = strings.Replace(changed, "scheduler: rsp", "scheduler: rsp\n    rtt: 1ms", 1)
	changed = strings.Replace(changed, "switch_id: 7", "switch_id: 8", 1)
	if err := os.WriteFile(f.cfg, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	f.call(t, Request{Cmd: "reload"}, &rr)
	if len(rr.Applied) != 2 || !strings.Contains(strings.Join(rr.Applied, ";"), "ports[1].rate: 100Mbit -> 40Mbit") ||
		!strings.Contains(strings.Join(rr.Applied, ";"), "ports[1].quantum: 1514 -> 4000") {
		t.Fatalf("applied %q", rr.Applied)
	}
	refused := strings.Join(rr.Refused, ";")
	if len(rr.Refused) != 2 || !strings.Contains(refused, "switch_id") || !strings.Contains(refused, "ports[2].rtt") {
		t.Fatalf("refused %q", rr.Refused)
	}
	if p := f.h.SW.Ports()[1]; p.RateBits() != 40e6 || p.Quantum() != 4000 || f.h.SW.ID() != 7 {
		t.Fatalf("switch after reload: rate %d quantum %d id %d", p.RateBits(), p.Quantum(), f.h.SW.ID())
	}
	if err := os.WriteFile(f.cfg, []byte("ports: ["), 0o644); err != nil {
		t.Fatal(err)
	}
	f.refused(t, Request{Cmd: "reload"}, "reload: nothing changed")
}

// TestReloadComparesDurations: top-level durations compare by value (the
// default catch-up written out in other units is no change), and a real
// change to them is refused with the key named.
func TestReloadComparesDurations(t *testing.T) {
	f := newFixture(t, testYAML)
	var rr ReloadResult
	same := strings.Replace(testYAML, "switch_id: 7", "switch_id: 7\ncatchup: 5000us\nspin: 0.05ms", 1)
	if err := os.WriteFile(f.cfg, []byte(same), 0o644); err != nil {
		t.Fatal(err)
	}
	f.call(t, Request{Cmd: "reload"}, &rr)
	if len(rr.Applied) != 0 || len(rr.Refused) != 0 {
		t.Fatalf("reload with the defaults written out: %+v", rr)
	}
	changed := strings.Replace(testYAML, "switch_id: 7", "switch_id: 7\ncatchup: 2ms\nslice: 200us", 1)
	if err := os.WriteFile(f.cfg, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	f.call(t, Request{Cmd: "reload"}, &rr)
	refused := strings.Join(rr.Refused, ";")
	if len(rr.Refused) != 2 || !strings.Contains(refused, "catchup") || !strings.Contains(refused, "slice") {
		t.Fatalf("refused %q", rr.Refused)
	}
}

// TestCapture: a capture of 3 UDP frames on p1 (both directions, filtered)
// streams them with their direction and length, then the end record.
func TestCapture(t *testing.T) {
	f := newFixture(t, testYAML)
	f.h.Links[1].Inject(pkttest.ARP(mB, ipB, ipA))
	f.h.Settle()
	cs, err := f.cl.Capture(Request{Port: "p1", Count: 3, Filter: "udp", Snap: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if cs.Start.Port != "p1" || cs.Start.Interface != "veth-a" || cs.Start.Snap != 100 {
		t.Fatalf("start %+v", cs.Start)
	}
	f.h.Links[0].Inject(pkttest.ARP(mA, ipA, ipB))                               // rx, not udp
	f.h.Links[0].Inject(pkttest.UDP4(mB, mA, ipA, ipB, 1, 2, make([]byte, 500))) // rx
	f.h.Settle()
	f.h.Links[1].Inject(pkttest.UDP4(mA, mB, ipB, ipA, 2, 1, make([]byte, 20))) // tx on p1
	f.h.Settle()
	f.h.Links[0].Inject(pkttest.UDP4(mB, mA, ipA, ipB, 1, 2, make([]byte, 30))) // rx
	f.h.Settle()
	f.h.Links[0].Inject(pkttest.UDP4(mB, mA, ipA, ipB, 1, 2, make([]byte, 40))) // beyond the count
	f.h.Settle()
	type rec struct{ dir, n, orig int }
	var got []rec
	var end *Record
	for {
		r, err := cs.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch r.Kind {
		case RecFrame:
			got = append(got, rec{r.Dir, len(r.Data), r.OrigLen})
			if time.Since(r.Time) > time.Minute || r.Time.After(time.Now()) {
				t.Fatalf("frame time %v", r.Time)
			}
		case RecEnd:
			e := *r
			end = &e
		}
	}
	want := []rec{{1, 100, 542}, {2, 62, 62}, {1, 72, 72}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("frames %v, want %v", got, want)
	}
	if end == nil || end.Stats.Matched != 3 || end.Stats.Seen < 4 || end.Stats.Dropped != 0 || !strings.Contains(end.Stats.Reason, "3 frames") {
		t.Fatalf("end %+v", end)
	}
	// The port may be captured again once the first capture ended.
	cl, err := Dial(f.sock, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cs2, err := cl.Capture(Request{Port: "p1", Filter: "frobnicate"})
	if err == nil || !strings.Contains(err.Error(), "unknown primitive") {
		t.Fatalf("bad filter: %v", err)
	}
	cl2, _ := Dial(f.sock, time.Second)
	defer cl2.Close()
	cs2, err = cl2.Capture(Request{Port: "p1"})
	if err != nil {
		t.Fatal(err)
	}
	cs2.Stop()
	for {
		r, err := cs2.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.Kind == RecEnd && r.Stats.Reason != "stopped by the client" {
			t.Fatalf("end %+v", r.Stats)
		}
	}
}

// TestProtocolErrors: bad lines get an error answer and the connection
// goes on; an overlong line ends it; nothing crashes the server.
func TestProtocolErrors(t *testing.T) {
	f := newFixture(t, testYAML)
	c, err := net.Dial("unix", f.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	for _, l := range []string{"hello", `{"cmd":"frob"}`, `{}`, `{"cmd":"set"}`, `{"cmd":"capture","port":"p1","dir":"up"}`} {
		fmt.Fprintf(c, "%s\n", l)
		ans, err := r.ReadString('\n')
		if err != nil || !strings.Contains(ans, `"ok":false`) {
			t.Fatalf("%q: %q %v", l, ans, err)
		}
		if l == `{"cmd":"capture","port":"p1","dir":"up"}` { // a capture request ends the connection either way
			c.Close()
			c, _ = net.Dial("unix", f.sock)
			r = bufio.NewReader(c)
		}
	}
	fmt.Fprintf(c, "%s\n", `{"cmd":"health"}`)
	if ans, _ := r.ReadString('\n'); !strings.Contains(ans, `"status":"ok"`) {
		t.Fatalf("health after errors: %q", ans)
	}
	c.Write([]byte(strings.Repeat("x", maxRequest+10) + "\n"))
	ans, _ := r.ReadString('\n')
	if !strings.Contains(ans, "longer than") {
		t.Fatalf("long line: %q", ans)
	}
	if _, err := r.ReadString('\n'); err != io.EOF {
		t.Fatalf("connection still open after a long line: %v", err)
	}
}

// TestSocketInUseAndPermissions: a second server on a live socket is
// refused; a peer that is neither root, gswitchd's user nor in its group is
// refused even when the file lets it connect (root only: runs python3 as
// nobody).
func TestSocketInUseAndPermissions(t *testing.T) {
	f := newFixture(t, testYAML)
	fi, err := os.Stat(f.sock)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v %v", fi.Mode(), err)
	}
	other := NewServer(f.h.SW, Options{Config: &config.Config{}})
	if err := other.Listen(f.sock); err == nil || !strings.Contains(err.Error(), "in use by another gswitchd") {
		t.Fatalf("second listen: %v", err)
	}
	other = NewServer(f.h.SW, Options{Config: &config.Config{}, Group: "no-such-group-zz"})
	if err := other.Listen(filepath.Join(t.TempDir(), "x.sock")); err == nil || !strings.Contains(err.Error(), "control.group") {
		t.Fatalf("unknown group: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("the peer-credential check needs root (to run a client as another user)")
	}
	py := "/usr/bin/python3" // the system's, which any user may run
	if _, err := os.Stat(py); err != nil {
		t.Skip("python3 not installed in /usr/bin (scripts/install-deps.sh installs it)")
	}
	dir, err := os.MkdirTemp("", "gswitch-ctl-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	open := NewServer(f.h.SW, Options{Config: &config.Config{}})
	sock := filepath.Join(dir, "open.sock")
	if err := open.Listen(sock); err != nil {
		t.Fatal(err)
	}
	go open.Serve()
	defer open.Close()
	os.Chmod(sock, 0o666) // the file lets anyone connect: the credential check must still refuse
	cmd := exec.Command(py, "-c", `import socket,sys
s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print(s.recv(4096).decode())`, sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "permission denied: uid 65534") {
		t.Fatalf("nobody's request: %v %s", err, out)
	}
}

func TestDefaultSocketAndResolve(t *testing.T) {
	if p := DefaultSocket("/etc/gswitch/leaf1.yaml"); p != "/run/gswitch/leaf1.sock" {
		t.Fatal(p)
	}
	if p, _ := Resolve("/tmp/x.sock"); p != "/tmp/x.sock" {
		t.Fatal(p)
	}
	if p, _ := Resolve("leaf2"); p != "/run/gswitch/leaf2.sock" {
		t.Fatal(p)
	}
	t.Setenv("GSWITCH_SOCKET", "/tmp/y.sock")
	if p, _ := Resolve(""); p != "/tmp/y.sock" {
		t.Fatal(p)
	}
}
