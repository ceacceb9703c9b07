package main

import (
	"strings"
	"testing"
	"time"

	"github.com/gswitch/gswitch/perf/results"
	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/perf/udp"
)

// -mode dcqcn: the rate machine on the wall clock from the fabric's flags
// (line rate -pace, else -rate), the window over -base-rtt and the CNP
// interval unless -init-window, plain's timers; the params record the
// constants in the fabric's units; bad -dcqcn-* values are refused.
func TestDCQCNClientFlags(t *testing.T) {
	c := planOf(t, "-mode", "dcqcn", "-rate", "10Gbit", "-pace", "10Gbit", "-base-rtt", "8us", "-timescale", "1000")
	p, d := c.plan, c.plan.DCQCN
	frame := udp.MSS + udp.Overhead
	if p.Mode != transport.DCQCN || d.LineRate != 10e6 || d.MinRate != 100e3 || d.G != 1.0/256 || d.RAI != 40e3 || d.RHAI != 400e3 ||
		d.Timer != 55e6 || d.AlphaTimer != 55e6 || d.Bytes != 10e6 || d.F != 5 || d.Overhead != udp.Overhead || d.Burst != udp.PaceBurst*frame {
		t.Fatalf("%+v", d)
	}
	// 10 Gbit/s x (8 us + 50 us) + 200 KB, on either clock.
	if p.InitWindow != 72500+200000 || p.RTO != 10*time.Second {
		t.Fatalf("window %d, RTO %v", p.InitWindow, p.RTO)
	}
	want := map[string]string{"mode": "dcqcn", "dcqcn_g": "0.00390625", "dcqcn_rai": "40Mbit", "dcqcn_rhai": "400Mbit", "dcqcn_timer": "55µs",
		"dcqcn_bytes": "10MB", "dcqcn_alpha_timer": "55µs", "dcqcn_f": "5", "dcqcn_min_rate": "100 Mbit/s", "dcqcn_line_rate": "10 Gbit/s", "dcqcn_window": "272500"}
	for k, v := range want {
		if c.params[k] != v {
			t.Errorf("params[%s] = %q, want %q", k, c.params[k], v)
		}
	}
	c = planOf(t, "-mode", "dcqcn", "-rate", "1Gbit", "-dcqcn-g", "0.0625", "-dcqcn-rai", "5Mbit", "-dcqcn-rhai", "50Mbit",
		"-dcqcn-timer", "300us", "-dcqcn-bytes", "1MB", "-init-window", "64KB")
	if d := c.plan.DCQCN; d.LineRate != 1e9 || d.G != 0.0625 || d.RAI != 5e6 || d.RHAI != 50e6 || d.Timer != 300e3 || d.Bytes != 1e6 ||
		c.plan.InitWindow != 64e3 || c.params["dcqcn_window"] != "64000" || c.params["dcqcn_timer"] != "300µs" {
		t.Fatalf("%+v window %d params %v", d, c.plan.InitWindow, c.params)
	}
	if c := planOf(t); c.params["dcqcn_g"] != "" || c.plan.DCQCN != (transport.DCQCNConfig{}) {
		t.Fatalf("a plain run has DCQCN settings: %v %+v", c.params, c.plan.DCQCN)
	}
	for _, bad := range [][]string{
		{"-dcqcn-g", "0"}, {"-dcqcn-g", "1.5"}, {"-dcqcn-g", "NaN"},
		{"-dcqcn-rai", "0"}, {"-dcqcn-rai", "fast"}, {"-dcqcn-rhai", "0Mbit"},
		{"-dcqcn-timer", "0s"}, {"-dcqcn-timer", "-1us"},
		{"-dcqcn-bytes", "100B"}, {"-dcqcn-bytes", "lots"},
	} {
		_, err := parseClient(append([]string{"-to", "127.0.0.1:5500", "-mode", "dcqcn"}, bad...))
		if err == nil || !strings.Contains(err.Error(), bad[0]+": ") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

// A dcqcn client with a server in -mode dcqcn: the flows complete, the
// server says it sends CNPs (loopback marks nothing, so none goes), and the
// record and params carry DCQCN's counters: no CNP, no cut, the flows at
// line rate to the end.
func TestDCQCNWithItsServer(t *testing.T) {
	srv := startServer(t, "-mode", "dcqcn", "-report", "0")
	if !strings.Contains(srv.line, "dcqcn: a CNP per flow at most every 50µs") {
		t.Fatalf("server start line %q", srv.line)
	}
	addr := srv.addr

	run, _ := runClient(t, addr, "-mode", "dcqcn", "-rate", "200Mbit", "-size", "200KB", "-flows", "2", "-arrivals", "burst")
	if run.Params["mode"] != "dcqcn" || run.Params["dcqcn_cnps"] != "0" || run.Params["dcqcn_rate_cuts"] != "0" ||
		run.Params["dcqcn_final_rate"] != "200000000" || run.Params["dcqcn_line_rate"] != "200 Mbit/s" {
		t.Errorf("params %v", run.Params)
	}
	for _, f := range run.Flows {
		m := f.Mech
		if _, ok := m["cnps"]; !f.Complete || !ok || m["rate_ppm"] != 1e6 || m["alpha_ppm"] == 0 || m["alpha_ppm"] > 1e6 {
			t.Errorf("flow %d: complete %v, mech %v", f.ID, f.Complete, m)
		}
	}
	if s := srv.stop(); !strings.Contains(s, "gsperf server: 2 flows, 2 complete") || !strings.Contains(s, "0 segments arrived CE-marked, 0 CNPs sent") {
		t.Errorf("server output %q", s)
	}
}

// dcqcnFinish averages the final rates over the flows that ran a sender:
// a flow with no record of one (its dial failed) does not count as a
// flow at rate 0.
func TestDCQCNFinishSkipsFlowsWithoutASender(t *testing.T) {
	recs := []results.Flow{
		{Mech: map[string]uint64{"cnps": 3, "rate_cuts": 2, "rate_ppm": 500_000}},
		{},
		{Mech: map[string]uint64{"cnps": 1, "rate_cuts": 1, "rate_ppm": 1_000_000}},
	}
	params := map[string]string{}
	dcqcnFinish("h1", 1e9, recs, params)
	if params["dcqcn_cnps"] != "4" || params["dcqcn_rate_cuts"] != "3" || params["dcqcn_final_rate"] != "750000000" {
		t.Fatalf("params %v, want 4 CNPs, 3 cuts, a final rate of 750 Mbit/s", params)
	}
	params = map[string]string{}
	dcqcnFinish("h1", 1e9, []results.Flow{{}}, params)
	if params["dcqcn_final_rate"] != "0" {
		t.Fatalf("no sender: params %v", params)
	}
}
