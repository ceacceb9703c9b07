package main

import (
	"fmt"
	"os"

	"github.com/gswitch/gswitch/topo"
)

// Fabrics over several machines: topo status, and what up prints of a
// machine's tunnels.

// topoStatus prints what is up of a topology on this machine: its
// switches, hosts and tunnels with their counters.
func topoStatus(args []string) int {
	fs := flags("status")
	var o topo.UpOptions
	fs.StringVar(&o.StateDir, "state", topo.DefaultStateDir, "state directory")
	fs.StringVar(&o.Machine, "machine", "", "this machine's part of a fabric over several machines")
	pos, err := parse(fs, args)
	if err != nil {
		return usageErr("status", err)
	}
	t, code := load("status", pos, 1)
	if t == nil {
		return code
	}
	r, err := topo.Attach(t, o)
	if err != nil {
		return fail(err)
	}
	if err := r.WriteStatus(os.Stdout); err != nil {
		return fail(err)
	}
	return 0
}

// printTunnels prints the tunnels of machine's part after up (nothing for
// a fabric on one machine).
func printTunnels(t *topo.Topology, machine string) {
	p, err := t.PlanFor(machine)
	if err != nil {
		return
	}
	for _, tp := range p.Tunnels {
		here, there := tp.Ends(machine)
		fmt.Printf("  tunnel links[%d] %s -> %s on %s: VXLAN %s, VNI %d, %s -> %s port %d, stitched to %s\n",
			tp.Link, here.Node, there.Node, there.Machine, here.Device, tp.VNI, here.Underlay, there.Underlay, tp.Port, here.Stitch)
	}
	if len(p.Tunnels) > 0 {
		fmt.Printf("the tunnels carry traffic once %s's part is up too; their counters: gswitchctl topo status FILE -machine %s\n", otherMachines(p), machine)
	}
}

// otherMachines names the machines at the far ends of a machine plan's tunnels.
func otherMachines(p *topo.Plan) string {
	seen := map[string]bool{}
	s := ""
	for _, tp := range p.Tunnels {
		_, there := tp.Ends(p.Machine)
		if !seen[there.Machine] {
			if s != "" {
				s += ", "
			}
			s += there.Machine
			seen[there.Machine] = true
		}
	}
	return s
}

// machineText is " on machine m" ("" for a fabric on one machine).
func machineText(m string) string {
	if m == "" {
		return ""
	}
	return " on machine " + m
}

// machineFlag is " -machine m" ("" for a fabric on one machine).
func machineFlag(m string) string {
	if m == "" {
		return ""
	}
	return " -machine " + m
}
