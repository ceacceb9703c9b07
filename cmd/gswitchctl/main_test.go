package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/gswitch/gswitch/topo"
)

// capture runs f with os.Stdout and os.Stderr sent to buffers.
func capture(t *testing.T, f func() int) (code int, stdout, stderr string) {
	t.Helper()
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outW, errW
	var ob, eb bytes.Buffer
	done := make(chan struct{}, 2)
	go func() { io.Copy(&ob, outR); done <- struct{}{} }()
	go func() { io.Copy(&eb, errR); done <- struct{}{} }()
	code = f()
	os.Stdout, os.Stderr = oldOut, oldErr
	outW.Close()
	errW.Close()
	<-done
	<-done
	return code, ob.String(), eb.String()
}

func TestDispatch(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage: gswitchctl COMMAND"},
		{[]string{"help"}, 0, "topo"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"topo"}, 2, "usage: gswitchctl topo"},
		{[]string{"topo", "sideways"}, 2, `unknown subcommand "sideways"`},
		{[]string{"topo", "show"}, 2, "want 1 argument(s), got 0"},
		{[]string{"topo", "exec", "f.yaml", "h1"}, 2, "no command"},
	} {
		code, out, errs := capture(t, func() int { return dispatch(c.args) })
		if code != c.code || !strings.Contains(out+errs, c.want) {
			t.Errorf("gswitchctl %v: exit %d, output %q; want exit %d and %q", c.args, code, out+errs, c.code, c.want)
		}
	}
}

func TestParseFlagsAnywhere(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	state := fs.String("state", "", "")
	pos, err := parse(fs, []string{"a.yaml", "-state", "/tmp/s", "h1"})
	if err != nil || !slices.Equal(pos, []string{"a.yaml", "h1"}) || *state != "/tmp/s" {
		t.Errorf("parse: %v %v state %q", pos, err, *state)
	}
}

func TestTargetsAndShow(t *testing.T) {
	code, out, errs := capture(t, func() int { return dispatch([]string{"topo", "targets", "../../topologies/bfc-line.yaml"}) })
	var targets []struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &targets) != nil || len(targets) != 3 || targets[1].Targets[0] != "127.0.0.1:9502" || targets[1].Labels["switch"] != "sw2" {
		t.Errorf("targets: exit %d %s %s", code, out, errs)
	}
	code, out, _ = capture(t, func() int {
		return dispatch([]string{"topo", "show", "-configs", "../../topologies/parking-lot.yaml"})
	})
	if code != 0 || !strings.Contains(out, "route 10.3.1.0/24") || !strings.Contains(out, "--- sw3.yaml") {
		t.Errorf("show: exit %d\n%s", code, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("name: b\nswitches: {s1: {}}\nhosts: {h1: {addr: 10.0.0.1/24}}\nlinks: [{a: h1, b: leaf9}]\n"), 0o644)
	code, _, errs = capture(t, func() int { return dispatch([]string{"topo", "show", bad}) })
	if code != 1 || !strings.Contains(errs, `links[0].b: "leaf9" is not a switch or host`) {
		t.Errorf("bad file: exit %d %q", code, errs)
	}
}

// TestUpExecDown runs the built gswitchctl (with gswitchd next to it) on
// an l2 topology: up, exec ping, down.
func TestUpExecDown(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces, veths and gswitchd processes")
	}
	bin := t.TempDir()
	for _, pkg := range []string{"gswitchctl", "gswitchd"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, pkg), "github.com/gswitch/gswitch/cmd/"+pkg).CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", pkg, err, out)
		}
	}
	b := make([]byte, 3)
	rand.Read(b)
	name := "c" + hex.EncodeToString(b)[:5]
	file := filepath.Join(t.TempDir(), "line.yaml")
	os.WriteFile(file, []byte(fmt.Sprintf(`
name: %s
mode: l2
metrics_base: %d
defaults: {switch: {workers: 1, frames: 4096}}
switches: {s1: {}, s2: {}}
hosts: {h1: {addr: 10.78.0.1/24}, h2: {addr: 10.78.0.2/24}}
links: [{a: h1, b: s1}, {a: s1, b: s2, rate: 100Mbit}, {a: s2, b: h2}]
`, name, 40000+int(b[0])*40)), 0o644)
	state := t.TempDir()
	ctl := func(args ...string) (string, error) {
		out, err := exec.Command(filepath.Join(bin, "gswitchctl"), append([]string{"topo"}, args...)...).CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() { ctl("down", file, "-state", state) })
	out, err := ctl("up", file, "-state", state)
	if err != nil || !strings.Contains(out, "topology "+name+" is up") {
		t.Fatalf("up: %v\n%s", err, out)
	}
	if out, err := ctl("exec", file, "h1", "-state", state, "--", "ping", "-c", "2", "-W", "2", "10.78.0.2"); err != nil {
		t.Errorf("exec ping: %v\n%s", err, out)
	}
	if _, err := ctl("exec", file, "h1", "-state", state, "--", "sh", "-c", "exit 7"); err == nil || err.(*exec.ExitError).ExitCode() != 7 {
		t.Errorf("exec did not pass the exit code on: %v", err)
	}
	if out, err := ctl("up", file, "-state", state); err == nil || !strings.Contains(out, "clashes with what exists") {
		t.Errorf("second up: %v\n%s", err, out)
	}
	// A gswitchd killed with SIGKILL leaves its control socket behind; down removes it.
	var st struct {
		Processes []struct {
			Switch string `json:"switch"`
			PID    int    `json:"pid"`
		} `json:"processes"`
	}
	if b, err := os.ReadFile(filepath.Join(state, name, "state.json")); err != nil || json.Unmarshal(b, &st) != nil {
		t.Fatalf("state: %v", err)
	}
	for _, p := range st.Processes {
		if p.Switch == "s1" {
			syscall.Kill(p.PID, syscall.SIGKILL)
		}
	}
	if out, err := ctl("down", file, "-state", state); err != nil || !strings.Contains(out, "is down") {
		t.Fatalf("down: %v\n%s", err, out)
	}
	if _, err := os.Stat("/run/netns/" + name + "-h1"); err == nil {
		t.Errorf("namespace %s-h1 left after down", name)
	}
	for _, sw := range []string{"s1", "s2"} {
		if _, err := os.Lstat(topo.SocketPath(name, sw)); err == nil {
			t.Errorf("control socket of %s left after down", sw)
		}
	}
	if out, err := ctl("exec", file, "h1", "-state", state, "--", "true"); err == nil || !strings.Contains(out, "is not up") {
		t.Errorf("exec after down: %v\n%s", err, out)
	}
}

// TestUpRefusesBadFiles: topo up on a bad file fails with the field named
// and makes nothing: no state directory, no namespace (it fails while
// planning, so it needs no root).
func TestUpRefusesBadFiles(t *testing.T) {
	b := make([]byte, 3)
	rand.Read(b)
	name := "b" + hex.EncodeToString(b)[:5]
	base := `name: ` + name + `
switches: {leaf1: {}, leaf2: {}, spine1: {}}
hosts: {h1: {addr: 10.1.1.1/24}, h2: {addr: 10.2.1.1/24}}
links:
  - {a: h1, b: leaf1}
  - {a: h2, b: leaf2}
  - {a: leaf1, b: spine1}
  - {a: leaf2, b: spine1}
`
	for _, c := range []struct {
		what  string
		edits []string // old, new, ...
		want  string
	}{
		{"unknown switch", []string{"{a: leaf2, b: spine1}", "{a: leaf2, b: spine9}"}, `links[3].b: "spine9" is not a switch or host`},
		{"port used twice", []string{"{a: leaf1, b: spine1}", "{a: leaf1, b: spine1, name_a: h1}"}, `links[2].name_a: port name "h1" is already used on switch leaf1 by links[0]`},
		{"missing route", []string{"  - {a: leaf2, b: spine1}\n", ""}, "hosts.h2: no path from leaf1 to 10.2.1.0/24 (switch leaf2 serves it; link the switches)"},
		{"address clash", []string{"h2: {addr: 10.2.1.1/24}", "h2: {addr: 10.1.1.1/24}"}, "hosts.h2.addr: 10.1.1.1 is already the address of hosts.h1"},
		{"one subnet for two host ports", []string{"h2: {addr: 10.2.1.1/24}", "h2: {addr: 10.2.1.1/24}, h3: {addr: 10.1.1.2/24}", "links:\n", "links:\n  - {a: h3, b: leaf1}\n"},
			"hosts.h3.addr: 10.1.1.2/24 shares 10.1.1.0/24 with h1 on leaf1: in l3 mode each host port is a subnet of its own (give h3 e.g. 10.1.2.2/24)"},
	} {
		t.Run(c.what, func(t *testing.T) {
			src := base
			for i := 0; i < len(c.edits); i += 2 {
				if !strings.Contains(src, c.edits[i]) {
					t.Fatalf("%q not in the file", c.edits[i])
				}
				src = strings.Replace(src, c.edits[i], c.edits[i+1], 1)
			}
			file := filepath.Join(t.TempDir(), "bad.yaml")
			os.WriteFile(file, []byte(src), 0o644)
			state := t.TempDir()
			code, _, errs := capture(t, func() int { return dispatch([]string{"topo", "up", file, "-state", state, "-no-switches"}) })
			if code != 1 || !strings.Contains(errs, c.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, errs, c.want)
			}
			if ents, _ := os.ReadDir(state); len(ents) != 0 {
				t.Errorf("state directory not empty: %v", ents)
			}
			if _, err := os.Stat("/run/netns/" + name + "-h1"); err == nil {
				t.Errorf("namespace %s-h1 made", name)
			}
		})
	}
}

// TestDownRemovesStaleSockets: after down, a switch's control socket that
// nobody answers on (its gswitchd was killed) is removed; anything else at
// a switch's socket path stays. No root: only the plan is used.
func TestDownRemovesStaleSockets(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "two.yaml")
	os.WriteFile(file, []byte(fmt.Sprintf(`
name: two
mode: l2
switches: {s1: {config: {control: {socket: %s/s1.sock}}}, s2: {config: {control: {socket: %s/s2.sock}}}}
hosts: {h1: {addr: 10.78.0.1/24}, h2: {addr: 10.78.0.2/24}}
links: [{a: h1, b: s1}, {a: s1, b: s2}, {a: s2, b: h2}]
`, dir, dir)), 0o644)
	tp, err := topo.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "s1.sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close() // a socket nobody answers on, as a killed gswitchd leaves
	os.WriteFile(filepath.Join(dir, "s2.sock"), []byte("not a socket"), 0o644)
	code, stdout, stderr := capture(t, func() int { removeStaleSockets(tp, topo.UpOptions{StateDir: dir}); return 0 })
	if code != 0 || !strings.Contains(stdout, "removed switch s1's stale control socket "+dir+"/s1.sock") || !strings.Contains(stderr, "switch s2: control.socket: "+dir+"/s2.sock is a regular file") {
		t.Fatalf("stdout %q stderr %q", stdout, stderr)
	}
	if _, err := os.Lstat(filepath.Join(dir, "s1.sock")); err == nil {
		t.Error("the stale socket is still there")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "s2.sock")); err != nil || string(b) != "not a socket" {
		t.Errorf("the file at s2's path did not survive: %v", err)
	}
}
