// Command gswitchctl operates gswitch switches and fabrics.
//
//	gswitchctl ports | queues [PORT] | mac | routes | neighbors | flows [PORT]
//	gswitchctl top                      live rates, refreshing
//	gswitchctl fidelity [-interval D]   how late the workers ran; VALID or INVALID
//	gswitchctl set PORT KEY VALUE       rate, burst, quantum, queue N pause|resume
//	gswitchctl capture PORT [-w FILE.pcapng] [-c N] [FILTER]
//	gswitchctl health | info | reload | completion bash
//
// These talk to a running gswitchd over its control socket (ctl.go, docs/operations.md).
//
//	gswitchctl topo up FILE [-design NAME]   bring a topology file up (namespaces, veths, one gswitchd per switch)
//	gswitchctl topo down FILE        remove everything it made
//	gswitchctl topo show FILE        print the plan
//	gswitchctl topo check FILE       validate it and every design's gswitchd configs
//	gswitchctl topo designs FILE     print its design names
//	gswitchctl topo transport FILE HOST   print the host's gsperf flags under the design
//	gswitchctl topo exec FILE HOST -- CMD [ARGS...]
//	gswitchctl topo targets FILE     print the Prometheus file_sd targets
//	gswitchctl topo status FILE      what is up on this machine, each tunnel's counters
//	(up, down, show, targets, status -machine NAME: one machine's part of a fabric over several)
//	gswitchctl topo export FILE [-format containerlab|clabernetes] [-o DIR]   the fabric for containerlab or clabernetes
//
// Each subcommand lives in its own file and is listed in commands below.
package main

import (
	"fmt"
	"os"
	"strings"
)

// command is one subcommand: run gets the arguments after its name and
// returns the exit code.
type command struct {
	name    string
	summary string
	run     func(args []string) int
}

var commands = []command{
	{"topo", "bring fabrics described by topology files up and down (gswitchctl topo help)", topoMain},
}

func main() {
	os.Exit(dispatch(os.Args[1:]))
}

func dispatch(args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		usage()
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(args[1:])
		}
	}
	if args[0] == "__ports" {
		return portsForCompletion(args[1:])
	}
	fmt.Fprintf(os.Stderr, "gswitchctl: unknown command %q\n", args[0])
	usage()
	return 2
}

func usage() {
	var b strings.Builder
	b.WriteString("usage: gswitchctl COMMAND [ARGS...]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(os.Stderr, b.String())
}

// fail prints an error the way every subcommand does and returns exit code 1.
func fail(err error) int {
	fmt.Fprintf(os.Stderr, "gswitchctl: %v\n", err)
	return 1
}
