package topo

import (
	"bytes"
	"fmt"

	"gopkg.in/yaml.v3"
)

// lookup returns the value of key in mapping m, or nil.
func lookup(m *yaml.Node, key string) *yaml.Node {
	if m == nil {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// mergeMaps merges YAML mappings, later ones winning; nested mappings merge
// key by key, anything else is replaced. It returns a new tree (nil if all are empty).
func mergeMaps(ms ...*yaml.Node) *yaml.Node {
	var out *yaml.Node
	for _, m := range ms {
		if m == nil {
			continue
		}
		if out == nil {
			out = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		}
		mergeInto(out, m)
	}
	return out
}

func mergeInto(dst, src *yaml.Node) {
	for i := 0; i+1 < len(src.Content); i += 2 {
		k, v := src.Content[i], src.Content[i+1]
		if old := lookup(dst, k.Value); old != nil {
			if old.Kind == yaml.MappingNode && v.Kind == yaml.MappingNode {
				mergeInto(old, v)
			} else {
				*old = *clone(v)
			}
			continue
		}
		dst.Content = append(dst.Content, clone(k), clone(v))
	}
}

func clone(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = nil
	for _, e := range n.Content {
		c.Content = append(c.Content, clone(e))
	}
	return &c
}

// YAML builders for the emitted config.

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }

// strScalar is a string that stays one (quoted when it would read as something else).
func strScalar(v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
}

func quoted(v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v, Style: yaml.DoubleQuotedStyle}
}

func intScalar(v int) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: fmt.Sprint(v)}
}

func mapping(flow bool) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	if flow {
		n.Style = yaml.FlowStyle
	}
	return n
}

func set(m *yaml.Node, key string, v *yaml.Node) {
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

func seq(flow bool, vs ...*yaml.Node) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: vs}
	if flow {
		n.Style = yaml.FlowStyle
	}
	return n
}

// gswitchdConfig writes a switch's gswitchd YAML. Keys the plan computes
// come first; keys whose value is gswitchd's default are left out (so that
// an l2 topology needs nothing beyond an L2 switch's keys): role host, zero
// delay, unlimited rate, uplink false; in l2 mode also mac, addr, routes,
// neighbours, and switch_id unless the file gives an id. Mechanisms' keys
// are the file's alone: the plan sets port facts (role, uplink) that
// mechanisms read, never their keys.
func (t *Topology) gswitchdConfig(sp *SwitchPlan) ([]byte, error) {
	s := t.switches[sp.Name]
	l3 := t.Mode == ModeL3
	root := mapping(false)
	if l3 || s.IDSet {
		set(root, "switch_id", intScalar(sp.ID))
	}
	set(root, "metrics", scalar(sp.Metrics))
	if !t.Timescale.One() {
		// The values stay the fabric's: gswitchd scales them (and its
		// mechanisms' keys, which this package does not read).
		set(root, "timescale", scalar(t.Timescale.String()))
	}
	swKeys := t.switchKeys(s)
	maxMTU := 0
	for _, port := range sp.Ports {
		maxMTU = max(maxMTU, port.MTU)
	}
	if maxMTU > 1500 && lookup(swKeys, "frame_size") == nil {
		// 2048-byte UMEM frames hold frames of an MTU up to about 1500.
		set(root, "frame_size", intScalar(4096))
	}
	if lookup(swKeys, "control") == nil {
		// One control socket per switch of each topology, so that two
		// topologies with a switch of the same name can be up at once:
		// gswitchctl -s TOPOLOGY-SWITCH.
		c := mapping(false)
		set(c, "socket", scalar(SocketPath(t.Name, sp.Name)))
		set(root, "control", c)
	}
	if swKeys != nil {
		root.Content = append(root.Content, swKeys.Content...)
	}
	ports := seq(false)
	for _, port := range sp.Ports {
		m := mapping(false)
		set(m, "name", strScalar(port.Name))
		set(m, "interface", scalar(port.Interface))
		if l3 && port.Role != RoleHost && lookup(port.Keys, "role") == nil {
			set(m, "role", scalar(port.Role))
		}
		if l3 {
			set(m, "mac", quoted(port.MAC.String()))
		}
		if port.Rate != "" {
			set(m, "rate", scalar(port.Rate))
		}
		if port.Delay != 0 {
			set(m, "delay", scalar(t.Links[port.Link].DelayText))
			if t.hosts[port.Peer] != nil {
				// A host cannot delay what it sends: the switch holds frames from
				// the host as long, so the link is delayed both ways.
				set(m, "rx_delay", scalar(t.Links[port.Link].DelayText))
			}
		}
		if l3 && port.Addr.IsValid() {
			set(m, "addr", seq(true, scalar(port.Addr.String())))
		}
		if port.Uplink && lookup(port.Keys, "uplink") == nil {
			set(m, "uplink", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
		}
		if port.Keys != nil {
			m.Content = append(m.Content, clone(port.Keys).Content...)
		}
		ports.Content = append(ports.Content, m)
	}
	set(root, "ports", ports)
	if l3 && len(sp.Routes) > 0 {
		rs := seq(false)
		for _, r := range sp.Routes {
			m := mapping(true)
			set(m, "prefix", scalar(r.Prefix.String()))
			via := seq(true)
			for _, a := range r.Via {
				via.Content = append(via.Content, scalar(a.String()))
			}
			set(m, "via", via)
			rs.Content = append(rs.Content, m)
		}
		set(root, "routes", rs)
	}
	if l3 && len(sp.Neighbors) > 0 {
		ns := seq(false)
		for _, n := range sp.Neighbors {
			m := mapping(true)
			set(m, "ip", scalar(n.IP.String()))
			set(m, "mac", quoted(n.MAC.String()))
			ns.Content = append(ns.Content, m)
		}
		set(root, "neighbors", ns)
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("switches.%s: writing its gswitchd config: %w", sp.Name, err)
	}
	enc.Close()
	src := "a topology file"
	if t.File != "" {
		src = t.File
	}
	head := fmt.Sprintf("# gswitchd config of switch %s of topology %s, generated from %s (gswitchctl topo).\n", sp.Name, t.Name, src)
	return append([]byte(head), out.Bytes()...), nil
}

// SocketPath is the control socket of switch sw of topology name (unless
// the file sets control:): /run/gswitch/NAME-SW.sock, which gswitchctl
// finds as -s NAME-SW.
func SocketPath(name, sw string) string {
	return "/run/gswitch/" + name + "-" + sw + ".sock"
}
