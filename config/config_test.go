package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	if c.Ports[0].Name != "veth1" || c.Ports[0].RateBits != 100e6 || c.Ports[0].BufferBytes != 512<<10 {
		t.Fatalf("port 0: %+v", c.Ports[0])
	}
	if c.Ports[1].Name != "uplink" || c.Ports[1].RateBits != 0 || c.Ports[1].BurstBytes != 16000 || c.Ports[1].BufferBytes != DefaultBuffer {
		t.Fatalf("port 1: %+v", c.Ports[1])
	}
	if c.Workers != 2 || c.Frames != DefaultFrames || c.MACTable.AgingDur.Seconds() != 60 || c.Metrics != DefaultMetrics || c.XDPMode != "auto" {
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
		"ports: [{interface: a}]\nxdp_mode: fast":                   "xdp_mode",
		"ports: [{interface: a}]\nframe_size: 1000":                 "frame_size",
		"ports: [{interface: a}]\nmac_table: {agin: 1s}":            `unknown key "agin" in mac_table`,
		"ports: [{interface: a}]\nworkers: -1":                      "workers",
		"ports: [{interface: a}]\nspin: forever":                    "spin",
		"ports: {interface: a}":                                     "config:",
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
	c, err := Parse([]byte("ports: [{interface: a, scheduler: pfabric, rate: 1Gbit, rtt: 100us}, {interface: b, scheduler: pfabric, rate: 10Mbit}]"))
	if err != nil {
		t.Fatal(err)
	}
	// 2 x 1 Gbit/s x 100 us = 25,000 B; the second port's 2 BDPs are below 16 frames.
	if c.Ports[0].BufferBytes != 25000 || c.Ports[1].BufferBytes != 16*1514 || c.Ports[0].Rank != "gsperf" {
		t.Fatalf("%+v", c.Ports)
	}
	if _, err := Parse([]byte("ports: [{interface: a, rank: size}]")); err == nil || !strings.Contains(err.Error(), "ports[0].rank") {
		t.Fatalf("err %v", err)
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

func TestRatesAndSizes(t *testing.T) {
	rates := map[string]uint64{"100Mbit": 100e6, "1.5Gbit": 1.5e9, "10gbps": 10e9, "500kbit": 500e3, "64000": 64000, "": 0}
	for s, want := range rates {
		if got, err := ParseRate(s); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %d, %v", s, got, err)
		}
	}
	sizes := map[string]uint64{"1500": 1500, "64KB": 64000, "1MiB": 1 << 20, "2 MB": 2e6}
	for s, want := range sizes {
		if got, err := ParseSize(s); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v", s, got, err)
		}
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
