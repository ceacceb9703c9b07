package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTopoMachines: on a file over two machines, up and down want
// -machine and make nothing without it; up on a machine that does not hold
// the underlay address says so and makes nothing; show -machine, check and
// targets -machine say what each machine holds. No root: each refusal
// comes before anything is made.
func TestTopoMachines(t *testing.T) {
	b := make([]byte, 3)
	rand.Read(b)
	name := "x" + hex.EncodeToString(b)[:5]
	file := filepath.Join(t.TempDir(), "two.yaml")
	os.WriteFile(file, []byte(fmt.Sprintf(`
name: %s
metrics_base: %d
machines:
  m1: {underlay: 198.51.100.77}
  m2: {underlay: 198.51.100.78}
switches: {sw1: {}, sw2: {machine: m2}}
hosts: {h1: {addr: 10.1.1.1/24}, h2: {addr: 10.2.1.1/24, machine: m2}}
links: [{a: h1, b: sw1}, {a: sw1, b: sw2, rate: 1Gbit}, {a: h2, b: sw2}]
`, name, 40000+int(b[0])*40)), 0o644)
	state := t.TempDir()
	for _, sub := range []string{"up", "down"} {
		code, _, errs := capture(t, func() int { return dispatch([]string{"topo", sub, file, "-state", state}) })
		if code != 1 || !strings.Contains(errs, "topology "+name+" spans machines m1, m2") || !strings.Contains(errs, "-machine NAME") {
			t.Errorf("%s without -machine: exit %d, %q", sub, code, errs)
		}
	}
	code, _, errs := capture(t, func() int { return dispatch([]string{"topo", "up", file, "-state", state, "-machine", "m3"}) })
	if code != 1 || !strings.Contains(errs, `machine "m3": not a machine of topology `+name+" (its machines: m1, m2)") {
		t.Errorf("up -machine m3: exit %d, %q", code, errs)
	}
	if os.Geteuid() == 0 {
		// This machine holds neither underlay address: up refuses before making anything.
		code, _, errs = capture(t, func() int {
			return dispatch([]string{"topo", "up", file, "-state", state, "-machine", "m1", "-no-switches"})
		})
		if code != 1 || !strings.Contains(errs, "machine m1 cannot tunnel to the others; nothing was changed") ||
			!strings.Contains(errs, "links[1]: machines.m1.underlay: 198.51.100.77 is no address of this machine") {
			t.Errorf("up -machine m1 on a machine without its address: exit %d, %q", code, errs)
		}
	}
	if ents, _ := os.ReadDir(state); len(ents) != 0 {
		t.Errorf("state directory not empty: %v", ents)
	}
	if _, err := os.Stat("/run/netns/" + name + "-h1"); err == nil {
		t.Errorf("namespace %s-h1 made", name)
	}

	code, out, errs := capture(t, func() int { return dispatch([]string{"topo", "show", file, "-machine", "m2"}) })
	if code != 0 || !strings.Contains(out, "machine m2 (underlay 198.51.100.78): 1 switches, 1 hosts, 2 links (1 of them tunnels") ||
		!strings.Contains(out, name+"-x1 (stitch, tunnel to sw1 on m1)") || strings.Contains(out, "h1 ") {
		t.Errorf("show -machine m2: exit %d, %q %q", code, out, errs)
	}
	code, out, errs = capture(t, func() int { return dispatch([]string{"topo", "check", file}) })
	if code != 0 || !strings.Contains(out, "machines (each brings up its own part") || !strings.Contains(out, "tunnels (VXLAN over IPv4") ||
		!strings.Contains(out, "the underlay's at least 1554") {
		t.Errorf("check: exit %d, %q %q", code, out, errs)
	}
	code, out, _ = capture(t, func() int { return dispatch([]string{"topo", "targets", file, "-machine", "m1"}) })
	if code != 0 || !strings.Contains(out, `"machine": "m1"`) || strings.Contains(out, "sw2") {
		t.Errorf("targets -machine m1: exit %d, %q", code, out)
	}
	code, _, errs = capture(t, func() int { return dispatch([]string{"topo", "status", file, "-state", state, "-machine", "m1"}) })
	if code != 1 || !strings.Contains(errs, "topology "+name+" is not up on machine m1") {
		t.Errorf("status of a topology that is not up: exit %d, %q", code, errs)
	}
}
