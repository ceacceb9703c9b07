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
//	gsperf workloads
//
// Flows run over UDP with gsperf's own transport (perf/transport): plain
// (window-based with loss recovery) or pfabric (the host side of pFabric:
// remaining size as priority, BDP initial window, fixed small timeout,
// probe mode).
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	bfchost "github.com/gswitch/gswitch/perf/bfc"
	"github.com/gswitch/gswitch/perf/results"
	"github.com/gswitch/gswitch/perf/sfc"
	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/perf/udp"
	"github.com/gswitch/gswitch/perf/workload"
	"github.com/gswitch/gswitch/units"
	"github.com/gswitch/gswitch/wire"
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
	fmt.Fprintln(os.Stderr, "usage: gsperf server|client|merge|watch|plot|workloads [flags] (gsperf CMD -h for flags)")
	os.Exit(2)
}

func server(args []string) error {
	fs := flag.NewFlagSet("server", flag.ExitOnError)
	bind := fs.String("bind", ":5500", "UDP address to listen on, host:port: an IPv4 or IPv6 address (that family only), a host name with one address, or an empty host for every address")
	maxFlows := fs.Int("max-flows", udp.DefaultMaxFlows, "incomplete flows at once; the first segment of one more is dropped (the sender retries)")
	flowBuf := fs.String("flow-buffer", "8MiB", "out-of-order bytes one flow may hold; segments beyond are dropped (the sender retransmits)")
	totalBuf := fs.String("total-buffer", "256MiB", "out-of-order bytes all flows may hold together")
	idle := fs.Duration("idle-timeout", udp.DefaultIdleTimeout, "forget an incomplete flow after this long without a segment")
	report := fs.Duration("report", 10*time.Second, "print the counters to stderr this often when they changed (0: only at exit, to stdout)")
	mode := fs.String("mode", "plain", "plain (acknowledge what arrives) or xpass (also send each flow ExpressPass credits: -xp-* flags)")
	xp := addXPFlags(fs)
	fs.Parse(args)
	if *mode != "plain" && *mode != "xpass" {
		return fmt.Errorf("-mode: %q (the server runs plain or xpass; pfabric senders need a plain server)", *mode)
	}
	var xc udp.XPassConfig
	if *mode == "xpass" {
		var err error
		if xc, err = xp.config(); err != nil {
			return err
		}
	}
	cfg, err := serverConfig(*maxFlows, *flowBuf, *totalBuf, *idle)
	if err != nil {
		return err
	}
	if *report < 0 {
		return fmt.Errorf("-report: %v is negative (0 prints the counters only at exit)", *report)
	}
	conn, err := udp.Listen(*bind)
	if err != nil {
		return fmt.Errorf("-bind: %w", err)
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
	fmt.Fprintf(os.Stderr, "gsperf: serving on %s; at most %d incomplete flows, %d out-of-order bytes per flow, %d in all\n",
		where, cfg.MaxFlows, cfg.FlowPending, cfg.TotalPending)
	srv := udp.NewServer(cfg)
	if *mode == "xpass" {
		err := serveXPass(conn, srv, xc, stop, *report)
		conn.Close()
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
	return err
}

// serverConfig checks the server's limits.
func serverConfig(maxFlows int, flowBuf, totalBuf string, idle time.Duration) (udp.ServerConfig, error) {
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
	if idle <= 0 {
		return udp.ServerConfig{}, fmt.Errorf("-idle-timeout: %v (want a positive duration, e.g. 1m)", idle)
	}
	return udp.ServerConfig{MaxFlows: maxFlows, FlowPending: int64(fb), TotalPending: int64(tb), IdleTimeout: idle}, nil
}

func client(args []string) error {
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	to := fs.String("to", "", "comma-separated server addresses host:port; each flow picks one at random")
	src := fs.String("src", "", "this sender's name in the records (default: hostname)")
	wl := fs.String("workload", "WebSearch_distribution", "flow-size distribution: a name from `gsperf workloads` or a CDF file")
	size := fs.String("size", "", "fixed flow size instead of a workload, e.g. 64KB")
	flows := fs.Int("flows", 100, "number of flows")
	load := fs.Float64("load", 0.5, "offered load as a fraction of -rate")
	rate := fs.String("rate", "1Gbit", "bottleneck rate, for the load and the slowdown")
	arr := fs.String("arrivals", "poisson", "poisson, lognormal (sigma 2) or burst (all flows at once: incast)")
	seed := fs.Int64("seed", 1, "random seed: the same seed gives the same flows")
	mode := fs.String("mode", "plain", "transport: plain, pfabric, bfc (plain's loss recovery with BFC's host side: a queue id per flow in the header, pauses from the switch honoured, one BDP in flight; needs root), sfc (plain, starting with a BDP window, paused by SFC's back-to-sender frames on UDP port 19020) or xpass (one segment per ExpressPass credit; the server runs -mode xpass)")
	bfcf := addBFCFlags(fs)
	rtt := fs.Duration("base-rtt", 200*time.Microsecond, "base RTT for the slowdown (and pfabric's BDP window)")
	rto := fs.Duration("rto", 0, "retransmission timeout (default 10ms plain, 3 x base-rtt pfabric)")
	idBase := fs.Uint64("id-base", 0, "first flow id (give each sender its own range)")
	initWin := fs.String("init-window", "", "initial window, e.g. 64KB (default 10 segments plain, one BDP at -rate x -base-rtt pfabric)")
	timeout := fs.Duration("timeout", 60*time.Second, "give up on a flow this long after it starts")
	out := fs.String("out", "", "write the run as JSON here")
	csvOut := fs.String("csv", "", "write one line per flow as CSV here")
	pace := fs.String("pace", "", "this host's line rate, e.g. 200Mbit: its flows together send no faster, as through a NIC of that rate (default: unpaced)")
	paceBurst := fs.Int("pace-burst", udp.PaceBurst, "full segments a paced host may send back to back")
	at := fs.Int64("at", 0, "start the schedule at this wall-clock time, in ns since 1970 (as date +%s%N prints), so clients on several hosts start together (default: now)")
	timeline := fs.Duration("timeline", 0, "record each flow's progress at this step, e.g. 10ms (for plot -kind throughput)")
	fs.Parse(args)
	dsts := strings.Split(*to, ",")
	if *to == "" {
		return fmt.Errorf("-to: name at least one server")
	}
	if err := udp.ParseAddrs(dsts); err != nil {
		return err
	}
	rb, err := units.ParseRate(*rate)
	if err != nil || rb == 0 {
		return fmt.Errorf("-rate: %v", err)
	}
	var m transport.Mode
	var bfcHost *bfchost.Host
	sfcMode := *mode == "sfc"
	if *mode == "bfc" {
		if bfcHost, err = bfcf.start(); err != nil {
			return err
		}
		defer bfcHost.Close()
	} else if sfcMode {
		m = transport.Plain // the plain transport under SFC's pause
	} else if m, err = transport.ParseMode(*mode); err != nil {
		return err
	}
	var fixed uint64
	if *size != "" {
		if fixed, err = units.ParseSize(*size); err != nil || fixed == 0 {
			return fmt.Errorf("-size: %q is not a positive size", *size)
		}
	}
	if *src == "" {
		*src, _ = os.Hostname()
	}
	var iw uint64
	if *initWin != "" {
		if iw, err = units.ParseSize(*initWin); err != nil || iw == 0 {
			return fmt.Errorf("-init-window: %q is not a positive size", *initWin)
		}
	}
	var paceBits uint64
	if *paceBurst < 1 {
		return fmt.Errorf("-pace-burst: %d (at least one segment)", *paceBurst)
	}
	if *pace != "" {
		if paceBits, err = units.ParseRate(*pace); err != nil || paceBits == 0 {
			return fmt.Errorf("-pace: %q is not a positive rate", *pace)
		}
	}
	if *rto == 0 && m == transport.PFabric {
		*rto = 3 * *rtt
	}
	p := udp.Plan{Src: *src, Dsts: dsts, Workload: *wl, FixedSize: fixed, Flows: *flows, Load: *load, RateBits: float64(rb),
		Arrivals: *arr, Seed: *seed, Mode: m, BaseRTT: *rtt, RTO: *rto, FlowIDBase: *idBase, Timeout: *timeout, InitWindow: int(iw), Timeline: *timeline, Pace: float64(paceBits), PaceBurst: *paceBurst}
	var bts *sfc.Listener
	if sfcMode {
		if p.InitWindow == 0 { // SFC's senders start at line rate with a BDP window (section 2.1)
			p.InitWindow = max(udp.MSS, int(p.RateBits/8*p.BaseRTT.Seconds()))
		}
		if bts, err = sfc.Listen(fmt.Sprintf(":%d", wire.BTSPort)); err != nil {
			return fmt.Errorf("-mode sfc: %w", err)
		}
		defer bts.Close()
		p.FlowGate = sfcGate(bts)
	}
	if *at != 0 {
		p.StartAt = time.Unix(0, *at)
		if d := time.Until(p.StartAt); d < -time.Second || d > time.Hour {
			return fmt.Errorf("-at: %v is %v from now (want a time in the next hour, in ns since 1970)", p.StartAt, d.Round(time.Millisecond))
		}
	}
	if bfcHost != nil {
		bfcf.plan(bfcHost, &p)
	}
	last := time.Now()
	p.Progress = func(done, total int) {
		if time.Since(last) > 2*time.Second || done == total {
			fmt.Fprintf(os.Stderr, "gsperf %s: %d/%d flows done\n", *src, done, total)
			last = time.Now()
		}
	}
	recs, err := udp.Run(p)
	if err != nil {
		return err
	}
	if bts != nil {
		fmt.Fprintf(os.Stderr, "gsperf %s: sfc: %v\n", *src, bts.Stats())
	}
	run := &results.Run{Name: *src, Flows: recs, Params: map[string]string{"workload": *wl, "size": *size, "flows": fmt.Sprint(*flows),
		"load": fmt.Sprint(*load), "rate": *rate, "arrivals": *arr, "seed": fmt.Sprint(*seed), "mode": *mode, "base_rtt": rtt.String(), "pace": *pace}}
	if bfcHost != nil {
		bfcf.finish(bfcHost, *src, run.Params)
	}
	return finish(run, *out, *csvOut)
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
	for _, p := range fs.Args() {
		r, err := results.ReadJSON(p)
		if err != nil {
			return err
		}
		if all.Params == nil {
			all.Params = r.Params
		}
		all.Flows = append(all.Flows, r.Flows...)
	}
	return finish(all, *out, *csvOut)
}
