package topo

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/mech/bfc"
	"github.com/gswitch/gswitch/units"
)

// paper is a fabric in a paper's units: 10 Gbit/s links with 4 us delays,
// BFC on the switch-switch link.
const paper = `
name: tsp
defaults:
  link: {rate: 10Gbit, delay: 4us}
  port: {scheduler: drr}
switches:
  sw1: {}
  sw2: {}
hosts:
  h1: {addr: 10.1.1.1/24}
  h2: {addr: 10.2.1.1/24}
links:
  - {a: h1, b: sw1}
  - {a: sw1, b: sw2, a_port: {mechanisms: {bfc: {hrtt: 12us}}}, b_port: {mechanisms: {bfc: {}}}}
  - {a: h2, b: sw2, rate: 40Gbit}
`

// TestTimescaleWrittenNotApplied: topo writes timescale: K into every
// switch's config and leaves the file's values as they are; gswitchd
// scales them, mechanisms' keys included.
func TestTimescaleWrittenNotApplied(t *testing.T) {
	tp, p := mustPlan(t, "timescale: 1000\n"+paper)
	if tp.Timescale != 1000 || tp.TimescaleAuto || p.Timescale != 1000 {
		t.Fatalf("timescale %v (auto %v), plan %v", tp.Timescale, tp.TimescaleAuto, p.Timescale)
	}
	for _, s := range p.Switches {
		if m := gswitchdYAML(t, s); m["timescale"] != 1000 {
			t.Errorf("%s: timescale %v in %s", s.Name, m["timescale"], s.Config)
		}
		if !bytes.Contains(s.Config, []byte("rate: 10Gbit")) || !bytes.Contains(s.Config, []byte("delay: 4us")) {
			t.Errorf("%s: the file's values were changed:\n%s", s.Name, s.Config)
		}
		c, err := config.Parse(s.Config)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if c.Timescale != 1000 || c.Ports[0].Rate != 10e6 || c.Ports[0].Delay.D() != 4*time.Millisecond {
			t.Errorf("%s: gswitchd runs timescale %v, rate %v, delay %v", s.Name, c.Timescale, c.Ports[0].Rate, c.Ports[0].Delay)
		}
		if s.Name == "sw1" {
			if h := c.Ports[1].Mechanisms[0].Config.(*bfc.Config).HRTT.D(); h != 12*time.Millisecond {
				t.Errorf("sw1: bfc hrtt %v, want 12us x 1000", h)
			}
		}
	}
	var out strings.Builder
	if err := p.WriteText(&out, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"timescale 1000: rates and delays are the fabric's", "rate 10Gbit [10Mbit]  delay 4us [4ms]", "rate 40Gbit [40Mbit]"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show lacks %q:\n%s", want, out.String())
		}
	}
}

// TestTimescaleOneChangesNothing: timescale 1, written or not, gives the
// same configs byte for byte, for every shipped topology (those that run
// at a timescale of their own taken at 1).
func TestTimescaleOneChangesNothing(t *testing.T) {
	files, _ := filepath.Glob("../topologies/*.yaml")
	more, _ := filepath.Glob("../topologies/*/*.yaml")
	for _, f := range append(files, more...) {
		tp, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if tp.TimescaleAuto {
			t.Fatalf("%s: timescale auto", f)
		}
		if !tp.Timescale.One() {
			if tp, err = tp.WithTimescale(1); err != nil {
				t.Fatal(err)
			}
		}
		p, err := tp.Plan()
		if err != nil {
			t.Fatal(err)
		}
		one, err := tp.WithTimescale(1)
		if err != nil {
			t.Fatal(err)
		}
		p1, err := one.Plan()
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range p.Switches {
			if !bytes.Equal(s.Config, p1.Switches[i].Config) || bytes.Contains(s.Config, []byte("timescale")) {
				t.Errorf("%s %s: the config changed at timescale 1", f, s.Name)
			}
		}
		var a, b strings.Builder
		p.WriteText(&a, true)
		p1.WriteText(&b, true)
		if a.String() != b.String() || strings.Contains(a.String(), "timescale") {
			t.Errorf("%s: show changed at timescale 1", f)
		}
	}
}

func TestTimescaleErrors(t *testing.T) {
	for in, want := range map[string]string{
		"timescale: 0.5\n" + small:                                             "timescale: 0.5 is below 1",
		"timescale: fast\n" + small:                                            `timescale: "fast" is not a number`,
		"timescale: 2e6\n" + small:                                             "timescale: 2e+06 is more than 1e+06",
		"timescale: [1]\n" + small:                                             "timescale: line 1: a list where a single value belongs",
		"timescale_probe: 2s\n" + small:                                        "timescale_probe: 2s is how long timescale: auto measures",
		"timescale: auto\ntimescale_probe: 1h\n" + small:                       `timescale_probe: "1h" is not a duration from 100ms to 1m0s`,
		"timescale: auto\ntimescale_probe: 10ms\n" + small:                     `timescale_probe: "10ms" is not a duration from 100ms`,
		strings.Replace(small, "sw2: {}", "sw2: {config: {timescale: 10}}", 1): "switches.sw2.config.timescale: set by the topology (use the topology's top-level timescale)",
		"timescale: 1000\n" + strings.Replace(small, "{a: sw1, b: sw2}", "{a: sw1, b: sw2, delay: 4ms}", 1):                   "links[2].delay: 4ms at timescale 1000 is 4s on this machine, more than the 1s a switch holds a frame (lower timescale or delay)",
		"timescale: 1000\ndefaults: {link: {delay: 2ms}}\n" + small:                                                           "defaults.link.delay: 2ms at timescale 1000 is 2s on this machine",
		"timescale: 1000\n" + strings.Replace(small, "{a: h3, b: sw2}", "{a: h3, b: sw2, rate: 1Mbit}", 1):                    "links[3].rate: 1Mbit at timescale 1000 is 1kbit on this machine, less than the 8kbit a port's shaper takes (lower timescale or raise rate)",
		strings.Replace(small, "h1: {addr: 10.1.1.1/24}", "h1: {addr: 10.1.1.1/24, rto_min: 200us}", 1):                       "hosts.h1.rto_min: 200us is less than the 1ms the kernel takes (it keeps rto_min in whole milliseconds) (raise rto_min or timescale)",
		"timescale: 1000\n" + strings.Replace(small, "h1: {addr: 10.1.1.1/24}", "h1: {addr: 10.1.1.1/24, rto_min: 200ms}", 1): "hosts.h1.rto_min: 200ms at timescale 1000 is 3m20s on this machine, more than the 2m0s TCP ever waits",
		strings.Replace(small, "h1: {addr: 10.1.1.1/24}", "h1: {addr: 10.1.1.1/24, rto_min: soon}", 1):                        `hosts.h1.rto_min: "soon" is not a duration`,
		strings.Replace(small, "h1: {addr: 10.1.1.1/24}", "h1: {addr: 10.1.1.1/24, quickack: 2}", 1):                          `hosts.h1.quickack: "2" is not true or false`,
	} {
		_, err := Parse([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q:\n error %v\n want  %s", in, err, want)
		}
	}
}

// TestTimescaleAuto: a topology with timescale: auto plans at 1 (no key in
// the configs), and WithTimescale puts it at the K chosen, checking the
// bounds there; MaxTimescale says which key bounds K.
func TestTimescaleAuto(t *testing.T) {
	tp, p := mustPlan(t, "timescale: auto\ntimescale_probe: 200ms\n"+strings.Replace(paper, "defaults:", "defaults:\n  switch: {nice: -5}", 1))
	if !tp.TimescaleAuto || !p.TimescaleAuto || !tp.Timescale.One() || tp.TimescaleProbe != 200*time.Millisecond {
		t.Fatalf("auto %v, plan auto %v, K %v, probe %v", tp.TimescaleAuto, p.TimescaleAuto, tp.Timescale, tp.TimescaleProbe)
	}
	for _, s := range p.Switches {
		if bytes.Contains(s.Config, []byte("timescale")) {
			t.Errorf("%s: a timescale before auto chose one:\n%s", s.Name, s.Config)
		}
	}
	var out strings.Builder
	p.WriteText(&out, false)
	if !strings.Contains(out.String(), "timescale auto: up measures this machine") {
		t.Errorf("show:\n%s", out.String())
	}
	if f := tp.FastestBits(); f != 40e9 {
		t.Errorf("fastest %d", f)
	}
	if n, sl, _ := tp.workerSched(); n != -5 || sl != 0 {
		t.Errorf("nice %d, slice %v", n, sl)
	}
	sw := strings.Replace(paper, "sw1: {}", "sw1: {config: {nice: -10, slice: 200us}}", 1)
	if n, sl, _ := mustTopo(t, sw).workerSched(); n != 0 || sl != 0 {
		t.Errorf("one switch at nice -10 and slice 200us, one at the defaults: nice %d, slice %v", n, sl)
	}
	sw = strings.Replace(sw, "defaults:", "defaults:\n  switch: {nice: -5, slice: 100us}", 1)
	if n, sl, rt := mustTopo(t, sw).workerSched(); n != -5 || sl != 200*time.Microsecond || rt != 0 {
		t.Errorf("nice -10 and -5, slices 200us and 100us: nice %d, slice %v, realtime %d", n, sl, rt)
	}
	rts := strings.Replace(paper, "defaults:", "defaults:\n  switch: {realtime: 20}", 1)
	rts = strings.Replace(rts, "sw1: {}", "sw1: {config: {realtime: 10}}", 1)
	if _, _, rt := mustTopo(t, rts).workerSched(); rt != 10 {
		t.Errorf("realtime 20 and 10: the probe at %d, want the lower, 10", rt)
	}
	if _, _, rt := mustTopo(t, strings.Replace(paper, "sw1: {}", "sw1: {config: {realtime: 10}}", 1)).workerSched(); rt != 0 {
		t.Errorf("one switch realtime, one not: the probe at realtime %d, want 0", rt)
	}
	k, key := tp.MaxTimescale()
	if k != 250000 || key != "links[0].delay" {
		t.Errorf("max timescale %v by %s, want 250000 by links[0].delay (4us x 250000 = 1s)", k, key)
	}
	at, err := tp.WithTimescale(1000)
	if err != nil {
		t.Fatal(err)
	}
	pa, err := at.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if at.TimescaleAuto || at.Timescale != 1000 || tp.Timescale != 1 || gswitchdYAML(t, pa.Switches[0])["timescale"] != 1000 {
		t.Fatalf("WithTimescale(1000): auto %v K %v (the original %v)", at.TimescaleAuto, at.Timescale, tp.Timescale)
	}
	if _, err := tp.WithTimescale(500000); err == nil || !strings.Contains(err.Error(), "defaults.link.delay: 4us at timescale 500000 is 2s on this machine") {
		t.Fatalf("WithTimescale(500000): %v", err)
	}
}

// TestChooseTimescale measures this machine for a moment (at nice 0, which
// needs no privilege) and puts the topology at the K chosen.
func TestChooseTimescale(t *testing.T) {
	tp, err := Parse([]byte("timescale: auto\ntimescale_probe: 100ms\n" + paper))
	if err != nil {
		t.Fatal(err)
	}
	nt, c, err := tp.ChooseTimescale(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c.FastestBits != 40e9 || c.Measured.Wakeups == 0 || nt.Timescale != c.K || nt.TimescaleAuto {
		t.Fatalf("choice %+v, topology at %v", c, nt.Timescale)
	}
	if ft := c.FrameTime(); ft <= c.Measured.P99 {
		t.Errorf("K %v: frame time %v is not above the p99 %v", c.K, ft, c.Measured.P99)
	}
	if !strings.HasPrefix(c.String(), "timescale auto: lateness p50 ") || !strings.Contains(c.String(), "fastest link 40 Gbit/s; K = "+c.K.String()+" gives a frame time of ") {
		t.Errorf("%s", c)
	}
}

// TestHostTCPTimers: rto_min is the fabric's time: the hosts' routes carry
// it x K, rounded up to whole milliseconds; quickack turns delayed ACKs off.
func TestHostTCPTimers(t *testing.T) {
	src := strings.Replace(paper, "h1: {addr: 10.1.1.1/24}", "h1: {addr: 10.1.1.1/24, rto_min: 1ms, quickack: true}", 1)
	src = strings.Replace(src, "h2: {addr: 10.2.1.1/24}", "h2: {addr: 10.2.1.1/24, rto_min: 10.2ms}", 1)
	for _, c := range []struct {
		k      units.Timescale
		h1, h2 time.Duration
	}{{1, time.Millisecond, 11 * time.Millisecond}, {100, 100 * time.Millisecond, 1020 * time.Millisecond}} {
		tp, err := Parse([]byte("timescale: " + c.k.String() + "\n" + src))
		if err != nil {
			t.Fatal(err)
		}
		p, err := tp.Plan()
		if err != nil {
			t.Fatal(err)
		}
		h1, h2 := p.host("h1"), p.host("h2")
		if h1.RtoMin != c.h1 || !h1.QuickAck || h2.RtoMin != c.h2 || h2.QuickAck {
			t.Errorf("K %v: h1 rto_min %v quickack %v, h2 %v %v", c.k, h1.RtoMin, h1.QuickAck, h2.RtoMin, h2.QuickAck)
		}
		var out strings.Builder
		p.WriteText(&out, false)
		if !strings.Contains(out.String(), "rto_min "+durText(c.h1)+" on this machine  quickack") || !strings.Contains(out.String(), "rto_min "+durText(c.h2)+" on this machine\n") {
			t.Errorf("show:\n%s", out.String())
		}
	}
}

// TestRunningTimescale: a running topology tells its K (and auto's
// reasons), also to a process that attaches to it later.
func TestRunningTimescale(t *testing.T) {
	tp, err := Parse([]byte(small))
	if err != nil {
		t.Fatal(err)
	}
	o := UpOptions{StateDir: t.TempDir()}.withDefaults(tp)
	r := (&state{Timescale: 500, TimescaleWhy: "timescale auto: ..."}).running(tp, o)
	if r.Timescale != 500 || r.TimescaleWhy != "timescale auto: ..." {
		t.Fatalf("%v %q", r.Timescale, r.TimescaleWhy)
	}
	if r := (&state{}).running(tp, o); !r.Timescale.One() || r.Timescale != 1 {
		t.Fatalf("no timescale in the state: %v", r.Timescale)
	}
}

func mustTopo(t *testing.T, src string) *Topology {
	t.Helper()
	tp, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return tp
}
