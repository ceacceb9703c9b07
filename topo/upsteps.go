package topo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

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
	return checkNamespacesShared(u.p)
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
