package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// designFile is a topology with designs whose mechanisms gswitchd knows;
// "broken" gives ecn a key it does not have.
const designFile = `
name: dz
metrics_base: 9990
defaults:
  link: {rate: 10Gbit, delay: 1us}
  port: {buffer: 385KB}
transport: {mode: plain}
designs:
  fifo:
    port: {mechanisms: {}}
  dctcp:
    port: {mechanisms: {ecn: {k_packets: 65}}}
    transport: {mode: dctcp}
  dcqcn-pfc:
    port: {mechanisms: {ecn: {mode: red}, pfc: {}}}
    transport: {mode: dcqcn, pfc: true}
  expresspass:
    port: {mechanisms: {expresspass: {credit_queue: 8}}}
    transport: {mode: xpass, server_args: [-xp-link, 10Gbit]}
  broken:
    port: {mechanisms: {ecn: {k_bananas: 3}}}
switches: {sw1: {}, sw2: {}}
hosts:
  s1: {addr: 10.1.1.1/24}
  s2: {addr: 10.1.2.1/24}
  r1: {addr: 10.2.1.1/24, transport: {args: [-report, 1s]}}
links:
  - {a: s1, b: sw1}
  - {a: s2, b: sw1}
  - {a: sw1, b: sw2}
  - {a: r1, b: sw2}
`

func writeTopo(t *testing.T, src string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "designs.yaml")
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestTopoCheck(t *testing.T) {
	f := writeTopo(t, designFile)
	code, out, errs := capture(t, func() int { return dispatch([]string{"topo", "check", f}) })
	if code != 1 {
		t.Errorf("exit %d, want 1 (design broken)", code)
	}
	for _, want := range []string{
		f + ": topology dz, mode l3: 2 switches, 3 hosts, 4 links\n",
		"  design       gswitchd configs     mechanisms   hosts' gsperf\n",
		"  (none)       valid                none         -mode plain: s1, s2; -mode plain -report 1s: r1\n",
		"  fifo         valid                none         -mode plain: s1, s2; -mode plain -report 1s: r1\n",
		"  dctcp        valid                ecn          -mode dctcp: s1, s2; -mode dctcp -report 1s: r1\n",
		"  dcqcn-pfc    valid                ecn, pfc     -mode dcqcn -pfc (server -mode dcqcn): s1, s2; -mode dcqcn -pfc -report 1s (server -mode dcqcn): r1\n",
		"  expresspass  valid                expresspass  -mode xpass (server -mode xpass -xp-link 10Gbit): s1, s2; -mode xpass -report 1s (server -mode xpass -xp-link 10Gbit): r1\n",
		"  broken       REFUSED (see below)  ecn          -mode plain: s1, s2; -mode plain -report 1s: r1\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check's output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, f+": designs.broken: switch sw1: gswitchd would refuse its config: ") || !strings.Contains(errs, `unknown key "k_bananas" in ports[0].mechanisms.ecn`) ||
		!strings.Contains(errs, "(the config: gswitchctl topo show "+f+" -design broken -configs)") || strings.Contains(errs, "designs.dctcp") {
		t.Errorf("check's errors: %s", errs)
	}
	// Without the broken design every config is valid.
	f = writeTopo(t, strings.Replace(designFile, "  broken:\n    port: {mechanisms: {ecn: {k_bananas: 3}}}\n", "", 1))
	code, out, errs = capture(t, func() int { return dispatch([]string{"topo", "check", f}) })
	if code != 0 || errs != "" || !strings.Contains(out, "bring it up under a design: gswitchctl topo up "+f+" -design NAME") {
		t.Errorf("exit %d\n%s\n%s", code, out, errs)
	}
	code, out, _ = capture(t, func() int { return dispatch([]string{"topo", "check", "../../topologies/leaf-spine.yaml"}) })
	if code != 0 || !strings.Contains(out, "no designs: the file runs as written") {
		t.Errorf("check of a file without designs: exit %d\n%s", code, out)
	}
}

func TestTopoDesigns(t *testing.T) {
	f := writeTopo(t, designFile)
	code, out, errs := capture(t, func() int { return dispatch([]string{"topo", "designs", f}) })
	if code != 0 || out != "fifo\ndctcp\ndcqcn-pfc\nexpresspass\nbroken\n" || errs != "" {
		t.Errorf("exit %d, %q %q", code, out, errs)
	}
	code, out, _ = capture(t, func() int { return dispatch([]string{"topo", "designs", "../../topologies/leaf-spine.yaml"}) })
	if code != 0 || out != "" {
		t.Errorf("a file without designs: exit %d, %q", code, out)
	}
}

// TestTopoTransport: a host's gsperf flags, one per line, under -design,
// else the design the state file records, else the file's defaults.
func TestTopoTransport(t *testing.T) {
	f := writeTopo(t, designFile)
	state := t.TempDir()
	run := func(args ...string) (int, string, string) {
		return capture(t, func() int {
			return dispatch(append([]string{"topo", "transport", f, "-state", state}, args...))
		})
	}
	for _, c := range []struct {
		args []string
		out  string
	}{
		{[]string{"s1"}, "-mode\nplain\n"},
		{[]string{"r1"}, "-mode\nplain\n-report\n1s\n"},
		{[]string{"s1", "-design", "dcqcn-pfc"}, "-mode\ndcqcn\n-pfc\n"},
		{[]string{"--design", "dcqcn-pfc", "s1"}, "-mode\ndcqcn\n-pfc\n"},
		{[]string{"-design", "expresspass", "r1", "-server"}, "-mode\nxpass\n-xp-link\n10Gbit\n"},
		{[]string{"-design", "dctcp", "-server", "r1"}, "-mode\nplain\n"},
	} {
		code, out, errs := run(c.args...)
		if code != 0 || out != c.out || errs != "" {
			t.Errorf("transport %v: exit %d, %q %q; want %q", c.args, code, out, errs, c.out)
		}
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"s9"}, 1, f + `: no host "s9" in topology dz (its hosts: s1, s2, r1)`},
		{[]string{"s1", "-design", "dcqnc"}, 1, f + ": designs.dcqnc: no such design (the file's designs: fifo, dctcp, dcqcn-pfc, expresspass, broken)"},
		{[]string{}, 2, "want FILE HOST, got 1 argument(s)"},
	} {
		code, out, errs := run(c.args...)
		if code != c.code || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("transport %v: exit %d, %q %q; want %d and %q", c.args, code, out, errs, c.code, c.want)
		}
	}

	// Up under dcqcn-pfc (as the state file records it): without -design
	// transport answers for the running fabric.
	dir := filepath.Join(state, "dz")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "state.json"), []byte(`{"topology": "dz", "design": "dcqcn-pfc", "complete": true}`), 0o644)
	if code, out, errs := run("s2"); code != 0 || out != "-mode\ndcqcn\n-pfc\n" || errs != "" {
		t.Errorf("up under dcqcn-pfc: exit %d, %q %q", code, out, errs)
	}
	if code, out, errs := run("s2", "-design", "dctcp"); code != 0 || out != "-mode\ndctcp\n" || !strings.Contains(errs, "note: topology dz is up under design dcqcn-pfc, not design dctcp") {
		t.Errorf("-design other than the running one: exit %d, %q %q", code, out, errs)
	}
	if code, out, errs := run("s2", "-design", ""); code != 0 || out != "-mode\nplain\n" || !strings.Contains(errs, "up under design dcqcn-pfc, not the file's defaults") {
		t.Errorf("-design '': exit %d, %q %q", code, out, errs)
	}
	os.WriteFile(filepath.Join(dir, "state.json"), []byte(`{"topology": "dz", "design": "gone"}`), 0o644)
	if code, _, errs := run("s2"); code != 1 || !strings.Contains(errs, "topology dz is up under design gone: designs.gone: no such design") || !strings.Contains(errs, "(give -design)") {
		t.Errorf("up under a design the file lost: exit %d, %q", code, errs)
	}
	os.WriteFile(filepath.Join(dir, "state.json"), []byte(`{"topology": "dz"}`), 0o644)
	if code, out, _ := run("s2"); code != 0 || out != "-mode\nplain\n" {
		t.Errorf("up without a design: exit %d, %q", code, out)
	}
}

func TestTopoShowDesign(t *testing.T) {
	f := writeTopo(t, designFile)
	code, out, errs := capture(t, func() int { return dispatch([]string{"topo", "show", f, "-design", "dctcp", "-configs"}) })
	if code != 0 || errs != "" {
		t.Fatalf("exit %d %s", code, errs)
	}
	for _, want := range []string{"design dctcp (of fifo, dctcp, dcqcn-pfc, expresspass, broken); mechanisms: ecn", "gsperf -mode dctcp", "k_packets: 65"} {
		if !strings.Contains(out, want) {
			t.Errorf("show -design dctcp lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = capture(t, func() int { return dispatch([]string{"topo", "show", f}) })
	if code != 0 || !strings.Contains(out, "design: none, the file's defaults as written") || strings.Contains(out, "k_packets") {
		t.Errorf("show without -design: exit %d\n%s", code, out)
	}
	code, _, errs = capture(t, func() int {
		return dispatch([]string{"topo", "show", "../../topologies/leaf-spine.yaml", "-design", "fifo"})
	})
	if code != 1 || !strings.Contains(errs, "designs.fifo: no such design: the file has no designs:") {
		t.Errorf("show -design of a file without designs: exit %d %s", code, errs)
	}
}

// TestUpRefusesUnknownDesign: an unknown design fails up before anything
// is made. (down takes any -design: it removes the same under every one.)
func TestUpRefusesUnknownDesign(t *testing.T) {
	f := writeTopo(t, designFile)
	state := t.TempDir()
	for _, args := range [][]string{
		{"topo", "up", f, "-design", "dcqnc", "-state", state, "-no-switches"},
		{"topo", "show", f, "-design", "dcqnc"},
	} {
		code, _, errs := capture(t, func() int { return dispatch(args) })
		if code != 1 || !strings.Contains(errs, f+": designs.dcqnc: no such design") {
			t.Errorf("%s: exit %d, %q", args[1], code, errs)
		}
		if ents, _ := os.ReadDir(state); len(ents) != 0 {
			t.Errorf("%s: state directory not empty: %v", args[1], ents)
		}
	}
}
