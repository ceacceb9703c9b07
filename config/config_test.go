package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gswitch/gswitch/mech/afq"
	_ "github.com/gswitch/gswitch/mech/all"
	"github.com/gswitch/gswitch/mech/pfabric"
)

func TestParseGood(t *testing.T) {
	c, err := Parse([]byte(`
ports:
  - interface: veth1
    rate: 100Mbit
    buffer: 512KiB
  - name: uplink
    interface: veth2
    burst: 16KB
workers: 2
mac_table: {aging: 60s}
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Ports[0].Name != "veth1" || c.Ports[0].Rate != 100e6 || c.Ports[0].Buffer != 512<<10 {
		t.Fatalf("port 0: %+v", c.Ports[0])
	}
	if c.Ports[1].Name != "uplink" || c.Ports[1].Rate != 0 || c.Ports[1].Burst != 16000 || c.Ports[1].Buffer != DefaultBuffer {
		t.Fatalf("port 1: %+v", c.Ports[1])
	}
	if c.Workers != 2 || c.Frames != DefaultFrames || c.MACTable.Aging.D().Seconds() != 60 || c.Metrics != DefaultMetrics || c.XDPMode != "auto" {
		t.Fatalf("config: %+v", c)
	}
}

func TestParseErrorsNameTheField(t *testing.T) {
	cases := map[string]string{
		"ports: []":                                                 "ports: no ports",
		"ports: [{interface: a, rat: 1Gbit}]":                       `unknown key "rat" in ports[0]`,
		"portz: []":                                                 `unknown key "portz" at the top level`,
		"ports: [{interface: a, rate: 100MB}]":                      "ports[0].rate:",
		"ports: [{interface: a, rate: fast}]":                       "ports[0].rate:",
		"ports: [{interface: a}, {interface: a}]":                   "ports[1].interface: a is already ports[0]",
		"ports: [{interface: a, name: x}, {interface: b, name: x}]": "ports[1].name",
		"ports: [{rate: 1Gbit}]":                                    "ports[0].interface: missing",
		"ports: [{interface: a, buffer: 100}]":                      "ports[0].buffer",
		"ports: [{interface: a, burst: lots}]":                      "ports[0].burst",
		"ports: [{interface: a, buffer_packets: -1}]":               "ports[0].buffer_packets: line 1: -1 out of range [0, 4194304]",
		"ports: [{interface: a}]\nxdp_mode: fast":                   "xdp_mode",
		"ports: [{interface: a}]\nframe_size: 1000":                 "frame_size",
		"ports: [{interface: a}]\nmac_table: {agin: 1s}":            `unknown key "agin" in mac_table`,
		"ports: [{interface: a}]\nworkers: -1":                      "workers",
		"ports: [{interface: a}]\nspin: forever":                    "spin",
		"ports: [{interface: a}]\ncpus: [0, -1]":                    "cpus[1]",
		"ports: [{interface: a}]\nnice: -21":                        "nice: -21 out of range",
		"ports: [{interface: a}]\nrealtime: 100":                    "realtime: 100 out of range",
		"ports: [{interface: a}]\nrealtime: 10\nbusy_poll: true":    "realtime: 10 with busy_poll, nice or slice",
		"ports: [{interface: a}]\nrealtime: 10\nnice: -5":           "realtime: 10 with busy_poll, nice or slice",
		"ports: [{interface: a}]\nslice: 10us":                      "slice: 10µs out of range",
		"ports: [{interface: a}]\nslice: soon":                      "slice:",
		"ports: [{interface: a}]\ncatchup: -1ms":                    "catchup:",
		"ports: [{interface: a}]\ncatchup: 2s":                      "catchup: 2s out of range",
		"ports: [{interface: a}]\ncatchup: lots":                    "catchup:",
		"ports: {interface: a}":                                     "ports: line 1: a mapping where a list belongs",
		"":                                                          "empty config",
		"ports: [":                                                  "not valid YAML",
	}
	for in, want := range cases {
		_, err := Parse([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to contain %q", in, err, want)
		}
	}
}

func TestPFabricDefaults(t *testing.T) {
	c, err := Parse([]byte(`
ports:
  - {interface: a, scheduler: pfabric, rate: 1Gbit, rtt: 100us, mechanisms: {pfabric: {}}}
  - {interface: b, scheduler: pfabric, rate: 10Mbit, mechanisms: {pfabric: {rank: las}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	// 2 x 1 Gbit/s x 100 us = 25,000 B; the second port's 2 BDPs are below 16 frames.
	if c.Ports[0].Buffer != 25000 || c.Ports[1].Buffer != 16*1514 {
		t.Fatalf("%+v", c.Ports)
	}
	if r := c.Ports[0].Mechanisms[0].Config.(*pfabric.Config).Rank; r != "gsperf" {
		t.Fatalf("default rank %q", r)
	}
	if r := c.Ports[1].Mechanisms[0].Config.(*pfabric.Config).Rank; r != "las" {
		t.Fatalf("rank %q", r)
	}
}

func TestMechanisms(t *testing.T) {
	c, err := Parse([]byte(`
ports:
  - interface: a
    scheduler: rsp
    queues: 16
    role: fabric
    mac: "02:00:00:00:00:07"
    mechanisms:
      afq: {bytes_per_round: 3KB, sketch: {rows: 2, cols: 1024}, ecn_rounds: 4}
switch_id: 9
`))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Ports[0]
	a := p.Mechanisms[0].Config.(*afq.Config)
	if p.Mechanisms[0].Name != "afq" || a.BytesPerRound != 3000 || a.Sketch.Rows != 2 || a.Sketch.Cols != 1024 || a.ECNRounds != 4 {
		t.Fatalf("afq config %+v", a)
	}
	if p.Role.String() != "fabric" || p.MAC.String() != "02:00:00:00:00:07" || c.SwitchID != 9 {
		t.Fatalf("port %+v switch %d", p, c.SwitchID)
	}
	// Defaults when the mechanism has no settings.
	c, err = Parse([]byte("ports: [{interface: a, scheduler: rsp, mechanisms: {afq: }}]"))
	if err != nil {
		t.Fatal(err)
	}
	if a := c.Ports[0].Mechanisms[0].Config.(*afq.Config); a.BytesPerRound != 1514 || a.Sketch.Rows != 4 {
		t.Fatalf("defaults %+v", a)
	}
}

func TestMechanismErrorsNameTheField(t *testing.T) {
	cases := map[string]string{
		"ports: [{interface: a, mechanisms: {bogus: {}}}]":                                    `ports[0].mechanisms: line 1: unknown mechanism "bogus"`,
		"ports: [{interface: a, scheduler: rsp, mechanisms: {afq: {bpr: 3}}}]":                `unknown key "bpr" in ports[0].mechanisms.afq`,
		"ports: [{interface: a, scheduler: rsp, mechanisms: {afq: {bytes_per_round: 10}}}]":   "ports[0].mechanisms.afq.bytes_per_round",
		"ports: [{interface: a, scheduler: rsp, mechanisms: {afq: {bytes_per_round: lots}}}]": "ports[0].mechanisms.afq",
		"ports: [{interface: a, scheduler: rsp, mechanisms: {afq: {sketch: {rows: 9}}}}]":     "ports[0].mechanisms.afq.sketch",
		"ports: [{interface: a, scheduler: drr, mechanisms: {afq: {}}}]":                      "mechanism afq works with scheduler [rsp], not with scheduler drr",
		"ports: [{interface: a, scheduler: pfabric}]":                                         "ports[0].scheduler: scheduler pfabric orders packets by a rank that a mechanism sets: enable one of [pfabric]",
		"ports: [{interface: a, scheduler: rsp}]":                                             "enable one of [afq]",
		"ports: [{interface: a, scheduler: pfabric, mechanisms: {pfabric: {rank: size}}}]":    "ports[0].mechanisms.pfabric.rank",
		"ports: [{interface: a, scheduler: pfabric, mechanisms: {pfabric: {}, afq: {}}}]":     "mechanism afq works with scheduler [rsp]",
		"ports: [{interface: a, mechanisms: [afq]}]":                                          "ports[0].mechanisms: line 1: a mapping",
		"ports: [{interface: a, scheduler: rsp, mechanisms: {afq: 3}}]":                       "ports[0].mechanisms.afq: line 1: a mapping",
		"ports: [{interface: a, role: spine}]":                                                "ports[0].role",
		"ports: [{interface: a, mac: 01:00:5e:00:00:01}]":                                     "ports[0].mac",
		"ports: [{interface: a, scheduler: afq}]":                                             "ports[0].scheduler: \"afq\" (use one of",
		"ports: [{interface: a}]\nswitch_id: 70000":                                           "switch_id",
		"ports: [{interface: a}]\nframes: 4194304\nframe_size: 4096":                          "frames: 4194304 frames of 4096 B make a 16384 MiB UMEM",
		"ports: [{interface: a, rate: 100Mbit, burst: 10GB}]":                                 "ports[0].burst: 10GB is more than",
		"ports: [{interface: a, buffer: 1e30}]":                                               "ports[0].buffer",
		"ports: [{interface: a, rate: 1e30}]":                                                 "ports[0].rate",
		"ports: [{interface: a}]\nbuffer: 2TiB":                                               "buffer",
		"ports: [{interface: a, rtt: 2h}]":                                                    "ports[0].rtt",
	}
	for in, want := range cases {
		_, err := Parse([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to contain %q", in, err, want)
		}
	}
}

func TestCheckInterfaces(t *testing.T) {
	c, _ := Parse([]byte("ports: [{interface: a}, {interface: nope}]"))
	err := c.Check(func(n string) error {
		if n == "nope" {
			return errors.New("no such network interface")
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "ports[1].interface: nope") {
		t.Fatalf("err = %v", err)
	}
}

func TestShippedExamplesLoad(t *testing.T) {
	files, _ := filepath.Glob("../configs/*.yaml")
	if len(files) == 0 {
		t.Fatal("no example configs in configs/")
	}
	for _, f := range files {
		if _, err := Load(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestL3Config(t *testing.T) {
	c, err := Parse([]byte(`
ports:
  - {interface: a, addr: 10.1.1.254/24}
  - {interface: b, addr: [10.255.0.0/31], delay: 50us, role: fabric}
  - {interface: c, addr: [10.255.0.2/31]}
routes:
  - {prefix: 10.1.2.0/24, via: [10.255.0.1, 10.255.0.3]}
neighbors:
  - {ip: 10.255.0.1, mac: "02:00:00:00:00:01"}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Ports[0].Addrs) != 1 || c.Ports[0].Addrs[0].String() != "10.1.1.254/24" || c.Ports[1].Delay.D().Microseconds() != 50 {
		t.Fatalf("ports %+v", c.Ports)
	}
	r := c.RouteTable()[0]
	if r.Prefix.String() != "10.1.2.0/24" || len(r.NextHops) != 2 || r.NextHops[0].Port != 1 || r.NextHops[1].Port != 2 {
		t.Fatalf("route %+v", r)
	}
	if n := c.NeighborTable()[0]; n.Port != 1 || n.MAC.String() != "02:00:00:00:00:01" {
		t.Fatalf("neighbor %+v", n)
	}
}

func TestL3ErrorsNameTheField(t *testing.T) {
	cases := map[string]string{
		"ports: [{interface: a, addr: 10.1.1.254}]":                                                                                              "ports[0].addr[0]",
		"ports: [{interface: a, addr: 10.1.1.0/24}]":                                                                                             "ports[0].addr[0]: line 1: 10.1.1.0/24 is the subnet's own address",
		"ports: [{interface: a, addr: 10.1.1.1/24}, {interface: b, addr: 10.1.1.2/25}]":                                                          "ports[1].addr[0]: 10.1.1.2/25 overlaps ports[0].addr[0]",
		"ports: [{interface: a}]\nroutes: [{prefix: 10.0.0.0/8, via: [10.1.1.1]}]":                                                               "routes: routes need L3 ports",
		"ports: [{interface: a, addr: 10.1.1.254/24}]\nroutes: [{prefix: 10.0.0.1/8, via: [10.1.1.1]}]":                                          "routes[0].prefix: 10.0.0.1/8 has host bits set (write 10.0.0.0/8)",
		"ports: [{interface: a, addr: 10.1.1.254/24}]\nroutes: [{prefix: 10.2.0.0/16, via: [10.9.9.9]}]":                                         "routes[0].via[0]: 10.9.9.9 is on no connected subnet",
		"ports: [{interface: a, addr: 10.1.1.254/24}]\nroutes: [{prefix: 10.2.0.0/16, via: [10.1.1.254]}]":                                       "routes[0].via[0]: 10.1.1.254 is this switch's own address",
		"ports: [{interface: a, addr: 10.1.1.254/24}]\nroutes: [{prefix: 10.2.0.0/16}]":                                                          "routes[0].via: no next hop",
		"ports: [{interface: a, addr: 10.1.1.254/24}]\nroutes: [{prefix: 10.2.0.0/16, via: [x]}]":                                                "routes[0].via[0]",
		"ports: [{interface: a, addr: 10.1.1.254/24}]\nroutes: [{prefix: 10.2.0.0/16, via: [10.1.1.1]}, {prefix: 10.2.0.0/16, via: [10.1.1.1]}]": "routes[1].prefix: 10.2.0.0/16 is already routes[0]",
		"ports: [{interface: a, addr: 10.1.1.254/24}]\nneighbors: [{ip: 10.3.0.1, mac: 02:00:00:00:00:01}]":                                      "neighbors[0].ip: 10.3.0.1 is on no connected subnet",
		"ports: [{interface: a, addr: 10.1.1.254/24}]\nneighbors: [{ip: 10.1.1.1, mac: ff:ff:ff:ff:ff:ff}]":                                      "neighbors[0].mac",
		"ports: [{interface: a, delay: 2s}]":                                                                                                     "ports[0].delay",
		"ports: [{interface: a, delay: soon}]":                                                                                                   "ports[0].delay",
	}
	for in, want := range cases {
		_, err := Parse([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to contain %q", in, err, want)
		}
	}
}

// TestSpinAndCatchUp: spin and catchup have their defaults when absent, and
// 0 turns each off.
func TestSpinAndCatchUp(t *testing.T) {
	c, err := Parse([]byte("ports: [{interface: a}]"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Spin.D() != 50*time.Microsecond || c.CatchUp.D() != DefaultCatchUp {
		t.Fatalf("defaults: spin %v, catchup %v", c.Spin, c.CatchUp)
	}
	c, err = Parse([]byte("ports: [{interface: a}]\nspin: 0\ncatchup: 0"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Spin != 0 || c.CatchUp != 0 {
		t.Fatalf("spin: 0, catchup: 0 read as %v, %v", c.Spin, c.CatchUp)
	}
}
