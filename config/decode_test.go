package config

import (
	"strings"
	"testing"

	"github.com/gswitch/gswitch/mech/bfc"
	"github.com/gswitch/gswitch/mech/sfc"
	"github.com/gswitch/gswitch/sched"
)

// TestUnitErrorsNameKeyAndLine: a bad size, rate or duration, or a list or
// mapping where one belongs, is reported with the key's full path and its
// line, at the top level, in a port and inside a mechanism's keys.
func TestUnitErrorsNameKeyAndLine(t *testing.T) {
	const port0 = "ports:\n  - {interface: a}\n"
	mechPort := func(keys string) string {
		return port0 + "  - interface: b\n    scheduler: drr\n    mechanisms:\n      " + keys + "\n"
	}
	cases := map[string]string{
		// Top level.
		"buffer: lots\n" + port0:           `buffer: line 1: "lots" is not a size (write e.g. 1500, 64KB, 1MiB)`,
		"buffer: [1MB]\n" + port0:          "buffer: line 1: a list is not a size",
		"catchup: 5 ms\n" + port0:          `catchup: line 1: "5 ms" is not a duration (write e.g. 50us, 2ms, 300s)`,
		"spin: {us: 5}\n" + port0:          "spin: line 1: a mapping is not a duration",
		"mac_table:\n  aging: x\n" + port0: `mac_table.aging: line 2: "x" is not a duration`,
		// In a port.
		port0 + "  - {interface: b, rate: 100MB}\n":       `ports[1].rate: line 3: "100MB" is not a rate (write e.g. 100Mbit`,
		port0 + "  - {interface: b, rate: [1Gbit]}\n":     "ports[1].rate: line 3: a list is not a rate",
		port0 + "  - {interface: b, burst: lots}\n":       `ports[1].burst: line 3: "lots" is not a size`,
		port0 + "  - {interface: b, queue_buffer: [1]}\n": "ports[1].queue_buffer: line 3: a list is not a size",
		port0 + "  - {interface: b, delay: 5 us}\n":       `ports[1].delay: line 3: "5 us" is not a duration`,
		port0 + "  - {interface: b, rtt: {a: 1}}\n":       "ports[1].rtt: line 3: a mapping is not a duration",
		// Inside a mechanism's keys.
		mechPort("bfc:\n        hrtt: 5 us"):      `ports[1].mechanisms.bfc.hrtt: line 7: "5 us" is not a duration (write e.g. 50us, 2ms, 300s)`,
		mechPort("bfc:\n        hrtt: [5us]"):     "ports[1].mechanisms.bfc.hrtt: line 7: a list is not a duration",
		mechPort("bfc: {th: lots}"):               `ports[1].mechanisms.bfc.th: line 6: "lots" is not a size`,
		mechPort("bfc: {th_floor: [3028]}"):       "ports[1].mechanisms.bfc.th_floor: line 6: a list is not a size",
		mechPort("sfc: {estimator_rate: fast}"):   `ports[1].mechanisms.sfc.estimator_rate: line 6: "fast" is not a rate`,
		mechPort("sfc: {estimator_rate: {a: 1}}"): "ports[1].mechanisms.sfc.estimator_rate: line 6: a mapping is not a rate",
		mechPort("bfc: {flow_table: lots}"):       `ports[1].mechanisms.bfc.flow_table: line 6: "lots" is not a whole number`,
	}
	for in, want := range cases {
		_, err := Parse([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q:\nerror %v\nwant it to contain %q", in, err, want)
		}
	}
}

// TestShapeAndKeyErrors: values of the wrong shape, repeated keys and bad
// plain values name their key and line.
func TestShapeAndKeyErrors(t *testing.T) {
	cases := map[string]string{
		"workers: lots\nports: [{interface: a}]":                                                     `workers: line 1: "lots" is not a whole number`,
		"busy_poll: often\nports: [{interface: a}]":                                                  `busy_poll: line 1: "often" is not true or false`,
		"ports: [{interface: a, rate: 1Gbit, rate: 2Gbit}]":                                          "ports[0].rate: line 1: given twice (also on line 1)",
		"ports: [{interface: a, role: [fabric]}]":                                                    "ports[0].role: line 1: a list where one value belongs",
		"ports: [{interface: a, role: spine}]":                                                       `ports[0].role: line 1: "spine" is not a role (use host or fabric)`,
		"ports: [{interface: a, classify: tos}]":                                                     `ports[0].classify: line 1: "tos" (use dscp, pcp or queue`,
		"ports: [{interface: a, scheduler: prio, dscp_map: {x: 1}}]":                                 `ports[0].dscp_map.x: line 1: "x" is not a whole number`,
		"ports: [{interface: a, uplink: maybe}]":                                                     `ports[0].uplink: line 1: "maybe" is not true or false`,
		"ports: [{interface: a, scheduler: rsp, mechanisms: {afq: {sketch: [4]}}}]":                  "ports[0].mechanisms.afq.sketch: line 1: a list where a mapping of keys belongs (known keys: cols, rows)",
		"ports: [{interface: a, scheduler: rsp, mechanisms: {afq: {}, afq: {}}}]":                    "ports[0].mechanisms.afq: line 1: listed twice",
		"ports: [{interface: a, addr: 10.1.1.1/24}]\nroutes: [{prefix: 10.2.0/16, via: [10.1.1.2]}]": `routes[0].prefix: line 2: "10.2.0/16" is not a prefix (write e.g. 10.1.2.0/24)`,
		"ports: [{interface: a, addr: 10.1.1.1/24}]\nneighbors: [{ip: 10.1.1.2}]":                    "neighbors[0].mac: missing",
	}
	for in, want := range cases {
		_, err := Parse([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q:\nerror %v\nwant it to contain %q", in, err, want)
		}
	}
}

// TestDefaultsHaveOneOwner: after Parse every field holds the value in
// force; an absent key, null or "" keeps the default, 0 means 0 where the
// key says so, and 0 means the default where the key says that.
func TestDefaultsHaveOneOwner(t *testing.T) {
	c, err := Parse([]byte(`
ports:
  - {interface: a}
  - {interface: b, scheduler: drr, rtt: 0}
  - {interface: c, scheduler: sfq, quantum: 3000, queues: 8}
  - {interface: d, scheduler: drr, mechanisms: {bfc: {}}, uplink: true}
  - {interface: e, scheduler: drr, mechanisms: {bfc: {uplink: false}}, uplink: true}
switch_id: 0
frames: 0
alpha:
catchup: ""
spin: 0
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.SwitchID != DefaultSwitchID || c.Frames != DefaultFrames || c.Alpha != DefaultAlpha || c.CatchUp.D() != DefaultCatchUp || c.Spin != 0 {
		t.Fatalf("switch defaults: %+v", c)
	}
	a, b, s := c.Ports[0], c.Ports[1], c.Ports[2]
	if a.Name != "a" || a.Scheduler != sched.DefaultScheduler || a.Queues != 1 || a.Quantum != 0 || a.Buffer != DefaultBuffer || a.RTT.D() != DefaultRTT || a.Classify != sched.ByDSCP {
		t.Fatalf("port a: %+v", a)
	}
	if b.Quantum != sched.DefaultQuantum || b.Queues != sched.DefaultQueues || b.RTT != 0 {
		t.Fatalf("port b: %+v", b)
	}
	if s.Quantum != 3000 || s.Queues != 8 {
		t.Fatalf("port c: %+v", s)
	}
	// BFC's uplink defaults to the port's; its own key wins.
	if d := c.Ports[3]; d.Classify != sched.ByQueue || !*d.Mechanisms[0].Config.(*bfc.Config).Uplink {
		t.Fatalf("port d: classify %s, bfc uplink %v", d.Classify, *d.Mechanisms[0].Config.(*bfc.Config).Uplink)
	}
	if e := c.Ports[4]; *e.Mechanisms[0].Config.(*bfc.Config).Uplink {
		t.Fatal("port e: bfc's uplink: false lost to the port's uplink: true")
	}
	// A mechanism's empty value keeps its default too.
	c, err = Parse([]byte("ports: [{interface: a, scheduler: drr, rate: 1Gbit, mechanisms: {sfc: {rtt: \"\"}}}]"))
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Ports[0].Mechanisms[0].Config.(*sfc.Config).RTT.D(); r != sfc.DefaultRTT {
		t.Fatalf("sfc rtt %v, want the default %v", r, sfc.DefaultRTT)
	}
}

// TestChanges: values compare, not spellings.
func TestChanges(t *testing.T) {
	a, err := Parse([]byte("ports: [{interface: a, rate: 1Gbit, buffer: 1MB}]\ncatchup: 5ms\ncpus: []"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse([]byte("ports: [{interface: a, rate: 1000Mbit, buffer: 1000KB, rtt: 1ms}]\ncatchup: 5000us\nslice: 200us"))
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Changes(b); strings.Join(got, ",") != "slice" {
		t.Errorf("top-level changes %v, want [slice]", got)
	}
	if got := a.Ports[0].Changes(&b.Ports[0]); strings.Join(got, ",") != "rtt" {
		t.Errorf("port changes %v, want [rtt]", got)
	}
}
