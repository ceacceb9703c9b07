package config

import (
	"encoding"
	"fmt"
	"net/netip"
	"reflect"
	"sort"
	"strings"

	"github.com/gswitch/gswitch/units"
	"gopkg.in/yaml.v3"
)

// decode decodes node n into v (addressable) and names v as path in its
// errors. It is the one pass over the document: it refuses unknown and
// repeated keys and values of the wrong shape, and leaves a field the
// document does not mention (or gives as null) as it was, so that decoding
// over defaults keeps them. Values of a type with its own decoder (the
// units types, MAC, mech.Role, sched.ClassifyBy, netip values, Mechanisms,
// PortAddrs) decode themselves; their errors get the path put in front.
func decode(n *yaml.Node, v reflect.Value, path string) error {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if isNull(n) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
			v.Set(reflect.Zero(v.Type()))
		}
		return nil
	}
	switch u := v.Addr().Interface().(type) {
	case pathDecoder:
		return u.decodeYAML(n, path)
	case yaml.Unmarshaler:
		return at(path, n, u.UnmarshalYAML(n))
	case encoding.TextUnmarshaler:
		if n.Kind != yaml.ScalarNode {
			return errAt(path, n, "%s where one value belongs", shape(n))
		}
		if err := u.UnmarshalText([]byte(n.Value)); err != nil {
			if hint, ok := textHints[v.Type()]; ok {
				return errAt(path, n, "%q is not %s", n.Value, hint)
			}
			return errAt(path, n, "%v", err)
		}
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return decode(n, v.Elem(), path)
	case reflect.Struct:
		return decodeStruct(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return errAt(path, n, "%s where a list belongs (write one \"- ...\" line per entry, or [a, b])", shape(n))
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, e := range n.Content {
			ev := s.Index(i)
			if d, ok := ev.Addr().Interface().(interface{ defaults() }); ok {
				d.defaults()
			}
			if err := decode(e, ev, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return errAt(path, n, "%s where a mapping belongs (write {key: value, ...})", shape(n))
		}
		m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, vn := n.Content[i], n.Content[i+1]
			p := join(path, kn.Value)
			if line, dup := seen[kn.Value]; dup {
				return errAt(p, kn, "given twice (also on line %d)", line)
			}
			seen[kn.Value] = kn.Line
			k := reflect.New(v.Type().Key()).Elem()
			if err := decode(kn, k, p); err != nil {
				return err
			}
			e := reflect.New(v.Type().Elem()).Elem()
			if err := decode(vn, e, p); err != nil {
				return err
			}
			m.SetMapIndex(k, e)
		}
		v.Set(m)
		return nil
	}
	return decodeScalar(n, v, path)
}

// decodeStruct decodes a mapping into the struct v, one key per field of
// v's yaml tags.
func decodeStruct(n *yaml.Node, v reflect.Value, path string) error {
	fields, names := yamlFields(v.Type())
	if n.Kind != yaml.MappingNode {
		return errAt(path, n, "%s where a mapping of keys belongs (known keys: %s)", shape(n), strings.Join(names, ", "))
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		k := kn.Value
		f, ok := fields[k]
		if !ok {
			where := "at the top level"
			if path != "" {
				where = "in " + path
			}
			return fmt.Errorf("line %d: unknown key %q %s (known keys: %s)", kn.Line, k, where, strings.Join(names, ", "))
		}
		if line, dup := seen[k]; dup {
			return errAt(join(path, k), kn, "given twice (also on line %d)", line)
		}
		seen[k] = kn.Line
		if err := decode(vn, v.Field(f), join(path, k)); err != nil {
			return err
		}
		if m := outOfRange(v.Type().Field(f), v.Field(f)); m != "" {
			return errAt(join(path, k), vn, "%s", m)
		}
	}
	return nil
}

// yamlFields maps t's YAML keys to their field indices, and lists the keys
// in order.
func yamlFields(t reflect.Type) (map[string]int, []string) {
	fields := map[string]int{}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		if tag := yamlKey(t.Field(i)); tag != "" {
			fields[tag] = i
			names = append(names, tag)
		}
	}
	sort.Strings(names)
	return fields, names
}

// yamlKey is the YAML key of a struct field ("" if it has none).
func yamlKey(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
	if tag == "-" {
		return ""
	}
	return tag
}

// decodeScalar decodes a plain number, bool or string.
func decodeScalar(n *yaml.Node, v reflect.Value, path string) error {
	what := map[reflect.Kind]string{reflect.Bool: "true or false", reflect.Float32: "a number", reflect.Float64: "a number",
		reflect.String: "a string"}[v.Kind()]
	if what == "" {
		what = "a whole number"
	}
	if n.Kind != yaml.ScalarNode {
		return errAt(path, n, "%s is not %s", shape(n), what)
	}
	if err := n.Decode(v.Addr().Interface()); err != nil {
		return errAt(path, n, "%q is not %s", n.Value, what)
	}
	return nil
}

// pathDecoder is a type that decodes itself and names the parts of its
// value below path (a list's elements, a mapping's entries) in its errors.
type pathDecoder interface {
	decodeYAML(n *yaml.Node, path string) error
}

// textHints say what a value of a standard library type looks like, for
// the errors of types whose own are terse.
var textHints = map[reflect.Type]string{
	reflect.TypeOf(netip.Addr{}):   "an IP address (write e.g. 10.1.1.1)",
	reflect.TypeOf(netip.Prefix{}): "a prefix (write e.g. 10.1.2.0/24)",
}

func isNull(n *yaml.Node) bool {
	return n.Kind == 0 || n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// shape names a node's kind for errors: "a list", "a mapping", "a value".
func shape(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	return fmt.Sprintf("%q", n.Value)
}

// errAt is an error about node n at path.
func errAt(path string, n *yaml.Node, format string, args ...any) error {
	return &units.Error{Path: path, Line: n.Line, Msg: fmt.Sprintf(format, args...)}
}

// at puts a value decoder's error under path, with n's line when the
// decoder did not give one.
func at(path string, n *yaml.Node, err error) error {
	if err == nil {
		return nil
	}
	if e, ok := err.(*units.Error); ok {
		return units.At(path, e)
	}
	return errAt(path, n, "%v", err)
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}
