package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/sched"
	"github.com/gswitch/gswitch/units"
)

// TestCompleteFillsInAsParse: a config built in Go and completed holds
// what Parse makes of a file setting the same keys, but for the zeros that
// mean something (alpha, catchup, spin, move_hold, rtt, capture_memory),
// which the file sets explicitly here.
func TestCompleteFillsInAsParse(t *testing.T) {
	parsed, err := Parse([]byte(`
ports:
  - {interface: mem0, name: a, rtt: 0}
  - {interface: mem1, name: b, rate: 1Gbit, scheduler: drr, queues: 8, rtt: 0, mechanisms: {bfc: {}}}
alpha: 0
catchup: 0
spin: 0
mac_table: {move_hold: 0s}
control: {capture_memory: 0}
`))
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := mech.Lookup("bfc")
	built := Config{Ports: []Port{{Name: "a"}, {Name: "b", Rate: 1e9, Scheduler: "drr", Queues: 8,
		Mechanisms: Mechanisms{{Name: "bfc", Config: spec.Config()}}}}}
	if err := built.Complete(); err != nil {
		t.Fatal(err)
	}
	for i := range built.Ports {
		if built.Ports[i].Interface != "" {
			t.Fatalf("ports[%d]: interface %q left behind", i, built.Ports[i].Interface)
		}
		built.Ports[i].Interface = parsed.Ports[i].Interface
	}
	if ch := built.Changes(parsed); len(ch) > 0 {
		t.Errorf("completed config differs from the parsed one in %v", ch)
	}
	for i := range built.Ports {
		if ch := built.Ports[i].Changes(&parsed.Ports[i]); len(ch) > 0 {
			t.Errorf("ports[%d]: completed differs from parsed in %v", i, ch)
		}
	}
	p := built.Ports[1]
	if p.Buffer != DefaultBuffer || p.Quantum != 1514 || p.Classify != sched.ByQueue || built.SwitchID != DefaultSwitchID ||
		built.MACTable.Aging != units.Duration(DefaultAging) || built.Ports[0].Scheduler != sched.DefaultScheduler || built.Ports[0].Queues != 1 {
		t.Fatalf("not filled in: %+v, port b %+v", built, p)
	}
}

// TestCompleteLeavesAParsedConfig: completing what Parse returned changes
// nothing.
func TestCompleteLeavesAParsedConfig(t *testing.T) {
	c, err := Parse([]byte(`
ports:
  - {interface: veth0, rate: 10Gbit, scheduler: pfabric, mechanisms: {pfabric: {}}, addr: 10.1.0.254/24}
  - {interface: veth1, mac: "02:00:00:00:00:01", addr: [10.255.0.0/31]}
routes: [{prefix: 10.2.0.0/24, via: [10.255.0.1]}]
neighbors: [{ip: 10.255.0.1, mac: "02:00:00:00:00:02"}]
`))
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Parse([]byte(`
ports:
  - {interface: veth0, rate: 10Gbit, scheduler: pfabric, mechanisms: {pfabric: {}}, addr: 10.1.0.254/24}
  - {interface: veth1, mac: "02:00:00:00:00:01", addr: [10.255.0.0/31]}
routes: [{prefix: 10.2.0.0/24, via: [10.255.0.1]}]
neighbors: [{ip: 10.255.0.1, mac: "02:00:00:00:00:02"}]
`))
	if err := again.Complete(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, again) {
		t.Fatalf("Complete changed a parsed config:\n%+v\n%+v", c, again)
	}
}

// TestCompleteChecks: Complete runs Parse's checks, whose errors name the
// key.
func TestCompleteChecks(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "ports: no ports"},
		{Config{Ports: []Port{{Name: "a", Scheduler: "nope"}}}, "ports[0].scheduler"},
		{Config{Ports: []Port{{Name: "a", Buffer: 100}}}, "ports[0].buffer"},
		{Config{Ports: []Port{{Name: "a"}, {Name: "a"}}}, "ports[1].name"},
		{Config{Ports: []Port{{Name: "a", Scheduler: "pfabric"}}}, "ports[0].scheduler"},
		{Config{Ports: []Port{{Name: "a"}}, CatchUp: units.Duration(2e9)}, "catchup"},
	} {
		if err := c.cfg.Complete(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error about %s", c.cfg, err, c.want)
		}
	}
}

// TestCompleteChecksRanges: a config built in Go gets the bounds a file
// gets (the range tags), named by the key's path.
func TestCompleteChecksRanges(t *testing.T) {
	c := Config{Ports: []Port{{Name: "a"}, {Name: "b", BufferPackets: -1}}}
	err := c.Complete()
	if err == nil || !strings.Contains(err.Error(), "ports[1].buffer_packets: -1 out of range [0, 4194304]") {
		t.Fatalf("error %v", err)
	}
}
