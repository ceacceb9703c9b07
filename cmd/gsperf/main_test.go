package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/perf/udp"
	"github.com/gswitch/gswitch/wire"
)

// The tests run gsperf as a child process: this test binary, told by the
// environment to run main.
func TestMain(m *testing.M) {
	if os.Getenv("GSPERF_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func gsperf(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "GSPERF_TEST_MAIN=1")
	return cmd
}

// Bad server flags are errors that name the flag.
func TestServerFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-bind", "192.0.2.1:5500"}, "-bind: \"192.0.2.1:5500\": cannot listen"},
		{[]string{"-bind", "5500"}, "-bind: \"5500\" is not host:port"},
		{[]string{"-bind", "127.0.0.1:x"}, "-bind: \"127.0.0.1:x\": port"},
		{[]string{"-max-flows", "0"}, "-max-flows"},
		{[]string{"-flow-buffer", "1KB"}, "-flow-buffer"},
		{[]string{"-flow-buffer", "1e30"}, "-flow-buffer"},
		{[]string{"-total-buffer", "1MB"}, "-total-buffer"},
		{[]string{"-idle-timeout", "0s"}, "-idle-timeout"},
		{[]string{"-report", "-1s"}, "-report"},
	} {
		var stderr bytes.Buffer
		cmd := gsperf(append([]string{"server"}, c.args...)...)
		cmd.Stderr = &stderr
		err := cmd.Run()
		if err == nil || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("gsperf server %v: %v, stderr %q; want it to say %q", c.args, err, stderr.String(), c.want)
		}
	}
}

// sockets lists the socket inodes process pid has open.
func sockets(t *testing.T, pid int) []string {
	t.Helper()
	fds, err := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	if err != nil {
		t.Fatal(err)
	}
	var inodes []string
	for _, fd := range fds {
		l, err := os.Readlink(fd)
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes = append(inodes, strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]"))
		}
	}
	return inodes
}

// procNet finds inode in /proc/pid/net/<table> and returns its local address.
func procNet(t *testing.T, pid int, table, inode string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 9 && f[9] == inode {
			return f[1], true
		}
	}
	return "", false
}

// The server listens on the one address it is told and nowhere else, and
// its periodic and final output show what it refused.
func TestServerListensOnlyWhereToldAndReportsRefusals(t *testing.T) {
	cmd := gsperf("server", "-bind", "127.0.0.1:0", "-max-flows", "2", "-report", "20ms")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func(want string) string {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("gsperf server exited before saying %q", want)
				}
				if strings.Contains(l, want) {
					return l
				}
			case <-timeout:
				t.Fatalf("gsperf server did not say %q", want)
			}
		}
	}
	l := next("serving on 127.0.0.1:")
	port, err := strconv.Atoi(strings.TrimSuffix(strings.Fields(strings.SplitAfter(l, "127.0.0.1:")[1])[0], ";"))
	if err != nil {
		t.Fatalf("%q: %v", l, err)
	}
	pid := cmd.Process.Pid
	inodes := sockets(t, pid)
	if len(inodes) != 1 {
		t.Fatalf("gsperf server has %d sockets open (%v), want 1", len(inodes), inodes)
	}
	local, ok := procNet(t, pid, "udp", inodes[0])
	if want := fmt.Sprintf("0100007F:%04X", port); !ok || local != want {
		t.Fatalf("the socket is at %q in /proc/net/udp (found %v), want %s", local, ok, want)
	}
	for _, table := range []string{"udp6", "tcp", "tcp6", "raw", "raw6"} {
		if _, ok := procNet(t, pid, table, inodes[0]); ok {
			t.Fatalf("the socket is in /proc/net/%s too", table)
		}
	}

	c, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("junk"))
	for flow := uint64(1); flow <= 3; flow++ { // three incomplete flows, one past -max-flows 2
		b := make([]byte, proto.HeaderLen+100)
		(&proto.Header{Type: proto.TypeData, Flow: flow, Size: 1 << 20}).Encode(b)
		c.Write(b)
	}
	if l := next("refused: 1 new flows"); !strings.HasPrefix(l, "gsperf server so far: ") {
		t.Errorf("periodic line %q", l)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("gsperf server: %v", err)
	}
	out := stdout.String()
	var fl, cm, by, co uint64
	if _, err := fmt.Sscanf(out, "gsperf server: %d flows, %d complete, %d bytes, %d corrupt segments", &fl, &cm, &by, &co); err != nil || fl != 2 || cm != 0 {
		t.Errorf("final output %q: %v", out, err)
	}
	for _, want := range []string{"refused: 1 new flows", "1 malformed datagrams", "2 flows active"} {
		if !strings.Contains(out, want) {
			t.Errorf("final output %q does not say %q", out, want)
		}
	}
}

// TestBFCSwitchFlag: -bfc-switch takes a unicast MAC and refuses the rest.
func TestBFCSwitchFlag(t *testing.T) {
	if m, err := switchMAC("02:67:73:00:01:02"); err != nil || m != [6]byte{2, 0x67, 0x73, 0, 1, 2} {
		t.Fatalf("%x %v", m, err)
	}
	for _, bad := range []string{"01:80:c2:00:00:0e", "00:00:00:00:00:00", "nope", "02:00:00:00:00:00:00:01"} {
		if _, err := switchMAC(bad); err == nil || !strings.Contains(err.Error(), "-bfc-switch") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestPFCFlags: -pfc makes the host's PFC state for any mode a gate can
// hold (xpass refused), its link at -pace (else -rate) divided by K, its
// priority -pfc-priority (0 by default: gsperf's DSCP 0), its switch
// -pfc-switch (else the default gateway's); bad values name their flag.
func TestPFCFlags(t *testing.T) {
	if c := planOf(t, "-pace", "100Gbit"); c.pfc != nil || c.params["pfc"] != "" {
		t.Fatalf("without -pfc: host %v, params %v", c.pfc, c.params)
	}
	c := planOf(t, "-pfc", "-rate", "50Gbit", "-pace", "100Gbit", "-timescale", "10000")
	if c.pfc == nil || c.pfcConfig.RateBits != 10e6 || c.pfcConfig.Priority != 0 || c.pfcConfig.Switch != [6]byte{} || c.pfcConfig.Gateway == nil {
		t.Fatalf("-pfc -pace 100Gbit at K 10000: host %v, config %+v (want 10 Mbit/s, priority 0, the gateway's MAC)", c.pfc, c.pfcConfig)
	}
	if c.params["pfc"] != "true" || c.params["pfc_priority"] != "0" {
		t.Errorf("params %v", c.params)
	}
	if c := planOf(t, "-pfc", "-rate", "100Gbit", "-timescale", "10000"); c.pfcConfig.RateBits != 10e6 {
		t.Errorf("-pfc -rate 100Gbit, unpaced, at K 10000: link %d bit/s, want 10 Mbit/s", c.pfcConfig.RateBits)
	}
	c = planOf(t, "-pfc", "-pfc-priority", "3", "-pfc-switch", "02:67:73:00:01:02")
	if c.pfcConfig.Priority != 3 || c.pfcConfig.Switch != [6]byte{2, 0x67, 0x73, 0, 1, 2} || c.params["pfc_priority"] != "3" {
		t.Errorf("-pfc-priority 3 -pfc-switch: %+v", c.pfcConfig)
	}
	for _, mode := range []string{"plain", "dctcp", "pfabric", "sfc", "bfc"} {
		if c := planOf(t, "-pfc", "-mode", mode); c.pfc == nil {
			t.Errorf("-pfc -mode %s: no PFC host", mode)
		}
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"-pfc", "-mode", "xpass"}, "-pfc: -mode xpass"},
		{[]string{"-pfc", "-pfc-priority", "8"}, "-pfc-priority: 8"},
		{[]string{"-pfc", "-pfc-priority", "-1"}, "-pfc-priority: -1"},
		{[]string{"-pfc", "-pfc-switch", "01:80:c2:00:00:01"}, "-pfc-switch"},
		{[]string{"-pfc", "-pfc-switch", "nope"}, "-pfc-switch"},
	} {
		_, err := parseClient(append([]string{"-to", "127.0.0.1:5500", "-src", "h1"}, bad.args...))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v, want an error saying %q", bad.args, err, bad.want)
		}
	}
}

// TestPFCGateInFrontOfThePacer: the flows of a -pfc client ask the mode's
// gate (bfc's, when it has one), then PFC's, then the pacer: a pause of
// the host's priority from its switch holds them, a resume wakes and
// releases them, and the run's params count both.
func TestPFCGateInFrontOfThePacer(t *testing.T) {
	sw := [6]byte{2, 0x67, 0x73, 0, 1, 2}
	c := planOf(t, "-pfc", "-pfc-switch", "02:67:73:00:01:02", "-pace", "100Gbit", "-timescale", "10000")
	pacer := transport.NewPacer(c.plan.Pace, udp.Overhead, 4*(udp.MSS+udp.Overhead))
	var order []string
	var inner transport.Gate
	outer := func(id uint64, cfg *transport.Config, g transport.Gate, wake func()) (transport.Gate, func()) {
		inner = g
		return g, func() { order = append(order, "outer") }
	}
	woken := 0
	g, end := chainHooks(outer, c.pfc.FlowHook)(1, &transport.Config{}, pacer, func() { woken++ })
	if inner == nil || inner == transport.Gate(pacer) {
		t.Fatalf("the mode's hook was handed %v, want PFC's gate in front of the pacer", inner)
	}
	if ok, _ := g.Allow(1, 1000); !ok {
		t.Fatal("closed before any pause")
	}
	frame := func(quanta uint16) []byte {
		b := make([]byte, wire.MinFrameLen)
		if _, err := wire.BuildPFC(b, sw, wire.PFC{Enable: 1, Time: [8]uint16{0: quanta}}); err != nil {
			t.Fatal(err)
		}
		return b
	}
	c.pfc.Handle(frame(65535))
	if ok, next := g.Allow(2, 1000); ok || next <= 2 {
		t.Fatalf("paused: allow %v, ask again at %d", ok, next)
	}
	c.pfc.Handle(frame(0))
	if ok, _ := g.Allow(3, 1000); !ok || woken != 1 {
		t.Fatalf("resumed: allow %v, woken %d times", ok, woken)
	}
	end()
	params := map[string]string{}
	pfcFinish(c.pfc, c.clock.Scale, "h1", params)
	if params["pfc_pauses"] != "1" || params["pfc_resumes"] != "1" || params["pfc_held"] != "1" || params["pfc_frames"] != "2" || params["pfc_foreign"] != "0" {
		t.Errorf("params %v", params)
	}
	if len(order) != 1 {
		t.Errorf("ends called: %v", order)
	}
	if h := chainHooks(nil, c.pfc.FlowHook); h == nil {
		t.Error("chainHooks(nil, pfc) is nil")
	}
}
