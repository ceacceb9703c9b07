package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/gswitch/gswitch/config"
	_ "github.com/gswitch/gswitch/mech/all" // config.Parse checks each mechanism's keys
	"github.com/gswitch/gswitch/topo"
)

// topoCheck validates a topology file and every switch's gswitchd config
// under the file's defaults and under each design (as gswitchd parses it,
// without the interfaces, which exist only once the topology is up), and
// lists the designs.
func topoCheck(args []string) int {
	pos, err := parse(flags("check"), args)
	if err != nil {
		return usageErr("check", err)
	}
	t, code := load("check", pos, 1)
	if t == nil {
		return code
	}
	problems, err := writeCheck(os.Stdout, pos[0], t)
	if err != nil {
		return fail(err)
	}
	for _, p := range problems {
		fmt.Fprintf(os.Stderr, "gswitchctl: %s: %s\n", pos[0], p)
	}
	if len(problems) > 0 {
		return 1
	}
	return 0
}

// writeCheck writes check's report of file's topology t and returns what
// gswitchd would refuse, one line each naming the design and the switch.
func writeCheck(w io.Writer, file string, t *topo.Topology) ([]string, error) {
	scale := ""
	switch {
	case t.TimescaleAuto:
		scale = ", timescale auto"
	case !t.Timescale.One():
		scale = ", timescale " + t.Timescale.String()
	}
	fmt.Fprintf(w, "%s: topology %s, mode %s: %d switches, %d hosts, %d links%s\n", file, t.Name, t.Mode, len(t.Switches), len(t.Hosts), len(t.Links), scale)
	var problems []string
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  design\tgswitchd configs\tmechanisms\thosts' gsperf\n")
	for _, name := range append([]string{""}, t.DesignNames()...) {
		dt, err := t.WithDesign(name)
		if err != nil {
			return nil, err
		}
		p, err := dt.Plan()
		if err != nil {
			return nil, err
		}
		label, where := name, "designs."+name+": "
		if name == "" {
			label, where = "(none)", ""
		}
		verdict := "valid"
		for _, s := range p.Switches {
			if _, err := config.Parse(s.Config); err != nil {
				problems = append(problems, fmt.Sprintf("%sswitch %s: gswitchd would refuse its config: %v (the config: gswitchctl topo show %s%s -configs)", where, s.Name, err, file, designFlag(name)))
				verdict = "REFUSED (see below)"
			}
		}
		mechs := strings.Join(p.PortMechanisms(), ", ")
		if mechs == "" {
			mechs = "none"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", label, verdict, mechs, hostTransports(dt))
	}
	if err := tw.Flush(); err != nil {
		return nil, err
	}
	if p, err := t.Plan(); err == nil {
		if err := p.WriteMachines(w); err != nil {
			return nil, err
		}
	}
	switch {
	case len(t.Designs) == 0:
		fmt.Fprintf(w, "no designs: the file runs as written\n")
	case len(problems) == 0:
		fmt.Fprintf(w, "bring it up under a design: gswitchctl topo up %s -design NAME (without -design: the file's defaults as written, (none) above)\n", file)
	}
	return problems, nil
}

// hostTransports says what the hosts' gsperf runs: one set of client
// flags if every host runs the same, else each set with its hosts; a
// server other than the plain one is given after its flags.
func hostTransports(t *topo.Topology) string {
	type group struct {
		flags string
		hosts []string
	}
	var groups []*group
	byFlags := map[string]*group{}
	for _, h := range t.Hosts {
		ht, _ := t.HostTransport(h.Name)
		f := ht.String()
		if sf := ht.ServerFlags(); strings.Join(sf, " ") != "-mode plain" {
			f += " (server " + strings.Join(sf, " ") + ")"
		}
		g := byFlags[f]
		if g == nil {
			g = &group{flags: f}
			byFlags[f] = g
			groups = append(groups, g)
		}
		g.hosts = append(g.hosts, h.Name)
	}
	if !t.HasTransport() {
		return groups[0].flags + " (the file gives no transport:)"
	}
	if len(groups) == 1 {
		return groups[0].flags
	}
	var parts []string
	for _, g := range groups {
		hosts := strings.Join(g.hosts, ", ")
		if len(g.hosts) > 3 {
			hosts = fmt.Sprintf("%s, %s, ... (%d hosts)", g.hosts[0], g.hosts[1], len(g.hosts))
		}
		parts = append(parts, g.flags+": "+hosts)
	}
	return strings.Join(parts, "; ")
}

// topoDesigns prints the file's design names, one per line, for scripts
// that run a workload under each in turn.
func topoDesigns(args []string) int {
	pos, err := parse(flags("designs"), args)
	if err != nil {
		return usageErr("designs", err)
	}
	t, code := load("designs", pos, 1)
	if t == nil {
		return code
	}
	for _, d := range t.DesignNames() {
		fmt.Println(d)
	}
	return 0
}

// topoTransport prints a host's gsperf flags, one per line, under the
// design -design names, else the one the topology is up under (its state
// file), else the file's defaults.
func topoTransport(args []string) int {
	fs := flags("transport")
	var o topo.UpOptions
	fs.StringVar(&o.StateDir, "state", topo.DefaultStateDir, "state directory (where up recorded the design)")
	design := fs.String("design", "", "the design (default: the one the topology is up under, else the file's defaults; -design '' the defaults)")
	server := fs.Bool("server", false, "print the flags of the host's gsperf server instead of its client's")
	pos, err := parse(fs, args)
	if err != nil {
		return usageErr("transport", err)
	}
	if len(pos) != 2 {
		return usageErr("transport", fmt.Errorf("want FILE HOST, got %d argument(s)", len(pos)))
	}
	t, err := topo.Load(pos[0])
	if err != nil {
		return fail(err)
	}
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "design" })
	o.Machine = t.MachineOf(pos[1]) // where the host's part records its design
	running, up, err := topo.UpDesign(t, o)
	if err != nil {
		return fail(err)
	}
	name := *design
	switch {
	case !given && up:
		name = running
	case given && up && running != name:
		fmt.Fprintf(os.Stderr, "gswitchctl topo transport: note: topology %s is up under %s, not %s\n", t.Name, designText(running), designText(name))
	}
	dt, err := t.WithDesign(name)
	if err != nil {
		if !given {
			err = fmt.Errorf("topology %s is up under %s: %w (give -design)", t.Name, designText(running), err)
		}
		return fail(fmt.Errorf("%s: %w", pos[0], err))
	}
	ht, err := dt.HostTransport(pos[1])
	if err != nil {
		return fail(fmt.Errorf("%s: %w", pos[0], err))
	}
	words := ht.ClientFlags()
	if *server {
		words = ht.ServerFlags()
	}
	for _, w := range words {
		fmt.Println(w)
	}
	return 0
}

// designFlag is " -design NAME" (nothing for the defaults).
func designFlag(name string) string {
	if name == "" {
		return ""
	}
	return " -design " + name
}

func designText(name string) string {
	if name == "" {
		return "the file's defaults"
	}
	return "design " + name
}
