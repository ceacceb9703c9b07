package topo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gswitch/gswitch/units"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
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
}

func (o UpOptions) withDefaults(t *Topology) UpOptions {
	if o.StateDir == "" {
		o.StateDir = DefaultStateDir
	}
	if o.LogDir == "" {
		o.LogDir = filepath.Join(o.StateDir, t.Name)
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

// state is <dir>/state.json: what Up made, written after every step.
type state struct {
	Topology   string        `json:"topology"`
	File       string        `json:"file,omitempty"`
	Started    time.Time     `json:"started"`
	Complete   bool          `json:"complete"`
	NoSwitches bool          `json:"no_switches,omitempty"`
	Namespaces []string      `json:"namespaces"`
	Links      []string      `json:"links"` // root-namespace interfaces
	Processes  []process     `json:"processes"`
	Hosts      []RunningHost `json:"hosts"`
	Switches   []stateSwitch `json:"switches"`
	// Timescale is K (absent: 1); TimescaleWhy auto's reasons.
	Timescale    float64 `json:"timescale,omitempty"`
	TimescaleWhy string  `json:"timescale_why,omitempty"`
}

type stateSwitch struct {
	Name    string `json:"name"`
	Metrics string `json:"metrics"`
	Config  string `json:"config"`
	Log     string `json:"log,omitempty"`
}

// process is a gswitchd Up started. Down signals it only if
// /proc/<pid>/cmdline is still Argv and its start time is Start.
type process struct {
	Switch string   `json:"switch"`
	PID    int      `json:"pid"`
	Start  uint64   `json:"start"` // field 22 of /proc/<pid>/stat
	Argv   []string `json:"argv"`
}

func statePath(dir string) string { return filepath.Join(dir, "state.json") }

func (s *state) save(dir string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(statePath(dir), b)
}

func readState(dir string) (*state, error) {
	b, err := os.ReadFile(statePath(dir))
	if err != nil {
		return nil, err
	}
	var s state
	if len(b) == 0 { // created, not yet written: Up stopped right at the start
		return &s, nil
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", statePath(dir), err)
	}
	return &s, nil
}

func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// alias marks the links and the namespaces' interfaces Up makes, so that
// Down can tell them from others of the same name.
func alias(name string) string { return "gswitch-topo:" + name }

const netnsDir = "/run/netns"

func nsPath(ns string) string { return filepath.Join(netnsDir, ns) }

// upHook, when set (by tests), runs after each step of Up; an error fails Up there.
var upHook func(step string) error

// Up brings the topology up: namespaces, veths, addresses, routes and
// neighbours, one gswitchd per switch; it waits until every gswitchd serves
// metrics and writes targets.json. It refuses to start when something of
// the topology exists already, and removes what it made when a step fails
// (or ctx ends before it is done).
func Up(ctx context.Context, t *Topology, o UpOptions) (r *Running, err error) {
	o = o.withDefaults(t)
	p, err := t.Plan()
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
	dir := filepath.Join(o.StateDir, t.Name)
	if err := checkClashes(t, p, dir, !o.NoSwitches); err != nil {
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
		if p, err = nt.Plan(); err != nil {
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
		st: &state{Topology: t.Name, File: absOrEmpty(t.File), Started: time.Now().UTC(), TimescaleWhy: why}}
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
	dir := filepath.Join(o.StateDir, t.Name)
	r := &Running{Name: t.Name, Dir: dir, Hosts: s.Hosts, topo: t, opts: o, Timescale: units.Timescale(max(s.Timescale, 1)), TimescaleWhy: s.TimescaleWhy}
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
	dir := filepath.Join(o.StateDir, t.Name)
	st, err := readState(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("topology %s is not up (no %s; bring it up with gswitchctl topo up)", t.Name, statePath(dir))
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

// upper carries one Up through its steps.
type upper struct {
	t      *Topology
	p      *Plan
	o      UpOptions
	dir    string
	bin    string
	st     *state
	exited map[int]chan struct{}
	// exitErr holds how each gswitchd ended, once its channel is closed.
	mu      sync.Mutex
	exitErr map[int]error
}

func (u *upper) namespaces(context.Context) error {
	for _, h := range u.p.Hosts {
		sysctls := [][2]string{
			// The topology is IPv4: keep router solicitations and DAD off the switches.
			{"net/ipv6/conf/all/disable_ipv6", "1"},
			{"net/ipv6/conf/default/disable_ipv6", "1"},
		}
		if h.CC != "" {
			sysctls = append(sysctls, [2]string{"net/ipv4/tcp_congestion_control", h.CC})
		}
		err := newNamespace(h.Namespace, func() error { return u.st.recordNS(u.dir, h.Namespace) }, func() error {
			for _, s := range sysctls {
				if err := writeSysctl(s[0], s[1]); err != nil {
					if s[0] == "net/ipv4/tcp_congestion_control" {
						return fmt.Errorf("hosts.%s.cc: %v (/proc/sys/net/ipv4/tcp_available_congestion_control lists what the kernel has)", h.Name, err)
					}
					if !errors.Is(err, fs.ErrNotExist) { // no IPv6 in the kernel
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("hosts.%s: namespace %s: %w", h.Name, h.Namespace, err)
		}
		nh, err := nsHandle(h.Namespace)
		if err != nil {
			return err
		}
		lo, err := nh.LinkByName("lo")
		if err == nil {
			if err = nh.LinkSetAlias(lo, alias(u.t.Name)); err == nil {
				err = nh.LinkSetUp(lo)
			}
		}
		nh.Close()
		if err != nil {
			return fmt.Errorf("hosts.%s: namespace %s: lo: %w", h.Name, h.Namespace, err)
		}
	}
	return nil
}

func (s *state) recordNS(dir, ns string) error {
	s.Namespaces = append(s.Namespaces, ns)
	return s.save(dir)
}

func (u *upper) veths(context.Context) error {
	for _, v := range u.p.Veths {
		root, peer := v.A, v.B
		if root.Namespace != "" {
			root, peer = v.B, v.A
		}
		veth := &netlink.Veth{
			LinkAttrs:        netlink.LinkAttrs{Name: root.Name, MTU: root.MTU, HardwareAddr: root.MAC, Alias: alias(u.t.Name)},
			PeerName:         peer.Name,
			PeerHardwareAddr: peer.MAC,
			PeerMTU:          uint32(peer.MTU),
		}
		var peerNS netns.NsHandle = -1
		if peer.Namespace != "" {
			var err error
			if peerNS, err = netns.GetFromName(peer.Namespace); err != nil {
				return fmt.Errorf("links[%d]: namespace %s: %w", v.Link, peer.Namespace, err)
			}
			veth.PeerNamespace = netlink.NsFd(peerNS)
		}
		err := netlink.LinkAdd(veth)
		if peerNS != -1 {
			peerNS.Close()
		}
		if err != nil {
			return fmt.Errorf("links[%d]: creating veth %s-%s: %w", v.Link, root.Name, peer.Name, err)
		}
		u.st.Links = append(u.st.Links, root.Name)
		if peer.Namespace == "" {
			u.st.Links = append(u.st.Links, peer.Name)
		}
		if err := u.st.save(u.dir); err != nil {
			return err
		}
		ends := []VethEnd{root}
		if peer.Namespace == "" {
			ends = append(ends, peer)
		}
		for _, e := range ends {
			if err := setupRootPort(e.Name, alias(u.t.Name)); err != nil {
				return fmt.Errorf("links[%d]: %s: %w", v.Link, e.Name, err)
			}
		}
	}
	return nil
}

// setupRootPort readies a switch port: IPv6 off (the kernel must not send
// on an AF_XDP port), offloads off (AF_XDP copies frames raw, so checksums
// must be filled in by the sender), up.
func setupRootPort(name, mark string) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return err
	}
	if l.Attrs().Alias != mark {
		if err := netlink.LinkSetAlias(l, mark); err != nil {
			return err
		}
	}
	if err := writeSysctl("net/ipv6/conf/"+name+"/disable_ipv6", "1"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := offloadsOff("", name); err != nil {
		return err
	}
	return netlink.LinkSetUp(l)
}

// offloadsOff runs ethtool -K in namespace ns ("" = root).
func offloadsOff(ns, dev string) error {
	args := []string{"-K", dev, "tx", "off", "tso", "off", "gso", "off", "gro", "off"}
	cmd := exec.Command("ethtool", args...)
	if ns != "" {
		cmd = exec.Command("nsenter", append([]string{"--net=" + nsPath(ns), "--", "ethtool"}, args...)...)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ethtool %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (u *upper) hosts(context.Context) error {
	for _, h := range u.p.Hosts {
		if err := u.host(h); err != nil {
			return fmt.Errorf("hosts.%s: %w", h.Name, err)
		}
		u.st.Hosts = append(u.st.Hosts, RunningHost{Name: h.Name, Namespace: h.Namespace, Interface: h.Interface, Addr: h.Addr})
	}
	return u.st.save(u.dir)
}

func (u *upper) host(h *HostPlan) error {
	if err := offloadsOff(h.Namespace, h.Interface); err != nil {
		return err
	}
	nh, err := nsHandle(h.Namespace)
	if err != nil {
		return err
	}
	defer nh.Close()
	l, err := nh.LinkByName(h.Interface)
	if err != nil {
		return err
	}
	if err := nh.LinkSetAlias(l, alias(u.t.Name)); err != nil {
		return err
	}
	if err := nh.AddrAdd(l, &netlink.Addr{IPNet: ipNet(h.Addr)}); err != nil {
		return fmt.Errorf("address %s: %w", h.Addr, err)
	}
	if err := nh.LinkSetUp(l); err != nil {
		return err
	}
	idx := l.Attrs().Index
	if h.Gateway.IsValid() {
		n := &netlink.Neigh{LinkIndex: idx, Family: netlink.FAMILY_V4, State: netlink.NUD_PERMANENT, IP: h.Gateway.AsSlice(), HardwareAddr: h.GatewayMAC}
		if err := nh.NeighAdd(n); err != nil {
			return fmt.Errorf("neighbour %s %s: %w", h.Gateway, h.GatewayMAC, err)
		}
	}
	for _, r := range h.Routes {
		rt := &netlink.Route{LinkIndex: idx, Dst: ipNet(r.Prefix), Gw: r.Via[0].AsSlice()}
		tcpTimers(rt, h)
		if err := nh.RouteAdd(rt); err != nil {
			return fmt.Errorf("route %s via %s: %w", r.Prefix, r.Via[0], err)
		}
	}
	if h.RtoMin != 0 || h.QuickAck {
		// The subnet's own route, which the kernel made with the address:
		// the same route, with the TCP timers (ip route replace).
		rt := &netlink.Route{LinkIndex: idx, Dst: ipNet(h.Addr.Masked()), Src: h.Addr.Addr().AsSlice(),
			Scope: netlink.SCOPE_LINK, Protocol: unix.RTPROT_KERNEL}
		tcpTimers(rt, h)
		if err := nh.RouteReplace(rt); err != nil {
			return fmt.Errorf("route %s with rto_min and quickack: %w", h.Addr.Masked(), err)
		}
	}
	return nil
}

// tcpTimers puts the host's TCP timers on a route: rto_min (locked, as
// ip route's rto_min does, or the kernel ignores it; in milliseconds) and
// quickack.
func tcpTimers(rt *netlink.Route, h *HostPlan) {
	if h.RtoMin != 0 {
		rt.RtoMin, rt.RtoMinLock = int(h.RtoMin/time.Millisecond), true
	}
	if h.QuickAck {
		rt.QuickACK = 1
	}
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

func nsHandle(ns string) (*netlink.Handle, error) {
	h, err := netns.GetFromName(ns)
	if err != nil {
		return nil, fmt.Errorf("namespace %s: %w", ns, err)
	}
	defer h.Close()
	nh, err := netlink.NewHandleAt(h)
	if err != nil {
		return nil, fmt.Errorf("namespace %s: %w", ns, err)
	}
	return nh, nil
}

// configs writes each switch's gswitchd config (NoSwitches: nothing is started).
func (u *upper) configs(context.Context) error {
	for _, s := range u.p.Switches {
		cfg := filepath.Join(u.dir, s.Name+".yaml")
		if err := writeAtomic(cfg, s.Config); err != nil {
			return err
		}
		u.st.Switches = append(u.st.Switches, stateSwitch{Name: s.Name, Metrics: s.Metrics, Config: cfg})
	}
	return u.st.save(u.dir)
}

func (u *upper) switches(context.Context) error {
	for _, s := range u.p.Switches {
		cfg := filepath.Join(u.dir, s.Name+".yaml")
		if err := writeAtomic(cfg, s.Config); err != nil {
			return err
		}
		logPath := filepath.Join(u.o.LogDir, s.Name+".log")
		u.st.Switches = append(u.st.Switches, stateSwitch{Name: s.Name, Metrics: s.Metrics, Config: cfg, Log: logPath})
		logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		cmd := exec.Command(u.bin, "-config", cfg)
		cmd.Stdout, cmd.Stderr = logf, logf
		// Its own session: gswitchd outlives gswitchctl and its terminal.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		err = cmd.Start()
		logf.Close()
		if err != nil {
			return fmt.Errorf("switches.%s: starting %s: %w", s.Name, u.bin, err)
		}
		ch := make(chan struct{})
		pid := cmd.Process.Pid
		go func() {
			err := cmd.Wait()
			u.mu.Lock()
			u.exitErr[pid] = err
			u.mu.Unlock()
			close(ch)
		}()
		u.exited[pid] = ch
		start, _ := procStart(cmd.Process.Pid)
		u.st.Processes = append(u.st.Processes, process{Switch: s.Name, PID: cmd.Process.Pid, Start: start, Argv: cmd.Args})
		if err := u.st.save(u.dir); err != nil {
			return err
		}
	}
	return nil
}

// wait polls every gswitchd's metrics endpoint until all answer.
func (u *upper) wait(parent context.Context) error {
	ctx, cancel := context.WithTimeout(parent, u.o.Wait)
	defer cancel()
	client := &http.Client{Timeout: 500 * time.Millisecond}
	for i, s := range u.p.Switches {
		pr := u.st.Processes[i]
		for {
			select {
			case <-u.exited[pr.PID]:
				u.mu.Lock()
				how := u.exitErr[pr.PID]
				u.mu.Unlock()
				return fmt.Errorf("switches.%s: gswitchd exited during start-up (%v); %s ends:\n%s", s.Name, how, u.logName(i), logTail(u.st.Switches[i].Log))
			default:
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.Metrics+"/metrics", nil)
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case <-ctx.Done():
				if err := parent.Err(); err != nil {
					return fmt.Errorf("bringing %s up: %w", u.t.Name, err)
				}
				return fmt.Errorf("switches.%s: gswitchd did not serve metrics on %s within %s; %s ends:\n%s", s.Name, s.Metrics, u.o.Wait, u.logName(i), logTail(u.st.Switches[i].Log))
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// logName names switch i's log for an error: by path if it outlives the
// clean-up (a log directory of its own), else as "its log".
func (u *upper) logName(i int) string {
	if filepath.Dir(u.st.Switches[i].Log) == u.dir {
		return "its log"
	}
	return "its log " + u.st.Switches[i].Log
}

func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "  (" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// Down removes everything of the topology: the gswitchd processes (only
// those whose /proc/<pid>/cmdline is the command Up started), the processes
// in the hosts' namespaces, the switch-port veths and the namespaces, and
// the state directory. It finds them in the state file and by the names the
// topology implies (a link or namespace without a state record is removed
// only if it carries the topology's mark), so it also works after gswitchctl
// or the machine's processes crashed. Removing what is not there is not an
// error.
func Down(t *Topology, o UpOptions) error {
	o = o.withDefaults(t)
	dir := filepath.Join(o.StateDir, t.Name)
	st, err := readState(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w (move it away and run down again: the names the file implies are enough)", err)
		}
		st = &state{}
	}
	p, err := t.Plan()
	if err != nil {
		return err
	}
	var errs []error
	// 1. gswitchd: recorded processes, and any process running one of this topology's configs.
	configs := map[string]bool{}
	for _, s := range p.Switches {
		configs[filepath.Join(dir, s.Name+".yaml")] = true
	}
	pids := map[int]bool{}
	for _, pr := range st.Processes {
		if procMatches(pr) {
			pids[pr.PID] = true
		}
	}
	for _, pid := range procsRunningConfigs(configs) {
		pids[pid] = true
	}
	errs = append(errs, stopProcesses(pids))
	// 2. Namespaces: state, and the file's names when they carry the mark.
	nsSet := map[string]bool{}
	for _, ns := range st.Namespaces {
		nsSet[ns] = true
	}
	for _, ns := range p.Namespaces {
		if !nsSet[ns] && nsOwned(ns, t.Name) {
			nsSet[ns] = true
		}
	}
	var nss []string
	for _, ns := range append(st.Namespaces, p.Namespaces...) {
		if nsSet[ns] {
			nss = append(nss, ns)
			delete(nsSet, ns)
		}
	}
	for _, ns := range nss {
		errs = append(errs, killInNamespace(ns))
	}
	// 3. Links: recorded ones, and the file's names when they carry the mark.
	recorded := map[string]bool{}
	for _, l := range st.Links {
		recorded[l] = true
	}
	var links []string
	links = append(links, st.Links...)
	for _, s := range p.Switches {
		for _, port := range s.Ports {
			if !recorded[port.Interface] {
				links = append(links, port.Interface)
			}
		}
	}
	for _, name := range links {
		l, err := netlink.LinkByName(name)
		if err != nil {
			continue // gone already (a veth pair goes with either end)
		}
		if !recorded[name] && l.Attrs().Alias != alias(t.Name) {
			continue // not ours
		}
		if err := netlink.LinkDel(l); err != nil && !errors.As(err, new(netlink.LinkNotFoundError)) {
			errs = append(errs, fmt.Errorf("deleting interface %s: %w", name, err))
		}
	}
	for _, ns := range nss {
		if err := netns.DeleteNamed(ns); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("deleting namespace %s: %w", ns, err))
		} else if err != nil {
			os.Remove(nsPath(ns)) // not mounted: a file left by an interrupted creation
		}
	}
	// 4. The state directory (and the logs in it).
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return nil
}
