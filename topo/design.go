package topo

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// A design is one way of running the fabric: the mechanisms its ports run
// (and any other port or switch keys that go with them) and the transport
// its hosts' gsperf runs. A file's designs: name several, so that one file
// runs a workload under each in turn (gswitchctl topo up FILE -design NAME).
// Without a design the file runs as written: its defaults and its hosts'
// transports.
//
// Precedence of port keys under a design, later winning:
//
//	defaults.port < designs.<d>.port < switches.<s>.port < links[i].a_port / b_port
//
// with one exception: a design whose port gives mechanisms says exactly
// which mechanisms run. Its mechanisms map replaces defaults.port's whole,
// and the mechanisms entries of a switch's or link's port keys tune only
// the mechanisms the design runs (merged key by key over the design's);
// entries for other mechanisms are left out under that design. Switch
// keys: defaults.switch < designs.<d>.switch < switches.<s>.config.

// Design is one entry of designs:.
type Design struct {
	// Name is the design's key under designs:.
	Name string
	// Port holds gswitchd port keys over defaults.port (nil: none).
	Port *yaml.Node
	// Switch holds top-level gswitchd keys over defaults.switch (nil: none).
	Switch *yaml.Node
	// Transport is the design's transport for every host (nil: none given).
	Transport *Transport
}

// Mechanisms are the names of the mechanisms the design's port gives, in
// file order, and whether it gives any map at all (false: the design
// leaves the mechanisms as the file has them).
func (d *Design) Mechanisms() ([]string, bool) {
	m := lookup(d.Port, "mechanisms")
	if m == nil {
		return nil, false
	}
	return mapKeys(m), true
}

var designNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,31}$`)

// Keys a design's switch keys may not set: the names and paths the
// topology derives must be the same under every design, so that down and
// exec find them from the file alone.
var reservedDesignSwitchKeys = map[string]string{
	"control": "the control socket is the same under every design (set it in defaults.switch or switches.<name>.config)",
}

func (t *Topology) decodeDesigns(n *yaml.Node) error {
	names, vals, err := ordered(n, "designs")
	if err != nil {
		return err
	}
	for i, name := range names {
		path := "designs." + name
		if !designNameRE.MatchString(name) {
			return fmt.Errorf("%s: %q is not a valid design name (1-32 characters: a letter, then letters, digits, _ . or -)", path, name)
		}
		f, err := fields(vals[i], path, "port", "switch", "transport")
		if err != nil {
			return err
		}
		d := &Design{Name: name}
		if d.Port, err = opaque(f["port"], path+".port", true); err != nil {
			return err
		}
		if err := normalizeMechanisms(d.Port, path+".port"); err != nil {
			return err
		}
		if d.Switch, err = opaque(f["switch"], path+".switch", false); err != nil {
			return err
		}
		for i := 0; d.Switch != nil && i < len(d.Switch.Content); i += 2 {
			if why, ok := reservedDesignSwitchKeys[d.Switch.Content[i].Value]; ok {
				return fmt.Errorf("%s.switch.%s: not in a design (%s)", path, d.Switch.Content[i].Value, why)
			}
		}
		if d.Transport, err = decodeTransport(f["transport"], path+".transport"); err != nil {
			return err
		}
		t.Designs = append(t.Designs, d)
	}
	return nil
}

// normalizeMechanisms makes a design's mechanisms: a mapping: null (no
// value) is written as an empty one, so that "mechanisms:" and
// "mechanisms: {}" both say that no mechanism runs.
func normalizeMechanisms(port *yaml.Node, path string) error {
	m := lookup(port, "mechanisms")
	if m == nil {
		return nil
	}
	if isNull(m) {
		*m = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		return nil
	}
	if m.Kind != yaml.MappingNode {
		return fmt.Errorf("%s.mechanisms: line %d: %s is not a mapping of mechanism names to their keys (write mechanisms: {ecn: {k_packets: 65}}, or mechanisms: {} for none)", path, m.Line, kind(m))
	}
	return nil
}

// DesignNames are the names under designs:, in file order.
func (t *Topology) DesignNames() []string {
	names := make([]string, len(t.Designs))
	for i, d := range t.Designs {
		names[i] = d.Name
	}
	return names
}

// DesignName is the name of the design the topology runs under ("": none,
// the file's defaults as written).
func (t *Topology) DesignName() string {
	if t.Design == nil {
		return ""
	}
	return t.Design.Name
}

// WithDesign returns a copy of the topology that runs under the named
// design; "" gives the file's defaults as written. Every design of a
// parsed topology plans (Parse checks them all).
func (t *Topology) WithDesign(name string) (*Topology, error) {
	c := *t
	c.Design = nil
	if name == "" {
		return &c, nil
	}
	if len(t.Designs) == 0 {
		return nil, fmt.Errorf("designs.%s: no such design: the file has no designs: (add them to the file, or run it without a design)", name)
	}
	for _, d := range t.Designs {
		if d.Name == name {
			c.Design = d
			return &c, nil
		}
	}
	return nil, fmt.Errorf("designs.%s: no such design (the file's designs: %s)", name, strings.Join(t.DesignNames(), ", "))
}

// switchKeys are a switch's merged top-level gswitchd keys:
// defaults.switch < the design's switch < switches.<name>.config.
func (t *Topology) switchKeys(s *Switch) *yaml.Node {
	var d *yaml.Node
	if t.Design != nil {
		d = t.Design.Switch
	}
	return mergeMaps(t.Defaults.Switch, d, s.Config)
}

// portKeys are a port's merged gswitchd keys: defaults.port < the
// design's port < the switch's port < the link end's (sw and end), with a
// design's mechanisms deciding which mechanisms run (see Design).
func (t *Topology) portKeys(sw, end *yaml.Node) *yaml.Node {
	d := t.Design
	if d == nil || d.Port == nil {
		return mergeMaps(t.Defaults.Port, sw, end)
	}
	run := lookup(d.Port, "mechanisms")
	if run == nil {
		return mergeMaps(t.Defaults.Port, d.Port, sw, end)
	}
	keep := mapKeys(run)
	out := mergeMaps(without(t.Defaults.Port, "mechanisms"), d.Port, onlyMechanisms(sw, keep), onlyMechanisms(end, keep))
	if m := lookup(out, "mechanisms"); m != nil && len(m.Content) == 0 {
		out = without(out, "mechanisms") // no mechanism: as a port that names none
	}
	if out != nil && len(out.Content) == 0 {
		return nil
	}
	return out
}

// mapKeys are the keys of a mapping, in order.
func mapKeys(m *yaml.Node) []string {
	var ks []string
	for i := 0; m != nil && i+1 < len(m.Content); i += 2 {
		ks = append(ks, m.Content[i].Value)
	}
	return ks
}

// without is a copy of mapping m without key (nil for nil).
func without(m *yaml.Node, key string) *yaml.Node {
	if m == nil {
		return nil
	}
	c := clone(m)
	for i := 0; i+1 < len(c.Content); i += 2 {
		if c.Content[i].Value == key {
			c.Content = slices.Delete(c.Content, i, i+2)
			break
		}
	}
	return c
}

// onlyMechanisms is a copy of port keys m whose mechanisms map holds only
// the mechanisms named in keep (the key dropped when none is left).
func onlyMechanisms(m *yaml.Node, keep []string) *yaml.Node {
	ms := lookup(m, "mechanisms")
	if ms == nil {
		return m
	}
	c := clone(m)
	ms = lookup(c, "mechanisms")
	if ms.Kind == yaml.MappingNode {
		var kept []*yaml.Node
		for i := 0; i+1 < len(ms.Content); i += 2 {
			if slices.Contains(keep, ms.Content[i].Value) {
				kept = append(kept, ms.Content[i], ms.Content[i+1])
			}
		}
		ms.Content = kept
	}
	if ms.Kind != yaml.MappingNode || len(ms.Content) == 0 {
		c = without(c, "mechanisms")
	}
	return c
}

// PortMechanisms are the mechanisms that run on some port of the plan, in
// the order they first appear (switches, then ports, in file order).
func (p *Plan) PortMechanisms() []string {
	var names []string
	for _, s := range p.Switches {
		for _, port := range s.Ports {
			for _, n := range mapKeys(lookup(port.Keys, "mechanisms")) {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
	}
	return names
}
