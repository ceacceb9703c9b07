package topo

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gswitch/gswitch/wire"
)

// twoMachines is small over two machines: sw1 and its hosts on m1 (the
// first machine, by default), sw2 on m2, h3 on m2 but linked to sw1 (a
// host's link crosses too), and sw2's host h4 on m2.
const twoMachines = `
name: tm
machines:
  m1: {underlay: 192.0.2.1}
  m2: {underlay: 192.0.2.2}
switches:
  sw1: {}
  sw2: {machine: m2}
hosts:
  h1: {addr: 10.1.1.1/24}
  h2: {addr: 10.1.3.1/24, machine: m1}
  h3: {addr: 10.1.2.1/24, machine: m2}
  h4: {addr: 10.2.1.1/24, machine: m2}
links:
  - {a: h1, b: sw1}
  - {a: h2, b: sw1}
  - {a: sw1, b: sw2}
  - {a: h3, b: sw1, mtu: 9000}
  - {a: h4, b: sw2}
`

func TestMachinesDecode(t *testing.T) {
	tp, err := Parse([]byte(twoMachines))
	if err != nil {
		t.Fatal(err)
	}
	if got := tp.MachineNames(); !slices.Equal(got, []string{"m1", "m2"}) || tp.Machines[1].Underlay.String() != "192.0.2.2" {
		t.Fatalf("machines %v", got)
	}
	for node, m := range map[string]string{"sw1": "m1", "sw2": "m2", "h1": "m1", "h2": "m1", "h3": "m2", "h4": "m2"} {
		if got := tp.MachineOf(node); got != m {
			t.Errorf("%s on %q, want %s", node, got, m)
		}
	}
	if tp.TunnelPort != 4789 || tp.VNIBase != DeriveVNIBase("tm") {
		t.Errorf("tunnel port %d, VNI base %d; want 4789 and %d", tp.TunnelPort, tp.VNIBase, DeriveVNIBase("tm"))
	}
	tp, err = Parse([]byte(strings.Replace(twoMachines, "switches:", "tunnel: {port: 8472, vni_base: 5000}\nswitches:", 1) + "    vni: 77\n"))
	if err == nil {
		t.Fatal("a vni on a link that stays on m2 was accepted")
	}
	tp, err = Parse([]byte(strings.Replace(strings.Replace(twoMachines, "switches:", "tunnel: {port: 8472, vni_base: 5000}\nswitches:", 1),
		"{a: sw1, b: sw2}", "{a: sw1, b: sw2, vni: 77}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if tp.TunnelPort != 8472 || tp.LinkVNI(tp.Links[2]) != 77 || tp.LinkVNI(tp.Links[3]) != 5003 {
		t.Errorf("port %d, VNIs %d and %d; want 8472, 77 (given) and 5000 + 3", tp.TunnelPort, tp.LinkVNI(tp.Links[2]), tp.LinkVNI(tp.Links[3]))
	}
}

// TestMachineValidationErrors: every bad machines:, machine:, tunnel: and
// vni is refused naming the field.
func TestMachineValidationErrors(t *testing.T) {
	edit := func(base string, pairs ...string) string {
		for i := 0; i < len(pairs); i += 2 {
			if !strings.Contains(base, pairs[i]) {
				panic("edit: " + pairs[i] + " not in the topology")
			}
			base = strings.Replace(base, pairs[i], pairs[i+1], 1)
		}
		return base
	}
	for _, c := range []struct{ src, want string }{
		{edit(twoMachines, "  m1: {underlay: 192.0.2.1}\n  m2: {underlay: 192.0.2.2}\n", "  {}\n"), "machines: none"},
		{edit(twoMachines, "m1: {underlay: 192.0.2.1}", "m1: {}"), "machines.m1.underlay: missing"},
		{edit(twoMachines, "m1: {underlay: 192.0.2.1}", "m1: {underlay: 2001:db8::1}"), `machines.m1.underlay: "2001:db8::1" is not an IPv4 address`},
		{edit(twoMachines, "m1: {underlay: 192.0.2.1}", "m1: {underlay: 127.0.0.1}"), "machines.m1.underlay: 127.0.0.1 cannot be a machine's address"},
		{edit(twoMachines, "m2: {underlay: 192.0.2.2}", "m2: {underlay: 192.0.2.1}"), "machines.m2.underlay: 192.0.2.1 is already the underlay address of machines.m1"},
		{edit(twoMachines, "m1: {underlay: 192.0.2.1}", "m1: {underlay: 192.0.2.1, ram: 8GB}"), "machines.m1.ram: unknown key"},
		{edit(twoMachines, "  m1: {underlay", "  1m: {underlay"), `machines.1m: "1m" is not a valid name`},
		{edit(twoMachines, "sw2: {machine: m2}", "sw2: {machine: m9}"), `switches.sw2.machine: "m9" is not one of the file's machines: (m1, m2)`},
		{edit(twoMachines, "h3: {addr: 10.1.2.1/24, machine: m2}", "h3: {addr: 10.1.2.1/24, machine: m9}"), `hosts.h3.machine: "m9" is not one of the file's machines: (m1, m2)`},
		{edit(twoMachines, "m2: {underlay: 192.0.2.2}", "m2: {underlay: 192.0.2.2}\n  m3: {underlay: 192.0.2.3}"), "machines.m3: holds no switch or host"},
		{edit(small, "sw2: {}", "sw2: {machine: m2}"), `switches.sw2.machine: "m2", but the file has no machines:`},
		{edit(small, "{a: sw1, b: sw2}", "{a: sw1, b: sw2, vni: 5}"), "links[2].vni: the file has no machines:, so no link is a tunnel"},
		{edit(small, "switches:", "tunnel: {port: 4789}\nswitches:"), "tunnel: the file has no machines:"},
		{edit(twoMachines, "{a: h1, b: sw1}", "{a: h1, b: sw1, vni: 5}"), "links[0].vni: h1 and sw1 are both on machine m1: the link is a veth, not a tunnel"},
		{edit(twoMachines, "{a: sw1, b: sw2}", "{a: sw1, b: sw2, vni: 16777216}"), "links[2].vni: 16777216 out of range [1, 16777215]"},
		{edit(twoMachines, "{a: sw1, b: sw2}", "{a: sw1, b: sw2, vni: 0}"), "links[2].vni: 0 out of range"},
		{edit(twoMachines, "{a: sw1, b: sw2}", "{a: sw1, b: sw2, vni: 9}", "{a: h3, b: sw1, mtu: 9000}", "{a: h3, b: sw1, mtu: 9000, vni: 9}"), "links[3]: VNI 9 is already the VNI of links[2]'s tunnel"},
		{edit(twoMachines, "switches:", "tunnel: {vni_base: 100}\nswitches:", "{a: sw1, b: sw2}", "{a: sw1, b: sw2, vni: 103}"), "links[3]: VNI 103 is already the VNI of links[2]'s tunnel"},
		{edit(twoMachines, "switches:", "tunnel: {vni_base: 16777214}\nswitches:"), "links[2]: its VNI, tunnel.vni_base 16777214 + 2, is above 16777215"},
		{edit(twoMachines, "switches:", "tunnel: {vni_base: 0}\nswitches:"), "tunnel.vni_base: 0 out of range"},
		{edit(twoMachines, "switches:", "tunnel: {port: 70000}\nswitches:"), "tunnel.port: 70000 out of range [1, 65535]"},
		{edit(twoMachines, "switches:", "tunnel: {ttl: 3}\nswitches:"), "tunnel.ttl: unknown key"},
		{edit(twoMachines, "name: tm\n", "name: tm\ntimescale: auto\n"), "timescale: auto with 2 machines"},
	} {
		_, err := Parse([]byte(c.src))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("want %q..., got %v", c.want, err)
		}
	}
	// One machine with timescale: auto is one machine: allowed.
	one := edit(twoMachines, "  m2: {underlay: 192.0.2.2}\n", "", "sw2: {machine: m2}", "sw2: {}", "h3: {addr: 10.1.2.1/24, machine: m2}", "h3: {addr: 10.1.2.1/24}",
		"h4: {addr: 10.2.1.1/24, machine: m2}", "h4: {addr: 10.2.1.1/24}", "name: tm\n", "name: tm\ntimescale: auto\n")
	if _, err := Parse([]byte(one)); err != nil {
		t.Errorf("one machine, timescale auto: %v", err)
	}
}

// TestPlanForMachine: each machine's plan holds its switches, hosts and
// links, and its half of each tunnel, with names, MACs and MTUs that the
// other machine's half matches; the switches' configs are the whole plan's.
func TestPlanForMachine(t *testing.T) {
	tp, whole := mustPlan(t, twoMachines)
	if len(whole.Tunnels) != 2 || whole.Tunnels[0].Link != 2 || whole.Tunnels[1].Link != 3 || whole.Veths[2].Tunnel != whole.Tunnels[0] {
		t.Fatalf("whole plan's tunnels %+v", whole.Tunnels)
	}
	if m := whole.Machines[0]; !slices.Equal(m.Switches, []string{"sw1"}) || !slices.Equal(m.Hosts, []string{"h1", "h2"}) || !slices.Equal(m.Links, []int{0, 1}) || !slices.Equal(m.Tunnels, []int{2, 3}) {
		t.Errorf("m1 holds %+v", m)
	}
	if m := whole.Machines[1]; !slices.Equal(m.Switches, []string{"sw2"}) || !slices.Equal(m.Hosts, []string{"h3", "h4"}) || !slices.Equal(m.Links, []int{4}) || !slices.Equal(m.Tunnels, []int{2, 3}) {
		t.Errorf("m2 holds %+v", m)
	}
	m1, err := tp.PlanFor("m1")
	if err != nil {
		t.Fatal(err)
	}
	m2, err := tp.PlanFor("m2")
	if err != nil {
		t.Fatal(err)
	}
	names := func(p *Plan) (sw, hosts []string, links []int) {
		for _, s := range p.Switches {
			sw = append(sw, s.Name)
		}
		for _, h := range p.Hosts {
			hosts = append(hosts, h.Name)
		}
		for _, v := range p.Veths {
			links = append(links, v.Link)
		}
		return
	}
	if sw, hosts, links := names(m1); m1.Machine != "m1" || !slices.Equal(sw, []string{"sw1"}) || !slices.Equal(hosts, []string{"h1", "h2"}) || !slices.Equal(links, []int{0, 1, 2, 3}) ||
		!slices.Equal(m1.Namespaces, []string{"tm-h1", "tm-h2"}) || len(m1.Targets) != 1 || m1.Targets[0].Labels["machine"] != "m1" {
		t.Errorf("m1: switches %v, hosts %v, links %v, namespaces %v, targets %v", sw, hosts, links, m1.Namespaces, m1.Targets)
	}
	if sw, hosts, links := names(m2); !slices.Equal(sw, []string{"sw2"}) || !slices.Equal(hosts, []string{"h3", "h4"}) || !slices.Equal(links, []int{2, 3, 4}) || !slices.Equal(m2.Namespaces, []string{"tm-h3", "tm-h4"}) {
		t.Errorf("m2: switches %v, hosts %v, links %v, namespaces %v", sw, hosts, links, m2.Namespaces)
	}
	if !bytes.Equal(m1.Switches[0].Config, whole.Switches[0].Config) || !bytes.Equal(m2.Switches[0].Config, whole.Switches[1].Config) {
		t.Error("a machine's switch config differs from the whole plan's")
	}
	// links[2], sw1-sw2: on m1 sw1's port 3 is stitched to tm-x2, on m2 sw2's port 1.
	v1, v2 := m1.Veths[2], m2.Veths[0]
	if v1.A.Name != "tm-1p3" || v1.B.Name != "tm-x2" || v1.B.Node != "" || v1.B.Namespace != "" || v1.Tunnel == nil ||
		v2.A.Name != "tm-2p1" || v2.B.Name != "tm-x2" || v2.Tunnel.Link != 2 {
		t.Errorf("links[2]: m1 %+v <-> %+v; m2 %+v <-> %+v", v1.A, v1.B, v2.A, v2.B)
	}
	here, there := v1.Tunnel.Ends("m1")
	if here.Node != "sw1" || here.Device != "tm-v2" || here.Stitch != "tm-x2" || here.Underlay.String() != "192.0.2.1" || there.Node != "sw2" || there.Underlay.String() != "192.0.2.2" || there.Port != "tm-2p1" {
		t.Errorf("links[2] from m1: here %+v, there %+v", here, there)
	}
	if h2, t2 := v1.Tunnel.Ends("m2"); h2 != there || t2 != here || v2.B.MAC.String() != there.StitchMAC.String() || v1.B.MAC.String() != here.StitchMAC.String() {
		t.Error("the tunnel's ends from m2 are not m1's the other way round")
	}
	macs := map[string]string{}
	for _, p := range []*Plan{whole} {
		for _, s := range p.Switches {
			for _, port := range s.Ports {
				macs[port.MAC.String()] = port.Interface
			}
		}
		for _, h := range p.Hosts {
			macs[h.MAC.String()] = h.Name
		}
	}
	for _, tn := range whole.Tunnels {
		for _, e := range []*TunnelEnd{&tn.A, &tn.B} {
			for _, mac := range []string{e.DeviceMAC.String(), e.StitchMAC.String()} {
				if other, dup := macs[mac]; dup {
					t.Errorf("links[%d] on %s: MAC %s is also %s's", tn.Link, e.Machine, mac, other)
				}
				macs[mac] = e.Device
			}
		}
	}
	// links[3]: host h3 on m2, its switch sw1 on m1; jumbo.
	h3 := m2.Veths[1]
	if h3.A.Node != "h3" || h3.A.Namespace != "tm-h3" || h3.A.Name != "eth0" || h3.B.Name != "tm-x3" || h3.B.MTU != 9000 || h3.Tunnel.MTU != 9000 {
		t.Errorf("links[3] on m2: %+v <-> %+v", h3.A, h3.B)
	}
	if s := m1.Veths[3]; s.A.Name != "tm-1p4" || s.B.Name != "tm-x3" {
		t.Errorf("links[3] on m1: %+v <-> %+v", s.A, s.B)
	}
	if hp := m2.Hosts[0]; hp.Switch != "sw1" || hp.GatewayMAC.String() != whole.Switches[0].Ports[3].MAC.String() {
		t.Errorf("h3's gateway: %s on %s, want sw1's port 4", hp.GatewayMAC, hp.Switch)
	}
	if _, err := tp.PlanFor(""); err == nil || !strings.Contains(err.Error(), "topology tm spans machines m1, m2") || !strings.Contains(err.Error(), "-machine NAME") {
		t.Errorf("no machine: %v", err)
	}
	if _, err := tp.PlanFor("m9"); err == nil || !strings.Contains(err.Error(), `machine "m9": not a machine of topology tm (its machines: m1, m2)`) {
		t.Errorf("unknown machine: %v", err)
	}
	if d := (UpOptions{StateDir: "/s", Machine: "m2"}).Dir(tp); d != "/s/tm-m2" {
		t.Errorf("state directory of m2's part: %s", d)
	}
	// Each machine's text names what it holds; the whole plan's lists the machines.
	var b bytes.Buffer
	m1.WriteText(&b, false)
	for _, want := range []string{"machine m1 (underlay 192.0.2.1): 1 switches, 2 hosts, 4 links (2 of them tunnels", "tm-x2 (stitch, tunnel to sw2 on m2)", "tm-x3 (stitch, tunnel to h3 on m2)",
		"VNI " + strconv.Itoa(int(DeriveVNIBase("tm"))+2) + " (derived)", "the underlay's at least 1554", "the underlay's at least 9054"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("m1's plan does not say %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	whole.WriteText(&b, false)
	if !regexp.MustCompile(`m2 +underlay 192.0.2.2 +switches sw2 +hosts h3, h4 +veths links\[4\] +tunnels links\[2\] links\[3\]\n`).MatchString(b.String()) {
		t.Errorf("the whole plan does not list m2:\n%s", b.String())
	}
}

// TestNoMachinesUnchanged: a file without machines: plans as it did (no
// machines, tunnels, machine labels), PlanFor("") is Plan, -machine is
// refused, and its state directory is <state>/<name>.
func TestNoMachinesUnchanged(t *testing.T) {
	tp, p := mustPlan(t, small)
	if p.Machines != nil || p.Tunnels != nil || p.Machine != "" {
		t.Errorf("machines %v, tunnels %v", p.Machines, p.Tunnels)
	}
	for _, v := range p.Veths {
		if v.Tunnel != nil {
			t.Errorf("links[%d] is a tunnel", v.Link)
		}
	}
	for _, tg := range p.Targets {
		if _, ok := tg.Labels["machine"]; ok || len(tg.Labels) != 2 {
			t.Errorf("target labels %v", tg.Labels)
		}
	}
	q, err := tp.PlanFor("")
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	p.WriteText(&a, true)
	q.WriteText(&b, true)
	if a.String() != b.String() || strings.Contains(a.String(), "machine") || strings.Contains(a.String(), "tunnel") {
		t.Errorf("PlanFor(\"\") differs from Plan, or speaks of machines:\n%s", b.String())
	}
	if _, err := tp.PlanFor("m1"); err == nil || !strings.Contains(err.Error(), `machine "m1": topology t has no machines: (it runs on one machine; drop -machine)`) {
		t.Errorf("-machine on a file without machines: %v", err)
	}
	if d := (UpOptions{StateDir: "/s"}).Dir(tp); d != "/s/t" {
		t.Errorf("state directory %s, want /s/t", d)
	}
	// A file with one machine: "" is that machine.
	one, err := Parse([]byte(strings.Replace(small, "switches:", "machines: {m1: {underlay: 192.0.2.1}}\nswitches:", 1)))
	if err != nil {
		t.Fatal(err)
	}
	op, err := one.PlanFor("")
	if err != nil || op.Machine != "m1" || len(op.Tunnels) != 0 || len(op.Veths) != 4 {
		t.Errorf("one machine: %v, plan for %q with %d veths", err, op.Machine, len(op.Veths))
	}
}

// TestVNIDerivation: a topology's derived VNIs are a block of 1024 chosen
// by its name, never 0, within 24 bits, the same on every machine; a
// tunnel's source port is one port above 49151.
func TestVNIDerivation(t *testing.T) {
	seen := map[uint32]string{}
	for _, name := range []string{"a", "tm", "bfct2m", "bfct", "ls", "xyz123", "zzzzzz"} {
		b := DeriveVNIBase(name)
		if b%1024 != 0 || b < 1024 || b+1023 > MaxVNI || DeriveVNIBase(name) != b {
			t.Errorf("%s: base %d", name, b)
		}
		if other, dup := seen[b]; dup {
			t.Errorf("%s and %s share VNI base %d", name, other, b)
		}
		seen[b] = name
	}
	tp, _ := mustPlan(t, twoMachines)
	for _, l := range tp.Links {
		if got := tp.LinkVNI(l); got != DeriveVNIBase("tm")+uint32(l.Index) {
			t.Errorf("links[%d]: VNI %d", l.Index, got)
		}
	}
	for _, v := range []uint32{1, 1024, 16383, 16384, MaxVNI} {
		if p := tunnelSrcPort(v); p < 49152 || p > 65535 {
			t.Errorf("VNI %d: source port %d", v, p)
		}
	}
}

// TestUnderlayMTU: the underlay carries the link's MTU + 50 of VXLAN over
// IPv4 + BFC's tag, and the error of too small an underlay says all of it
// and both fixes.
func TestUnderlayMTU(t *testing.T) {
	if TagRoom != wire.TagLen {
		t.Fatalf("TagRoom %d, wire.TagLen %d", TagRoom, wire.TagLen)
	}
	if UnderlayMTU(1500) != 1554 || UnderlayMTU(9000) != 9054 {
		t.Fatalf("UnderlayMTU(1500) = %d, UnderlayMTU(9000) = %d", UnderlayMTU(1500), UnderlayMTU(9000))
	}
	tp, _ := mustPlan(t, twoMachines)
	p, _ := tp.PlanFor("m1")
	tn := p.Tunnels[0]
	here, there := tn.Ends("m1")
	got := underlayMTUProblem(tn, here, there, "the underlay interface ul", "ul", 1500)
	want := "links[2] (sw1 on m1 to sw2 on m2): the underlay interface ul has MTU 1500, the tunnel needs 1554: the link's mtu 1500 + 50 of VXLAN over IPv4 + 4 of gswitch's 0x88B5 tag (raise the underlay's MTU to 1554 or more on both machines, e.g. ip link set ul mtu 1554, or lower links[2].mtu to 1446)"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := underlayMTUProblem(tn, here, there, "the underlay interface ul", "ul", 100); strings.Contains(got, "lower links") {
		t.Errorf("an MTU no link fits under suggests lowering the link's: %s", got)
	}
}

// TestNamespacesMustBeShared: on a machine's part, a host namespace that
// the machine's first process does not see mounted (as under ip netns
// exec) fails up with how to run it instead; a fabric on one machine is
// not checked.
func TestNamespacesMustBeShared(t *testing.T) {
	if _, err := os.ReadFile("/proc/1/mountinfo"); err != nil {
		t.Skipf("cannot read /proc/1/mountinfo: %v", err)
	}
	tp, whole := mustPlan(t, twoMachines)
	if err := checkNamespacesShared(whole); err != nil {
		t.Errorf("the whole plan: %v", err)
	}
	p, _ := tp.PlanFor("m1") // tm-h1 is mounted nowhere
	if err := checkNamespacesShared(p); err == nil || !strings.Contains(err.Error(), "hosts.h1: namespace tm-h1 is bound at /run/netns/tm-h1 in this process's mount namespace only") ||
		!strings.Contains(err.Error(), "nsenter --net=/run/netns/NAME") {
		t.Errorf("got %v", err)
	}
}
