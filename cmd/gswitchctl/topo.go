package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/control"
	"github.com/gswitch/gswitch/topo"
)

const topoUsage = `usage: gswitchctl topo SUBCOMMAND FILE [flags]

  up FILE [-machine NAME] [-design NAME] [-gswitchd PATH] [-state DIR] [-log DIR] [-wait 10s] [-no-switches]
        make the namespaces, veths, addresses, routes and neighbours, start one
        gswitchd per switch, wait until each serves metrics, write
        DIR/<name>/targets.json (Prometheus file_sd); refused when any of it exists.
        -design: run the file's fabric under that design (its designs:);
        without it the file's defaults run as written.
        -no-switches: hosts and links only; each switch's config is written to
        DIR/<name>/<switch>.yaml and no gswitchd is started (run your own).
        A topology with timescale: auto first measures this machine (a few
        seconds) and says which timescale it chose and why.
        -machine: on a fabric over several machines (the file's machines:),
        bring up this machine's part: its switches, hosts and links, and
        its ends of the tunnels to the others (required with several)
  down FILE [-machine NAME] [-state DIR] [-design NAME]
        stop the topology's gswitchd processes and remove everything it made
        (also after a crash; the same under every design); -machine: this
        machine's part
  show FILE [-machine NAME] [-design NAME] [-configs]
        print the plan: the timescale, design, ports, MACs, addresses, routes,
        neighbours, hosts' gsperf flags, machines and tunnels (and each
        switch's gswitchd YAML); -machine: what that machine holds
  check FILE
        validate the file and, under its defaults and each design, every
        switch's gswitchd config as gswitchd reads it; list the designs,
        and what each machine holds and each tunnel between machines
  status FILE [-machine NAME] [-state DIR]
        what is up on this machine: the switches (running or not), hosts,
        and each tunnel with its counters (frames sent into and received
        from the underlay, drops, errors)
  designs FILE
        print the file's design names, one per line
  transport FILE HOST [-design NAME] [-server] [-state DIR]
        print the host's gsperf client flags (-server: its server's), one
        per line: gsperf client $(gswitchctl topo transport FILE HOST) ...
        Without -design: the design the topology is up under, else the
        file's defaults
  exec FILE HOST [-state DIR] -- CMD [ARGS...]
        run a command in a host's network namespace (on the host's machine)
  targets FILE [-machine NAME]
        print the Prometheus file_sd targets (one per switch; -machine: its switches)
  export FILE [-format containerlab|clabernetes] [-o DIR] [-design NAME]
         [-image IMAGE] [-host-image IMAGE] [-namespace NS] [-timescale K]
        write the fabric in another engine's format: containerlab (its
        topology file, DIR/<name>.clab.yml, and each switch's gswitchd
        config, DIR/gswitchd/<switch>.yaml) or clabernetes (DIR/<name>.clabernetes.yaml:
        the containerlab file in a clabernetes Topology, for Kubernetes);
        deploy/k8s/README.md has the steps

The topology file format is described in docs/topology.md.
`

func topoMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, topoUsage)
		return 2
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "up":
		return topoUp(args)
	case "down":
		return topoDown(args)
	case "show":
		return topoShow(args)
	case "exec":
		return topoExec(args)
	case "targets":
		return topoTargets(args)
	case "check":
		return topoCheck(args)
	case "designs":
		return topoDesigns(args)
	case "transport":
		return topoTransport(args)
	case "status":
		return topoStatus(args)
	case "export":
		return topoExport(args)
	case "help", "-h", "-help", "--help":
		fmt.Print(topoUsage)
		return 0
	}
	fmt.Fprintf(os.Stderr, "gswitchctl topo: unknown subcommand %q\n%s", sub, topoUsage)
	return 2
}

// parse parses flags that may come before or after the positional
// arguments and returns the positional ones.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// flags makes a FlagSet for "topo <sub>" whose errors print the usage.
func flags(sub string) *flag.FlagSet {
	fs := flag.NewFlagSet("gswitchctl topo "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func usageErr(sub string, err error) int {
	fmt.Fprintf(os.Stderr, "gswitchctl topo %s: %v\n%s", sub, err, topoUsage)
	return 2
}

// load reads the one FILE argument.
func load(sub string, pos []string, want int) (*topo.Topology, int) {
	if len(pos) != want {
		return nil, usageErr(sub, fmt.Errorf("want %d argument(s), got %d", want, len(pos)))
	}
	t, err := topo.Load(pos[0])
	if err != nil {
		return nil, fail(err)
	}
	return t, 0
}

// loadDesign reads the one FILE argument and puts it under design ("":
// the file's defaults).
func loadDesign(sub string, pos []string, want int, design string) (*topo.Topology, int) {
	t, code := load(sub, pos, want)
	if t == nil {
		return nil, code
	}
	dt, err := t.WithDesign(design)
	if err != nil {
		return nil, fail(fmt.Errorf("%s: %w", pos[0], err))
	}
	return dt, 0
}

// defaultGswitchd is the gswitchd next to this binary, if there is one, else gswitchd on PATH.
func defaultGswitchd() string {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "gswitchd")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return "gswitchd"
}

func topoUp(args []string) int {
	fs := flags("up")
	var o topo.UpOptions
	fs.StringVar(&o.Gswitchd, "gswitchd", defaultGswitchd(), "gswitchd binary")
	fs.StringVar(&o.StateDir, "state", topo.DefaultStateDir, "state directory")
	fs.StringVar(&o.LogDir, "log", "", "directory for the switches' logs (default: the topology's state directory)")
	fs.DurationVar(&o.Wait, "wait", topo.DefaultWait, "how long to wait for every gswitchd to serve metrics")
	fs.BoolVar(&o.NoSwitches, "no-switches", false, "bring up hosts and links only; start no gswitchd")
	design := fs.String("design", "", "run the fabric under this design of the file (default: the file's defaults as written)")
	fs.StringVar(&o.Machine, "machine", "", "bring up this machine's part of a fabric over several machines")
	pos, err := parse(fs, args)
	if err != nil {
		return usageErr("up", err)
	}
	t, code := loadDesign("up", pos, 1, *design)
	if t == nil {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	r, err := topo.Up(ctx, t, o)
	if err != nil {
		return fail(err)
	}
	under := ""
	if t.Design != nil {
		under = ", design " + t.Design.Name
	}
	fmt.Printf("topology %s is up%s (mode %s%s) in %.1f s\n", t.Name, machineText(r.Machine), t.Mode, under, time.Since(start).Seconds())
	if t.Design == nil && len(t.Designs) > 0 {
		fmt.Printf("no -design: the file's defaults run as written (its designs: %s)\n", strings.Join(t.DesignNames(), ", "))
	}
	if r.TimescaleWhy != "" {
		fmt.Println(r.TimescaleWhy)
	}
	if !r.Timescale.One() {
		fmt.Printf("timescale %s: the switches run the file's rates / %s and its times x %s; give gsperf -timescale %s\n", r.Timescale, r.Timescale, r.Timescale, r.Timescale)
	}
	for _, s := range r.Switches {
		if o.NoSwitches {
			fmt.Printf("  switch %-10s not started (-no-switches); config %s\n", s.Name, s.Config)
			continue
		}
		fmt.Printf("  switch %-10s pid %-8d metrics http://%s/metrics  config %s  log %s\n", s.Name, s.PID, s.Metrics, s.Config, s.Log)
	}
	for _, h := range r.Hosts {
		gsperf := ""
		if ht, err := t.HostTransport(h.Name); err == nil && t.HasTransport() {
			gsperf = "  gsperf " + ht.String()
		}
		fmt.Printf("  host   %-10s netns %-14s %s %s%s\n", h.Name, h.Namespace, h.Interface, h.Addr, gsperf)
	}
	printTunnels(t, r.Machine)
	if r.Targets != "" {
		fmt.Printf("Prometheus file_sd targets: %s\n", r.Targets)
	}
	if len(r.Hosts) > 0 { // a machine of a fabric over several may hold switches alone
		fmt.Printf("run a command in a host:    gswitchctl topo exec %s %s -- ping -c 3 ADDR\n", pos[0], r.Hosts[0].Name)
		if t.HasTransport() {
			fmt.Printf("a host's gsperf flags:      gswitchctl topo transport %s %s\n", pos[0], r.Hosts[0].Name)
		}
	}
	fmt.Printf("take it down:               gswitchctl topo down %s%s\n", pos[0], machineFlag(r.Machine))
	return 0
}

func topoDown(args []string) int {
	fs := flags("down")
	var o topo.UpOptions
	fs.StringVar(&o.StateDir, "state", topo.DefaultStateDir, "state directory")
	// Accepted so that a script can give down what it gave up: the names
	// and sockets are the same under every design, so down goes on even
	// when the file no longer has the design.
	design := fs.String("design", "", "the design it was brought up under (changes nothing: down removes the same under every design)")
	fs.StringVar(&o.Machine, "machine", "", "take down this machine's part of a fabric over several machines")
	pos, err := parse(fs, args)
	if err != nil {
		return usageErr("down", err)
	}
	t, code := load("down", pos, 1)
	if t == nil {
		return code
	}
	if _, err := t.WithDesign(*design); err != nil {
		fmt.Fprintf(os.Stderr, "gswitchctl topo down: note: %s: %v; taking it down all the same\n", pos[0], err)
	}
	if err := topo.Down(t, o); err != nil {
		return fail(err)
	}
	removeStaleSockets(t, o)
	fmt.Printf("topology %s is down%s\n", t.Name, machineText(o.Machine))
	return 0
}

// removeStaleSockets removes the control sockets of the topology's switches
// that no gswitchd answers on any more: a gswitchd stopped by SIGTERM
// removes its own, one that had to be killed leaves it behind. Only
// sockets nobody answers on go (control.RemoveStale); anything else at
// those paths is reported and left.
func removeStaleSockets(t *topo.Topology, o topo.UpOptions) {
	p, err := t.PlanFor(o.Machine)
	if err != nil {
		return
	}
	for _, s := range p.Switches {
		c, err := config.Parse(s.Config)
		if err != nil || c.Control.Socket == "off" {
			continue
		}
		path := c.Control.Socket
		if path == "" {
			path = control.DefaultSocket(filepath.Join(o.Dir(t), s.Name+".yaml"))
		}
		if ok, err := control.RemoveStale(path); err != nil {
			fmt.Fprintf(os.Stderr, "gswitchctl topo down: switch %s: %v\n", s.Name, err)
		} else if ok {
			fmt.Printf("removed switch %s's stale control socket %s\n", s.Name, path)
		}
	}
}

func topoShow(args []string) int {
	fs := flags("show")
	configs := fs.Bool("configs", false, "also print each switch's gswitchd YAML")
	design := fs.String("design", "", "the plan under this design of the file (default: the file's defaults as written)")
	machine := fs.String("machine", "", "what this machine of a fabric over several machines holds")
	pos, err := parse(fs, args)
	if err != nil {
		return usageErr("show", err)
	}
	t, code := loadDesign("show", pos, 1, *design)
	if t == nil {
		return code
	}
	p, err := t.Plan()
	if *machine != "" {
		p, err = t.PlanFor(*machine)
	}
	if err != nil {
		return fail(err)
	}
	if err := p.WriteText(os.Stdout, *configs); err != nil {
		return fail(err)
	}
	return 0
}

func topoExec(args []string) int {
	var cmdArgs []string
	for i, a := range args {
		if a == "--" {
			args, cmdArgs = args[:i], args[i+1:]
			break
		}
	}
	if len(cmdArgs) == 0 {
		return usageErr("exec", errors.New("no command (write: gswitchctl topo exec FILE HOST -- CMD [ARGS...])"))
	}
	fs := flags("exec")
	var o topo.UpOptions
	fs.StringVar(&o.StateDir, "state", topo.DefaultStateDir, "state directory")
	pos, err := parse(fs, args)
	if err != nil {
		return usageErr("exec", err)
	}
	if len(pos) != 2 {
		return usageErr("exec", fmt.Errorf("want FILE HOST, got %d argument(s)", len(pos)))
	}
	t, err := topo.Load(pos[0])
	if err != nil {
		return fail(err)
	}
	o.Machine = t.MachineOf(pos[1]) // the host's part of a fabric over several machines
	if len(t.Machines) > 0 && o.Machine == "" {
		return fail(fmt.Errorf("%s: no host %q", pos[0], pos[1]))
	}
	r, err := topo.Attach(t, o)
	if err != nil {
		return fail(err)
	}
	if r.Host(pos[1]) == nil {
		return fail(fmt.Errorf("%s: no host %q", pos[0], pos[1]))
	}
	cmd := r.Exec(context.Background(), pos[1], cmdArgs[0], cmdArgs[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	signal.Ignore(os.Interrupt) // the command gets the terminal's SIGINT itself
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		return fail(err)
	}
	return 0
}

func topoTargets(args []string) int {
	fs := flags("targets")
	machine := fs.String("machine", "", "the targets of this machine's switches (a fabric over several machines)")
	pos, err := parse(fs, args)
	if err != nil {
		return usageErr("targets", err)
	}
	t, code := load("targets", pos, 1)
	if t == nil {
		return code
	}
	p, err := t.Plan()
	if *machine != "" {
		p, err = t.PlanFor(*machine)
	}
	if err != nil {
		return fail(err)
	}
	os.Stdout.Write(p.TargetsJSON())
	return 0
}
