package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
	if code != 0 || !strings.Contains(out, "route 10.1.3.0/24") || !strings.Contains(out, "--- sw3.yaml") {
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
	if out, err := ctl("down", file, "-state", state); err != nil || !strings.Contains(out, "is down") {
		t.Fatalf("down: %v\n%s", err, out)
	}
	if _, err := os.Stat("/run/netns/" + name + "-h1"); err == nil {
		t.Errorf("namespace %s-h1 left after down", name)
	}
	if out, err := ctl("exec", file, "h1", "-state", state, "--", "true"); err == nil || !strings.Contains(out, "is not up") {
		t.Errorf("exec after down: %v\n%s", err, out)
	}
}
