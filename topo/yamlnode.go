package topo

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// YAML helpers: every error names the field as a path.

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		return resolve(n.Content[0])
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	default:
		return fmt.Sprintf("%q", n.Value)
	}
}

func where(path string) string {
	if path == "" {
		return "the file"
	}
	return path
}

// pairs returns a mapping's key and value nodes with YAML merge keys (<<)
// applied: explicit keys win over merged ones.
func pairs(n *yaml.Node, path string) ([][2]*yaml.Node, error) {
	var out [][2]*yaml.Node
	explicit := map[string]bool{}
	var merged [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("%s: line %d: a key must be a plain name", where(path), k.Line)
		}
		if k.ShortTag() == "!!merge" {
			srcs := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				srcs = v.Content
			}
			for _, s := range srcs {
				s = resolve(s)
				if s.Kind != yaml.MappingNode {
					return nil, fmt.Errorf("%s: line %d: << merges a mapping, not %s", where(path), k.Line, kind(s))
				}
				sp, err := pairs(s, path)
				if err != nil {
					return nil, err
				}
				merged = append(merged, sp...)
			}
			continue
		}
		if explicit[k.Value] {
			return nil, fmt.Errorf("%s: line %d: key %q appears twice", at(path, k.Value), k.Line, k.Value)
		}
		explicit[k.Value] = true
		out = append(out, [2]*yaml.Node{k, v})
	}
	seen := map[string]bool{}
	for _, p := range merged {
		if !explicit[p[0].Value] && !seen[p[0].Value] {
			seen[p[0].Value] = true
			out = append(out, p)
		}
	}
	return out, nil
}

func at(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fields reads a mapping with the given keys; null or absent is empty.
func fields(n *yaml.Node, path string, known ...string) (map[string]*yaml.Node, error) {
	n = resolve(n)
	m := map[string]*yaml.Node{}
	if n == nil || isNull(n) {
		return m, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: line %d: %s is not a mapping (write key: value, or {key: value})", where(path), n.Line, kind(n))
	}
	ps, err := pairs(n, path)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		if !slices.Contains(known, p[0].Value) {
			return nil, fmt.Errorf("%s: unknown key (line %d; known keys here: %s)", at(path, p[0].Value), p[0].Line, strings.Join(known, ", "))
		}
		m[p[0].Value] = p[1]
	}
	return m, nil
}

// ordered reads a mapping of names to entries, in file order.
func ordered(n *yaml.Node, path string) ([]string, []*yaml.Node, error) {
	n = resolve(n)
	if n == nil || isNull(n) {
		return nil, nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("%s: line %d: %s is not a mapping of names to entries", path, n.Line, kind(n))
	}
	ps, err := pairs(n, path)
	if err != nil {
		return nil, nil, err
	}
	var names []string
	var vals []*yaml.Node
	for _, p := range ps {
		names = append(names, p[0].Value)
		vals = append(vals, p[1])
	}
	return names, vals, nil
}

func str(n *yaml.Node, path string) (string, error) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("%s: line %d: %s where a single value belongs", path, n.Line, kind(n))
	}
	if isNull(n) {
		return "", nil
	}
	return n.Value, nil
}

func integer(n *yaml.Node, path string) (int, error) {
	s, err := str(n, path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a whole number", path, s)
	}
	return v, nil
}

// opaque reads a mapping of gswitchd keys (port keys if port, else
// top-level keys) that this package passes through, refusing the keys the
// topology computes. It returns a deep copy with
// aliases and merge keys resolved, or nil when absent or empty.
func opaque(n *yaml.Node, path string, port bool) (*yaml.Node, error) {
	reserved := reservedSwitchKeys
	if port {
		reserved = reservedPortKeys
	}
	n = resolve(n)
	if n == nil || isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: line %d: %s is not a mapping of gswitchd keys (write {key: value})", path, n.Line, kind(n))
	}
	c, err := deepCopy(n, path)
	if err != nil {
		return nil, err
	}
	for i := 0; i < len(c.Content); i += 2 {
		k := c.Content[i].Value
		if why, ok := reserved[k]; ok {
			return nil, fmt.Errorf("%s: set by the topology (%s)", at(path, k), why)
		}
	}
	if len(c.Content) == 0 {
		return nil, nil
	}
	if r := lookup(c, "role"); r != nil && port {
		if r.Kind != yaml.ScalarNode || (r.Value != RoleHost && r.Value != RoleFabric) {
			return nil, fmt.Errorf("%s.role: %s (use host or fabric; without it host links are host ports and switch-switch links fabric ports)", path, kind(r))
		}
	}
	return c, nil
}

// deepCopy copies a node tree, resolving aliases and merge keys, and drops
// comments and styles so the emitted YAML is uniform.
func deepCopy(n *yaml.Node, path string) (*yaml.Node, error) {
	n = resolve(n)
	c := &yaml.Node{Kind: n.Kind, Tag: n.Tag, Value: n.Value, Style: n.Style &^ (yaml.FlowStyle), Line: n.Line, Column: n.Column}
	switch n.Kind {
	case yaml.MappingNode:
		ps, err := pairs(n, path)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			v, err := deepCopy(p[1], at(path, p[0].Value))
			if err != nil {
				return nil, err
			}
			c.Content = append(c.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: p[0].Value}, v)
		}
	case yaml.SequenceNode:
		for i, e := range n.Content {
			v, err := deepCopy(e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			c.Content = append(c.Content, v)
		}
	}
	return c, nil
}
