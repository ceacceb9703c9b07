package main

import (
	"strings"
	"testing"

	"github.com/gswitch/gswitch/perf/transport"
)

// -mode hpcc: W_init is the host's line (-pace, else -rate) x -base-rtt on
// this machine's clock (the same bytes on both), T is -base-rtt on this
// machine's clock; eta, maxStage, W_AI and the INT slots come from their
// flags (W_AI by default 4e-4 of W_init), and the params record them. Bad
// values are errors naming the flag.
func TestHPCCClientFlags(t *testing.T) {
	c := planOf(t, "-mode", "hpcc", "-rate", "10Gbit", "-base-rtt", "10us")
	h := c.plan.HPCC
	if c.plan.Mode != transport.HPCC || h.LineRate != 10e9 || h.BaseRTT != 10e3 || h.Eta != 0.95 || h.MaxStage != 5 || h.Hops != 5 ||
		h.WAI != 4e-4*12500 || c.params["hpcc_w_init_bytes"] != "12500" || c.params["hpcc_wai_bytes"] != "5.0" ||
		c.params["hpcc_eta"] != "0.95" || c.params["hpcc_max_stage"] != "5" || c.params["int_hops"] != "5" {
		t.Fatalf("%+v %v", h, c.params)
	}
	c = planOf(t, "-mode", "hpcc", "-rate", "10Gbit", "-pace", "40Gbit", "-base-rtt", "10us", "-timescale", "1000",
		"-hpcc-eta", "0.9", "-hpcc-max-stage", "0", "-hpcc-wai", "80B", "-int-hops", "2")
	h = c.plan.HPCC
	if h.LineRate != 40e6 || h.BaseRTT != 10e6 || h.Eta != 0.9 || h.MaxStage != -1 || h.WAI != 80 || h.Hops != 2 ||
		c.params["hpcc_w_init_bytes"] != "50000" || c.params["hpcc_max_stage"] != "0" || c.params["int_hops"] != "2" {
		t.Fatalf("at K 1000: %+v %v", h, c.params)
	}
	if c := planOf(t, "-mode", "dctcp"); c.plan.HPCC != (transport.HPCCConfig{}) || c.params["hpcc_eta"] != "" {
		t.Fatalf("a dctcp run has HPCC settings: %+v %v", c.plan.HPCC, c.params)
	}
	for _, bad := range []struct{ args []string }{
		{[]string{"-int-hops", "0"}}, {[]string{"-int-hops", "9"}},
		{[]string{"-hpcc-eta", "0"}}, {[]string{"-hpcc-eta", "1.5"}}, {[]string{"-hpcc-eta", "NaN"}},
		{[]string{"-hpcc-max-stage", "-1"}},
		{[]string{"-hpcc-wai", "0"}}, {[]string{"-hpcc-wai", "lots"}}, {[]string{"-hpcc-wai", "1MB"}},
	} {
		_, err := parseClient(append([]string{"-to", "127.0.0.1:5500", "-mode", "hpcc"}, bad.args...))
		if err == nil || !strings.Contains(err.Error(), bad.args[0]+": ") {
			t.Errorf("%v: %v", bad.args, err)
		}
	}
}

// An hpcc client with a server started with -mode hpcc (a plain
// server): the flows complete, every ack carried the INT option back (no
// switch on loopback wrote a hop), and the params and records say so.
func TestHPCCWithItsServer(t *testing.T) {
	srv := startServer(t, "-mode", "hpcc", "-report", "0")
	addr := srv.addr

	run, clErr := runClient(t, addr, "-mode", "hpcc", "-size", "200KB", "-flows", "2", "-arrivals", "burst",
		"-rate", "1Gbit", "-base-rtt", "100us")
	p := run.Params
	if p["mode"] != "hpcc" || p["hpcc_hops"] != "0" || p["hpcc_int_acks"] == "0" || p["hpcc_window_bytes"] != "12500" || p["hpcc_u"] != "1.000" {
		t.Errorf("params %v", p)
	}
	if !strings.Contains(clErr, "no switch wrote a hop") {
		t.Errorf("client stderr %q", clErr)
	}
	for _, f := range run.Flows {
		if !f.Complete || f.Mech["int_acks"] == 0 || f.Mech["window_bytes"] != 12500 {
			t.Errorf("flow %d: complete %v, mech %v", f.ID, f.Complete, f.Mech)
		}
	}
	if s := srv.stop(); !strings.Contains(s, "gsperf server: 2 flows, 2 complete") {
		t.Errorf("server output %q", s)
	}
}
