package topo

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/gswitch/gswitch/units"
	"gopkg.in/yaml.v3"
)

// decode reads the document's structure; validate checks what needs the whole of it.
func decode(root *yaml.Node) (*Topology, error) {
	t := &Topology{MetricsBase: DefaultMetricsBase, Mode: ModeL3, switches: map[string]*Switch{}, hosts: map[string]*Host{}, machines: map[string]*Machine{}}
	top, err := fields(root, "", "name", "mode", "metrics_base", "fabric_pool", "timescale", "timescale_probe", "defaults", "transport", "designs", "machines", "tunnel", "switches", "hosts", "links")
	if err != nil {
		return nil, err
	}
	if n := top["name"]; n != nil {
		if t.Name, err = str(n, "name"); err != nil {
			return nil, err
		}
	}
	if t.Name == "" {
		return nil, errors.New("name: missing (give the topology a name of 1-6 characters a-z, 0-9, e.g. name: ls)")
	}
	if !topoNameRE.MatchString(t.Name) {
		return nil, fmt.Errorf("name: %q must be 1-6 characters a-z, 0-9 (it prefixes every namespace and interface, which Linux limits to 15 characters)", t.Name)
	}
	if n := top["mode"]; n != nil {
		if t.Mode, err = str(n, "mode"); err != nil {
			return nil, err
		}
		if t.Mode != ModeL3 && t.Mode != ModeL2 {
			return nil, fmt.Errorf("mode: %q (use l3, routed switches, or l2, learning switches with all hosts on one subnet)", t.Mode)
		}
	}
	if n := top["metrics_base"]; n != nil {
		if t.MetricsBase, err = integer(n, "metrics_base"); err != nil {
			return nil, err
		}
	}
	t.FabricPool = DefaultFabricPool
	if n := top["fabric_pool"]; n != nil {
		s, err := str(n, "fabric_pool")
		if err != nil {
			return nil, err
		}
		p, err := netip.ParsePrefix(s)
		if err != nil || !p.Addr().Is4() {
			return nil, fmt.Errorf("fabric_pool: %q is not an IPv4 prefix (write e.g. 10.255.0.0/16)", s)
		}
		t.FabricPool = p.Masked()
	}
	if err := t.decodeTimescale(top["timescale"], top["timescale_probe"]); err != nil {
		return nil, err
	}
	if err := t.decodeDefaults(top["defaults"]); err != nil {
		return nil, err
	}
	if t.Transport, err = decodeTransport(top["transport"], "transport"); err != nil {
		return nil, err
	}
	if err := t.decodeDesigns(top["designs"]); err != nil {
		return nil, err
	}
	if err := t.decodeMachines(top["machines"], top["tunnel"]); err != nil {
		return nil, err
	}
	if err := t.decodeSwitches(top["switches"]); err != nil {
		return nil, err
	}
	if err := t.decodeHosts(top["hosts"]); err != nil {
		return nil, err
	}
	if err := t.decodeLinks(top["links"]); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Topology) decodeDefaults(n *yaml.Node) error {
	t.Defaults.Link.MTU = DefaultMTU
	d, err := fields(n, "defaults", "link", "switch", "port")
	if err != nil {
		return err
	}
	l, err := fields(d["link"], "defaults.link", "rate", "delay", "mtu")
	if err != nil {
		return err
	}
	if v := l["rate"]; v != nil {
		if t.Defaults.Link.Rate, err = str(v, "defaults.link.rate"); err != nil {
			return err
		}
		if _, err := parseRate("defaults.link.rate", t.Defaults.Link.Rate); err != nil {
			return err
		}
	}
	if v := l["delay"]; v != nil {
		if t.Defaults.Link.Delay, err = str(v, "defaults.link.delay"); err != nil {
			return err
		}
		if _, err := parseDelay("defaults.link.delay", t.Defaults.Link.Delay); err != nil {
			return err
		}
	}
	if v := l["mtu"]; v != nil {
		if t.Defaults.Link.MTU, err = mtu(v, "defaults.link.mtu"); err != nil {
			return err
		}
	}
	if t.Defaults.Switch, err = opaque(d["switch"], "defaults.switch", false); err != nil {
		return err
	}
	if t.Defaults.Port, err = opaque(d["port"], "defaults.port", true); err != nil {
		return err
	}
	return nil
}

func (t *Topology) decodeSwitches(n *yaml.Node) error {
	names, vals, err := ordered(n, "switches")
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return errors.New("switches: none (a topology needs at least one switch)")
	}
	for i, name := range names {
		path := "switches." + name
		if !nodeNameRE.MatchString(name) {
			return fmt.Errorf("%s: %q is not a valid name (1-15 characters: a letter, then letters, digits, - or _)", path, name)
		}
		f, err := fields(vals[i], path, "id", "config", "port", "machine")
		if err != nil {
			return err
		}
		s := &Switch{Name: name, Index: i + 1, ID: i + 1}
		if s.Machine, err = machineKey(f["machine"], path+".machine"); err != nil {
			return err
		}
		if v := f["id"]; v != nil {
			if s.ID, err = integer(v, path+".id"); err != nil {
				return err
			}
			if s.ID < 1 || s.ID > 65535 {
				return fmt.Errorf("%s.id: %d out of range [1, 65535]", path, s.ID)
			}
			s.IDSet = true
		}
		if s.Config, err = opaque(f["config"], path+".config", false); err != nil {
			return err
		}
		if s.Port, err = opaque(f["port"], path+".port", true); err != nil {
			return err
		}
		t.Switches = append(t.Switches, s)
		t.switches[name] = s
	}
	return nil
}

func (t *Topology) decodeHosts(n *yaml.Node) error {
	names, vals, err := ordered(n, "hosts")
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return errors.New("hosts: none (a topology needs at least one host)")
	}
	for i, name := range names {
		path := "hosts." + name
		if !nodeNameRE.MatchString(name) {
			return fmt.Errorf("%s: %q is not a valid name (1-15 characters: a letter, then letters, digits, - or _)", path, name)
		}
		if _, dup := t.switches[name]; dup {
			return fmt.Errorf("%s: %q is also the name of a switch (switch and host names must differ)", path, name)
		}
		f, err := fields(vals[i], path, "addr", "gateway", "cc", "mtu", "rto_min", "quickack", "transport", "machine")
		if err != nil {
			return err
		}
		h := &Host{Name: name, Index: i + 1}
		if h.Machine, err = machineKey(f["machine"], path+".machine"); err != nil {
			return err
		}
		if f["addr"] == nil {
			return fmt.Errorf("%s.addr: missing (the host's IPv4 address with its prefix length, e.g. addr: 10.1.1.1/24)", path)
		}
		s, err := str(f["addr"], path+".addr")
		if err != nil {
			return err
		}
		if h.Addr, err = netip.ParsePrefix(s); err != nil || !h.Addr.Addr().Is4() {
			return fmt.Errorf("%s.addr: %q is not an IPv4 address with a prefix length (write e.g. 10.1.1.1/24)", path, s)
		}
		if bits := h.Addr.Bits(); bits > 30 || bits < 8 {
			return fmt.Errorf("%s.addr: prefix length /%d out of range [8, 30] (the subnet needs room for the host and its gateway)", path, bits)
		}
		if a := h.Addr.Addr(); a == h.Addr.Masked().Addr() || a == lastAddr(h.Addr) {
			return fmt.Errorf("%s.addr: %s is the network or broadcast address of %s (pick another address)", path, a, h.Addr.Masked())
		}
		if v := f["gateway"]; v != nil {
			s, err := str(v, path+".gateway")
			if err != nil {
				return err
			}
			if h.Gateway, err = netip.ParseAddr(s); err != nil || !h.Gateway.Is4() {
				return fmt.Errorf("%s.gateway: %q is not an IPv4 address", path, s)
			}
		}
		if v := f["cc"]; v != nil {
			if h.CC, err = str(v, path+".cc"); err != nil {
				return err
			}
			if !ccRE.MatchString(h.CC) {
				return fmt.Errorf("%s.cc: %q is not a TCP congestion control name (e.g. cubic, reno, bbr, dctcp)", path, h.CC)
			}
		}
		if v := f["mtu"]; v != nil {
			if h.MTU, err = mtu(v, path+".mtu"); err != nil {
				return err
			}
		}
		if err := decodeHostTimers(h, f, path); err != nil {
			return err
		}
		if h.Transport, err = decodeTransport(f["transport"], path+".transport"); err != nil {
			return err
		}
		t.Hosts = append(t.Hosts, h)
		t.hosts[name] = h
	}
	return nil
}

func (t *Topology) decodeLinks(n *yaml.Node) error {
	n = resolve(n)
	if n == nil || isNull(n) {
		return errors.New("links: none (list the links, e.g. - {a: h1, b: sw1})")
	}
	if n.Kind != yaml.SequenceNode {
		return fmt.Errorf("links: line %d: not a list (write one - {a: X, b: Y} per link)", n.Line)
	}
	for i, e := range n.Content {
		path := fmt.Sprintf("links[%d]", i)
		f, err := fields(e, path, "a", "b", "rate", "delay", "mtu", "a_port", "b_port", "name_a", "name_b", "vni")
		if err != nil {
			return err
		}
		l := &Link{Index: i, Rate: t.Defaults.Link.Rate, DelayText: t.Defaults.Link.Delay, MTU: t.Defaults.Link.MTU}
		for _, end := range []struct {
			key string
			dst *string
		}{{"a", &l.A}, {"b", &l.B}, {"name_a", &l.NameA}, {"name_b", &l.NameB}} {
			if v := f[end.key]; v != nil {
				if *end.dst, err = str(v, path+"."+end.key); err != nil {
					return err
				}
			}
		}
		if v := f["rate"]; v != nil {
			if l.Rate, err = str(v, path+".rate"); err != nil {
				return err
			}
		}
		if l.RateBits, err = parseRate(path+".rate", l.Rate); err != nil {
			return err
		}
		if l.RateBits == 0 {
			l.Rate = ""
		}
		if v := f["delay"]; v != nil {
			if l.DelayText, err = str(v, path+".delay"); err != nil {
				return err
			}
		}
		if l.Delay, err = parseDelay(path+".delay", l.DelayText); err != nil {
			return err
		}
		if l.Delay == 0 {
			l.DelayText = ""
		}
		if v := f["mtu"]; v != nil {
			if l.MTU, err = mtu(v, path+".mtu"); err != nil {
				return err
			}
		}
		if l.APort, err = opaque(f["a_port"], path+".a_port", true); err != nil {
			return err
		}
		if l.BPort, err = opaque(f["b_port"], path+".b_port", true); err != nil {
			return err
		}
		if v := f["vni"]; v != nil {
			n, err := integer(v, path+".vni")
			if err != nil {
				return err
			}
			if n < 1 || n > MaxVNI {
				return fmt.Errorf("%s.vni: %d out of range [1, %d] (a VXLAN network identifier has 24 bits; 0 is left out)", path, n, MaxVNI)
			}
			l.VNI = uint32(n)
		}
		t.Links = append(t.Links, l)
	}
	if len(t.Links) == 0 {
		return errors.New("links: none (list the links, e.g. - {a: h1, b: sw1})")
	}
	return nil
}

// parseRate reads a link's rate as gswitchd does (units.ParseRate: 100Mbit,
// 1.5Gbit, 10gbps; "" and "unlimited" are 0), within what a port's shaper
// takes.
func parseRate(field, s string) (uint64, error) {
	r, err := units.ParseRate(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", field, err)
	}
	if r != 0 && r < 8000 {
		return 0, fmt.Errorf("%s: %s out of range (8kbit to 1Tbit)", field, s)
	}
	return r, nil
}

// maxDelay bounds a link's delay: the switch holds every frame that long.
const maxDelay = time.Second

// parseDelay reads a link's delay as gswitchd does (units.ParseDuration:
// 50us, 1ms; "" is none), at most maxDelay.
func parseDelay(field, s string) (time.Duration, error) {
	d, err := units.ParseDuration(s, 0)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", field, err)
	}
	if d > maxDelay {
		return 0, fmt.Errorf("%s: %s is longer than %s (the switch holds every frame for the delay)", field, s, maxDelay)
	}
	return d, nil
}

func mtu(n *yaml.Node, field string) (int, error) {
	v, err := integer(n, field)
	if err != nil {
		return 0, err
	}
	if v < 68 || v > 9000 {
		return 0, fmt.Errorf("%s: %d out of range [68, 9000]", field, v)
	}
	return v, nil
}
