package units

import (
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"
)

// Error is a YAML value that did not decode: the key path that leads to
// it, the line it is on and what is wrong with it. A value's own decoder
// knows the line but not the path; whoever walks the document adds the
// path with At, from the inside out.
type Error struct {
	// Path is the key path, e.g. ports[1].mechanisms.bfc.hrtt ("" while only
	// the value's decoder has seen it; it may start with "[" or "." when it
	// is the part below a key, which At joins on).
	Path string
	Line int
	// Msg says what is wrong and what would be accepted.
	Msg string
}

// Error writes "PATH: line N: MSG" ("line N: MSG" without a path).
func (e *Error) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: line %d: %s", e.Path, e.Line, e.Msg)
}

// Errorf returns an *Error at node n's line.
func Errorf(n *yaml.Node, format string, args ...any) *Error {
	return &Error{Line: n.Line, Msg: fmt.Sprintf(format, args...)}
}

// At puts err under the key path: an *Error (anywhere in err's chain)
// gets path in front of its own ("ports[1]" + ".rate", or + "[2]" for a
// list element); any other error comes back as "path: err".
func At(path string, err error) error {
	if err == nil || path == "" {
		return err
	}
	var e *Error
	if errors.As(err, &e) {
		p := e.Path
		if p != "" && p[0] != '[' && p[0] != '.' {
			p = "." + p
		}
		return &Error{Path: path + p, Line: e.Line, Msg: e.Msg}
	}
	return fmt.Errorf("%s: %w", path, err)
}

// Scalar returns n's value if n is a scalar (null: ""). A list or a
// mapping is an error naming what was expected ("a duration") and an
// example ("50us, 2ms"): a value of the wrong shape is never read as 0.
func Scalar(n *yaml.Node, what, example string) (string, error) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "", nil
		}
		return n.Value, nil
	case yaml.SequenceNode:
		return "", Errorf(n, "a list is not %s (write e.g. %s)", what, example)
	case yaml.MappingNode:
		return "", Errorf(n, "a mapping is not %s (write e.g. %s)", what, example)
	}
	return "", Errorf(n, "not %s (write e.g. %s)", what, example)
}
