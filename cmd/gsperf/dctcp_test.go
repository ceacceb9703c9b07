package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gswitch/gswitch/perf/transport"
)

// -mode dctcp: plain's timers and window, DCTCP's gain (1/16 unless
// -dctcp-g), which the params record; a gain outside (0, 1] is refused.
func TestDCTCPClientFlags(t *testing.T) {
	c := planOf(t, "-mode", "dctcp")
	p := c.plan
	if p.Mode != transport.DCTCP || p.DCTCPG != 1.0/16 || p.RTO != 10*time.Millisecond || p.InitWindow != 0 ||
		c.params["mode"] != "dctcp" || c.params["dctcp_g"] != "0.0625" {
		t.Fatalf("%+v %v", p, c.params)
	}
	if c := planOf(t, "-mode", "dctcp", "-dctcp-g", "0.125"); c.plan.DCTCPG != 0.125 || c.params["dctcp_g"] != "0.125" {
		t.Fatalf("%v %v", c.plan.DCTCPG, c.params)
	}
	if c := planOf(t); c.params["dctcp_g"] != "" {
		t.Fatalf("a plain run records a gain: %v", c.params)
	}
	for _, g := range []string{"0", "-0.5", "1.5", "NaN"} {
		if _, err := parseClient([]string{"-to", "127.0.0.1:5500", "-mode", "dctcp", "-dctcp-g", g}); err == nil || !strings.Contains(err.Error(), "-dctcp-g: ") {
			t.Errorf("-dctcp-g %s: %v", g, err)
		}
	}
}

// A dctcp client with a server started with -mode dctcp (a plain
// server): the flows complete, and the records and params carry DCTCP's
// counters (loopback marks nothing). A server mode it does not know is an
// error that names -mode.
func TestDCTCPWithItsServer(t *testing.T) {
	var stderr bytes.Buffer
	bad := gsperf("server", "-bind", "127.0.0.1:0", "-mode", "reno")
	bad.Stderr = &stderr
	if err := bad.Run(); err == nil || !strings.Contains(stderr.String(), `-mode: "reno"`) {
		t.Errorf("server -mode reno: %v %q", err, stderr.String())
	}

	srv := startServer(t, "-mode", "dctcp", "-report", "0")
	addr := srv.addr

	run, _ := runClient(t, addr, "-mode", "dctcp", "-size", "200KB", "-flows", "2", "-arrivals", "burst")
	if run.Params["mode"] != "dctcp" || run.Params["dctcp_g"] != "0.0625" || run.Params["dctcp_ece_acks"] != "0" || run.Params["dctcp_reductions"] != "0" {
		t.Errorf("params %v", run.Params)
	}
	for _, f := range run.Flows {
		a, ok := f.Mech["alpha_ppm"]
		if _, ece := f.Mech["ece_acks"]; !f.Complete || !ece || !ok || a == 0 || a >= 1e6 {
			t.Errorf("flow %d: complete %v, mech %v (alpha decays from 1 without marks)", f.ID, f.Complete, f.Mech)
		}
	}
	if s := srv.stop(); !strings.Contains(s, "gsperf server: 2 flows, 2 complete") || !strings.Contains(s, "0 segments arrived CE-marked") {
		t.Errorf("server output %q", s)
	}
}
