package topo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/mech/bfc"
	"gopkg.in/yaml.v3"
)

func mustPlan(t *testing.T, src string) (*Topology, *Plan) {
	t.Helper()
	tp, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	p, err := tp.Plan()
	if err != nil {
		t.Fatal(err)
	}
	return tp, p
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func (p *Plan) sw(name string) *SwitchPlan {
	for _, s := range p.Switches {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func (p *Plan) host(name string) *HostPlan {
	for _, h := range p.Hosts {
		if h.Name == name {
			return h
		}
	}
	return nil
}

func (s *SwitchPlan) route(prefix string) *Route {
	for i := range s.Routes {
		if s.Routes[i].Prefix == netip.MustParsePrefix(prefix) {
			return &s.Routes[i]
		}
	}
	return nil
}

// leafSpine builds a leaf-spine of the given size in link order: host links
// first, then for each leaf one link to each spine. Host h of leaf l is
// 10.l.h.1/24, a subnet of its own.
func leafSpine(spines, leaves, perLeaf int) string {
	var b strings.Builder
	b.WriteString("name: ls\nswitches:\n")
	for l := 1; l <= leaves; l++ {
		fmt.Fprintf(&b, "  leaf%d: {}\n", l)
	}
	for s := 1; s <= spines; s++ {
		fmt.Fprintf(&b, "  spine%d: {}\n", s)
	}
	b.WriteString("hosts:\n")
	for l := 1; l <= leaves; l++ {
		for h := 1; h <= perLeaf; h++ {
			fmt.Fprintf(&b, "  h%d_%d: {addr: 10.%d.%d.1/24}\n", l, h, l, h)
		}
	}
	b.WriteString("links:\n")
	for l := 1; l <= leaves; l++ {
		for h := 1; h <= perLeaf; h++ {
			fmt.Fprintf(&b, "  - {a: h%d_%d, b: leaf%d}\n", l, h, l)
		}
	}
	for l := 1; l <= leaves; l++ {
		for s := 1; s <= spines; s++ {
			fmt.Fprintf(&b, "  - {a: leaf%d, b: spine%d}\n", l, s)
		}
	}
	return b.String()
}

// TestLeafSpineRoutes: every leaf reaches every other leaf's subnet over
// both spines (2 equal-cost next hops: the spines' ends of its own two
// fabric links); each spine reaches each leaf subnet in one hop, via that
// leaf's end of their link. The /31s go in link order, the lower address
// on the a (leaf) end.
func TestLeafSpineRoutes(t *testing.T) {
	_, p := mustPlan(t, leafSpine(2, 4, 2))
	// Fabric link k (0-based, in file order: leaf1-spine1, leaf1-spine2,
	// leaf2-spine1, ...) is 10.255.0.2k/31; leaf l, spine s is k = 2(l-1)+(s-1).
	leafAddr := func(l, s int) string { return fmt.Sprintf("10.255.0.%d", 2*(2*(l-1)+(s-1))) }
	spineAddr := func(l, s int) string { return fmt.Sprintf("10.255.0.%d", 2*(2*(l-1)+(s-1))+1) }
	for l := 1; l <= 4; l++ {
		leaf := p.sw(fmt.Sprintf("leaf%d", l))
		if len(leaf.Routes) != 6 {
			t.Errorf("leaf%d has %d routes, want 6 (one per host of the other leaves): %v", l, len(leaf.Routes), leaf.Routes)
		}
		for o := 1; o <= 4; o++ {
			for h := 1; h <= 2; h++ {
				r := leaf.route(fmt.Sprintf("10.%d.%d.0/24", o, h))
				if o == l {
					if r != nil {
						t.Errorf("leaf%d routes its own host's subnet: %v", l, r)
					}
					continue
				}
				want := addrs(spineAddr(l, 1), spineAddr(l, 2))
				if r == nil || !slices.Equal(r.Via, want) {
					t.Errorf("leaf%d route to host %d of leaf%d: %v, want via %v", l, h, o, r, want)
				}
			}
		}
		for s := 1; s <= 2; s++ {
			port := leaf.Ports[2+s-1] // two host ports first
			if port.Role != RoleFabric || port.Peer != fmt.Sprintf("spine%d", s) || port.Addr != netip.MustParsePrefix(leafAddr(l, s)+"/31") {
				t.Errorf("leaf%d port %d: role %s peer %s addr %s, want fabric spine%d %s/31", l, port.Index, port.Role, port.Peer, port.Addr, s, leafAddr(l, s))
			}
		}
	}
	for s := 1; s <= 2; s++ {
		spine := p.sw(fmt.Sprintf("spine%d", s))
		if len(spine.Routes) != 8 {
			t.Errorf("spine%d has %d routes, want 8", s, len(spine.Routes))
		}
		for l := 1; l <= 4; l++ {
			for h := 1; h <= 2; h++ {
				r := spine.route(fmt.Sprintf("10.%d.%d.0/24", l, h))
				if want := addrs(leafAddr(l, s)); r == nil || !slices.Equal(r.Via, want) {
					t.Errorf("spine%d route to host %d of leaf%d: %v, want via %v", s, h, l, r, want)
				}
			}
			if port := spine.Ports[l-1]; port.Addr != netip.MustParsePrefix(spineAddr(l, s)+"/31") || port.PeerAddr != netip.MustParseAddr(leafAddr(l, s)) {
				t.Errorf("spine%d port %d: addr %s peer %s", s, port.Index, port.Addr, port.PeerAddr)
			}
		}
	}
}

// TestECMPRing: in a ring of four switches the opposite switch's subnet has
// two shortest paths, the neighbours' subnets one.
func TestECMPRing(t *testing.T) {
	_, p := mustPlan(t, `
name: ring
switches: {s1: {}, s2: {}, s3: {}, s4: {}}
hosts:
  h1: {addr: 10.0.1.1/24}
  h2: {addr: 10.0.2.1/24}
  h3: {addr: 10.0.3.1/24}
  h4: {addr: 10.0.4.1/24}
links:
  - {a: s1, b: s2}
  - {a: s2, b: s3}
  - {a: s3, b: s4}
  - {a: s4, b: s1}
  - {a: h1, b: s1}
  - {a: h2, b: s2}
  - {a: h3, b: s3}
  - {a: h4, b: s4}
`)
	s1 := p.sw("s1")
	// s1's ends: link 0 (to s2) 10.255.0.0, link 3 (to s4) 10.255.0.7; peers .1 and .6.
	for prefix, via := range map[string][]netip.Addr{
		"10.0.2.0/24": addrs("10.255.0.1"),
		"10.0.3.0/24": addrs("10.255.0.1", "10.255.0.6"),
		"10.0.4.0/24": addrs("10.255.0.6"),
	} {
		if r := s1.route(prefix); r == nil || !slices.Equal(r.Via, via) {
			t.Errorf("s1 route %s: %v, want via %v", prefix, r, via)
		}
	}
}

// TestNextHopsInSwitchOrder: the equal-cost next hops of a route are listed
// by the next-hop switch's id (then link order), whatever the
// order of the links, so both directions of a flow pick the same spine.
// Here leaf2's links come spine2 first and spine1 has the higher id.
func TestNextHopsInSwitchOrder(t *testing.T) {
	_, p := mustPlan(t, `
name: ord
switches:
  leaf1: {}
  leaf2: {}
  spine1: {id: 20}
  spine2: {id: 10}
  spine3: {id: 15}
hosts: {h1: {addr: 10.0.1.1/24}, h2: {addr: 10.0.2.1/24}}
links:
  - {a: h1, b: leaf1}
  - {a: h2, b: leaf2}
  - {a: leaf1, b: spine1}    # 10.255.0.0/31
  - {a: leaf1, b: spine2}    # .2
  - {a: leaf1, b: spine3}    # .4
  - {a: spine3, b: leaf2}    # .6 (spine3 .6, leaf2 .7)
  - {a: leaf2, b: spine2}    # .8
  - {a: leaf2, b: spine1}    # .10
  - {a: leaf2, b: spine1}    # .12: a second link to spine1 comes after the first
`)
	// By id: spine2 (10), spine3 (15), spine1 (20).
	if r := p.sw("leaf1").route("10.0.2.0/24"); r == nil || !slices.Equal(r.Via, addrs("10.255.0.3", "10.255.0.5", "10.255.0.1")) {
		t.Errorf("leaf1's route to h2: %v, want via spine2, spine3, spine1", r)
	}
	if r := p.sw("leaf2").route("10.0.1.0/24"); r == nil || !slices.Equal(r.Via, addrs("10.255.0.9", "10.255.0.6", "10.255.0.11", "10.255.0.13")) {
		t.Errorf("leaf2's route to h1: %v, want via spine2, spine3, spine1, spine1 (second link)", r)
	}
}

// TestParallelLinks: two links between one pair of switches are two next
// hops, and the second port is named <peer>-2.
func TestParallelLinks(t *testing.T) {
	_, p := mustPlan(t, `
name: par
switches: {a: {}, b: {}}
hosts: {h1: {addr: 10.0.1.1/24}, h2: {addr: 10.0.2.1/24}}
links:
  - {a: h1, b: a}
  - {a: a, b: b}
  - {a: a, b: b}
  - {a: a, b: b, name_a: third, name_b: back}
  - {a: h2, b: b}
`)
	a := p.sw("a")
	var names []string
	for _, port := range a.Ports {
		names = append(names, port.Name)
	}
	if want := []string{"h1", "b", "b-2", "third"}; !slices.Equal(names, want) {
		t.Errorf("a's port names %v, want %v", names, want)
	}
	if n := p.sw("b").Ports[2].Name; n != "back" {
		t.Errorf("b's third port is %q, want back", n)
	}
	if r := a.route("10.0.2.0/24"); r == nil || !slices.Equal(r.Via, addrs("10.255.0.1", "10.255.0.3", "10.255.0.5")) {
		t.Errorf("a's route to b's subnet: %v", r)
	}
}

// TestHostsAndNeighbours: hosts route every other subnet via their gateway
// (no default route, none for their own subnet); the gateway defaults to
// the subnet's last usable address and is the switch port's address, with
// its MAC; every switch has a neighbour entry for each host and peer port.
func TestHostsAndNeighbours(t *testing.T) {
	src := strings.Replace(small, "  sw2: {}\n", "  sw2: {}\n  sw3: {}\n", 1)
	src = strings.Replace(src, "  h3: {addr: 10.1.2.1/24}\n", "  h3: {addr: 10.1.2.1/24}\n  h4: {addr: 10.3.0.9/16, gateway: 10.3.0.1}\n", 1)
	src += "  - {a: sw2, b: sw3}\n  - {a: h4, b: sw3}\n"
	_, p := mustPlan(t, src)
	h1, h4 := p.host("h1"), p.host("h4")
	if h1.Gateway != netip.MustParseAddr("10.1.1.254") || h4.Gateway != netip.MustParseAddr("10.3.0.1") {
		t.Errorf("gateways %s %s, want 10.1.1.254 (default) and 10.3.0.1 (explicit)", h1.Gateway, h4.Gateway)
	}
	var got []string
	for _, r := range h1.Routes {
		got = append(got, fmt.Sprintf("%s via %s", r.Prefix, addrList(r.Via)))
	}
	if want := []string{"10.1.3.0/24 via 10.1.1.254", "10.1.2.0/24 via 10.1.1.254", "10.3.0.0/16 via 10.1.1.254"}; !slices.Equal(got, want) {
		t.Errorf("h1 routes %v, want %v", got, want)
	}
	sw1 := p.sw("sw1")
	if port := sw1.Ports[0]; port.Addr != netip.MustParsePrefix("10.1.1.254/24") || h1.GatewayMAC.String() != port.MAC.String() || port.Role != RoleHost {
		t.Errorf("sw1 port 1: addr %s role %s MAC %s, h1's gateway MAC %s", port.Addr, port.Role, port.MAC, h1.GatewayMAC)
	}
	if port := p.sw("sw3").Ports[1]; port.Addr != netip.MustParsePrefix("10.3.0.1/16") {
		t.Errorf("sw3's host port addr %s, want 10.3.0.1/16", port.Addr)
	}
	// sw1: neighbours h1, h2 (host MACs) and sw2's end of link 2.
	want := []Neighbor{
		{netip.MustParseAddr("10.1.1.1"), h1.MAC},
		{netip.MustParseAddr("10.1.3.1"), p.host("h2").MAC},
		{netip.MustParseAddr("10.255.0.1"), p.sw("sw2").Ports[0].MAC},
	}
	if len(sw1.Neighbors) != len(want) {
		t.Fatalf("sw1 neighbours %v, want %v", sw1.Neighbors, want)
	}
	for i := range want {
		if sw1.Neighbors[i].IP != want[i].IP || sw1.Neighbors[i].MAC.String() != want[i].MAC.String() {
			t.Errorf("sw1 neighbour %d: %v, want %v", i, sw1.Neighbors[i], want[i])
		}
	}
	// sw1 reaches sw3's subnet in two hops via sw2.
	if r := sw1.route("10.3.0.0/16"); r == nil || !slices.Equal(r.Via, addrs("10.255.0.1")) {
		t.Errorf("sw1 route to 10.3.0.0/16: %v", r)
	}
	if r := p.sw("sw2").route("10.3.0.0/16"); r == nil || !slices.Equal(r.Via, addrs("10.255.0.3")) {
		t.Errorf("sw2 route to 10.3.0.0/16: %v", r)
	}
}

// TestNamesAndMACs: interface names fit Linux (<= 15), are unique and
// follow <name>-<switch#>p<port#>; namespaces are <name>-<host>; MACs are
// unique, locally administered unicast, the same for the same file and
// different for another topology name.
func TestNamesAndMACs(t *testing.T) {
	src := leafSpine(2, 4, 2)
	_, p := mustPlan(t, src)
	_, again := mustPlan(t, src)
	_, other := mustPlan(t, strings.Replace(src, "name: ls", "name: ls2", 1))
	ifnames := map[string]bool{}
	macs := map[string]string{}
	addMAC := func(what string, m []byte) {
		t.Helper()
		if len(m) != 6 || m[0]&2 == 0 || m[0]&1 != 0 {
			t.Errorf("%s: MAC %x is not locally administered unicast", what, m)
		}
		if prev, dup := macs[string(m)]; dup {
			t.Errorf("%s: MAC %x is also %s's", what, m, prev)
		}
		macs[string(m)] = what
	}
	for si, s := range p.Switches {
		for pi, port := range s.Ports {
			if len(port.Interface) > 15 {
				t.Errorf("%s is longer than 15 characters", port.Interface)
			}
			if want := fmt.Sprintf("ls-%dp%d", si+1, pi+1); port.Interface != want {
				t.Errorf("switch %s port %d: interface %s, want %s", s.Name, pi+1, port.Interface, want)
			}
			if ifnames[port.Interface] {
				t.Errorf("interface %s twice", port.Interface)
			}
			ifnames[port.Interface] = true
			addMAC(port.Interface, port.MAC)
			if !bytes.Equal(port.MAC, again.Switches[si].Ports[pi].MAC) {
				t.Errorf("%s: MAC differs between two plans of one file", port.Interface)
			}
			if bytes.Equal(port.MAC, other.Switches[si].Ports[pi].MAC) {
				t.Errorf("%s: same MAC in topologies ls and ls2", port.Interface)
			}
		}
	}
	for _, h := range p.Hosts {
		if h.Namespace != "ls-"+h.Name || h.Interface != "eth0" {
			t.Errorf("host %s: namespace %s interface %s", h.Name, h.Namespace, h.Interface)
		}
		addMAC(h.Name, h.MAC)
	}
	if len(macs) != 8+24 {
		t.Errorf("%d MACs, want 32 (8 hosts, 16 leaf and 8 spine ports)", len(macs))
	}
	// Each veth: the switch ends are the ports, the host ends eth0 in the namespace.
	for _, v := range p.Veths {
		for _, e := range []VethEnd{v.A, v.B} {
			if e.Namespace == "" && !ifnames[e.Name] || e.Namespace != "" && e.Name != "eth0" {
				t.Errorf("links[%d]: end %+v", v.Link, e)
			}
		}
	}
}

// gswitchdYAML decodes a switch's generated config.
func gswitchdYAML(t *testing.T, s *SwitchPlan) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(s.Config, &m); err != nil {
		t.Fatalf("%s's config is not YAML: %v\n%s", s.Name, err, s.Config)
	}
	return m
}

func portsOf(m map[string]any) []map[string]any {
	var out []map[string]any
	for _, p := range m["ports"].([]any) {
		out = append(out, p.(map[string]any))
	}
	return out
}

// TestConfigMerge: port keys merge defaults.port < switch port: < the
// link's a_port/b_port (nested maps key by key), switch keys
// defaults.switch < config:; the computed keys come with them.
func TestConfigMerge(t *testing.T) {
	_, p := mustPlan(t, `
name: m
defaults:
  link: {rate: 1Gbit, delay: 10us}
  switch: {workers: 1, buffer: 4MB}
  port: {buffer: 1MB, scheduler: fifo, mechanisms: {bfc: {queues: 32, threshold: 10KB}}}
switches:
  s1:
    id: 7
    config: {buffer: 8MB}
    port: {scheduler: drr, mechanisms: {bfc: {threshold: 20KB}}}
  s2: {}
hosts:
  h1: {addr: 10.0.1.1/24}
  h2: {addr: 10.0.2.1/24}
links:
  - {a: h1, b: s1, delay: 0us}
  - {a: s1, b: s2, rate: 10Gbit, a_port: {scheduler: sfq, quantum: 3000}, b_port: {role: host}}
  - {a: s2, b: h2}
`)
	m := gswitchdYAML(t, p.sw("s1"))
	if m["switch_id"] != 7 || m["workers"] != 1 || m["buffer"] != "8MB" || m["metrics"] != "127.0.0.1:9501" {
		t.Errorf("s1 top level: %v", m)
	}
	ports := portsOf(m)
	host, fabric := ports[0], ports[1]
	if host["scheduler"] != "drr" || host["buffer"] != "1MB" || host["rate"] != "1Gbit" || host["delay"] != nil || host["role"] != nil {
		t.Errorf("s1 host port: %v (want drr from s1's port:, 1MB from defaults, rate 1Gbit, no delay: the link says 0us, no role: host is the default)", host)
	}
	if fmt.Sprint(host["addr"]) != "[10.0.1.254/24]" || host["mac"] == nil || host["interface"] != "m-1p1" || host["name"] != "h1" {
		t.Errorf("s1 host port computed keys: %v", host)
	}
	bfc := fabric["mechanisms"].(map[string]any)["bfc"].(map[string]any)
	if fabric["scheduler"] != "sfq" || fabric["quantum"] != 3000 || bfc["queues"] != 32 || bfc["threshold"] != "20KB" {
		t.Errorf("s1 fabric port: %v (want sfq and quantum from a_port, bfc queues 32 from defaults and threshold 20KB from s1's port:)", fabric)
	}
	if fabric["rate"] != "10Gbit" || fabric["delay"] != "10us" || fabric["role"] != "fabric" || fmt.Sprint(fabric["addr"]) != "[10.255.0.0/31]" {
		t.Errorf("s1 fabric port computed keys: %v", fabric)
	}
	m2 := gswitchdYAML(t, p.sw("s2"))
	if m2["switch_id"] != 2 || m2["buffer"] != "4MB" {
		t.Errorf("s2 top level: %v", m2)
	}
	p2 := portsOf(m2)
	if p2[0]["role"] != "host" || p2[0]["scheduler"] != "fifo" || p2[0]["mechanisms"].(map[string]any)["bfc"].(map[string]any)["threshold"] != "10KB" {
		t.Errorf("s2 port 1: %v (want role host from b_port, fifo and threshold 10KB from defaults)", p2[0])
	}
	routes := m2["routes"].([]any)
	if len(routes) != 1 || fmt.Sprint(routes[0]) != "map[prefix:10.0.1.0/24 via:[10.255.0.0]]" {
		t.Errorf("s2 routes %v", routes)
	}
	if n := m2["neighbors"].([]any); len(n) != 2 {
		t.Errorf("s2 neighbours %v", n)
	}
}

// TestL2Config: an l2 topology's configs hold only what today's L2
// gswitchd knows: no switch_id (unless id is given), role, mac, addr,
// routes, neighbours, nor delay and rate when they are zero.
func TestL2Config(t *testing.T) {
	_, p := mustPlan(t, `
name: l2t
mode: l2
switches: {s1: {}, s2: {id: 9}, s3: {}}
hosts:
  h1: {addr: 10.9.0.1/24}
  h2: {addr: 10.9.0.2/24}
  h3: {addr: 10.9.0.3/24}
links:
  - {a: h1, b: s1}
  - {a: s1, b: s2, rate: 100Mbit}
  - {a: s2, b: s3}
  - {a: h2, b: s2}
  - {a: h3, b: s3}
`)
	known := map[string]bool{"name": true, "interface": true, "rate": true}
	for _, s := range p.Switches {
		m := gswitchdYAML(t, s)
		if c, _ := m["control"].(map[string]any); c["socket"] != "/run/gswitch/l2t-"+s.Name+".sock" {
			t.Errorf("%s: control %v, want the socket /run/gswitch/l2t-%s.sock", s.Name, m["control"], s.Name)
		}
		for k := range m {
			if k != "ports" && k != "metrics" && k != "control" && !(k == "switch_id" && s.Name == "s2") {
				t.Errorf("%s: key %s in an l2 config", s.Name, k)
			}
		}
		for _, port := range portsOf(m) {
			for k := range port {
				if !known[k] {
					t.Errorf("%s port %v: key %s in an l2 config", s.Name, port["name"], k)
				}
			}
		}
		if len(s.Routes)+len(s.Neighbors) != 0 {
			t.Errorf("%s: l2 routes %v neighbours %v", s.Name, s.Routes, s.Neighbors)
		}
	}
	if r := portsOf(gswitchdYAML(t, p.sw("s1")))[1]["rate"]; r != "100Mbit" {
		t.Errorf("s1's port to s2 rate %v", r)
	}
	if id := gswitchdYAML(t, p.sw("s2"))["switch_id"]; id != 9 {
		t.Errorf("s2 switch_id %v, want 9 (given in the file)", id)
	}
	for _, h := range p.Hosts {
		if h.Gateway.IsValid() || len(h.Routes) != 0 {
			t.Errorf("l2 host %s: gateway %s routes %v", h.Name, h.Gateway, h.Routes)
		}
	}
}

// TestJumboFrames: an mtu above 1500 gives the switch 4096-byte frames
// unless its config sets frame_size.
func TestJumboFrames(t *testing.T) {
	src := `
name: j
defaults: {link: {mtu: 3000}}
switches: {s1: {}, s2: {config: {frame_size: 2048}}}
hosts: {h1: {addr: 10.0.1.1/24, mtu: 1500}, h2: {addr: 10.0.2.1/24}}
links: [{a: h1, b: s1}, {a: s1, b: s2}, {a: h2, b: s2}]
`
	_, p := mustPlan(t, src)
	if fs := gswitchdYAML(t, p.sw("s1"))["frame_size"]; fs != 4096 {
		t.Errorf("s1 frame_size %v, want 4096", fs)
	}
	if fs := gswitchdYAML(t, p.sw("s2"))["frame_size"]; fs != 2048 {
		t.Errorf("s2 frame_size %v, want 2048 (its own)", fs)
	}
	if h := p.host("h1"); h.MTU != 1500 || p.Veths[0].B.MTU != 3000 {
		t.Errorf("h1 mtu %d, its switch end %d; want 1500 and 3000", h.MTU, p.Veths[0].B.MTU)
	}
	if p.host("h2").MTU != 3000 {
		t.Errorf("h2 mtu %d, want the link's 3000", p.host("h2").MTU)
	}
}

// TestTargets: the file_sd JSON in Prometheus's format, one entry per
// switch on metrics_base + its position.
func TestTargets(t *testing.T) {
	_, p := mustPlan(t, strings.Replace(leafSpine(2, 2, 1), "name: ls\n", "name: ls\nmetrics_base: 9600\n", 1))
	var buf bytes.Buffer
	if err := json.Compact(&buf, p.TargetsJSON()); err != nil {
		t.Fatal(err)
	}
	want := `[{"targets":["127.0.0.1:9601"],"labels":{"switch":"leaf1","topology":"ls"}},` +
		`{"targets":["127.0.0.1:9602"],"labels":{"switch":"leaf2","topology":"ls"}},` +
		`{"targets":["127.0.0.1:9603"],"labels":{"switch":"spine1","topology":"ls"}},` +
		`{"targets":["127.0.0.1:9604"],"labels":{"switch":"spine2","topology":"ls"}}]`
	if buf.String() != want {
		t.Errorf("targets\n%s\nwant\n%s", buf.String(), want)
	}
}

// TestYAMLAnchors: anchors, aliases and merge keys work in the file and
// come out expanded in the configs.
func TestYAMLAnchors(t *testing.T) {
	_, p := mustPlan(t, `
name: an
defaults:
  port: &base {scheduler: drr, queues: 8}
switches:
  s1: {port: {<<: *base, queues: 16}}
  s2: {port: *base}
hosts: {h1: {addr: 10.0.1.1/24}, h2: {addr: 10.0.2.1/24}}
links: [{a: h1, b: s1}, {a: s1, b: s2}, {a: h2, b: s2}]
`)
	if port := portsOf(gswitchdYAML(t, p.sw("s1")))[0]; port["scheduler"] != "drr" || port["queues"] != 16 {
		t.Errorf("s1 port: %v, want drr (merged) and queues 16 (its own)", port)
	}
	if port := portsOf(gswitchdYAML(t, p.sw("s2")))[0]; port["scheduler"] != "drr" || port["queues"] != 8 {
		t.Errorf("s2 port: %v, want drr and 8 (the alias)", port)
	}
	if bytes.Contains(p.sw("s1").Config, []byte("*")) || bytes.Contains(p.sw("s1").Config, []byte("<<")) {
		t.Errorf("aliases not expanded:\n%s", p.sw("s1").Config)
	}
}

func TestShowText(t *testing.T) {
	_, p := mustPlan(t, small)
	var b bytes.Buffer
	if err := p.WriteText(&b, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"topology t, mode l3: 2 switches, 3 hosts, 4 links", "route 10.1.2.0/24", "via 10.255.0.1", "netns t-h1", "--- sw1.yaml", "switch_id: 1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("show output lacks %q:\n%s", want, b.String())
		}
	}
}

// TestBFCUplinksByTier: in a leaf-spine with BFC, a leaf's ports toward
// the spines are uplinks (the port key uplink, which BFC's up-down pause
// table defaults to), a spine's are not, host ports are not, and a port
// whose BFC keys say uplink keeps it: the configs gswitchd loads give BFC
// the same uplinks.
func TestBFCUplinksByTier(t *testing.T) {
	_, p := mustPlan(t, `
name: upt
mode: l3
defaults:
  port: {scheduler: drr, mechanisms: {bfc: {}}}
switches:
  leaf1: {}
  leaf2: {port: {mechanisms: {bfc: {uplink: false}}}}
  spine1: {}
  spine2: {}
hosts:
  h1: {addr: 10.1.1.1/24}
  h2: {addr: 10.2.1.1/24}
links:
  - {a: h1, b: leaf1}
  - {a: h2, b: leaf2}
  - {a: leaf1, b: spine1}
  - {a: leaf1, b: spine2}
  - {a: leaf2, b: spine1}
  - {a: leaf2, b: spine2}
`)
	uplinks := 0
	for _, s := range p.Switches {
		c, err := config.Parse(s.Config)
		if err != nil {
			t.Fatalf("%s's config does not load: %v\n%s", s.Name, err, s.Config)
		}
		for i, port := range portsOf(gswitchdYAML(t, s)) {
			faces := strings.HasPrefix(port["name"].(string), "spine") && strings.HasPrefix(s.Name, "leaf")
			if up, set := port["uplink"]; faces != (up == true) || !faces && set {
				t.Errorf("%s port %v: port key uplink %v (set %v), want it only toward a spine", s.Name, port["name"], up, set)
			}
			pc := c.Ports[i]
			if len(pc.Mechanisms) != 1 || pc.Mechanisms[0].Name != "bfc" {
				t.Fatalf("%s port %s: mechanisms %v, want bfc", s.Name, pc.Name, pc.Mechanisms.Names())
			}
			up := *pc.Mechanisms[0].Config.(*bfc.Config).Uplink
			want := s.Name == "leaf1" && faces
			if up != want {
				t.Errorf("%s port %s: bfc uplink %v, want %v (leaf2's file says false)", s.Name, pc.Name, up, want)
			}
			if up {
				uplinks++
			}
		}
	}
	if uplinks != 2 {
		t.Errorf("%d uplinks, want leaf1's 2", uplinks)
	}
}
