package topo

import (
	"fmt"
	"strings"
	"testing"
)

// small is a valid l3 topology the error cases start from: two switches,
// two hosts on sw1 (each port a subnet of its own), one on sw2.
const small = `
name: t
switches:
  sw1: {}
  sw2: {}
hosts:
  h1: {addr: 10.1.1.1/24}
  h2: {addr: 10.1.3.1/24}
  h3: {addr: 10.1.2.1/24}
links:
  - {a: h1, b: sw1}
  - {a: h2, b: sw1}
  - {a: sw1, b: sw2}
  - {a: h3, b: sw2}
`

func TestSmallIsValid(t *testing.T) {
	if _, err := Parse([]byte(small)); err != nil {
		t.Fatal(err)
	}
}

// TestValidationErrors: every bad file is refused with an error that names
// the field (the want substring starts with the field path).
func TestValidationErrors(t *testing.T) {
	// edit applies old->new replacements to small.
	edit := func(pairs ...string) string {
		s := small
		for i := 0; i < len(pairs); i += 2 {
			if !strings.Contains(s, pairs[i]) {
				panic("edit: " + pairs[i] + " not in the base topology")
			}
			s = strings.Replace(s, pairs[i], pairs[i+1], 1)
		}
		return s
	}
	manyHosts := func(n int) string {
		var b strings.Builder
		b.WriteString("name: big\nswitches: {sw1: {}}\nhosts:\n")
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "  h%d: {addr: 10.1.%d.%d/16}\n", i, i/200, i%200+1)
		}
		b.WriteString("links:\n")
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "  - {a: h%d, b: sw1}\n", i)
		}
		return b.String()
	}
	l2 := func(s string) string {
		return strings.Replace(strings.Replace(s, "name: t\n", "name: t\nmode: l2\n", 1), "10.1.3.1/24", "10.1.1.2/24", 1)
	}
	cases := []struct {
		name, yaml, want string
	}{
		{"not yaml", "name: [", "not valid YAML"},
		{"empty", "", "empty topology file"},
		{"unknown top-level key", edit("name: t", "name: t\ncolour: blue"), "colour: unknown key"},
		{"unknown switch key", edit("sw2: {}", "sw2: {prot: {}}"), "switches.sw2.prot: unknown key"},
		{"unknown host key", edit("h3: {addr: 10.1.2.1/24}", "h3: {addr: 10.1.2.1/24, ip: 1.2.3.4}"), "hosts.h3.ip: unknown key"},
		{"unknown link key", edit("{a: sw1, b: sw2}", "{a: sw1, b: sw2, speed: 1Gbit}"), "links[2].speed: unknown key"},
		{"unknown defaults key", edit("name: t", "name: t\ndefaults: {links: {}}"), "defaults.links: unknown key"},
		{"duplicate key", edit("sw2: {}", "sw2: {}\n  sw2: {}"), `switches.sw2: line 6: key "sw2" appears twice`},
		{"name missing", edit("name: t\n", ""), "name: missing"},
		{"name too long", edit("name: t", "name: abcdefg"), `name: "abcdefg" must be 1-6 characters`},
		{"name upper case", edit("name: t", "name: LS"), `name: "LS" must be`},
		{"bad mode", edit("name: t", "name: t\nmode: l4"), `mode: "l4"`},
		{"metrics_base not a number", edit("name: t", "name: t\nmetrics_base: lots"), `metrics_base: "lots" is not a whole number`},
		{"metrics_base out of range", edit("name: t", "name: t\nmetrics_base: 65534"), "metrics_base: 65534 out of range"},
		{"fabric_pool not a prefix", edit("name: t", "name: t\nfabric_pool: 10.255.0.0"), `fabric_pool: "10.255.0.0" is not an IPv4 prefix`},
		{"fabric_pool IPv6", edit("name: t", "name: t\nfabric_pool: fd00::/64"), `fabric_pool: "fd00::/64" is not an IPv4 prefix`},
		{"fabric_pool overlaps a host subnet", edit("name: t", "name: t\nfabric_pool: 10.1.0.0/16"), "fabric_pool: 10.1.0.0/16 overlaps 10.1.1.0/24, the subnet of hosts.h1"},
		{"fabric_pool too small", edit("name: t", "name: t\nfabric_pool: 10.255.0.0/31", "{a: h1, b: sw1}", "{a: h1, b: sw1}\n  - {a: sw2, b: sw1}"), "fabric_pool: 10.255.0.0/31 holds 1 /31 subnet(s), the topology has 2 switch-switch links"},
		{"bad default rate", edit("name: t", "name: t\ndefaults: {link: {rate: fast}}"), `defaults.link.rate: "fast" is not a rate`},
		{"bad default delay", edit("name: t", "name: t\ndefaults: {link: {delay: soon}}"), `defaults.link.delay: "soon" is not a duration`},
		{"bad default mtu", edit("name: t", "name: t\ndefaults: {link: {mtu: big}}"), `defaults.link.mtu: "big" is not a whole number`},
		{"link rate in bytes", edit("{a: sw1, b: sw2}", "{a: sw1, b: sw2, rate: 100MB}"), `links[2].rate: "100MB" is not a rate`},
		{"link rate too low", edit("{a: sw1, b: sw2}", "{a: sw1, b: sw2, rate: 10bit}"), `links[2].rate: 10bit out of range`},
		{"negative delay", edit("{a: sw1, b: sw2}", "{a: sw1, b: sw2, delay: -5us}"), `links[2].delay: "-5us" is not a duration`},
		{"delay too long", edit("{a: sw1, b: sw2}", "{a: sw1, b: sw2, delay: 2s}"), `links[2].delay: 2s is longer than 1s`},
		{"mtu out of range", edit("{a: sw1, b: sw2}", "{a: sw1, b: sw2, mtu: 20000}"), "links[2].mtu: 20000 out of range [68, 9000]"},
		{"host mtu above its link's", edit("h3: {addr: 10.1.2.1/24}", "h3: {addr: 10.1.2.1/24, mtu: 9000}"), "hosts.h3.mtu: 9000 is larger than the mtu of its link links[3] (1500)"},
		{"host mtu out of range", edit("h3: {addr: 10.1.2.1/24}", "h3: {addr: 10.1.2.1/24, mtu: 10}"), "hosts.h3.mtu: 10 out of range"},
		{"no switches", edit("  sw1: {}\n  sw2: {}\n", ""), "switches: none"},
		{"no hosts", "name: t\nswitches: {sw1: {}}\nlinks: [{a: sw1, b: sw1}]\n", "hosts: none"},
		{"no links", "name: t\nswitches: {sw1: {}}\nhosts: {h1: {addr: 10.1.1.1/24}}\n", "links: none"},
		{"links not a list", "name: t\nswitches: {sw1: {}}\nhosts: {h1: {addr: 10.1.1.1/24}}\nlinks: {a: h1}\n", "links: line 4: not a list"},
		{"bad switch name", edit("sw2: {}", "2sw: {}"), `switches.2sw: "2sw" is not a valid name`},
		{"host name too long", edit("h3: {", "hostnamelongerthan15: {", "{a: h3,", "{a: hostnamelongerthan15,"), `hosts.hostnamelongerthan15: "hostnamelongerthan15" is not a valid name (1-15 characters`},
		{"host named like a switch", edit("h3: {", "sw2: {"), `hosts.sw2: "sw2" is also the name of a switch`},
		{"switch id out of range", edit("sw2: {}", "sw2: {id: 70000}"), "switches.sw2.id: 70000 out of range [1, 65535]"},
		{"switch id used twice", edit("sw2: {}", "sw2: {id: 1}"), "switches.sw2.id: 1 is already the id of switches.sw1"},
		{"switch config sets ports", edit("sw2: {}", "sw2: {config: {ports: []}}"), "switches.sw2.config.ports: set by the topology"},
		{"switch config sets metrics", edit("sw2: {}", "sw2: {config: {metrics: 127.0.0.1:1}}"), "switches.sw2.config.metrics: set by the topology (use metrics_base)"},
		{"switch config not a mapping", edit("sw2: {}", "sw2: {config: workers}"), `switches.sw2.config: line 5: "workers" is not a mapping of gswitchd keys`},
		{"defaults.switch sets switch_id", edit("name: t", "name: t\ndefaults: {switch: {switch_id: 4}}"), "defaults.switch.switch_id: set by the topology (use switches.<name>.id)"},
		{"defaults.port sets rate", edit("name: t", "name: t\ndefaults: {port: {rate: 1Gbit}}"), "defaults.port.rate: set by the topology (use the link's rate"},
		{"switch port sets interface", edit("sw2: {}", "sw2: {port: {interface: eth9}}"), "switches.sw2.port.interface: set by the topology"},
		{"link port sets addr", edit("{a: sw1, b: sw2}", "{a: sw1, b: sw2, b_port: {addr: [1.2.3.4/31]}}"), "links[2].b_port.addr: set by the topology"},
		{"bad role", edit("{a: sw1, b: sw2}", "{a: sw1, b: sw2, a_port: {role: spine}}"), `links[2].a_port.role: "spine" (use host or fabric`},
		{"link end missing", edit("{a: sw1, b: sw2}", "{a: sw1}"), "links[2].b: missing"},
		{"unknown node", edit("{a: h3, b: sw2}", "{a: h3, b: leaf9}"), `links[3].b: "leaf9" is not a switch or host`},
		{"link to itself", edit("{a: sw1, b: sw2}", "{a: sw1, b: sw1}"), `links[2]: a and b are both "sw1"`},
		{"host to host", edit("{a: h2, b: sw1}", "{a: h2, b: h3}"), "links[1]: h2 and h3 are both hosts"},
		{"host linked twice", edit("{a: h3, b: sw2}", "{a: h3, b: sw2}\n  - {a: sw1, b: h3}"), "hosts.h3: linked twice (links[3] and links[4]"},
		{"host without link", edit("  - {a: h3, b: sw2}\n", ""), "hosts.h3: no link"},
		{"switch without links", edit("sw2: {}", "sw2: {}\n  sw3: {}"), "switches.sw3: no links"},
		{"port name on a host end", edit("{a: h1, b: sw1}", "{a: h1, b: sw1, name_a: p1}"), "links[0].name_a: links[0].a is host h1"},
		{"port keys on a host end", edit("{a: h1, b: sw1}", "{a: h1, b: sw1, a_port: {buffer: 1MB}}"), "links[0].a_port: links[0].a is host h1"},
		{"port name used twice", edit("{a: h1, b: sw1}", "{a: h1, b: sw1, name_b: p1}", "{a: h2, b: sw1}", "{a: h2, b: sw1, name_b: p1}"), `links[1].name_b: port name "p1" is already used on switch sw1 by links[0]`},
		{"explicit name clashes with a default one", edit("{a: h1, b: sw1}", "{a: h1, b: sw1, name_b: h2}"), `links[1].name_b: port name "h2" is already used on switch sw1 by links[0]`},
		{"bad port name", edit("{a: h1, b: sw1}", "{a: h1, b: sw1, name_b: 'a b'}"), `links[0].name_b: "a b" is not a valid port name`},
		{"too many ports", manyHosts(256), "switches.sw1: 256 links, at most 255 ports per switch"},
		{"addr missing", edit("h3: {addr: 10.1.2.1/24}", "h3: {}"), "hosts.h3.addr: missing"},
		{"addr without prefix length", edit("10.1.2.1/24", "10.1.2.1"), `hosts.h3.addr: "10.1.2.1" is not an IPv4 address with a prefix length`},
		{"addr IPv6", edit("10.1.2.1/24", "fd00::1/64"), `hosts.h3.addr: "fd00::1/64" is not an IPv4 address`},
		{"addr a mapping", edit("10.1.2.1/24", "{ip: 1}"), "hosts.h3.addr: line 9: a mapping where a single value belongs"},
		{"addr /31", edit("10.1.2.1/24", "10.1.2.1/31"), "hosts.h3.addr: prefix length /31 out of range"},
		{"addr is the network address", edit("10.1.2.1/24", "10.1.2.0/24"), "hosts.h3.addr: 10.1.2.0 is the network or broadcast address"},
		{"two hosts with one address", edit("10.1.3.1/24", "10.1.1.1/24"), "hosts.h2.addr: 10.1.1.1 is already the address of hosts.h1"},
		{"two hosts on one subnet of a switch", edit("10.1.3.1/24", "10.1.1.2/24"), "hosts.h2.addr: 10.1.1.2/24 shares 10.1.1.0/24 with h1 on sw1: in l3 mode each host port is a subnet of its own (give h2 e.g. 10.1.3.2/24)"},
		{"two hosts on one subnet, suggestion outside the fabric pool", edit("name: t", "name: t\nfabric_pool: 10.1.3.0/24", "10.1.3.1/24", "10.1.1.2/24"), "(give h2 e.g. 10.1.4.2/24)"},
		{"overlapping subnets on different switches", edit("10.1.2.1/24", "10.1.0.1/16"), "hosts.h3.addr: subnet 10.1.0.0/16 overlaps 10.1.1.0/24 of hosts.h1"},
		{"one subnet on two switches", edit("10.1.2.1/24", "10.1.1.3/24"), "hosts.h3.addr: subnet 10.1.1.0/24 is already served by switch sw1 (hosts.h1)"},
		{"gateway is the host's address", edit("h1: {addr: 10.1.1.1/24}", "h1: {addr: 10.1.1.1/24, gateway: 10.1.1.1}"), "hosts.h1.gateway: 10.1.1.1 is the address of hosts.h1"},
		{"gateway outside the subnet", edit("h3: {addr: 10.1.2.1/24}", "h3: {addr: 10.1.2.1/24, gateway: 10.1.3.1}"), "hosts.h3.gateway: 10.1.3.1 is not a usable address of the host's subnet 10.1.2.0/24"},
		{"gateway not an address", edit("h3: {addr: 10.1.2.1/24}", "h3: {addr: 10.1.2.1/24, gateway: router}"), `hosts.h3.gateway: "router" is not an IPv4 address`},
		{"bad cc", edit("h3: {addr: 10.1.2.1/24}", "h3: {addr: 10.1.2.1/24, cc: 'TCP Cubic'}"), `hosts.h3.cc: "TCP Cubic" is not a TCP congestion control name`},
		{"no path to a subnet", edit("  - {a: sw1, b: sw2}\n", ""), "hosts.h3: no path from sw1 to 10.1.2.0/24"},
		{"l2: gateway", l2(edit("h3: {addr: 10.1.2.1/24}", "h3: {addr: 10.1.1.3/24, gateway: 10.1.1.254}")), "hosts.h3.gateway: only in mode l3"},
		{"l2: two subnets", l2(small), "hosts.h3.addr: 10.1.2.1/24 is not on 10.1.1.0/24, the subnet of hosts.h1"},
		{"l2: one address twice", l2(edit("10.1.2.1/24", "10.1.1.1/24")), "hosts.h3.addr: 10.1.1.1 is already the address of hosts.h1"},
		{"l2: loop", l2(edit("10.1.2.1/24", "10.1.1.3/24", "sw2: {}", "sw2: {}\n  sw3: {}", "{a: h3, b: sw2}", "{a: h3, b: sw2}\n  - {a: sw2, b: sw3}\n  - {a: sw3, b: sw1}")), "links[5]: sw3-sw1 closes a loop of switches"},
		{"l2: parallel links are a loop", l2(edit("10.1.2.1/24", "10.1.1.3/24", "{a: h3, b: sw2}", "{a: h3, b: sw2}\n  - {a: sw2, b: sw1}")), "links[4]: sw2-sw1 closes a loop"},
		{"l2: disconnected switches", l2(edit("10.1.2.1/24", "10.1.1.3/24", "  - {a: sw1, b: sw2}\n", "")), "switches.sw2: not connected to sw1"},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("duplicate case name %q", c.name)
		}
		seen[c.name] = true
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
}

// TestInterfaceNameTooLong: the plan refuses interface names Linux would
// refuse. Real files cannot get there (names are at most 6 characters and
// a switch has at most 255 ports), so the switch number is forced.
func TestInterfaceNameTooLong(t *testing.T) {
	tp, err := Parse([]byte(strings.Replace(small, "name: t", "name: abcdef", 1)))
	if err != nil {
		t.Fatal(err)
	}
	tp.Switches[1].Index = 12345678
	_, err = tp.Plan()
	if err == nil || !strings.Contains(err.Error(), `links[2].b: interface name "abcdef-12345678p1" is longer than 15 characters`) {
		t.Fatalf("got %v", err)
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	_, err := Load("testdata/does-not-exist.yaml")
	if err == nil {
		t.Fatal("loaded a missing file")
	}
	_, err = Load("../topologies/leaf-spine.yaml")
	if err != nil {
		t.Fatal(err)
	}
}

func TestRateSyntax(t *testing.T) {
	for s, want := range map[string]uint64{"": 0, "unlimited": 0, "100Mbit": 100e6, "1.5Gbit": 1.5e9, "10gbps": 10e9, "500kbit": 500e3, "8000": 8000} {
		got, err := parseRate("rate", s)
		if err != nil || got != want {
			t.Errorf("parseRate(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"1GB", "fast", "-1Gbit", "1 Gbit/s"} {
		if _, err := parseRate("rate", s); err == nil {
			t.Errorf("parseRate(%q) accepted", s)
		}
	}
}
