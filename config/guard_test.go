package config

import (
	"strings"
	"testing"
)

// TestSourceGuardDefaults: a routed host port guards its subnets by
// default; an L2 host port and a fabric port guard nothing; what the file
// says is kept.
func TestSourceGuardDefaults(t *testing.T) {
	c, err := Parse([]byte(`
ports:
  - {interface: a, addr: 10.1.0.254/24}
  - {interface: b}
  - {interface: c, addr: 10.255.0.0/31, role: fabric}
  - {interface: d, addr: 10.2.0.254/24, source_guard: binding}
  - {interface: e, source_guard: binding}
  - {interface: f, addr: 10.3.0.254/24, source_guard: off}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []SourceGuard{GuardSubnet, GuardOff, GuardOff, GuardBinding, GuardBinding, GuardOff}
	for i, p := range c.Ports {
		if p.SourceGuard != want[i] {
			t.Errorf("ports[%d] (%s): source_guard %q, want %q", i, p.Interface, p.SourceGuard, want[i])
		}
	}
	g := Config{Ports: []Port{{Addrs: c.Ports[0].Addrs}, {}}}
	if err := g.Complete(); err != nil || g.Ports[0].SourceGuard != GuardSubnet || g.Ports[1].SourceGuard != GuardOff {
		t.Errorf("a config built in Go: %v, %q and %q", err, g.Ports[0].SourceGuard, g.Ports[1].SourceGuard)
	}
}

// TestSourceGuardErrorsNameTheField: an unknown mode, subnet on an L2
// port, and a guard on a fabric port are refused with the field, the value
// and the fix.
func TestSourceGuardErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"{interface: a, source_guard: strict}", `ports[0].source_guard: line 2: "strict" is not a source guard (use off, subnet`},
		{"{interface: a, source_guard: subnet}", "ports[0].source_guard: subnet on an L2 port, which has no subnet of its own (give the port an addr:, or use binding or off)"},
		{"{interface: a, role: fabric, source_guard: binding}", "ports[0].source_guard: binding on a fabric port, which carries every host's addresses (set off"},
	} {
		_, err := Parse([]byte("ports:\n  - " + tc.yaml + "\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
