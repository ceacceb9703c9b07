// Command gsperf drives datacenter workloads through a switch and reports
// what the congestion-control papers report: per-flow completion times and
// slowdown per flow-size bucket.
//
//	gsperf server -bind 10.0.0.2:5500
//	gsperf client -to 10.0.0.2:5500,10.0.0.3:5500 -workload WebSearch_distribution \
//	       -flows 500 -load 0.5 -rate 200Mbit -mode plain -out h1.json
//	gsperf merge -out all.json h1.json h2.json ...
//	gsperf plot -out slowdown.png fifo.json drr.json pfabric.json
//	gsperf watch -metrics http://127.0.0.1:9100/metrics -duration 30s -out queues.json
//	gsperf plot -kind queue -out queues.png queues.json
//	gsperf fidelity -metrics sw1=http://127.0.0.1:9100/metrics -duration 10s
//	gsperf workloads
//
// Every command that sends, receives or samples takes -timescale K: its
// rate and time flags are in the fabric's units (a paper's 10 Gbit/s and
// 4 us), and run K times slower on this machine; reports give both clocks
// (clock.go lists every value and its clock). -fidelity URL judges the
// switches' own lateness over a run (package fidelity).
//
// Flows run over UDP with gsperf's own transport (perf/transport): plain
// (window-based with loss recovery), pfabric (the host side of pFabric:
// remaining size as priority, BDP initial window, fixed small timeout,
// probe mode), dctcp (plain, ECN-capable, with DCTCP's window: every
// server echoes CE marks), hpcc (plain's loss recovery with HPCC's
// window and rate from in-band telemetry: every server echoes the INT
// option of a segment in its ack) or dcqcn (ECN-capable, at DCQCN's rate,
// cut on the CNPs a server in -mode dcqcn sends for CE-marked data).
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gswitch/gswitch/perf/results"
	"github.com/gswitch/gswitch/perf/timescale"
	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/perf/udp"
	"github.com/gswitch/gswitch/perf/workload"
	"github.com/gswitch/gswitch/units"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "server":
		err = server(os.Args[2:])
	case "client":
		err = client(os.Args[2:])
	case "merge":
		err = merge(os.Args[2:])
	case "watch":
		err = watch(os.Args[2:])
	case "plot":
		err = plotCmd(os.Args[2:])
	case "fidelity":
		err = fidelityCmd(os.Args[2:])
	case "workloads":
		for _, n := range workload.Builtin() {
			c, _ := workload.Open(n)
			fmt.Printf("%-26s mean %10.0f B\n", n, c.Mean())
		}
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gsperf:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: gsperf server|client|merge|watch|plot|fidelity|workloads [flags] (gsperf CMD -h for flags)")
	os.Exit(2)
}

func server(args []string) error {
	fs := flag.NewFlagSet("server", flag.ExitOnError)
	bind := fs.String("bind", ":5500", "UDP address to listen on, host:port: an IPv4 or IPv6 address (that family only), a host name with one address, or an empty host for every address")
	maxFlows := fs.Int("max-flows", udp.DefaultMaxFlows, "incomplete flows at once; the first segment of one more is dropped (the sender retries)")
	flowBuf := fs.String("flow-buffer", "8MiB", "out-of-order bytes one flow may hold; segments beyond are dropped (the sender retransmits)")
	totalBuf := fs.String("total-buffer", "256MiB", "out-of-order bytes all flows may hold together")
	clock := addClock(fs)
	idle := clock.duration("idle-timeout", udp.DefaultIdleTimeout, "forget an incomplete flow after this long without a segment")
	report := fs.Duration("report", 10*time.Second, "print the counters to stderr this often when they changed (0: only at exit, to stdout) (wall time)")
	mode := fs.String("mode", "plain", "plain (acknowledge what arrives, echoing CE marks and INT options: what pfabric, dctcp and hpcc senders need; dctcp and hpcc are names for it), dcqcn (plain, and DCQCN's notification point: a CNP to a flow's sender when its data arrive CE-marked, at most one per 50us of fabric time per flow) or xpass (also send each flow ExpressPass credits: -xp-* flags)")
	xp := addXPFlags(fs)
	fid := addFidelityFlags(fs)
	fs.Parse(args)
	if err := clock.resolve(); err != nil {
		return err
	}
	timers := timersAt(clock.Scale)
	cnps := false
	switch *mode {
	case "plain", "xpass":
	case "dctcp", "hpcc":
		*mode = "plain" // a plain server echoes the marks DCTCP's senders need and the INT HPCC's read
	case "dcqcn":
		*mode, cnps = "plain", true // a plain server that also sends CNPs
	default:
		return fmt.Errorf("-mode: %q (the server runs plain, dcqcn or xpass; pfabric, dctcp and hpcc senders need a plain server, dcqcn senders a dcqcn one)", *mode)
	}
	var xc udp.XPassConfig
	if *mode == "xpass" {
		var err error
		if xc, err = xp.config(clock, timers); err != nil {
			return err
		}
	}
	cfg, err := serverConfig(*maxFlows, *flowBuf, *totalBuf, idle)
	if err != nil {
		return err
	}
	cfg.Linger = timers.Linger
	if cnps {
		cfg.CNPInterval = timers.CNP
	}
	if *report < 0 {
		return fmt.Errorf("-report: %v is negative (0 prints the counters only at exit)", *report)
	}
	fr, err := fid.start()
	if err != nil {
		return err
	}
	conn, err := udp.Listen(*bind)
	if err != nil {
		return fmt.Errorf("-bind: %w", err)
	}
	if err := fr.begin(); err != nil {
		conn.Close()
		return err
	}
	conn.SetReadBuffer(8 << 20)
	stop := make(chan struct{})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() { <-sig; close(stop) }()
	where := conn.LocalAddr().String()
	if host, _, _ := net.SplitHostPort(*bind); host == "" {
		where += " (every address, IPv4 and IPv6)"
	}
	at := ""
	if !clock.Scale.One() {
		at = fmt.Sprintf("; timescale %v", clock.Scale)
	}
	if cnps {
		at += fmt.Sprintf("; dcqcn: a CNP per flow at most every %v", time.Duration(transport.DefaultCNPInterval))
	}
	fmt.Fprintf(os.Stderr, "gsperf: serving on %s; at most %d incomplete flows, %d out-of-order bytes per flow, %d in all%s\n",
		where, cfg.MaxFlows, cfg.FlowPending, cfg.TotalPending, at)
	srv := udp.NewServer(cfg)
	if *mode == "xpass" {
		err := serveXPass(conn, srv, xc, stop, *report)
		conn.Close()
		fr.report(os.Stdout)
		return err
	}
	var last udp.ServerStats
	err = srv.Serve(conn, stop, func(st udp.ServerStats) {
		if st != last {
			fmt.Fprintf(os.Stderr, "gsperf server so far: %v\n", st)
			last = st
		}
	}, *report)
	conn.Close()
	fmt.Printf("gsperf server: %v\n", srv.Stats())
	fr.report(os.Stdout)
	return err
}

// serverConfig checks the server's limits; idle is -idle-timeout.
func serverConfig(maxFlows int, flowBuf, totalBuf string, idle *fabricDuration) (udp.ServerConfig, error) {
	const most = 1 << 40
	if maxFlows < 1 {
		return udp.ServerConfig{}, fmt.Errorf("-max-flows: %d (at least 1)", maxFlows)
	}
	fb, err := units.ParseSize(flowBuf)
	if err != nil || fb < 64<<10 || fb > most {
		return udp.ServerConfig{}, fmt.Errorf("-flow-buffer: %q (want a size from 64KiB to 1TiB, e.g. 8MiB: a window of out-of-order segments)", flowBuf)
	}
	tb, err := units.ParseSize(totalBuf)
	if err != nil || tb < fb || tb > most {
		return udp.ServerConfig{}, fmt.Errorf("-total-buffer: %q (want a size from -flow-buffer (%d bytes) to 1TiB, e.g. 256MiB)", totalBuf, fb)
	}
	if idle.Fabric <= 0 {
		return udp.ServerConfig{}, fmt.Errorf("-idle-timeout: %v (want a positive duration, e.g. 1m)", idle.Fabric)
	}
	return udp.ServerConfig{MaxFlows: maxFlows, FlowPending: int64(fb), TotalPending: int64(tb), IdleTimeout: idle.Wall}, nil
}

func finish(run *results.Run, out, csvOut string) error {
	run.Summarize()
	run.Table(os.Stdout)
	if out != "" {
		if err := run.WriteJSON(out); err != nil {
			return err
		}
	}
	if csvOut != "" {
		f, err := os.Create(csvOut)
		if err != nil {
			return err
		}
		defer f.Close()
		return run.WriteCSV(f)
	}
	return nil
}

func merge(args []string) error {
	fs := flag.NewFlagSet("merge", flag.ExitOnError)
	out := fs.String("out", "", "merged JSON")
	csvOut := fs.String("csv", "", "merged CSV")
	name := fs.String("name", "", "name of the merged run")
	fs.Parse(args)
	all := &results.Run{Name: *name}
	var sc timescale.Scale
	for i, p := range fs.Args() {
		r, err := results.ReadJSON(p)
		if err != nil {
			return err
		}
		k, err := r.Timescale()
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if i == 0 {
			sc = k
		} else if k != sc {
			return fmt.Errorf("%s: timescale %v, but %s ran at %v: merge runs of one timescale", p, k, fs.Arg(0), sc)
		}
		if all.Params == nil {
			all.Params = r.Params
		}
		all.Flows = append(all.Flows, r.Flows...)
		// One verdict for the merged run: the first INVALID one, else the first.
		if f := r.Fidelity; f != nil && (all.Fidelity == nil || (all.Fidelity.Valid && !f.Valid)) {
			all.Fidelity = f
		}
	}
	all.SetTimescale(sc) // also fills the fabric fields of records written before they existed
	return finish(all, *out, *csvOut)
}
