package config

import (
	"fmt"
	"net"
	"net/netip"
	"reflect"
	"strings"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/units"
	"gopkg.in/yaml.v3"
)

// MAC is a unicast Ethernet address in YAML ("02:00:00:00:01:01"); empty
// (or "") is none.
type MAC net.HardwareAddr

// UnmarshalYAML implements yaml.Unmarshaler.
func (m *MAC) UnmarshalYAML(n *yaml.Node) error {
	s, err := units.Scalar(n, "a unicast Ethernet address", "02:00:00:00:01:01")
	if err != nil {
		return err
	}
	if s == "" {
		*m = nil
		return nil
	}
	a, err := net.ParseMAC(s)
	if err != nil || len(a) != 6 || a[0]&1 != 0 {
		return units.Errorf(n, "%q is not a unicast Ethernet address (write e.g. 02:00:00:00:01:01)", s)
	}
	*m = MAC(a)
	return nil
}

// String writes the address as 02:00:00:00:01:01.
func (m MAC) String() string { return net.HardwareAddr(m).String() }

// PortAddrs are a port's own addresses, each with its subnet
// (10.1.1.254/24): a list, or one address written alone.
type PortAddrs []netip.Prefix

func (a *PortAddrs) decodeYAML(n *yaml.Node, path string) error {
	items := n.Content
	if n.Kind != yaml.SequenceNode {
		items = []*yaml.Node{n} // one address: the list of it
	}
	var out PortAddrs
	for j, e := range items {
		f := fmt.Sprintf("%s[%d]", path, j)
		s, err := units.Scalar(e, "an address with its subnet", "10.1.1.254/24")
		if err != nil {
			return units.At(f, err)
		}
		pf, err := netip.ParsePrefix(s)
		if err != nil || pf.Bits() == pf.Addr().BitLen() {
			return errAt(f, e, "%q is not an address with its subnet (write e.g. 10.1.1.254/24)", s)
		}
		if pf.Addr() == pf.Masked().Addr() && pf.Bits() < pf.Addr().BitLen()-1 { // a /31 has no subnet address (RFC 3021)
			return errAt(f, e, "%s is the subnet's own address, not one of its hosts", s)
		}
		out = append(out, pf)
	}
	*a = out
	return nil
}

// Mechanism is one mechanism enabled on a port, with its decoded config
// (the value its mech.Spec.Config made).
type Mechanism struct {
	Name   string
	Config any
}

// Mechanisms are the mechanisms enabled on a port, in the order the file
// lists them (the order their hooks run): a mapping of each registered
// mechanism's name to its settings, {NAME: {KEY: VALUE}} (nothing, or {},
// for its defaults). Decoding checks the names and each mechanism's keys;
// validation runs each config's Validate with what it may know of the
// port.
type Mechanisms []Mechanism

// Names lists the mechanisms, in order.
func (ms Mechanisms) Names() []string {
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	return names
}

func (ms *Mechanisms) decodeYAML(n *yaml.Node, path string) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("%s: line %d: a mapping of mechanism names (%s) to their settings, each a mapping of that mechanism's keys (configs/reference.yaml) or {}", path, n.Line, strings.Join(mech.Names(), ", "))
	}
	var out Mechanisms
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, val := n.Content[i], n.Content[i+1]
		name := kn.Value
		spec, ok := mech.Lookup(name)
		if !ok {
			return fmt.Errorf("%s: line %d: unknown mechanism %q (known: %s)", path, kn.Line, name, strings.Join(mech.Names(), ", "))
		}
		p := path + "." + name
		for _, m := range out {
			if m.Name == name {
				return errAt(p, kn, "listed twice")
			}
		}
		cfg := spec.Config()
		if v := reflect.ValueOf(cfg); v.Kind() != reflect.Pointer || v.IsNil() {
			return fmt.Errorf("%s: mechanism %s's Spec.Config returned %T, not a pointer to its config", p, name, cfg)
		}
		for val.Kind == yaml.AliasNode && val.Alias != nil {
			val = val.Alias
		}
		if !isNull(val) {
			if val.Kind != yaml.MappingNode {
				return fmt.Errorf("%s: line %d: a mapping of %s's settings (or nothing, for the defaults)", p, val.Line, name)
			}
			if err := decode(val, reflect.ValueOf(cfg).Elem(), p); err != nil {
				return err
			}
		}
		out = append(out, Mechanism{Name: name, Config: cfg})
	}
	*ms = out
	return nil
}

// SourceGuard is what a host port checks of the source address of what it
// receives (the port's source_guard key; docs/operations.md, "Source
// guard"). "" is the default for the port (Port.validate fills it in).
type SourceGuard string

// Source guard modes.
const (
	// GuardOff checks nothing (fabric ports, and L2 host ports by default).
	GuardOff SourceGuard = "off"
	// GuardSubnet (L3 host ports, the default there): an IP source must be
	// on one of the port's subnets (or routed out of the port by a static
	// route: strict unicast RPF), and not an address of the switch or a
	// subnet's broadcast address; an ARP sender must not be the switch's.
	GuardSubnet SourceGuard = "subnet"
	// GuardBinding: on an L3 port, the subnet check and an IPv4 source
	// bound by the neighbour table to the frame's MAC and this port (an
	// IPv6 source: a static neighbour so bound); on an L2 port, a source
	// MAC the MAC table holds on this port and an IPv4 source (and ARP
	// sender) bound to this port, the first port it was seen on, until it
	// ages out.
	GuardBinding SourceGuard = "binding"
)

// UnmarshalText implements encoding.TextUnmarshaler (the source_guard key).
func (g *SourceGuard) UnmarshalText(t []byte) error {
	switch v := SourceGuard(t); v {
	case "", GuardOff, GuardSubnet, GuardBinding:
		*g = v
		return nil
	}
	return fmt.Errorf("%q is not a source guard (use off, subnet: the port's subnets, or binding: the addresses bound to the port)", t)
}
