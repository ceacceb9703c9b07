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
	fmt.Fprintf(tw, "topology %s, mode %s: %d switches, %d hosts, %d links\n", p.Name, p.Mode, len(p.Switches), len(p.Hosts), len(p.Veths))
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
		fmt.Fprintf(tw, "  %s\tid %d\tmetrics %s\n", s.Name, s.ID, s.Metrics)
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
		line := fmt.Sprintf("  %s\tnetns %s\t%s\t%s\tmtu %d\ton %s (%s)", h.Name, h.Namespace, h.MAC, h.Addr, h.MTU, h.Switch, h.Port)
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
		fmt.Fprintf(tw, "  links[%d]\t%s\t<->\t%s\trate %s\tdelay %s\tmtu %d/%d\n", v.Link, end(v.A), end(v.B),
			orUnlimited(v.Rate)+p.wallRate(v.Rate), durText(v.Delay)+p.wallDelay(v.Delay), v.A.MTU, v.B.MTU)
	}
	if err := tw.Flush(); err != nil {
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

func end(e VethEnd) string {
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
