package topo

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Up's side of the tunnels between machines (machine.go has the file's
// side): the underlay checks, the VXLAN devices, the tc stitch, counters.

// underlay is the path a machine's tunnel takes to the other machine,
// found on this machine.
type underlay struct {
	// dev is the interface the route to the other machine's underlay
	// address leaves by: the VXLAN device's lower device.
	dev netlink.Link
	// mtu is what the underlay carries: dev's MTU, or the route's when lower;
	// what says which.
	mtu  int
	what string
}

// findUnderlay finds here's underlay address among this machine's and the
// route from it to there's.
func findUnderlay(here, there *TunnelEnd) (*underlay, error) {
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("listing this machine's addresses: %w", err)
	}
	local := false
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		switch {
		case !ok:
		case ip.Unmap() == here.Underlay:
			local = true
		case ip.Unmap() == there.Underlay:
			return nil, fmt.Errorf("machines.%s.underlay: %s is an address of this machine, which is to be %s (is this %s? each machine needs an underlay address of its own)", there.Machine, there.Underlay, here.Machine, there.Machine)
		}
	}
	if !local {
		return nil, fmt.Errorf("machines.%s.underlay: %s is no address of this machine (bring up %s's part on the machine that holds it, or give %s's address there)", here.Machine, here.Underlay, here.Machine, here.Machine)
	}
	routes, err := netlink.RouteGetWithOptions(there.Underlay.AsSlice(), &netlink.RouteGetOptions{SrcAddr: here.Underlay.AsSlice()})
	if err != nil || len(routes) == 0 {
		return nil, fmt.Errorf("machines.%s.underlay: no route from %s to %s on this machine (%v): the underlay must join the machines' underlay addresses", there.Machine, here.Underlay, there.Underlay, err)
	}
	dev, err := netlink.LinkByIndex(routes[0].LinkIndex)
	if err != nil {
		return nil, fmt.Errorf("the interface of the route to %s: %w", there.Underlay, err)
	}
	name := dev.Attrs().Name
	if dev.Attrs().Flags&net.FlagUp == 0 {
		return nil, fmt.Errorf("the underlay interface %s (toward %s, machines.%s.underlay) is down (ip link set %s up)", name, there.Underlay, there.Machine, name)
	}
	u := &underlay{dev: dev, mtu: dev.Attrs().MTU, what: "the underlay interface " + name}
	if r := routes[0].MTU; r > 0 && r < u.mtu {
		u.mtu, u.what = r, fmt.Sprintf("the route to %s (via %s)", there.Underlay, name)
	}
	return u, nil
}

// underlayMTUProblem says why an underlay of MTU mtu (what) cannot carry
// tunnel tp, and what would.
func underlayMTUProblem(tp *TunnelPlan, here, there *TunnelEnd, what, dev string, mtu int) string {
	need := UnderlayMTU(tp.MTU)
	fix := fmt.Sprintf("raise the underlay's MTU to %d or more on both machines, e.g. ip link set %s mtu %d", need, dev, need)
	if lower := mtu - TunnelOverhead - TagRoom; lower >= 68 {
		fix += fmt.Sprintf(", or lower links[%d].mtu to %d", tp.Link, lower)
	}
	return fmt.Sprintf("links[%d] (%s on %s to %s on %s): %s has MTU %d, the tunnel needs %d: the link's mtu %d + %d of VXLAN over IPv4 + %d of gswitch's 0x88B5 tag (%s)",
		tp.Link, here.Node, here.Machine, there.Node, there.Machine, what, mtu, need, tp.MTU, TunnelOverhead, TagRoom, fix)
}

// checkUnderlay refuses, before anything is made, tunnels that this
// machine's underlay cannot carry: its address not on this machine, no
// route to the other machine, an MTU below UnderlayMTU, a VNI another
// VXLAN device on the same UDP port has.
func checkUnderlay(p *Plan) error {
	if len(p.Tunnels) == 0 {
		return nil
	}
	links, err := netlink.LinkList()
	if err != nil {
		return fmt.Errorf("listing this machine's interfaces: %w", err)
	}
	var problems []string
	for _, tp := range p.Tunnels {
		here, there := tp.Ends(p.Machine)
		u, err := findUnderlay(here, there)
		if err != nil {
			problems = append(problems, fmt.Sprintf("links[%d]: %v", tp.Link, err))
			continue
		}
		if u.mtu < UnderlayMTU(tp.MTU) {
			problems = append(problems, underlayMTUProblem(tp, here, there, u.what, u.dev.Attrs().Name, u.mtu))
		}
		for _, l := range links {
			if vx, ok := l.(*netlink.Vxlan); ok && vx.VxlanId == int(tp.VNI) && vx.Port == tp.Port && vx.Name != here.Device {
				how := "give links[%d].vni another VNI, or tunnel.vni_base"
				if !tp.VNIGiven {
					how = "its VNI is derived: give links[%d].vni, or tunnel.vni_base"
				}
				problems = append(problems, fmt.Sprintf("links[%d]: VNI %d on UDP port %d is taken on this machine by VXLAN device %s (%s)", tp.Link, tp.VNI, tp.Port, vx.Name, fmt.Sprintf(how, tp.Link)))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("topology %s: machine %s cannot tunnel to the others; nothing was changed:\n  %s", p.Name, p.Machine, strings.Join(problems, "\n  "))
	}
	return nil
}

// tunnels makes each tunnel's half on this machine: its VXLAN device and
// the stitch between it and the veth end the veths step made.
func (u *upper) tunnels(context.Context) error {
	mark := alias(u.t.Name)
	for _, tp := range u.p.Tunnels {
		here, there := tp.Ends(u.p.Machine)
		ul, err := findUnderlay(here, there)
		if err != nil {
			return fmt.Errorf("links[%d]: %w", tp.Link, err)
		}
		vx := &netlink.Vxlan{
			LinkAttrs: netlink.LinkAttrs{Name: here.Device, MTU: tp.MTU, HardwareAddr: here.DeviceMAC, Alias: mark},
			VxlanId:   int(tp.VNI), VtepDevIndex: ul.dev.Attrs().Index,
			SrcAddr: here.Underlay.AsSlice(), Group: there.Underlay.AsSlice(),
			Port: tp.Port, PortLow: tp.SrcPort, PortHigh: tp.SrcPort,
			Learning: false, // one remote: every frame goes to it
		}
		if err := netlink.LinkAdd(vx); err != nil {
			return fmt.Errorf("links[%d]: creating VXLAN device %s (VNI %d, %s to %s over %s, UDP port %d): %w", tp.Link, here.Device, tp.VNI, here.Underlay, there.Underlay, ul.dev.Attrs().Name, tp.Port, err)
		}
		u.st.Links = append(u.st.Links, here.Device)
		if err := u.st.save(u.dir); err != nil {
			return err
		}
		// IPv6 off: the kernel would send its own frames into the tunnel,
		// and from it to the port. Offloads off: GRO would merge frames
		// that the port takes one by one.
		if err := setupRootPort(here.Device, mark); err != nil {
			return fmt.Errorf("links[%d]: %s: %w", tp.Link, here.Device, err)
		}
		if err := stitch(here.Stitch, here.Device); err != nil {
			return fmt.Errorf("links[%d]: joining %s to %s: %w", tp.Link, here.Stitch, here.Device, err)
		}
	}
	return nil
}

// stitch joins two interfaces point to point, both ways: a clsact qdisc on
// each, and on its ingress a u32 filter matching every frame that
// redirects it to the other's egress (mirred). Unlike a Linux bridge it
// passes every frame as it came, those to the link-local group addresses
// 01:80:C2:00:00:0x (BFC's pauses and bitmaps) included, and learns
// nothing. A GSO frame (from GRO in the underlay's driver) is cut into
// frames again on the way out of the stitch, whose offloads are off.
func stitch(a, b string) error {
	la, err := netlink.LinkByName(a)
	if err != nil {
		return err
	}
	lb, err := netlink.LinkByName(b)
	if err != nil {
		return err
	}
	for _, pair := range [][2]*netlink.LinkAttrs{{la.Attrs(), lb.Attrs()}, {lb.Attrs(), la.Attrs()}} {
		from, to := pair[0], pair[1]
		q := &netlink.Clsact{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: from.Index, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT}}
		if err := netlink.QdiscAdd(q); err != nil {
			return fmt.Errorf("clsact qdisc on %s: %w (the kernel needs CONFIG_NET_SCH_INGRESS)", from.Name, err)
		}
		f := &netlink.U32{ // no selector: every frame
			FilterAttrs: netlink.FilterAttrs{LinkIndex: from.Index, Parent: netlink.HANDLE_MIN_INGRESS, Priority: 1, Protocol: unix.ETH_P_ALL},
			Actions:     []netlink.Action{netlink.NewMirredAction(to.Index)},
		}
		if err := netlink.FilterAdd(f); err != nil {
			return fmt.Errorf("tc filter on %s's ingress redirecting to %s: %w (the kernel needs CONFIG_NET_CLS_U32 and CONFIG_NET_ACT_MIRRED)", from.Name, to.Name, err)
		}
	}
	return nil
}

// checkNamespacesShared refuses, on a machine's part of a fabric, host
// namespaces that only this process's mount namespace sees: under ip
// netns exec (a mount namespace of its own, whose mounts do not reach the
// rest of the machine) the hosts' /run/netns bindings would vanish for
// everyone else, and topo exec, down and the hosts' tools would not find
// them. (A file without machines: is brought up as it always was.)
func checkNamespacesShared(p *Plan) error {
	if p.Machine == "" || len(p.Hosts) == 0 {
		return nil
	}
	b, err := os.ReadFile("/proc/1/mountinfo")
	if err != nil {
		return nil // cannot tell
	}
	want := nsPath(p.Hosts[0].Namespace)
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == want {
			return nil
		}
	}
	return fmt.Errorf("hosts.%s: namespace %s is bound at %s in this process's mount namespace only: the rest of the machine does not see it (does gswitchctl run under ip netns exec, which gives it a mount namespace of its own? to bring up a machine's part inside a network namespace run it under nsenter --net=/run/netns/NAME, which keeps the mounts shared)",
		p.Hosts[0].Name, p.Hosts[0].Namespace, want)
}

// TunnelCounters are one tunnel's counters on this machine: its VXLAN
// device's (what it sent into the underlay and received from it, and what
// it dropped or failed to send) and the drops of its stitch (frames the
// switch port or host did not take, or that did not reach it). Frames the
// underlay lost between the machines are one machine's Sent minus the
// other's Received.
type TunnelCounters struct {
	Tunnel                        *TunnelPlan
	Device, Stitch                string
	Sent, SentBytes               uint64
	Received, ReceivedBytes       uint64
	TxDropped, TxErrors           uint64
	RxDropped, RxErrors           uint64
	StitchTxDropped, StitchRxDrop uint64
}

// Tunnels reads the counters of the tunnels of this machine's part (none
// for a fabric on one machine).
func (r *Running) Tunnels() ([]TunnelCounters, error) {
	p, err := r.topo.PlanFor(r.Machine)
	if err != nil {
		return nil, err
	}
	var out []TunnelCounters
	for _, tp := range p.Tunnels {
		here, _ := tp.Ends(p.Machine)
		c := TunnelCounters{Tunnel: tp, Device: here.Device, Stitch: here.Stitch}
		l, err := netlink.LinkByName(here.Device)
		if err != nil {
			return nil, fmt.Errorf("links[%d]: VXLAN device %s: %w", tp.Link, here.Device, err)
		}
		if s := l.Attrs().Statistics; s != nil {
			c.Sent, c.SentBytes, c.Received, c.ReceivedBytes = s.TxPackets, s.TxBytes, s.RxPackets, s.RxBytes
			c.TxDropped, c.TxErrors, c.RxDropped, c.RxErrors = s.TxDropped, s.TxErrors, s.RxDropped, s.RxErrors
		}
		if l, err := netlink.LinkByName(here.Stitch); err == nil && l.Attrs().Statistics != nil {
			c.StitchTxDropped, c.StitchRxDrop = l.Attrs().Statistics.TxDropped, l.Attrs().Statistics.RxDropped
		}
		out = append(out, c)
	}
	return out, nil
}

// WriteStatus writes what is up of the topology on this machine: its
// switches (and whether each gswitchd still runs) and its tunnels with
// their counters.
func (r *Running) WriteStatus(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	design := "the file's defaults"
	if r.Design != "" {
		design = "design " + r.Design
	}
	fmt.Fprintf(tw, "topology %s%s: up since %s, %s, timescale %s\n", r.Name, onMachine(r.Machine), r.Started.Local().Format(time.DateTime), design, r.Timescale)
	for _, s := range r.Switches {
		run := "not started (-no-switches)"
		if s.PID != 0 {
			run = fmt.Sprintf("pid %d gone", s.PID)
			if procAlive(s.PID) {
				run = fmt.Sprintf("pid %d running", s.PID)
			}
		}
		fmt.Fprintf(tw, "  switch %s\t%s\tmetrics %s\n", s.Name, run, s.Metrics)
	}
	for _, h := range r.Hosts {
		fmt.Fprintf(tw, "  host %s\tnetns %s\t%s\n", h.Name, h.Namespace, h.Addr)
	}
	ts, err := r.Tunnels()
	if err != nil {
		tw.Flush()
		return err
	}
	for _, c := range ts {
		here, there := c.Tunnel.Ends(r.Machine)
		fmt.Fprintf(tw, "  tunnel links[%d]\t%s -> %s on %s\tVNI %d\t%s\t%s -> %s:%d\n", c.Tunnel.Link, here.Node, there.Node, there.Machine, c.Tunnel.VNI, c.Device, here.Underlay, there.Underlay, c.Tunnel.Port)
		fmt.Fprintf(tw, "    sent %d frames (%d bytes), %d dropped, %d errors; received %d frames (%d bytes), %d dropped, %d errors; stitch %s dropped %d out, %d in\n",
			c.Sent, c.SentBytes, c.TxDropped, c.TxErrors, c.Received, c.ReceivedBytes, c.RxDropped, c.RxErrors, c.Stitch, c.StitchTxDropped, c.StitchRxDrop)
	}
	if len(ts) > 0 {
		fmt.Fprintf(tw, "frames the underlay lost on a tunnel: those sent here minus those the other machine received (its topo status -machine NAME)\n")
	}
	return tw.Flush()
}

// onMachine is " on machine m" ("" for the whole fabric).
func onMachine(m string) string {
	if m == "" {
		return ""
	}
	return " on machine " + m
}
