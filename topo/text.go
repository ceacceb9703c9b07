package topo

import (
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gswitch/gswitch/units"
)

// TargetsJSON is the Prometheus file_sd file: one target per switch,
// labelled switch=<name> and topology=<name>.
func (p *Plan) TargetsJSON() []byte {
	b, err := json.MarshalIndent(p.Targets, "", "  ")
	if err != nil {
		panic(err) // strings and maps of strings always marshal
	}
	return append(b, '\n')
}

// WriteText writes the plan for people: switches with their ports, routes
// and neighbours, hosts, links; with configs, each switch's gswitchd YAML.
func (p *Plan) WriteText(w io.Writer, configs bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if p.Machine != "" {
		fmt.Fprintf(tw, "topology %s, mode %s, machine %s (underlay %s): %d switches, %d hosts, %d links (%d of them tunnels to other machines)\n",
			p.Name, p.Mode, p.Machine, p.machine(p.Machine).Underlay, len(p.Switches), len(p.Hosts), len(p.Veths), len(p.Tunnels))
	} else {
		fmt.Fprintf(tw, "topology %s, mode %s: %d switches, %d hosts, %d links\n", p.Name, p.Mode, len(p.Switches), len(p.Hosts), len(p.Veths))
	}
	switch {
	case p.TimescaleAuto:
		fmt.Fprintf(tw, "timescale auto: up measures this machine and chooses K; rates and delays below are the fabric's\n")
	case !p.Timescale.One():
		fmt.Fprintf(tw, "timescale %s: rates and delays are the fabric's; this machine runs rates / %s and times x %s (in brackets)\n", p.Timescale, p.Timescale, p.Timescale)
	}
	if len(p.Designs) > 0 {
		mechs := "none"
		if ms := p.PortMechanisms(); len(ms) > 0 {
			mechs = strings.Join(ms, ", ")
		}
		if p.Design == "" {
			fmt.Fprintf(tw, "design: none, the file's defaults as written (its designs: %s; choose one with -design NAME); mechanisms: %s\n", strings.Join(p.Designs, ", "), mechs)
		} else {
			fmt.Fprintf(tw, "design %s (of %s); mechanisms: %s\n", p.Design, strings.Join(p.Designs, ", "), mechs)
		}
	}
	fmt.Fprintf(tw, "\nswitches (ports live in the root namespace):\n")
	for _, s := range p.Switches {
		fmt.Fprintf(tw, "  %s\tid %d\tmetrics %s%s\n", s.Name, s.ID, s.Metrics, p.onMachine(s.Machine))
		for _, port := range s.Ports {
			var extra []string
			if port.Addr.IsValid() {
				extra = append(extra, "addr "+port.Addr.String())
			}
			extra = append(extra, "rate "+orUnlimited(port.Rate)+p.wallRate(port.Rate))
			if port.Delay != 0 {
				extra = append(extra, "delay "+durText(port.Delay)+p.wallDelay(port.Delay))
			}
			peer := port.Peer
			if port.PeerAddr.IsValid() {
				peer += " " + port.PeerAddr.String()
			}
			fmt.Fprintf(tw, "    port %d %s\t%s\t%s\t%s\tmtu %d\t-> %s\t%s\n", port.Index, port.Name, port.Interface, port.MAC, port.Role, port.MTU, peer, strings.Join(extra, "  "))
		}
		for _, r := range s.Routes {
			fmt.Fprintf(tw, "    route %s\tvia %s\n", r.Prefix, addrList(r.Via))
		}
		for _, n := range s.Neighbors {
			fmt.Fprintf(tw, "    neighbor %s\t%s\n", n.IP, n.MAC)
		}
	}
	fmt.Fprintf(tw, "\nhosts (each in its namespace, interface %s, no default route):\n", HostInterface)
	for _, h := range p.Hosts {
		line := fmt.Sprintf("  %s\tnetns %s\t%s\t%s\tmtu %d\ton %s (%s)%s", h.Name, h.Namespace, h.MAC, h.Addr, h.MTU, h.Switch, h.Port, p.onMachine(h.Machine))
		if h.Gateway.IsValid() {
			line += fmt.Sprintf("\tgateway %s %s", h.Gateway, h.GatewayMAC)
		}
		if h.CC != "" {
			line += "\tcc " + h.CC
		}
		if h.RtoMin != 0 {
			line += "\trto_min " + durText(h.RtoMin) + " on this machine"
		}
		if h.QuickAck {
			line += "\tquickack"
		}
		if h.Transport != nil {
			line += "\tgsperf " + h.Transport.String()
		}
		fmt.Fprintln(tw, line)
		for _, r := range h.Routes {
			fmt.Fprintf(tw, "    route %s\tvia %s\n", r.Prefix, addrList(r.Via))
		}
	}
	fmt.Fprintf(tw, "\nlinks (veth pairs, offloads off on both ends):\n")
	for _, v := range p.Veths {
		b := end(v.B)
		switch {
		case v.Tunnel != nil && p.Machine == "":
			b += fmt.Sprintf(" (tunnel %s-%s)", v.Tunnel.A.Machine, v.Tunnel.B.Machine)
		case v.Tunnel != nil:
			_, there := v.Tunnel.Ends(p.Machine)
			b = fmt.Sprintf("%s (stitch, tunnel to %s on %s)", v.B.Name, there.Node, there.Machine)
		}
		fmt.Fprintf(tw, "  links[%d]\t%s\t<->\t%s\trate %s\tdelay %s\tmtu %d/%d\n", v.Link, end(v.A), b,
			orUnlimited(v.Rate)+p.wallRate(v.Rate), durText(v.Delay)+p.wallDelay(v.Delay), v.A.MTU, v.B.MTU)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := p.WriteMachines(w); err != nil {
		return err
	}
	if configs {
		for _, s := range p.Switches {
			if _, err := fmt.Fprintf(w, "\n--- %s.yaml\n%s", s.Name, s.Config); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteMachines writes, for a fabric over several machines, what each
// machine holds and each tunnel between them (on a machine's plan, that
// machine's tunnels); nothing for a fabric on one machine.
func (p *Plan) WriteMachines(w io.Writer) error {
	if len(p.Machines) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if p.Machine == "" {
		fmt.Fprintf(tw, "\nmachines (each brings up its own part: gswitchctl topo up FILE -machine NAME, on that machine):\n")
		for _, m := range p.Machines {
			fmt.Fprintf(tw, "  %s\tunderlay %s\tswitches %s\thosts %s\tveths %s\ttunnels %s\n", m.Name, m.Underlay,
				orNone(strings.Join(m.Switches, ", ")), orNone(strings.Join(m.Hosts, ", ")), linkList(m.Links), linkList(m.Tunnels))
		}
	}
	if len(p.Tunnels) > 0 {
		fmt.Fprintf(tw, "\ntunnels (VXLAN over IPv4; on each machine the link's end is a veth stitched by tc to the VXLAN device):\n")
	}
	for _, tp := range p.Tunnels {
		vni := "derived"
		if tp.VNIGiven {
			vni = "links[" + fmt.Sprint(tp.Link) + "].vni"
		}
		fmt.Fprintf(tw, "  links[%d]\t%s on %s %s\t<->\t%s on %s %s\tVNI %d (%s)\tUDP port %d from %d\tdevice %s, stitch %s\tmtu %d, the underlay's at least %d\trate %s\n",
			tp.Link, tp.A.Node, tp.A.Machine, tp.A.Underlay, tp.B.Node, tp.B.Machine, tp.B.Underlay, tp.VNI, vni, tp.Port, tp.SrcPort,
			tp.A.Device, tp.A.Stitch, tp.MTU, UnderlayMTU(tp.MTU), orUnlimited(tp.Rate)+p.wallRate(tp.Rate))
	}
	return tw.Flush()
}

// machine is the plan's machine named m (nil if none).
func (p *Plan) machine(m string) *MachinePlan {
	for _, mp := range p.Machines {
		if mp.Name == m {
			return mp
		}
	}
	return nil
}

// onMachine is "\ton m1" for a node on machine m in the whole plan of a
// fabric over several machines ("" otherwise).
func (p *Plan) onMachine(m string) string {
	if m == "" || p.Machine != "" {
		return ""
	}
	return "\ton " + m
}

func linkList(ls []int) string {
	var s []string
	for _, l := range ls {
		s = append(s, fmt.Sprintf("links[%d]", l))
	}
	return orNone(strings.Join(s, " "))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func end(e VethEnd) string {
	if e.Node == "" {
		return e.Name
	}
	if e.Namespace == "" {
		return fmt.Sprintf("%s %s", e.Node, e.Name)
	}
	return fmt.Sprintf("%s %s/%s", e.Node, e.Namespace, e.Name)
}

func addrList(as []netip.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

func orUnlimited(s string) string {
	if s == "" {
		return "unlimited"
	}
	return s
}

// wallRate is " [10Mbit]", the machine's rate for a fabric rate written
// r, on a scaled plan ("" at timescale 1 or for an unlimited rate).
func (p *Plan) wallRate(r string) string {
	bits, err := units.ParseRate(r)
	if p.Timescale.One() || err != nil || bits == 0 {
		return ""
	}
	return " [" + units.Rate(p.Timescale.WallBits(bits)).String() + "]"
}

// wallDelay is " [4ms]", the machine's delay for a fabric delay d, on a
// scaled plan.
func (p *Plan) wallDelay(d time.Duration) string {
	if p.Timescale.One() || d == 0 {
		return ""
	}
	return " [" + durText(p.Timescale.Wall(d)) + "]"
}

// durText writes a duration in ASCII (50us, not 50µs).
func durText(d time.Duration) string { return strings.ReplaceAll(d.String(), "µ", "u") }
