package topo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gswitch/gswitch/units"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// DefaultStateDir holds one directory per topology that is up.
const DefaultStateDir = "/run/gswitch/topo"

// DefaultWait is how long Up waits for every gswitchd to serve metrics.
const DefaultWait = 10 * time.Second

// UpOptions say where Up finds gswitchd and keeps its files. Down and
// Attach take the same options (StateDir must match).
type UpOptions struct {
	// Gswitchd is the gswitchd binary (default: gswitchd on PATH).
	Gswitchd string
	// StateDir holds <name>/state.json, the configs, targets.json (default DefaultStateDir).
	StateDir string
	// LogDir receives <switch>.log (default: the topology's state directory,
	// which Down removes; logs in another directory stay).
	LogDir string
	// Wait bounds the wait for every gswitchd's metrics endpoint (default DefaultWait).
	Wait time.Duration
	// NoSwitches brings up the hosts and links (namespaces, veths,
	// addresses, routes, neighbours) and writes each switch's gswitchd
	// config, but starts no gswitchd and writes no targets.json: the caller
	// runs its own switches on the ports (tests that start, stop and kill
	// gswitchd themselves; scripts that run one config after another).
	// Down is the same either way; it also stops a gswitchd running one of
	// the written configs.
	NoSwitches bool
	// Machine is the machine whose part of the fabric Up brings up and
	// Down takes down, on the machine itself (the file's machines:; ""
	// for a file without, or with only one): its switches, hosts and links,
	// and its halves of the tunnels to the others.
	Machine string
}

// Dir is the topology's state directory: <StateDir>/<name>, or for one
// machine's part of a fabric over several <StateDir>/<name>-<machine> (so
// that the parts of two machines emulated on one can be up at once).
func (o UpOptions) Dir(t *Topology) string {
	if o.StateDir == "" {
		o.StateDir = DefaultStateDir
	}
	if m, err := t.resolveMachine(o.Machine); err == nil && m != "" {
		return filepath.Join(o.StateDir, t.Name+"-"+m)
	}
	return filepath.Join(o.StateDir, t.Name)
}

func (o UpOptions) withDefaults(t *Topology) UpOptions {
	if o.StateDir == "" {
		o.StateDir = DefaultStateDir
	}
	if m, err := t.resolveMachine(o.Machine); err == nil {
		o.Machine = m // PlanFor reports a machine that is not
	}
	if o.LogDir == "" {
		o.LogDir = o.Dir(t)
	}
	if o.Wait == 0 {
		o.Wait = DefaultWait
	}
	if o.Gswitchd == "" {
		o.Gswitchd = "gswitchd"
	}
	return o
}

// Running is a topology that is up.
type Running struct {
	Name string
	// Dir is the topology's state directory; Targets the file_sd file in it
	// ("" when it was brought up with NoSwitches).
	Dir      string
	Targets  string
	Hosts    []RunningHost
	Switches []RunningSwitch
	// Timescale is the fabric's K the switches run at (1: none): the
	// topology's, or the one Up chose for timescale: auto, and then
	// TimescaleWhy says why (lateness.Choice's String; "" otherwise).
	// Hosts' gsperf takes the same -timescale.
	Timescale    units.Timescale
	TimescaleWhy string
	// Design is the design the fabric runs under ("": the file's defaults).
	Design string
	// Machine is the machine whose part of the fabric this is ("": all of it).
	Machine string
	// Started is when Up began.
	Started time.Time

	topo *Topology
	opts UpOptions
	// exited has one channel per gswitchd this process started, closed when it exits.
	exited map[int]chan struct{}
}

// RunningHost is a host of a running topology.
type RunningHost struct {
	Name      string
	Namespace string
	Interface string
	Addr      netip.Prefix
}

// RunningSwitch is a gswitchd of a running topology.
type RunningSwitch struct {
	Name    string
	PID     int    // 0 when the topology was brought up with NoSwitches
	Metrics string // host:port
	Config  string // path of its YAML
	Log     string // path of its log
}

// Host returns the named host, or nil.
func (r *Running) Host(name string) *RunningHost {
	for i := range r.Hosts {
		if r.Hosts[i].Name == name {
			return &r.Hosts[i]
		}
	}
	return nil
}

// Exec returns a command that runs name in host's network namespace (via
// nsenter). An unknown host gives a command whose Start fails.
func (r *Running) Exec(ctx context.Context, host string, name string, args ...string) *exec.Cmd {
	h := r.Host(host)
	if h == nil {
		c := exec.CommandContext(ctx, name, args...)
		c.Err = fmt.Errorf("no host %q in topology %s", host, r.Name)
		return c
	}
	return exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + nsPath(h.Namespace), "--", name}, args...)...)
}

// Down removes everything the topology made (see Down).
func (r *Running) Down() error {
	err := Down(r.topo, r.opts)
	for _, ch := range r.exited {
		select {
		case <-ch:
		case <-time.After(time.Second):
		}
	}
	return err
}

// upHook, when set (by tests), runs after each step of Up; an error fails Up there.
var upHook func(step string) error

// Up brings the topology up: namespaces, veths, addresses, routes and
// neighbours, one gswitchd per switch; it waits until every gswitchd serves
// metrics and writes targets.json. It refuses to start when something of
// the topology exists already, and removes what it made when a step fails
// (or ctx ends before it is done). On a fabric over several machines it
// brings up o.Machine's part, with its halves of the tunnels to the others,
// after checking that the underlay can carry them.
func Up(ctx context.Context, t *Topology, o UpOptions) (r *Running, err error) {
	o = o.withDefaults(t)
	p, err := t.PlanFor(o.Machine)
	if err != nil {
		return nil, err
	}
	var bin string
	if !o.NoSwitches {
		if bin, err = exec.LookPath(o.Gswitchd); err != nil {
			return nil, fmt.Errorf("gswitchd binary: %w (build it with go build ./cmd/gswitchd and pass its path)", err)
		}
		if bin, err = filepath.Abs(bin); err != nil {
			return nil, err
		}
	}
	for _, tool := range []string{"ethtool", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%s not found: Up turns offloads off with ethtool and runs commands in namespaces with nsenter (install ethtool and util-linux)", tool)
		}
	}
	if err := checkCC(p); err != nil {
		return nil, err
	}
	dir := o.Dir(t)
	if err := checkClashes(t, p, dir, !o.NoSwitches); err != nil {
		return nil, err
	}
	if err := checkUnderlay(p); err != nil {
		return nil, err
	}
	why := ""
	if t.TimescaleAuto {
		// The names do not depend on K: the checks above hold for the
		// topology at the K chosen.
		nt, c, err := t.ChooseTimescale(ctx)
		if err != nil {
			return nil, err
		}
		if p, err = nt.PlanFor(o.Machine); err != nil {
			return nil, err
		}
		t, why = nt, c.String()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.LogDir, 0o755); err != nil {
		return nil, err
	}
	u := &upper{t: t, p: p, o: o, dir: dir, bin: bin, exited: map[int]chan struct{}{}, exitErr: map[int]error{},
		st: &state{Topology: t.Name, File: absOrEmpty(t.File), Started: time.Now().UTC(), TimescaleWhy: why, Design: t.DesignName(), Machine: p.Machine}}
	if !t.Timescale.One() {
		u.st.Timescale = t.Timescale.K()
	}
	// Creating the state file exclusively claims the topology: of two Ups
	// racing past the clash check, one stops here before making anything.
	f, err := os.OpenFile(statePath(dir), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("topology %s: %w (is another gswitchctl topo up running?)", t.Name, err)
	}
	f.Close()
	defer func() {
		if err != nil {
			if derr := Down(t, o); derr != nil {
				err = fmt.Errorf("%w\n(removing what was made: %v)", err, derr)
			}
		}
	}()
	if err := u.st.save(dir); err != nil {
		return nil, err
	}
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"namespaces", u.namespaces},
		{"veths", u.veths},
		{"hosts", u.hosts},
		{"switches", u.switches},
		{"wait", u.wait},
	}
	if o.NoSwitches {
		steps[3].fn, steps = u.configs, steps[:4]
	}
	if len(p.Tunnels) > 0 {
		// After the veths, whose stitch ends the tunnels join.
		steps = append(steps[:2], append([]struct {
			name string
			fn   func(context.Context) error
		}{{"tunnels", u.tunnels}}, steps[2:]...)...)
	}
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("bringing %s up: %w", t.Name, err)
		}
		if err := s.fn(ctx); err != nil {
			return nil, err
		}
		if upHook != nil {
			if err := upHook(s.name); err != nil {
				return nil, err
			}
		}
	}
	if !o.NoSwitches {
		if err := writeAtomic(filepath.Join(dir, "targets.json"), p.TargetsJSON()); err != nil {
			return nil, err
		}
	}
	u.st.NoSwitches = o.NoSwitches
	u.st.Complete = true
	if err := u.st.save(dir); err != nil {
		return nil, err
	}
	r = u.st.running(t, o)
	r.exited = u.exited
	return r, nil
}

func absOrEmpty(p string) string {
	if p == "" {
		return ""
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func (s *state) running(t *Topology, o UpOptions) *Running {
	dir := o.Dir(t)
	r := &Running{Name: t.Name, Dir: dir, Hosts: s.Hosts, topo: t, opts: o, Timescale: units.Timescale(max(s.Timescale, 1)), TimescaleWhy: s.TimescaleWhy, Design: s.Design, Machine: s.Machine, Started: s.Started}
	if !s.NoSwitches {
		r.Targets = filepath.Join(dir, "targets.json")
	}
	for _, sw := range s.Switches {
		rs := RunningSwitch{Name: sw.Name, Metrics: sw.Metrics, Config: sw.Config, Log: sw.Log}
		for _, pr := range s.Processes {
			if pr.Switch == sw.Name {
				rs.PID = pr.PID
			}
		}
		r.Switches = append(r.Switches, rs)
	}
	return r
}

// Attach returns the Running of a topology that is up (from its state file).
func Attach(t *Topology, o UpOptions) (*Running, error) {
	o = o.withDefaults(t)
	if _, err := t.resolveMachine(o.Machine); err != nil {
		return nil, err
	}
	dir := o.Dir(t)
	st, err := readState(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("topology %s is not up%s (no %s; bring it up with gswitchctl topo up)", t.Name, onMachine(o.Machine), statePath(dir))
	}
	if err != nil {
		return nil, err
	}
	if !st.Complete {
		return nil, fmt.Errorf("topology %s did not come up completely (%s); take it down and up again", t.Name, statePath(dir))
	}
	return st.running(t, o), nil
}

// checkClashes refuses a topology whose namespaces, interfaces, metrics
// addresses (when metrics, i.e. its switches are started) or state file
// exist already.
func checkClashes(t *Topology, p *Plan, dir string, metrics bool) error {
	var clashes []string
	if _, err := os.Stat(statePath(dir)); err == nil {
		clashes = append(clashes, fmt.Sprintf("state file %s exists: topology %s is up, or was not taken down (gswitchctl topo down)", statePath(dir), t.Name))
	}
	for _, h := range p.Hosts {
		if _, err := os.Stat(nsPath(h.Namespace)); err == nil {
			why := "made by something else: remove it, or rename the topology (name:)"
			if nsOwned(h.Namespace, t.Name) {
				why = "left over from this topology: gswitchctl topo down removes it"
			}
			clashes = append(clashes, fmt.Sprintf("network namespace %s (hosts.%s) exists, %s", h.Namespace, h.Name, why))
		}
	}
	for _, tp := range p.Tunnels {
		here, _ := tp.Ends(p.Machine)
		for _, name := range []string{here.Device, here.Stitch} {
			if l, err := netlink.LinkByName(name); err == nil {
				why := "made by something else: remove it, or rename the topology (name:)"
				if l.Attrs().Alias == alias(t.Name) {
					why = "left over from this topology: gswitchctl topo down removes it"
				}
				clashes = append(clashes, fmt.Sprintf("interface %s (links[%d]'s tunnel) exists, %s", name, tp.Link, why))
			}
		}
	}
	for _, s := range p.Switches {
		for _, port := range s.Ports {
			if l, err := netlink.LinkByName(port.Interface); err == nil {
				why := "made by something else: remove it, or rename the topology (name:)"
				if l.Attrs().Alias == alias(t.Name) {
					why = "left over from this topology: gswitchctl topo down removes it"
				}
				clashes = append(clashes, fmt.Sprintf("interface %s (switch %s port %s) exists, %s", port.Interface, s.Name, port.Name, why))
			}
		}
		if !metrics {
			continue
		}
		if ln, err := net.Listen("tcp", s.Metrics); err != nil {
			clashes = append(clashes, fmt.Sprintf("metrics address %s (switch %s) is in use: %v (pick another metrics_base)", s.Metrics, s.Name, err))
		} else {
			ln.Close()
		}
	}
	if len(clashes) > 0 {
		return fmt.Errorf("topology %s clashes with what exists; nothing was changed:\n  %s", t.Name, strings.Join(clashes, "\n  "))
	}
	return nil
}

// checkCC refuses a host congestion control that a network namespace
// other than the root may not select: the kernel allows there only those in
// net.ipv4.tcp_allowed_congestion_control (of the root namespace).
func checkCC(p *Plan) error {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
	if err != nil {
		return nil // no such sysctl: the write in the namespace tells
	}
	allowed := strings.Fields(string(b))
	for _, h := range p.Hosts {
		if h.CC != "" && !slices.Contains(allowed, h.CC) {
			return fmt.Errorf("hosts.%s.cc: %s is not in net.ipv4.tcp_allowed_congestion_control (%q), and a network namespace other than the root may select only those (add it: sysctl -w net.ipv4.tcp_allowed_congestion_control=%q, or drop cc)",
				h.Name, h.CC, strings.Join(allowed, " "), strings.Join(append(allowed, h.CC), " "))
		}
	}
	return nil
}

// nsOwned says whether namespace ns carries the topology's mark (on lo or eth0).
func nsOwned(ns, name string) bool {
	h, err := netns.GetFromName(ns)
	if err != nil {
		return false
	}
	defer h.Close()
	nh, err := netlink.NewHandleAt(h)
	if err != nil {
		return false
	}
	defer nh.Close()
	for _, n := range []string{"lo", HostInterface} {
		if l, err := nh.LinkByName(n); err == nil && l.Attrs().Alias == alias(name) {
			return true
		}
	}
	return false
}
