package topo

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gswitch/gswitch/config"
	_ "github.com/gswitch/gswitch/mech/all"
)

// TestShippedTopologies loads and plans every file in topologies/, checks
// that gswitchd loads each switch's config (under the file's defaults and
// under each of its designs), and checks what each is for.
// They use distinct names and metrics ports, so all of them can be up at
// once.
func TestShippedTopologies(t *testing.T) {
	files, err := filepath.Glob("../topologies/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bfc-incast.yaml", "bfc-line.yaml", "bfc-testbed-2m.yaml", "bfc-testbed.yaml", "designs-incast.yaml", "dumbbell.yaml", "leaf-spine.yaml", "parking-lot.yaml", "sfc-dumbbell.yaml", "sfc-dumbbell32.yaml", "websearch.yaml"}
	var got []string
	for _, f := range files {
		got = append(got, filepath.Base(f))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("topologies/ holds %v, want %v", got, want)
	}
	plans := map[string]*Plan{}
	names := map[string]string{}
	metrics := map[string]string{}
	for _, f := range files {
		tp, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if tp.Mode != ModeL3 {
			t.Errorf("%s: mode %s, want l3", f, tp.Mode)
		}
		p, err := tp.Plan()
		if err != nil {
			t.Fatal(err)
		}
		if other, dup := names[tp.Name]; dup {
			t.Errorf("%s and %s are both named %s", f, other, tp.Name)
		}
		names[tp.Name] = f
		for _, s := range p.Switches {
			if other, dup := metrics[s.Metrics]; dup {
				t.Errorf("%s %s: metrics %s also used by %s", f, s.Name, s.Metrics, other)
			}
			metrics[s.Metrics] = f + " " + s.Name
			gswitchdYAML(t, s)
			if _, err := config.Parse(s.Config); err != nil {
				t.Errorf("%s %s: gswitchd would refuse its config: %v", f, s.Name, err)
			}
		}
		for _, d := range tp.DesignNames() {
			dt, err := tp.WithDesign(d)
			if err != nil {
				t.Fatal(err)
			}
			dp, err := dt.Plan()
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range dp.Switches {
				gswitchdYAML(t, s)
				if _, err := config.Parse(s.Config); err != nil {
					t.Errorf("%s design %s, switch %s: gswitchd would refuse its config: %v", f, d, s.Name, err)
				}
			}
		}
		plans[filepath.Base(f)] = p
	}

	t.Run("bfc-line", func(t *testing.T) {
		p := plans["bfc-line.yaml"]
		if len(p.Switches) != 3 || len(p.Hosts) != 5 {
			t.Fatalf("%d switches, %d hosts; want 3 and 5", len(p.Switches), len(p.Hosts))
		}
		for host, sw := range map[string]string{"s1": "sw1", "s2": "sw1", "s3": "sw3", "r1": "sw2", "r2": "sw2"} {
			if h := p.host(host); h.Switch != sw {
				t.Errorf("%s is on %s, want %s", host, h.Switch, sw)
			}
		}
		// sw1 -> sw2 is 10.255.0.0/31, sw3 -> sw2 10.255.0.2/31: the senders' switches reach the receivers over sw2.
		// Each host is a subnet of its own, 10.<switch#>.<k>.0/24.
		checkRoutes(t, p, "sw1", map[string][]string{"10.2.1.0/24": {"10.255.0.1"}, "10.2.2.0/24": {"10.255.0.1"}, "10.3.1.0/24": {"10.255.0.1"}})
		checkRoutes(t, p, "sw3", map[string][]string{"10.2.1.0/24": {"10.255.0.3"}, "10.2.2.0/24": {"10.255.0.3"}, "10.1.1.0/24": {"10.255.0.3"}, "10.1.2.0/24": {"10.255.0.3"}})
		checkRoutes(t, p, "sw2", map[string][]string{"10.1.1.0/24": {"10.255.0.0"}, "10.1.2.0/24": {"10.255.0.0"}, "10.3.1.0/24": {"10.255.0.2"}})
	})
	t.Run("bfc-testbed-2m", func(t *testing.T) {
		// bfc-testbed.yaml's fabric, switch for switch and port for port,
		// over two machines: sw1, s1 and s2 on m1, the rest on m2, the link
		// sw1 -> sw2 a tunnel.
		one, two := plans["bfc-testbed.yaml"], plans["bfc-testbed-2m.yaml"]
		if len(one.Switches) != len(two.Switches) || len(one.Hosts) != len(two.Hosts) || len(one.Veths) != len(two.Veths) || one.Timescale != two.Timescale {
			t.Fatalf("%d switches, %d hosts, %d links at timescale %v; bfc-testbed.yaml has %d, %d, %d at %v",
				len(two.Switches), len(two.Hosts), len(two.Veths), two.Timescale, len(one.Switches), len(one.Hosts), len(one.Veths), one.Timescale)
		}
		for i, s := range two.Switches {
			o := one.Switches[i]
			if s.Name != o.Name || len(s.Ports) != len(o.Ports) {
				t.Fatalf("switch %s with %d ports, bfc-testbed.yaml's %s has %d", s.Name, len(s.Ports), o.Name, len(o.Ports))
			}
			for j, port := range s.Ports {
				op := o.Ports[j]
				if port.Name != op.Name || port.Role != op.Role || port.Uplink != op.Uplink || port.Rate != op.Rate || port.Delay != op.Delay || port.MTU != op.MTU ||
					!slices.Equal(mapKeys(lookup(port.Keys, "mechanisms")), mapKeys(lookup(op.Keys, "mechanisms"))) {
					t.Errorf("%s port %d: %+v, bfc-testbed.yaml's %+v", s.Name, j+1, port, op)
				}
			}
		}
		for _, h := range two.Hosts {
			if o := one.host(h.Name); h.Switch != o.Switch {
				t.Errorf("%s on %s, bfc-testbed.yaml's on %s", h.Name, h.Switch, o.Switch)
			}
		}
		want := map[string]string{"sw1": "m1", "s1": "m1", "s2": "m1", "sw2": "m2", "sw3": "m2", "s3": "m2", "r1": "m2", "r2": "m2"}
		for _, m := range two.Machines {
			for _, n := range append(slices.Clone(m.Switches), m.Hosts...) {
				if want[n] != m.Name {
					t.Errorf("%s on %s, want %s", n, m.Name, want[n])
				}
			}
		}
		if len(two.Tunnels) != 1 || two.Tunnels[0].Link != 5 || two.Tunnels[0].A.Node != "sw1" || two.Tunnels[0].B.Node != "sw2" || two.Tunnels[0].MTU != 1500 {
			t.Errorf("tunnels %+v, want links[5] sw1 (m1) -> sw2 (m2) alone", two.Tunnels)
		}
	})
	t.Run("dumbbell", func(t *testing.T) {
		p := plans["dumbbell.yaml"]
		senders := 0
		for _, h := range p.Hosts {
			if h.Switch == "sw1" {
				senders++
			}
		}
		if senders != 16 || len(p.Hosts) != 18 || len(p.sw("sw1").Ports) != 17 || len(p.sw("sw2").Ports) != 3 {
			t.Errorf("%d senders on sw1 of %d hosts; sw1 %d ports, sw2 %d", senders, len(p.Hosts), len(p.sw("sw1").Ports), len(p.sw("sw2").Ports))
		}
		checkRoutes(t, p, "sw1", map[string][]string{"10.2.1.0/24": {"10.255.0.1"}, "10.2.2.0/24": {"10.255.0.1"}})
		sw2 := map[string][]string{}
		for k := 1; k <= 16; k++ {
			sw2[fmt.Sprintf("10.1.%d.0/24", k)] = []string{"10.255.0.0"}
		}
		checkRoutes(t, p, "sw2", sw2)
	})
	t.Run("sfc-dumbbell", func(t *testing.T) {
		p := plans["sfc-dumbbell.yaml"]
		if len(p.Hosts) != 19 || len(p.sw("sw1").Ports) != 18 || len(p.sw("sw2").Ports) != 3 {
			t.Fatalf("%d hosts; sw1 %d ports, sw2 %d", len(p.Hosts), len(p.sw("sw1").Ports), len(p.sw("sw2").Ports))
		}
		// Every host on its own /24: sw1 reaches r1 and r2 over the shared link, sw2 each sender.
		checkRoutes(t, p, "sw1", map[string][]string{"10.2.1.0/24": {"10.255.0.1"}, "10.2.2.0/24": {"10.255.0.1"}})
		back := map[string][]string{}
		for i := 1; i <= 17; i++ {
			back[fmt.Sprintf("10.1.%d.0/24", i)] = []string{"10.255.0.0"}
		}
		checkRoutes(t, p, "sw2", back)
	})
	t.Run("sfc-dumbbell32", func(t *testing.T) {
		p := plans["sfc-dumbbell32.yaml"]
		if len(p.Hosts) != 35 || len(p.sw("sw1").Ports) != 34 || len(p.sw("sw2").Ports) != 3 {
			t.Fatalf("%d hosts; sw1 %d ports, sw2 %d", len(p.Hosts), len(p.sw("sw1").Ports), len(p.sw("sw2").Ports))
		}
		checkRoutes(t, p, "sw1", map[string][]string{"10.2.1.0/24": {"10.255.0.1"}, "10.2.2.0/24": {"10.255.0.1"}})
		back := map[string][]string{}
		for i := 1; i <= 33; i++ { // s1 .. s32, then b1
			back[fmt.Sprintf("10.1.%d.0/24", i)] = []string{"10.255.0.0"}
		}
		checkRoutes(t, p, "sw2", back)
	})
	t.Run("bfc-incast", func(t *testing.T) {
		p := plans["bfc-incast.yaml"]
		if len(p.Hosts) != 33 || len(p.sw("sw1").Ports) != 33 || len(p.sw("sw2").Ports) != 2 {
			t.Fatalf("%d hosts; sw1 %d ports, sw2 %d", len(p.Hosts), len(p.sw("sw1").Ports), len(p.sw("sw2").Ports))
		}
		for i := 1; i <= 32; i++ {
			if h := p.host(fmt.Sprintf("s%d", i)); h.Switch != "sw1" {
				t.Errorf("s%d is on %s, want sw1", i, h.Switch)
			}
		}
		checkRoutes(t, p, "sw1", map[string][]string{"10.2.1.0/24": {"10.255.0.1"}})
		back := map[string][]string{}
		for i := 1; i <= 32; i++ {
			back[fmt.Sprintf("10.1.%d.0/24", i)] = []string{"10.255.0.0"}
		}
		checkRoutes(t, p, "sw2", back)
	})
	t.Run("designs-incast", func(t *testing.T) {
		// The fabric of expresspass/incast.yaml, unchanged.
		xp, err := Load("../topologies/expresspass/incast.yaml")
		if err != nil {
			t.Fatal(err)
		}
		xpp, _ := xp.Plan()
		p := plans["designs-incast.yaml"]
		if len(p.Hosts) != len(xpp.Hosts) || len(p.Veths) != len(xpp.Veths) || len(p.Switches) != 2 || p.Timescale != xpp.Timescale {
			t.Fatalf("%d hosts, %d links, %d switches, timescale %v; want expresspass/incast.yaml's", len(p.Hosts), len(p.Veths), len(p.Switches), p.Timescale)
		}
		for i, h := range p.Hosts {
			if x := xpp.Hosts[i]; h.Name != x.Name || h.Addr != x.Addr || h.Switch != x.Switch {
				t.Errorf("host %s %s on %s; expresspass/incast.yaml has %s %s on %s", h.Name, h.Addr, h.Switch, x.Name, x.Addr, x.Switch)
			}
		}
		for i, v := range p.Veths {
			if x := xpp.Veths[i]; v.Rate != x.Rate || v.Delay != x.Delay || v.A.Node != x.A.Node || v.B.Node != x.B.Node {
				t.Errorf("links[%d] differs from expresspass/incast.yaml's", i)
			}
		}
		tp, _ := Load("../topologies/designs-incast.yaml")
		if got, want := tp.DesignNames(), []string{"fifo", "pfc", "dctcp", "dcqcn", "dcqcn-pfc", "hpcc", "hpcc-pfc", "expresspass"}; !slices.Equal(got, want) {
			t.Fatalf("designs %v, want %v", got, want)
		}
		for _, c := range []struct {
			design string
			mechs  []string // on every port
			client string   // s1's and r1's gsperf client flags
			server string
		}{
			{"", nil, "-mode plain", "-mode plain"},
			{"fifo", nil, "-mode plain", "-mode plain"},
			{"pfc", []string{"pfc"}, "-mode plain -pfc", "-mode plain"},
			{"dctcp", []string{"ecn"}, "-mode dctcp", "-mode plain"},
			{"dcqcn", []string{"ecn"}, "-mode dcqcn", "-mode dcqcn"},
			{"dcqcn-pfc", []string{"ecn", "pfc"}, "-mode dcqcn -pfc", "-mode dcqcn"},
			{"hpcc", []string{"int"}, "-mode hpcc", "-mode plain"},
			{"hpcc-pfc", []string{"int", "pfc"}, "-mode hpcc -pfc", "-mode plain"},
			{"expresspass", []string{"expresspass"}, "-mode xpass", "-mode xpass -xp-link 10Gbit"},
		} {
			dt, err := tp.WithDesign(c.design)
			if err != nil {
				t.Fatal(err)
			}
			dp, _ := dt.Plan()
			for _, s := range dp.Switches {
				for _, port := range s.Ports {
					if got := mapKeys(lookup(port.Keys, "mechanisms")); !slices.Equal(got, c.mechs) {
						t.Errorf("design %q: %s port %s runs %v, want %v", c.design, s.Name, port.Name, got, c.mechs)
					}
				}
			}
			for _, h := range []string{"s1", "r1"} {
				ht, err := dt.HostTransport(h)
				if err != nil {
					t.Fatal(err)
				}
				if got := strings.Join(ht.ClientFlags(), " "); got != c.client {
					t.Errorf("design %q: %s's client flags %q, want %q", c.design, h, got, c.client)
				}
				if got := strings.Join(ht.ServerFlags(), " "); got != c.server {
					t.Errorf("design %q: %s's server flags %q, want %q", c.design, h, got, c.server)
				}
			}
		}
	})
	t.Run("parking-lot", func(t *testing.T) {
		p := plans["parking-lot.yaml"]
		// link 1 = sw1-sw2 (10.255.0.0/31), link 2 = sw2-sw3 (10.255.0.2/31).
		for host, sw := range map[string]string{"long_s": "sw1", "long_r": "sw3", "p1_s": "sw1", "p1_r": "sw2", "p2_s": "sw2", "p2_r": "sw3"} {
			if h := p.host(host); h.Switch != sw {
				t.Errorf("%s is on %s, want %s", host, h.Switch, sw)
			}
		}
		// long_s -> long_r: sw1 -> sw2 -> sw3, both links.
		via1, via2, via3 := []string{"10.255.0.1"}, []string{"10.255.0.3"}, []string{"10.255.0.2"}
		checkRoutes(t, p, "sw1", map[string][]string{"10.2.1.0/24": via1, "10.2.2.0/24": via1, "10.3.1.0/24": via1, "10.3.2.0/24": via1})
		checkRoutes(t, p, "sw2", map[string][]string{"10.3.1.0/24": via2, "10.3.2.0/24": via2, "10.1.1.0/24": {"10.255.0.0"}, "10.1.2.0/24": {"10.255.0.0"}})
		checkRoutes(t, p, "sw3", map[string][]string{"10.1.1.0/24": via3, "10.1.2.0/24": via3, "10.2.1.0/24": via3, "10.2.2.0/24": via3})
	})
	t.Run("leaf-spine", func(t *testing.T) {
		p := plans["leaf-spine.yaml"]
		if len(p.Switches) != 6 || len(p.Hosts) != 8 {
			t.Fatalf("%d switches, %d hosts; want 6 and 8", len(p.Switches), len(p.Hosts))
		}
		for _, s := range p.Switches {
			wantVia, wantRoutes := 2, 6 // leaves: ECMP over both spines to the 6 hosts of the other leaves
			if s.Name == "spine1" || s.Name == "spine2" {
				wantVia, wantRoutes = 1, 8
			}
			if len(s.Routes) != wantRoutes {
				t.Errorf("%s: %d routes, want %d", s.Name, len(s.Routes), wantRoutes)
			}
			for _, r := range s.Routes {
				if len(r.Via) != wantVia {
					t.Errorf("%s: route %s via %v, want %d next hops", s.Name, r.Prefix, r.Via, wantVia)
				}
				if wantVia == 2 && (r.Via[0] != s.Ports[2].PeerAddr || r.Via[1] != s.Ports[3].PeerAddr) {
					t.Errorf("%s: route %s via %v, want spine1's end, then spine2's", s.Name, r.Prefix, r.Via)
				}
			}
		}
	})
}

func checkRoutes(t *testing.T, p *Plan, sw string, want map[string][]string) {
	t.Helper()
	s := p.sw(sw)
	if len(s.Routes) != len(want) {
		t.Errorf("%s: routes %v, want %v", sw, s.Routes, want)
	}
	for prefix, via := range want {
		if r := s.route(prefix); r == nil || !slices.Equal(r.Via, addrs(via...)) {
			t.Errorf("%s: route %s = %v, want via %v", sw, prefix, r, via)
		}
	}
}
