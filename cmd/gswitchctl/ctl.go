package main

// The subcommands that talk to a running gswitchd over its control socket
// (package control): ports, queues, mac, routes, neighbors, flows, top,
// fidelity, set, reload, capture, health, info; and completion. Each lives in its
// own file; this one holds what they share.

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gswitch/gswitch/control"
)

// ctlCommands are added to main's command list.
var ctlCommands = []command{
	{"info", "what the switch is: id, workers, ports, mechanisms, uptime", infoMain},
	{"health", "is the switch forwarding (exit 0 ok, 1 degraded, 2 not answering)", healthMain},
	{"ports", "ports: state, role, rate, scheduler, MAC, counters", portsMain},
	{"queues", "egress queues of a port (or all): depth, paused, drops, scheduler and mechanism state", queuesMain},
	{"mac", "the MAC learning table", macMain},
	{"routes", "the routing table of an L3 switch", routesMain},
	{"neighbors", "the neighbour (ARP) cache of an L3 switch", neighborsMain},
	{"flows", "what the mechanisms report: their state per port and the flows they know", flowsMain},
	{"top", "live per-port rates, drops and queues, refreshing", topMain},
	{"fidelity", "how late the workers ran and the line time ports lost; VALID or INVALID (exit 0 or 1)", fidelityMain},
	{"set", "change a port's rate, burst, quantum or pause a queue while the switch runs", setMain},
	{"reload", "re-read the config file and apply what may change while the switch runs", reloadMain},
	{"capture", "capture a port's frames to pcapng or the terminal (gswitchctl capture -h)", captureMain},
	{"completion", "print the bash completion script (source <(gswitchctl completion bash))", completionMain},
}

func init() { commands = append(commands, ctlCommands...) }

// ctlFlags are the flags every control subcommand takes.
type ctlFlags struct {
	fs      *flag.FlagSet
	socket  *string
	output  *string
	timeout *time.Duration
}

func newCtlFlags(name, usage string) *ctlFlags {
	fs := flag.NewFlagSet("gswitchctl "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := &ctlFlags{fs: fs,
		socket:  fs.String("s", "", "the switch: a control socket path, or NAME for "+control.SocketDir+"/NAME.sock (default: $GSWITCH_SOCKET, or the only socket there)"),
		output:  fs.String("o", "table", "output: table (for people) or json (for scripts)"),
		timeout: fs.Duration("timeout", 5*time.Second, "how long to wait for gswitchd"),
	}
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: gswitchctl %s\n\nflags:\n", usage)
		fs.SetOutput(os.Stderr)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return f
}

// parse reads flags anywhere among the arguments (gswitchctl queues p1 -o
// json); "--" ends the flags. It returns the positional arguments, or an
// exit code (help: 0, a bad flag: 2).
func (f *ctlFlags) parse(args []string) ([]string, int, bool) {
	var pos []string
	for {
		if err := f.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				f.fs.Usage()
				return nil, 0, false
			}
			fmt.Fprintf(os.Stderr, "gswitchctl %s: %v\n", f.fs.Name()[len("gswitchctl "):], err)
			f.fs.Usage()
			return nil, 2, false
		}
		if f.fs.NArg() == 0 {
			break
		}
		rest := f.fs.Args()
		// flag stops at "--" and drops it: everything after is positional.
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if *f.output != "table" && *f.output != "json" {
		fmt.Fprintf(os.Stderr, "gswitchctl: -o %s: write table or json\n", *f.output)
		return nil, 2, false
	}
	return pos, 0, true
}

func (f *ctlFlags) json() bool { return *f.output == "json" }

// dial connects to the switch the flags name.
func (f *ctlFlags) dial() (*control.Client, error) {
	path, err := control.Resolve(*f.socket)
	if err != nil {
		return nil, err
	}
	return control.Dial(path, *f.timeout)
}

// call runs one request and prints its result: the JSON as gswitchd sent
// it with -o json, else through table.
func (f *ctlFlags) call(req control.Request, out any, table func()) int {
	cl, err := f.dial()
	if err != nil {
		return fail(err)
	}
	defer cl.Close()
	raw, err := cl.Raw(req)
	if err != nil {
		return fail(err)
	}
	if f.json() {
		printJSON(raw)
		return 0
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fail(err)
	}
	table()
	return 0
}

func printJSON(raw []byte) {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		b.Reset()
		b.Write(raw)
	}
	b.WriteByte('\n')
	os.Stdout.Write(b.Bytes())
}

// table prints rows aligned in columns.
type table struct{ w *tabwriter.Writer }

func newTable(header ...string) *table {
	t := &table{w: tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', 0)}
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

func (t *table) row(cols ...string) { fmt.Fprintln(t.w, strings.Join(cols, "\t")) }
func (t *table) flush()             { t.w.Flush() }

// rate formats bit/s for people.
func rate(bits float64) string {
	switch {
	case bits >= 1e9:
		return strconv.FormatFloat(bits/1e9, 'f', 2, 64) + "G"
	case bits >= 1e6:
		return strconv.FormatFloat(bits/1e6, 'f', 1, 64) + "M"
	case bits >= 1e3:
		return strconv.FormatFloat(bits/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(bits, 'f', 0, 64)
}

// lineRate formats a configured rate.
func lineRate(bits uint64) string {
	if bits == 0 {
		return "unlimited"
	}
	return rate(float64(bits)) + "bit"
}

// count formats a counter for people (k, M, G).
func count(n uint64) string {
	switch {
	case n >= 10e9:
		return strconv.FormatUint(n/1e9, 10) + "G"
	case n >= 10e6:
		return strconv.FormatUint(n/1e6, 10) + "M"
	case n >= 100e3:
		return strconv.FormatUint(n/1e3, 10) + "k"
	}
	return strconv.FormatUint(n, 10)
}

func upDown(up bool) string {
	if up {
		return "up"
	}
	return "DOWN"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// kv formats a mechanism's state map as key=value pairs, sorted.
func kv(m map[string]any) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		b, _ := json.Marshal(m[k])
		parts = append(parts, k+"="+string(b))
	}
	return strings.Join(parts, " ")
}

// wantArgs checks the number of positional arguments.
func wantArgs(f *ctlFlags, pos []string, min, max int) bool {
	if len(pos) < min || len(pos) > max {
		fmt.Fprintf(os.Stderr, "gswitchctl %s: %d argument(s) given\n", f.fs.Name()[len("gswitchctl "):], len(pos))
		f.fs.Usage()
		return false
	}
	return true
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func printJSONValue(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fail(err)
		return
	}
	printJSON(b)
}

func sortStrings(s []string) { sort.Strings(s) }
