package topo

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// designed is a topology with designs: two switches, h1 and h2 on s1, h3
// on s2; s2's ports and the s1-s2 link's s1 end tune mechanisms.
const designed = `
name: d
defaults:
  link: {rate: 1Gbit, delay: 10us}
  switch: {workers: 1, buffer: 4MB}
  port: {buffer: 1MB, scheduler: drr, mechanisms: {bfc: {assign: dynamic}}}
transport: {mode: bfc, args: [-rate, 1Gbit]}
designs:
  fifo:
    port: {mechanisms: {}}
    transport: {mode: plain}
  dctcp:
    port: {scheduler: fifo, mechanisms: {ecn: {k_packets: 20}}}
    switch: {buffer: 2MB}
    transport: {mode: dctcp}
  dcqcn:
    port: {mechanisms: {ecn: {mode: red}, pfc: {}}}
    transport: {mode: dcqcn, pfc: true, args: [-pace, 1Gbit], server_args: [-report, 0s]}
  deeper:
    port: {buffer: 2MB}
  none: {}
switches:
  s1:
    config: {buffer: 8MB}
  s2:
    port: {buffer: 512KB, mechanisms: {ecn: {k_packets: 30}, bfc: {th: 10KB}}}
hosts:
  h1: {addr: 10.0.1.1/24}
  h2: {addr: 10.0.2.1/24, transport: {pfc: false, args: [-pace, 100Mbit]}}
  h3: {addr: 10.0.3.1/24, transport: {mode: plain}}
links:
  - {a: h1, b: s1}
  - {a: h2, b: s1}
  - {a: s1, b: s2, a_port: {mechanisms: {ecn: {rtt: 20us}, pfc: {xoff: 20KB}}}}
  - {a: s2, b: h3}
`

func TestDesignsDecode(t *testing.T) {
	tp := mustTopo(t, designed)
	if got := tp.DesignNames(); !slices.Equal(got, []string{"fifo", "dctcp", "dcqcn", "deeper", "none"}) {
		t.Fatalf("designs %v", got)
	}
	if tp.Design != nil || tp.DesignName() != "" {
		t.Errorf("a parsed topology runs its defaults, got design %q", tp.DesignName())
	}
	if tr := tp.Transport; tr == nil || tr.Mode != "bfc" || tr.PFC != nil || !slices.Equal(tr.Args, []string{"-rate", "1Gbit"}) || tr.Path != "transport" {
		t.Errorf("top-level transport %+v", tr)
	}
	d := tp.Designs[2]
	if tr := d.Transport; tr.Mode != "dcqcn" || tr.PFC == nil || !*tr.PFC || !slices.Equal(tr.ServerArgs, []string{"-report", "0s"}) || tr.Path != "designs.dcqcn.transport" {
		t.Errorf("designs.dcqcn.transport %+v", tr)
	}
	if ms, ok := d.Mechanisms(); !ok || !slices.Equal(ms, []string{"ecn", "pfc"}) {
		t.Errorf("designs.dcqcn mechanisms %v %v", ms, ok)
	}
	if ms, ok := tp.Designs[0].Mechanisms(); !ok || len(ms) != 0 {
		t.Errorf("designs.fifo gives an empty mechanisms map: %v %v", ms, ok)
	}
	if _, ok := tp.Designs[3].Mechanisms(); ok {
		t.Error("designs.deeper gives no mechanisms")
	}
	if h2 := tp.hosts["h2"].Transport; h2.Mode != "" || h2.PFC == nil || *h2.PFC {
		t.Errorf("hosts.h2.transport %+v", h2)
	}
	// mechanisms: with no value is none, as {} is.
	tp = mustTopo(t, strings.Replace(designed, "port: {mechanisms: {}}", "port: {mechanisms: }", 1))
	if ms, ok := tp.Designs[0].Mechanisms(); !ok || len(ms) != 0 {
		t.Errorf("mechanisms: null: %v %v", ms, ok)
	}
}

// planUnder plans the designed topology under design ("": its defaults)
// and returns the gswitchd YAML of s1 and s2.
func planUnder(t *testing.T, src, design string) (s1, s2 map[string]any) {
	t.Helper()
	tp, err := mustTopo(t, src).WithDesign(design)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tp.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if p.Design != design {
		t.Errorf("plan's design %q, want %q", p.Design, design)
	}
	return gswitchdYAML(t, p.sw("s1")), gswitchdYAML(t, p.sw("s2"))
}

func mechs(port map[string]any) string {
	m, ok := port["mechanisms"].(map[string]any)
	if !ok {
		if port["mechanisms"] != nil {
			return fmt.Sprintf("not a map: %v", port["mechanisms"])
		}
		return "none"
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s%v ", k, m[k])
	}
	return strings.TrimSpace(b.String())
}

// TestDesignMerge: the precedence of docs/topology.md. Port keys:
// defaults.port < the design's port < the switch's port < the link end's,
// a design's mechanisms replacing defaults.port's whole and the switch's
// and link's mechanisms entries tuning only the mechanisms the design
// runs. Switch keys: defaults.switch < the design's switch < the
// switch's config. Without a design the file merges as it always has.
func TestDesignMerge(t *testing.T) {
	// s1's ports: h1, h2, s2 (the link's a end); s2's: s1, h3.
	for _, c := range []struct {
		design       string
		s1Host       string // s1's port toward h1
		s1Fabric     string // s1's port toward s2 (a_port tunes it)
		s2           string // both of s2's ports
		sched, buf   string // of s1's host port
		s2buf        string
		s1sw, s2sw   any // the switches' buffer keys
		s2HostFabric bool
	}{
		// No design: the file as written; mechanisms merge key by key.
		{"", "bfc{assign:dynamic}", "bfc{assign:dynamic} ecn{rtt:20us} pfc{xoff:20KB}", "bfc{assign:dynamic th:10KB} ecn{k_packets:30}", "drr", "1MB", "512KB", "8MB", "4MB", false},
		// No mechanism: none anywhere, whatever the switch and link tune.
		{"fifo", "none", "none", "none", "drr", "1MB", "512KB", "8MB", "4MB", false},
		// ecn only: bfc is gone (s2's bfc tuning too), ecn tuned by s2 and the a end; pfc's tuning is left out.
		{"dctcp", "ecn{k_packets:20}", "ecn{k_packets:20 rtt:20us}", "ecn{k_packets:30}", "fifo", "1MB", "512KB", "8MB", "2MB", false},
		// ecn and pfc: the a end tunes both.
		{"dcqcn", "ecn{mode:red} pfc{}", "ecn{mode:red rtt:20us} pfc{xoff:20KB}", "ecn{k_packets:30 mode:red} pfc{}", "drr", "1MB", "512KB", "8MB", "4MB", false},
		// No mechanisms in the design: the file's stay; the design's buffer
		// is over defaults.port, under s2's port.
		{"deeper", "bfc{assign:dynamic}", "bfc{assign:dynamic} ecn{rtt:20us} pfc{xoff:20KB}", "bfc{assign:dynamic th:10KB} ecn{k_packets:30}", "drr", "2MB", "512KB", "8MB", "4MB", false},
		{"none", "bfc{assign:dynamic}", "bfc{assign:dynamic} ecn{rtt:20us} pfc{xoff:20KB}", "bfc{assign:dynamic th:10KB} ecn{k_packets:30}", "drr", "1MB", "512KB", "8MB", "4MB", false},
	} {
		t.Run("design "+c.design, func(t *testing.T) {
			s1, s2 := planUnder(t, designed, c.design)
			p1, p2 := portsOf(s1), portsOf(s2)
			clean := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "map[", "{"), "]", "}") }
			if got := clean(mechs(p1[0])); got != c.s1Host {
				t.Errorf("s1 port h1: mechanisms %s, want %s", got, c.s1Host)
			}
			if got := clean(mechs(p1[1])); got != c.s1Host {
				t.Errorf("s1 port h2: mechanisms %s, want %s", got, c.s1Host)
			}
			if got := clean(mechs(p1[2])); got != c.s1Fabric {
				t.Errorf("s1 port s2: mechanisms %s, want %s", got, c.s1Fabric)
			}
			for _, port := range p2 {
				if got := clean(mechs(port)); got != c.s2 {
					t.Errorf("s2 port %s: mechanisms %s, want %s", port["name"], got, c.s2)
				}
				if port["buffer"] != c.s2buf {
					t.Errorf("s2 port %s: buffer %v, want %s (s2's port: wins over the design)", port["name"], port["buffer"], c.s2buf)
				}
			}
			if p1[0]["scheduler"] != c.sched || p1[0]["buffer"] != c.buf {
				t.Errorf("s1 port h1: scheduler %v buffer %v, want %s %s", p1[0]["scheduler"], p1[0]["buffer"], c.sched, c.buf)
			}
			if s1["buffer"] != c.s1sw || s2["buffer"] != c.s2sw || s1["workers"] != 1 {
				t.Errorf("switch buffers %v %v (workers %v), want %v %v", s1["buffer"], s2["buffer"], s1["workers"], c.s1sw, c.s2sw)
			}
		})
	}
}

// TestNoDesignChangesNothing: a file's defaults plan to the same configs
// with or without designs: and transport: in it.
func TestNoDesignChangesNothing(t *testing.T) {
	plain := designed[:strings.Index(designed, "transport: {mode: bfc")] + designed[strings.Index(designed, "switches:"):]
	plain = strings.NewReplacer(", transport: {pfc: false, args: [-pace, 100Mbit]}", "", ", transport: {mode: plain}", "").Replace(plain)
	if strings.Contains(plain, "transport") || strings.Contains(plain, "designs") {
		t.Fatalf("the edit left designs or transports:\n%s", plain)
	}
	a, err := mustTopo(t, designed).Plan()
	if err != nil {
		t.Fatal(err)
	}
	b, err := mustTopo(t, plain).Plan()
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.Switches {
		if !bytes.Equal(a.Switches[i].Config, b.Switches[i].Config) {
			t.Errorf("%s: the config changed with designs: in the file:\n%s\n---\n%s", a.Switches[i].Name, a.Switches[i].Config, b.Switches[i].Config)
		}
	}
	for _, h := range b.Hosts {
		if h.Transport != nil {
			t.Errorf("host %s has a transport in a file that gives none", h.Name)
		}
	}
}

// TestHostTransport: a host's gsperf flags, from the top-level transport,
// the design's and the host's own, later winning; args add up, lowest
// first, so that gsperf (which takes a flag's last value) sees the
// host's last.
func TestHostTransport(t *testing.T) {
	tp := mustTopo(t, designed)
	for _, c := range []struct {
		design, host, client, server, modeFrom string
	}{
		{"", "h1", "-mode bfc -rate 1Gbit", "-mode plain", "transport"},
		{"", "h2", "-mode bfc -rate 1Gbit -pace 100Mbit", "-mode plain", "transport"},
		{"", "h3", "-mode plain -rate 1Gbit", "-mode plain", "hosts.h3.transport"},
		{"fifo", "h1", "-mode plain -rate 1Gbit", "-mode plain", "designs.fifo.transport"},
		{"dcqcn", "h1", "-mode dcqcn -pfc -rate 1Gbit -pace 1Gbit", "-mode dcqcn -report 0s", "designs.dcqcn.transport"},
		{"dcqcn", "h2", "-mode dcqcn -rate 1Gbit -pace 1Gbit -pace 100Mbit", "-mode dcqcn -report 0s", "designs.dcqcn.transport"},
		{"dcqcn", "h3", "-mode plain -pfc -rate 1Gbit -pace 1Gbit", "-mode plain -report 0s", "hosts.h3.transport"},
		{"deeper", "h1", "-mode bfc -rate 1Gbit", "-mode plain", "transport"},
	} {
		dt, err := tp.WithDesign(c.design)
		if err != nil {
			t.Fatal(err)
		}
		ht, err := dt.HostTransport(c.host)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(ht.ClientFlags(), " "); got != c.client {
			t.Errorf("design %q, %s: client %q, want %q", c.design, c.host, got, c.client)
		}
		if got := strings.Join(ht.ServerFlags(), " "); got != c.server {
			t.Errorf("design %q, %s: server %q, want %q", c.design, c.host, got, c.server)
		}
		if ht.ModeFrom != c.modeFrom {
			t.Errorf("design %q, %s: mode from %q, want %q", c.design, c.host, ht.ModeFrom, c.modeFrom)
		}
		p, _ := dt.Plan()
		if hp := p.host(c.host); hp.Transport == nil || hp.Transport.String() != c.client {
			t.Errorf("design %q, %s: the plan's transport %v", c.design, c.host, hp.Transport)
		}
	}
	if _, err := tp.HostTransport("h9"); err == nil || !strings.Contains(err.Error(), `no host "h9" in topology d (its hosts: h1, h2, h3)`) {
		t.Errorf("unknown host: %v", err)
	}
	// No transport anywhere: gsperf's default, and xpass's server.
	ht, _ := mustTopo(t, small).HostTransport("h1")
	if got := strings.Join(ht.ClientFlags(), " "); got != "-mode plain" || ht.ModeFrom != "" || mustTopo(t, small).HasTransport() {
		t.Errorf("no transport: %q from %q", got, ht.ModeFrom)
	}
	if got := (HostTransport{Mode: "xpass", Args: []string{"-workload", "my cdf.txt"}}); got.String() != `-mode xpass -workload "my cdf.txt"` || strings.Join(got.ServerFlags(), " ") != "-mode xpass" {
		t.Errorf("%s / %v", got.String(), got.ServerFlags())
	}
}

// TestGsperfModes: the list names each mode once; a mode's server is one
// of gsperf's server modes.
func TestGsperfModes(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range GsperfModes {
		if seen[m.Name] {
			t.Errorf("mode %s listed twice", m.Name)
		}
		seen[m.Name] = true
		if m.Server != "plain" && m.Server != "xpass" && m.Server != "dcqcn" {
			t.Errorf("mode %s: server %q", m.Name, m.Server)
		}
	}
	if !seen[DefaultGsperfMode] {
		t.Errorf("the default mode %s is not listed", DefaultGsperfMode)
	}
	if got := modeList(); got != "plain, pfabric, bfc, sfc, xpass, dctcp, dcqcn or hpcc" {
		t.Errorf("modeList %q", got)
	}
}

func TestDesignErrors(t *testing.T) {
	edit := func(pairs ...string) string {
		s := designed
		for i := 0; i < len(pairs); i += 2 {
			if !strings.Contains(s, pairs[i]) {
				panic("edit: " + pairs[i] + " not in the designed topology")
			}
			s = strings.Replace(s, pairs[i], pairs[i+1], 1)
		}
		return s
	}
	for _, c := range []struct{ name, yaml, want string }{
		{"misspelt mode", edit("mode: dcqcn,", "mode: dcqnc,"), `designs.dcqcn.transport.mode: "dcqnc" is not a gsperf mode (use plain, pfabric, bfc, sfc, xpass, dctcp, dcqcn or hpcc)`},
		{"top-level mode", edit("transport: {mode: bfc,", "transport: {mode: tcp,"), `transport.mode: "tcp" is not a gsperf mode (use plain,`},
		{"host mode", edit("transport: {mode: plain}}", "transport: {mode: cubic}}"), `hosts.h3.transport.mode: "cubic" is not a gsperf mode`},
		{"unknown transport key", edit("transport: {mode: dctcp}", "transport: {mode: dctcp, cc: dctcp}"), "designs.dctcp.transport.cc: unknown key (line 15; known keys here: mode, pfc, args, server_args)"},
		{"pfc not a bool", edit("pfc: true", "pfc: yes please"), `designs.dcqcn.transport.pfc: "yes please" is not true or false`},
		{"args not a list", edit("args: [-pace, 1Gbit]", "args: -pace 1Gbit"), `designs.dcqcn.transport.args: line 18: "-pace 1Gbit" is not a list (write one word per item, e.g. [-pace, 10Gbit])`},
		{"args set the mode", edit("args: [-pace, 1Gbit]", "args: [-pace, 1Gbit, -mode, plain]"), `designs.dcqcn.transport.args[2]: "-mode" is the transport's own flag (set designs.dcqcn.transport.mode instead)`},
		{"args set pfc", edit("args: [-rate, 1Gbit]", "args: [--pfc=false]"), `transport.args[0]: "--pfc=false" is the transport's own flag (set transport.pfc instead)`},
		{"server args set the mode", edit("server_args: [-report, 0s]", "server_args: [-mode, xpass]"), `designs.dcqcn.transport.server_args[0]: "-mode" is the transport's own flag (the server's -mode follows designs.dcqcn.transport.mode: xpass for xpass, dcqcn for dcqcn, else plain)`},
		{"args hold a mapping", edit("args: [-pace, 100Mbit]", "args: [{pace: 1}]"), "hosts.h2.transport.args[0]: line 29: a mapping where a single value belongs"},
		{"xpass with pfc", edit("transport: {mode: dctcp}", "transport: {mode: xpass}", "transport: {mode: bfc,", "transport: {mode: bfc, pfc: true,"),
			"transport.pfc: true, and designs.dctcp.transport.mode: xpass: host h1 under design dctcp would run gsperf -mode xpass -pfc, which gsperf refuses (xpass honours no PFC pause; set designs.dctcp.transport.pfc: false, or another mode)"},
		{"xpass with pfc on one host", edit("transport: {mode: plain}}", "transport: {mode: xpass}}"), "designs.dcqcn.transport.pfc: true, and hosts.h3.transport.mode: xpass: host h3 under design dcqcn would run"},
		{"unknown design key", edit("deeper:\n", "deeper:\n    ports: {}\n"), "designs.deeper.ports: unknown key (line 20; known keys here: port, switch, transport)"},
		{"bad design name", edit("deeper:", "'deeper design':"), `designs.deeper design: "deeper design" is not a valid design name`},
		{"design sets a port's rate", edit("port: {buffer: 2MB}", "port: {buffer: 2MB, rate: 1Gbit}"), "designs.deeper.port.rate: set by the topology (use the link's rate"},
		{"design sets a switch's metrics", edit("switch: {buffer: 2MB}", "switch: {metrics: off}"), "designs.dctcp.switch.metrics: set by the topology (use metrics_base)"},
		{"design sets the control socket", edit("switch: {buffer: 2MB}", "switch: {control: {socket: off}}"), "designs.dctcp.switch.control: not in a design (the control socket is the same under every design"},
		{"mechanisms a list", edit("port: {mechanisms: {}}", "port: {mechanisms: [ecn]}"), "designs.fifo.port.mechanisms: line 10: a list is not a mapping of mechanism names to their keys (write mechanisms: {ecn: {k_packets: 65}}, or mechanisms: {} for none)"},
		{"designs a list", small + "designs: [fifo]\n", "designs: line 15: a list is not a mapping of names to entries"},
		{"design not a mapping", edit("none: {}", "none: fifo"), `designs.none: line 21: "fifo" is not a mapping`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml))
			if err == nil {
				t.Fatalf("accepted:\n%s", c.yaml)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q\ndoes not contain %q", err, c.want)
			}
		})
	}
	tp := mustTopo(t, designed)
	if _, err := tp.WithDesign("dcqnc"); err == nil || err.Error() != "designs.dcqnc: no such design (the file's designs: fifo, dctcp, dcqcn, deeper, none)" {
		t.Errorf("unknown design: %v", err)
	}
	if _, err := mustTopo(t, small).WithDesign("fifo"); err == nil || !strings.Contains(err.Error(), "designs.fifo: no such design: the file has no designs: (add them to the file, or run it without a design)") {
		t.Errorf("no designs: %v", err)
	}
	if dt, err := tp.WithDesign("dctcp"); err != nil || dt.DesignName() != "dctcp" || tp.Design != nil {
		t.Errorf("WithDesign changed the original or failed: %v", err)
	}
}

// TestDesignShowText: show names the design and the hosts' gsperf flags.
func TestDesignShowText(t *testing.T) {
	for design, want := range map[string][]string{
		"":      {"design: none, the file's defaults as written (its designs: fifo, dctcp, dcqcn, deeper, none; choose one with -design NAME); mechanisms: bfc, ecn, pfc", "gsperf -mode bfc -rate 1Gbit"},
		"dcqcn": {"design dcqcn (of fifo, dctcp, dcqcn, deeper, none); mechanisms: ecn, pfc", "gsperf -mode dcqcn -pfc -rate 1Gbit -pace 1Gbit"},
		"fifo":  {"design fifo (of fifo, dctcp, dcqcn, deeper, none); mechanisms: none", "gsperf -mode plain -rate 1Gbit"},
	} {
		dt, _ := mustTopo(t, designed).WithDesign(design)
		p, _ := dt.Plan()
		var b bytes.Buffer
		if err := p.WriteText(&b, false); err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("design %q: show lacks %q:\n%s", design, w, b.String())
			}
		}
	}
}

// TestUpDesignState: Up records the design in the state file, where
// UpDesign (gswitchctl topo transport) and Attach find it.
func TestUpDesignState(t *testing.T) {
	tp := mustTopo(t, designed)
	o := UpOptions{StateDir: t.TempDir()}
	if d, up, err := UpDesign(tp, o); d != "" || up || err != nil {
		t.Fatalf("not up: %q %v %v", d, up, err)
	}
	dir := filepath.Join(o.StateDir, tp.Name)
	os.MkdirAll(dir, 0o755)
	os.WriteFile(statePath(dir), nil, 0o644) // created, not yet written
	if d, up, err := UpDesign(tp, o); d != "" || !up || err != nil {
		t.Fatalf("empty state: %q %v %v", d, up, err)
	}
	if err := (&state{Topology: tp.Name, Design: "dcqcn", Complete: true}).save(dir); err != nil {
		t.Fatal(err)
	}
	if d, up, err := UpDesign(tp, o); d != "dcqcn" || !up || err != nil {
		t.Fatalf("up under dcqcn: %q %v %v", d, up, err)
	}
	if r, err := Attach(tp, o); err != nil || r.Design != "dcqcn" {
		t.Fatalf("Attach: %v %v", r, err)
	}
	os.WriteFile(statePath(dir), []byte("{"), 0o644)
	if _, _, err := UpDesign(tp, o); err == nil {
		t.Fatal("a broken state file read")
	}
}
