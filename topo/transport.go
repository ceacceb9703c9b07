package topo

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// GsperfMode is one transport of gsperf, the hosts' traffic generator: a
// value of its client's -mode.
type GsperfMode struct {
	// Name is the client's -mode.
	Name string
	// Server is the -mode of the gsperf server the mode's flows go to.
	Server string
	// PFC says the mode runs with -pfc (the host honours its switch's PFC pauses).
	PFC bool
}

// GsperfModes are the transports a topology's transport: may name, and
// what each needs of the server; the one list of them in this package.
// gsperf's servers run plain (which acknowledges what arrives and echoes
// CE marks: what every sender but ExpressPass's needs) or xpass (which
// also sends the credits ExpressPass's senders wait for).
var GsperfModes = []GsperfMode{
	{Name: "plain", Server: "plain", PFC: true},
	{Name: "pfabric", Server: "plain", PFC: true},
	{Name: "bfc", Server: "plain", PFC: true},
	{Name: "sfc", Server: "plain", PFC: true},
	{Name: "xpass", Server: "xpass"}, // one segment per credit: no PFC gate holds its flows
	{Name: "dctcp", Server: "plain", PFC: true},
	{Name: "dcqcn", Server: "dcqcn", PFC: true}, // the server sends CNPs
	{Name: "hpcc", Server: "plain", PFC: true},
}

// DefaultGsperfMode is the mode of a host no transport: names (gsperf's own default).
const DefaultGsperfMode = "plain"

func gsperfMode(name string) (GsperfMode, bool) {
	for _, m := range GsperfModes {
		if m.Name == name {
			return m, true
		}
	}
	return GsperfMode{}, false
}

// modeList is "plain, pfabric, ... or hpcc", for errors.
func modeList() string {
	names := make([]string, len(GsperfModes))
	for i, m := range GsperfModes {
		names[i] = m.Name
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Transport is a transport: section: the top level's (every host), a
// design's (every host under it) or a host's own. A field it does not set
// leaves the one below as it is.
type Transport struct {
	// Path is where it is written, e.g. designs.dcqcn.transport.
	Path string
	// Mode is gsperf's -mode ("": not set here).
	Mode string
	// PFC says the host honours PFC pauses, gsperf's -pfc (nil: not set here).
	PFC *bool
	// Args are more gsperf client flags, after those of the levels below
	// (gsperf takes the last of a repeated flag, so a host's win).
	Args []string
	// ServerArgs are more gsperf server flags, likewise.
	ServerArgs []string
}

// HostTransport is the transport a host's gsperf runs, every level applied:
// top-level transport: < the design's < the host's own.
type HostTransport struct {
	Host string
	// Mode is the client's -mode (DefaultGsperfMode when no level sets it).
	Mode string
	// PFC adds -pfc.
	PFC bool
	// Args and ServerArgs are every level's, lowest first.
	Args, ServerArgs []string
	// ModeFrom and PFCFrom name the transport: that set Mode and PFC ("": no level did).
	ModeFrom, PFCFrom string
}

// ClientFlags are the flags of gsperf client for the host: -mode MODE,
// -pfc if it honours pauses, then the args.
func (h HostTransport) ClientFlags() []string {
	f := []string{"-mode", h.Mode}
	if h.PFC {
		f = append(f, "-pfc")
	}
	return append(f, h.Args...)
}

// ServerFlags are the flags of a gsperf server that receives the mode's
// flows on the host: -mode SERVERMODE, then the server args.
func (h HostTransport) ServerFlags() []string {
	m, _ := gsperfMode(h.Mode)
	return append([]string{"-mode", m.Server}, h.ServerArgs...)
}

// String is the client flags as one line (words with spaces quoted).
func (h HostTransport) String() string { return words(h.ClientFlags()) }

func words(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = w
		if w == "" || strings.ContainsAny(w, " \t\n'\"\\$") {
			q[i] = strconv.Quote(w)
		}
	}
	return strings.Join(q, " ")
}

// HasTransport says the file gives a transport: somewhere (top level, a
// design or a host); without one every host runs gsperf's default.
func (t *Topology) HasTransport() bool {
	if t.Transport != nil {
		return true
	}
	for _, d := range t.Designs {
		if d.Transport != nil {
			return true
		}
	}
	for _, h := range t.Hosts {
		if h.Transport != nil {
			return true
		}
	}
	return false
}

// HostTransport is the transport of the named host under the topology's
// design (WithDesign; none: the file's defaults).
func (t *Topology) HostTransport(host string) (HostTransport, error) {
	h := t.hosts[host]
	if h == nil {
		names := make([]string, len(t.Hosts))
		for i, h := range t.Hosts {
			names[i] = h.Name
		}
		return HostTransport{}, fmt.Errorf("no host %q in topology %s (its hosts: %s)", host, t.Name, strings.Join(names, ", "))
	}
	return t.hostTransport(h), nil
}

func (t *Topology) hostTransport(h *Host) HostTransport {
	ht := HostTransport{Host: h.Name, Mode: DefaultGsperfMode}
	levels := []*Transport{t.Transport, nil, h.Transport}
	if t.Design != nil {
		levels[1] = t.Design.Transport
	}
	for _, l := range levels {
		if l == nil {
			continue
		}
		if l.Mode != "" {
			ht.Mode, ht.ModeFrom = l.Mode, l.Path
		}
		if l.PFC != nil {
			ht.PFC, ht.PFCFrom = *l.PFC, l.Path
		}
		ht.Args = append(ht.Args, l.Args...)
		ht.ServerArgs = append(ht.ServerArgs, l.ServerArgs...)
	}
	return ht
}

// checkTransports refuses a host whose transport, under the defaults or a
// design, asks gsperf for what it refuses (-pfc with a mode that has no
// PFC gate).
func (t *Topology) checkTransports() error {
	for _, d := range append([]*Design{nil}, t.Designs...) {
		c := *t
		c.Design = d
		under := ""
		if d != nil {
			under = " under design " + d.Name
		}
		for _, h := range t.Hosts {
			ht := c.hostTransport(h)
			if m, _ := gsperfMode(ht.Mode); ht.PFC && !m.PFC {
				return fmt.Errorf("%s.pfc: true, and %s.mode: %s: host %s%s would run gsperf -mode %s -pfc, which gsperf refuses (%s honours no PFC pause; set %s.pfc: false, or another mode)",
					ht.PFCFrom, ht.ModeFrom, ht.Mode, h.Name, under, ht.Mode, ht.Mode, ht.ModeFrom)
			}
		}
	}
	return nil
}

// Flags the transport's keys set, which args may not repeat, and what
// to write instead (%s: the transport's path).
var (
	transportClientFlags = map[string]string{
		"mode": "set %s.mode instead",
		"pfc":  "set %s.pfc instead",
	}
	transportServerFlags = map[string]string{
		"mode": "the server's -mode follows %s.mode: xpass for xpass, dcqcn for dcqcn, else plain",
	}
)

// decodeTransport reads a transport: mapping (nil when absent).
func decodeTransport(n *yaml.Node, path string) (*Transport, error) {
	if n = resolve(n); n == nil || isNull(n) {
		return nil, nil
	}
	f, err := fields(n, path, "mode", "pfc", "args", "server_args")
	if err != nil {
		return nil, err
	}
	tr := &Transport{Path: path}
	if v := f["mode"]; v != nil {
		if tr.Mode, err = str(v, path+".mode"); err != nil {
			return nil, err
		}
		if _, ok := gsperfMode(tr.Mode); !ok {
			return nil, fmt.Errorf("%s.mode: %q is not a gsperf mode (use %s)", path, tr.Mode, modeList())
		}
	}
	if v := f["pfc"]; v != nil {
		s, err := str(v, path+".pfc")
		if err != nil {
			return nil, err
		}
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("%s.pfc: %q is not true or false (true: the host honours its switch's PFC pauses, gsperf -pfc)", path, s)
		}
		tr.PFC = &b
	}
	if tr.Args, err = flagList(f["args"], path+".args", transportClientFlags); err != nil {
		return nil, err
	}
	if tr.ServerArgs, err = flagList(f["server_args"], path+".server_args", transportServerFlags); err != nil {
		return nil, err
	}
	return tr, nil
}

// flagList reads a list of gsperf command-line words, refusing the flags
// the transport's keys set.
func flagList(n *yaml.Node, path string, reserved map[string]string) ([]string, error) {
	if n = resolve(n); n == nil || isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s: line %d: %s is not a list (write one word per item, e.g. [-pace, 10Gbit])", path, n.Line, kind(n))
	}
	var out []string
	for i, e := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		s, err := str(e, p)
		if err != nil {
			return nil, err
		}
		if strings.HasPrefix(s, "-") {
			name, _, _ := strings.Cut(strings.TrimLeft(s, "-"), "=")
			if fix, ok := reserved[name]; ok {
				return nil, fmt.Errorf("%s: %q is the transport's own flag (%s)", p, s, fmt.Sprintf(fix, path[:strings.LastIndex(path, ".")]))
			}
		}
		out = append(out, s)
	}
	return out, nil
}
