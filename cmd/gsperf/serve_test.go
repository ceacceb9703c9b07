package main

import (
	"bufio"
	"bytes"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gswitch/gswitch/perf/results"
)

// testServer is a gsperf server process started by startServer.
type testServer struct {
	cmd  *exec.Cmd
	out  bytes.Buffer // its stdout: the summary it prints at exit
	errs *bufio.Reader
	addr string // where it serves
	line string // its start line on stderr
}

// startServer starts `gsperf server -bind 127.0.0.1:0 args...` and reads
// its start line; the process is killed at cleanup if still running.
func startServer(t *testing.T, args ...string) *testServer {
	t.Helper()
	s := &testServer{cmd: gsperf(append([]string{"server", "-bind", "127.0.0.1:0"}, args...)...)}
	s.cmd.Stdout = &s.out
	errPipe, _ := s.cmd.StderrPipe()
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cmd.Process.Kill(); s.cmd.Wait() })
	s.errs = bufio.NewReader(errPipe)
	s.line, _ = s.errs.ReadString('\n')
	if !strings.Contains(s.line, "serving on ") {
		t.Fatalf("server start line %q", s.line)
	}
	s.addr = strings.TrimSuffix(strings.Fields(strings.SplitAfter(s.line, "serving on ")[1])[0], ";")
	return s
}

// stop ends the server as an operator would (SIGTERM) and returns what it
// printed on stdout.
func (s *testServer) stop() string {
	s.cmd.Process.Signal(syscall.SIGTERM)
	io.Copy(io.Discard, s.errs)
	s.cmd.Wait()
	return s.out.String()
}

// runClient runs `gsperf client -to addr -src h1 args... -out FILE` and
// returns the run it wrote and what it printed on stderr; a client that
// fails ends the test with its output.
func runClient(t *testing.T, addr string, args ...string) (*results.Run, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "run.json")
	cl := gsperf(append(append([]string{"client", "-to", addr, "-src", "h1"}, args...), "-out", out)...)
	var stderr bytes.Buffer
	cl.Stderr = &stderr
	stdout, err := cl.Output()
	if err != nil {
		t.Fatalf("client: %v\n%s\n%s", err, stdout, stderr.String())
	}
	run, err := results.ReadJSON(out)
	if err != nil {
		t.Fatal(err)
	}
	return run, stderr.String()
}
