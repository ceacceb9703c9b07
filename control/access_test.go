package control

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// logBook collects what the server logs.
type logBook struct {
	t     *testing.T
	mu    sync.Mutex
	lines []string
}

func (l *logBook) logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
	l.t.Log(line)
}

// has waits a little for a logged line containing every one of want.
func (l *logBook) has(want ...string) bool {
	for deadline := time.Now().Add(2 * time.Second); ; {
		l.mu.Lock()
		for _, line := range l.lines {
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(line, w)
			}
			if ok {
				l.mu.Unlock()
				return true
			}
		}
		l.mu.Unlock()
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fakePeers stands in for SO_PEERCRED: each accepted connection gets the
// peer set last.
type fakePeers struct {
	mu   sync.Mutex
	next peer
}

func (fp *fakePeers) of(*net.UnixConn) (*peer, error) {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	p := fp.next
	return &p, nil
}

// The groups of the fake peers.
const (
	readGid  = 5001
	adminGid = 5002
)

var (
	rootPeer   = peer{uid: 0, gid: 0, pid: 1, groups: []uint32{}}
	readPeer   = peer{uid: 1000, gid: 1000, pid: 4242, groups: []uint32{readGid}}
	adminPeer  = peer{uid: 1001, gid: 1001, pid: 4343, groups: []uint32{readGid, adminGid}}
	strangerPr = peer{uid: 1002, gid: 1002, pid: 4444, groups: []uint32{100}}
)

// tierFixture is a fixture whose peers are faked, with a read group
// (gsread) and an admin group (gsadmin), and whose log is kept.
type tierFixture struct {
	*fixture
	peers *fakePeers
	log   *logBook
}

func newTierFixture(t *testing.T, opt func(*Options)) *tierFixture {
	tf := &tierFixture{peers: &fakePeers{next: rootPeer}, log: &logBook{t: t}}
	tf.fixture = newFixtureWith(t, testYAML, func(o *Options) {
		o.Logf = tf.log.logf
		if opt != nil {
			opt(o)
		}
	}, func(s *Server) {
		s.peerOf = tf.peers.of
		s.acc.readGid, s.acc.readGroup = readGid, "gsread"
		s.acc.adminGid, s.acc.adminGroup = adminGid, "gsadmin"
	})
	// The fixture's own client is root's: its first answer shows the server accepted it.
	tf.call(t, Request{Cmd: "health"}, nil)
	return tf
}

// dialAs connects as p. Its first request (health) is answered before the
// next peer is set: the accept loop has read this one's by then. The
// error is that answer's.
func (tf *tierFixture) dialAs(t *testing.T, p peer) (*Client, error) {
	t.Helper()
	tf.peers.mu.Lock()
	tf.peers.next = p
	tf.peers.mu.Unlock()
	cl, err := Dial(tf.sock, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl, cl.Call(Request{Cmd: "health"}, nil)
}

// TestReadTierIsRefusedChanges: a member of control.group reads every view
// but is refused set, reload and capture with a message naming
// control.admin_group, and the switch does not change; each refusal is
// logged with the peer's uid and pid and what it asked. A member of
// control.admin_group may; its actions are logged with uid and pid.
func TestReadTierIsRefusedChanges(t *testing.T) {
	tf := newTierFixture(t, nil)
	rd, err := tf.dialAs(t, readPeer)
	if err != nil {
		t.Fatalf("reader's health: %v", err)
	}
	for _, k := range Kinds {
		if k.Tier == TierRead {
			req := Request{Cmd: k.Cmd}
			if k.Cmd == "queues" {
				req.Port = "p2"
			}
			if err := rd.Call(req, nil); err != nil {
				t.Errorf("reader's %s: %v", k.Cmd, err)
			}
		}
	}
	for _, req := range []Request{
		{Cmd: "set", Port: "p2", Key: "rate", Value: "8kbit"},
		{Cmd: "set", Port: "p2", Key: "queue", Queue: 1, Value: "pause"},
		{Cmd: "reload"},
	} {
		err := rd.Call(req, nil)
		if err == nil || !strings.Contains(err.Error(), "permission denied: "+req.Cmd) || !strings.Contains(err.Error(), "control.admin_group gsadmin") ||
			!strings.Contains(err.Error(), "uid 1000 may only read (control.group gsread)") {
			t.Fatalf("reader's %+v: %v", req, err)
		}
	}
	if _, err := rd.Capture(Request{Port: "p1"}); err == nil || !strings.Contains(err.Error(), "capture shows the frames of a port, which needs the admin tier") {
		t.Fatalf("reader's capture: %v", err)
	}
	if r := tf.h.SW.Ports()[1].RateBits(); r != 100e6 || tf.h.SW.Scheduler(1).Paused(1) {
		t.Fatalf("the reader changed the switch: rate %d", r)
	}
	for _, want := range [][]string{
		{"control: refused uid 1000 pid 4242: set port \"p2\" key \"rate\" value \"8kbit\": needs the admin tier"},
		{"control: refused uid 1000 pid 4242: reload: needs the admin tier"},
		{"control: refused uid 1000 pid 4242: capture port \"p1\": needs the admin tier"},
	} {
		if !tf.log.has(want...) {
			t.Errorf("no log line with %q", want)
		}
	}

	ad, err := tf.dialAs(t, adminPeer)
	if err != nil {
		t.Fatal(err)
	}
	var r SetResult
	if err := ad.Call(Request{Cmd: "set", Port: "p2", Key: "rate", Value: "50Mbit"}, &r); err != nil || tf.h.SW.Ports()[1].RateBits() != 50e6 {
		t.Fatalf("admin's set: %v", err)
	}
	if !tf.log.has("control: uid 1001 pid 4343: set port \"p2\" key \"rate\" value \"50Mbit\": 100Mbit -> 50Mbit") {
		t.Error("the admin's set is not logged")
	}
	if err := ad.Call(Request{Cmd: "set", Port: "p2", Key: "scheduler", Value: "fifo"}, nil); err == nil {
		t.Fatal("scheduler change allowed")
	}
	if !tf.log.has("control: uid 1001 pid 4343: set port \"p2\" key \"scheduler\" value \"fifo\": error: ") {
		t.Error("the admin's refused set is not logged")
	}
	if err := ad.Call(Request{Cmd: "reload"}, nil); err != nil || !tf.log.has("control: uid 1001 pid 4343: reload: applied") {
		t.Errorf("the admin's reload: %v, or not logged", err)
	}
	cs, err := ad.Capture(Request{Port: "p1", Filter: "udp"})
	if err != nil {
		t.Fatal(err)
	}
	cs.Stop()
	for {
		if r, err := cs.Next(); err != nil || r.Kind == RecEnd {
			break
		}
	}
	if !tf.log.has(`control: uid 1001 pid 4343: capture port "p1" filter "udp": capturing`) || !tf.log.has("control: uid 1001 pid 4343: capture on p1 ended: stopped by the client") {
		t.Error("the admin's capture is not logged")
	}

	// Neither root nor in a group: refused at once, and logged.
	if _, err := tf.dialAs(t, strangerPr); err == nil || !strings.Contains(err.Error(), "permission denied: uid 1002 is not root and not in gswitchd's control group") {
		t.Fatalf("stranger: %v", err)
	}
	if !tf.log.has("control: refused a connection from uid 1002 pid 4444") {
		t.Error("the refused connection is not logged")
	}
}

// TestNoAdminGroup: without control.admin_group only root and gswitchd's
// user change the switch, and the refusal says how to allow more.
func TestNoAdminGroup(t *testing.T) {
	tf := newTierFixture(t, nil)
	tf.srv.acc.adminGid, tf.srv.acc.adminGroup = -1, ""
	rd, _ := tf.dialAs(t, adminPeer) // in gsadmin, which is no longer the admin group
	err := rd.Call(Request{Cmd: "set", Port: "p2", Key: "rate", Value: "8kbit"}, nil)
	if err == nil || !strings.Contains(err.Error(), "set control.admin_group in gswitchd's config") {
		t.Fatalf("set: %v", err)
	}
	own, _ := tf.dialAs(t, peer{uid: uint32(os.Geteuid()), gid: 77, pid: 99, groups: []uint32{}})
	if err := own.Call(Request{Cmd: "set", Port: "p2", Key: "rate", Value: "20Mbit"}, nil); err != nil {
		t.Fatalf("gswitchd's own user: %v", err)
	}
}

// TestEveryCommandIsClassified: every command Handle answers (read from
// its switch in server.go) and capture, which serveConn streams, has its
// tier in Kinds, and every kind is answered (not an unknown command).
func TestEveryCommandIsClassified(t *testing.T) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "server.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	handled := map[string]bool{}
	ast.Inspect(file, func(n ast.Node) bool {
		fd, ok := n.(*ast.FuncDecl)
		if !ok || fd.Name.Name != "Handle" {
			return true
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if cc, ok := n.(*ast.CaseClause); ok {
				for _, e := range cc.List {
					if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						s, _ := strconv.Unquote(lit.Value)
						if s != "" {
							handled[s] = true
						}
					}
				}
			}
			return true
		})
		return false
	})
	if len(handled) < 10 {
		t.Fatalf("found only %v in Handle's switch", handled)
	}
	kinds := map[string]Tier{}
	for _, k := range Kinds {
		if _, dup := kinds[k.Cmd]; dup {
			t.Errorf("%s twice in Kinds", k.Cmd)
		}
		if k.Tier != TierRead && k.Tier != TierAdmin {
			t.Errorf("%s: tier %v", k.Cmd, k.Tier)
		}
		kinds[k.Cmd] = k.Tier
		if !handled[k.Cmd] {
			t.Errorf("%s is in Kinds but Handle does not answer it", k.Cmd)
		}
	}
	for cmd := range handled {
		if _, ok := kinds[cmd]; !ok {
			t.Errorf("Handle answers %q, which Kinds does not classify", cmd)
		}
	}
	for _, cmd := range []string{"set", "reload", "capture"} {
		if kinds[cmd] != TierAdmin {
			t.Errorf("%s is not admin", cmd)
		}
	}
	f := newFixture(t, testYAML)
	for _, k := range Kinds {
		if _, err := f.srv.Handle(&Request{Cmd: k.Cmd}); err != nil && strings.Contains(err.Error(), "unknown command") {
			t.Errorf("%s: %v", k.Cmd, err)
		}
	}
	if strings.Join(Commands, " ") != "info health ports queues mac routes neighbors flows stats fidelity set reload capture" {
		t.Errorf("Commands %v", Commands)
	}
}

// TestConnectionLimit: the connection beyond control.max_connections is
// refused and logged; admins have a few more; a closed connection frees
// its place.
func TestConnectionLimit(t *testing.T) {
	tf := newTierFixture(t, func(o *Options) { o.MaxConns = 2 })
	rd, err := tf.dialAs(t, readPeer) // with the fixture's client: 2
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tf.dialAs(t, readPeer); err == nil || !strings.Contains(err.Error(), "control.max_connections 2") {
		t.Fatalf("third connection: %v", err)
	}
	if !tf.log.has("control: refused a connection from uid 1000 pid 4242: 2 connections open (control.max_connections 2)") {
		t.Error("the refused connection is not logged")
	}
	ad, err := tf.dialAs(t, adminPeer)
	if err != nil {
		t.Fatalf("an admin beyond the limit: %v", err)
	}
	ad.Close()
	rd.Close()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if _, err := tf.dialAs(t, readPeer); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("no connection after two closed: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// heapGrowth runs fn and returns the bytes allocated meanwhile (by every
// goroutine: the server's too).
func heapGrowth(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestCaptureLimits: a capture of a port already being captured, and one
// whose rings would pass control.capture_memory, are refused before the
// rings are allocated; refusals are logged; the memory comes back when a
// capture ends.
func TestCaptureLimits(t *testing.T) {
	tf := newTierFixture(t, func(o *Options) { o.CaptureMemory = 64 << 20 })
	ad, _ := tf.dialAs(t, adminPeer)
	first, err := ad.Capture(Request{Port: "p1", Ring: 512 << 10})
	if err != nil {
		t.Fatal(err)
	}
	second, _ := tf.dialAs(t, adminPeer)
	var cerr error
	// 32 MiB fits in what is left: only the busy port refuses it.
	if n := heapGrowth(func() { _, cerr = second.Capture(Request{Port: "p1", Ring: 32 << 20}) }); n > 16<<20 {
		t.Errorf("the refused capture allocated %d bytes", n)
	}
	if cerr == nil || !strings.Contains(cerr.Error(), "port p1 is already being captured (by uid 1001 pid 4343)") {
		t.Fatalf("second capture of p1: %v", cerr)
	}
	third, _ := tf.dialAs(t, rootPeer)
	if n := heapGrowth(func() { _, cerr = third.Capture(Request{Port: "p2", Ring: MaxCaptureRing}) }); n > 16<<20 {
		t.Errorf("the refused capture allocated %d bytes", n)
	}
	if cerr == nil || !strings.Contains(cerr.Error(), "capture: its rings need 64MiB (1 worker(s) x 64MiB), and 512KiB of the 64MiB that control.capture_memory allows are in use") {
		t.Fatalf("capture beyond the memory limit: %v", cerr)
	}
	if !tf.log.has("control: refused uid 1001 pid 4343: capture port \"p1\" ring 33554432: capture: port p1 is already being captured") ||
		!tf.log.has("control: refused uid 0 pid 1: capture port \"p2\" ring 67108864: capture: its rings need 64MiB") {
		t.Error("refused captures are not logged")
	}
	fourth, _ := tf.dialAs(t, rootPeer)
	cs, err := fourth.Capture(Request{Port: "p2", Ring: 512 << 10})
	if err != nil {
		t.Fatalf("a capture that fits beside the first: %v", err)
	}
	cs.Close()
	first.Stop()
	for {
		if r, err := first.Next(); err != nil || r.Kind == RecEnd {
			break
		}
	}
	// The end record comes after the first capture gave its memory back.
	again, _ := tf.dialAs(t, rootPeer)
	for deadline := time.Now().Add(5 * time.Second); ; {
		cs, err := again.Capture(Request{Port: "p1", Ring: 1 << 20})
		if err == nil {
			cs.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("p1 after its capture ended: %v", err)
		}
		again, _ = tf.dialAs(t, rootPeer)
		time.Sleep(10 * time.Millisecond)
	}

	off := newTierFixture(t, func(o *Options) { o.CaptureMemory = -1 })
	if _, err := off.cl.Capture(Request{Port: "p1"}); err == nil || !strings.Contains(err.Error(), "capture is off on this switch (control.capture_memory: 0") {
		t.Fatalf("capture off: %v", err)
	}
}

// TestRefusalLogIsBounded: a peer refused in a loop cannot flood the log;
// what was left out is counted in the next line.
func TestRefusalLogIsBounded(t *testing.T) {
	var l logLimiter
	now := time.Unix(1000, 0)
	n := 0
	for i := 0; i < 1000; i++ {
		if ok, _ := l.allow(now); ok {
			n++
		}
	}
	if n != refusalLogBurst {
		t.Fatalf("%d lines logged at once, want %d", n, refusalLogBurst)
	}
	ok, skipped := l.allow(now.Add(time.Second))
	if !ok || skipped != 1000-refusalLogBurst {
		t.Fatalf("a second later: %v, %d left out", ok, skipped)
	}
}

// TestTiersWithRealCredentials: real peers (python3 run as nobody) get
// their tier from SO_PEERCRED and SO_PEERGROUPS: nobody, with nogroup as
// control.group, reads and is refused set; with users as a supplementary
// group and control.admin_group, it may set. The log names its uid and
// pid. Root only (to run a client as another user).
func TestTiersWithRealCredentials(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (to run a client as another user)")
	}
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("python3 not installed in /usr/bin (scripts/install-deps.sh installs it)")
	}
	ng, err1 := user.LookupGroupId("65534")
	us, err2 := user.LookupGroupId("100")
	if err1 != nil || err2 != nil {
		t.Skipf("no groups 65534 and 100 here: %v %v", err1, err2)
	}
	f := newFixture(t, testYAML)
	dir, err := os.MkdirTemp("", "gswitch-ctl-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	lb := &logBook{t: t}
	srv := NewServer(f.h.SW, Options{Config: f.srv.cfg, Group: ng.Name, AdminGroup: us.Name, Logf: lb.logf})
	sock := filepath.Join(dir, "sw.sock")
	if err := srv.Listen(sock); err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Close()
	run := func(groups []uint32, lines ...string) ([]string, int) {
		script := `import socket,sys
s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f=s.makefile("rwb")
for l in sys.argv[2:]:
    f.write(l.encode()+b"\n"); f.flush(); print(f.readline().decode().strip())`
		cmd := exec.Command(py, append([]string{"-c", script, sock}, lines...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: groups}}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("python3 as nobody: %v %s", err, out)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n"), cmd.Process.Pid
	}
	out, pid := run(nil, `{"cmd":"health"}`, `{"cmd":"set","port":"p2","key":"rate","value":"8kbit"}`)
	if len(out) != 2 || !strings.Contains(out[0], `"ok":true`) || !strings.Contains(out[1], "permission denied: set") || !strings.Contains(out[1], "control.admin_group "+us.Name) {
		t.Fatalf("nobody in %s: %q", ng.Name, out)
	}
	if !lb.has(fmt.Sprintf("control: refused uid 65534 pid %d: set port", pid)) {
		t.Error("the refusal is not logged with uid and pid")
	}
	if f.h.SW.Ports()[1].RateBits() != 100e6 {
		t.Fatal("rate changed")
	}
	out, pid = run([]uint32{100}, `{"cmd":"set","port":"p2","key":"rate","value":"30Mbit"}`)
	if len(out) != 1 || !strings.Contains(out[0], `"ok":true`) || f.h.SW.Ports()[1].RateBits() != 30e6 {
		t.Fatalf("nobody in %s: %q", us.Name, out)
	}
	if !lb.has(fmt.Sprintf("control: uid 65534 pid %d: set port \"p2\" key \"rate\" value \"30Mbit\"", pid)) {
		t.Error("the admin action is not logged with uid and pid")
	}
}
