package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	bfchost "github.com/gswitch/gswitch/perf/bfc"
	pfchost "github.com/gswitch/gswitch/perf/pfc"
	"github.com/gswitch/gswitch/perf/results"
	"github.com/gswitch/gswitch/perf/sfc"
	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/perf/udp"
	"github.com/gswitch/gswitch/units"
	"github.com/gswitch/gswitch/wire"
)

// clientSetup is a client's flags made into a plan: every time and rate
// in it on the wall clock, nothing opened yet.
type clientSetup struct {
	plan       udp.Plan
	clock      *clockFlags
	timers     protocolTimers
	mode       string
	bfc        *bfcFlags      // -mode bfc only
	pfc        *pfchost.Host  // -pfc only: made, not listening yet
	pfcConfig  pfchost.Config // what it was made with
	fid        *fidelityRun
	maxPause   time.Duration     // -mode sfc: the longest pause a BTS may set (wall)
	dcqcnLink  uint64            // -mode dcqcn: the hosts' line rate (fabric bit/s)
	params     map[string]string // the flags as given (the fabric's units)
	out, csv   string
	sfc, isBFC bool
}

func parseClient(args []string) (*clientSetup, error) {
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	clock := addClock(fs)
	to := fs.String("to", "", "comma-separated server addresses host:port; each flow picks one at random")
	src := fs.String("src", "", "this sender's name in the records (default: hostname)")
	wl := fs.String("workload", "WebSearch_distribution", "flow-size distribution: a name from `gsperf workloads` or a CDF file")
	size := fs.String("size", "", "fixed flow size instead of a workload, e.g. 64KB")
	flows := fs.Int("flows", 100, "number of flows")
	load := fs.Float64("load", 0.5, "offered load as a fraction of -rate")
	rate := fs.String("rate", "1Gbit", "bottleneck rate, for the load and the slowdown (fabric rate)")
	arr := fs.String("arrivals", "poisson", "poisson, lognormal (sigma 2) or burst (all flows at once: incast)")
	seed := fs.Int64("seed", 1, "random seed: the same seed gives the same flows")
	mode := fs.String("mode", "plain", "transport: plain, pfabric, bfc (plain's loss recovery with BFC's host side: a queue id per flow in the header, pauses from the switch honoured, one BDP in flight; needs root), sfc (plain, starting with a BDP window, paused by SFC's back-to-sender frames on UDP port 19020), xpass (one segment per ExpressPass credit; the server runs -mode xpass), dctcp (plain with DCTCP's window: datagrams sent ECN-capable, the window cut by the fraction of them the switches mark CE; any plain server echoes the marks), hpcc (plain's loss recovery with HPCC's window and rate, from the INT records the switches' int ports write into each data segment's reserved slots (-int-hops) and any plain server echoes: W_init = -pace (else -rate) x -base-rtt, T = -base-rtt, -init-window does not apply; -hpcc-* flags) or dcqcn (DCQCN's rate: datagrams sent ECN-capable, starting at the line rate (-pace, else -rate), cut on each CNP the server sends for CE-marked data, raised again by a timer and a byte counter: -dcqcn-* flags; plain's loss recovery in a fixed window; the server runs -mode dcqcn)")
	dctcpG := fs.Float64("dctcp-g", transport.DefaultDCTCPG, "dctcp: the gain g of the estimate of the marked fraction, alpha = (1-g) alpha + g F once per window (the paper's 1/16)")
	hpccf := addHPCCFlags(fs)
	dcqcnf := addDCQCNFlags(fs, clock)
	bfcf := addBFCFlags(fs, clock)
	pfcf := addPFCFlags(fs)
	rtt := clock.duration("base-rtt", 200*time.Microsecond, "base RTT for the slowdown (and pfabric's BDP window)")
	maxPause := clock.duration("max-pause", 0, "sfc: the longest pause a BTS may put a flow under; longer ones are cut to it and counted (0: 256 x -base-rtt, the switches' max_pause rule)")
	rto := clock.duration("rto", 0, "retransmission timeout (default 10ms plain, 3 x base-rtt pfabric)")
	idBase := fs.Uint64("id-base", 0, "first flow id (give each sender its own range)")
	initWin := fs.String("init-window", "", "initial window, e.g. 64KB (default 10 segments plain, one BDP at -rate x -base-rtt pfabric)")
	timeout := clock.duration("timeout", 60*time.Second, "give up on a flow this long after it starts")
	out := fs.String("out", "", "write the run as JSON here")
	csvOut := fs.String("csv", "", "write one line per flow as CSV here")
	pace := fs.String("pace", "", "this host's line rate, e.g. 200Mbit: its flows together send no faster, as through a NIC of that rate (default: unpaced) (fabric rate)")
	paceBurst := fs.Int("pace-burst", udp.PaceBurst, "full segments a paced host may send back to back (also the burst of dcqcn's and hpcc's rate limiters)")
	at := fs.Int64("at", 0, "start the schedule at this wall-clock time, in ns since 1970 (as date +%s%N prints), so clients on several hosts start together (default: now)")
	timeline := clock.duration("timeline", 0, "record each flow's progress at this step, e.g. 10ms (for plot -kind throughput)")
	fid := addFidelityFlags(fs)
	fs.Parse(args)
	if err := clock.resolve(); err != nil {
		return nil, err
	}
	c := &clientSetup{clock: clock, timers: timersAt(clock.Scale), mode: *mode, out: *out, csv: *csvOut, sfc: *mode == "sfc", isBFC: *mode == "bfc"}
	dsts := strings.Split(*to, ",")
	if *to == "" {
		return nil, fmt.Errorf("-to: name at least one server")
	}
	if err := udp.ParseAddrs(dsts); err != nil {
		return nil, err
	}
	rb, err := units.ParseRate(*rate)
	if err != nil || rb == 0 {
		return nil, fmt.Errorf("-rate: %v", err)
	}
	if c.fid, err = fid.start(); err != nil {
		return nil, err
	}
	var m transport.Mode
	if c.isBFC {
		c.bfc = bfcf
	} else if !c.sfc { // sfc runs the plain transport under SFC's pause
		if m, err = transport.ParseMode(*mode); err != nil {
			return nil, err
		}
	}
	if !(*dctcpG > 0 && *dctcpG <= 1) {
		return nil, fmt.Errorf("-dctcp-g: %v (want a gain above 0 and at most 1; DCTCP uses 1/16 = %v)", *dctcpG, transport.DefaultDCTCPG)
	}
	if err := dcqcnf.check(); err != nil {
		return nil, err
	}
	var fixed uint64
	if *size != "" {
		if fixed, err = units.ParseSize(*size); err != nil || fixed == 0 {
			return nil, fmt.Errorf("-size: %q is not a positive size", *size)
		}
	}
	if *src == "" {
		*src, _ = os.Hostname()
	}
	var iw uint64
	if *initWin != "" {
		if iw, err = units.ParseSize(*initWin); err != nil || iw == 0 {
			return nil, fmt.Errorf("-init-window: %q is not a positive size", *initWin)
		}
	}
	if maxPause.Fabric < 0 {
		return nil, fmt.Errorf("-max-pause: %v is negative (0: 256 x -base-rtt)", maxPause.Fabric)
	}
	c.maxPause = maxPause.Wall
	if c.maxPause == 0 {
		c.maxPause = sfc.MaxPauseRTTs * rtt.Wall
	}
	var paceBits uint64
	if *paceBurst < 1 {
		return nil, fmt.Errorf("-pace-burst: %d (at least one segment)", *paceBurst)
	}
	if *pace != "" {
		if paceBits, err = units.ParseRate(*pace); err != nil || paceBits == 0 {
			return nil, fmt.Errorf("-pace: %q is not a positive rate", *pace)
		}
	}
	// A PFC quantum is 512 bit times at the host's link rate: its NIC's
	// (-pace) if given, else the bottleneck's (-rate), on this machine.
	link := rb
	if paceBits != 0 {
		link = paceBits
	}
	if c.pfc, c.pfcConfig, err = pfcf.host(*mode, clock.wallBits(link)); err != nil {
		return nil, err
	}
	var hpccConfig transport.HPCCConfig
	var hpccParams map[string]string
	if m == transport.HPCC { // W_init is the host's line (as PFC's quanta) x T, on this machine's clock
		if hpccConfig, hpccParams, err = hpccf.config(float64(clock.wallBits(link)), rtt.Wall.Nanoseconds()); err != nil {
			return nil, err
		}
	}
	// From here on every time and rate is on the wall clock.
	t := c.timers
	p := udp.Plan{Src: *src, Dsts: dsts, Workload: *wl, FixedSize: fixed, Flows: *flows, Load: *load, RateBits: float64(clock.wallBits(rb)),
		Arrivals: *arr, Seed: *seed, Mode: m, BaseRTT: rtt.Wall, RTO: rto.Wall, MaxRTO: t.MaxRTO, FlowIDBase: *idBase, Timeout: timeout.Wall,
		InitWindow: int(iw), Timeline: timeline.Wall, Pace: float64(clock.wallBits(paceBits)), PaceBurst: *paceBurst,
		XPSender: t.XPSender, XPLinger: t.XPLinger, DCTCPG: *dctcpG, HPCC: hpccConfig}
	switch {
	case rto.Fabric != 0:
	case m == transport.PFabric:
		p.RTO = 3 * p.BaseRTT
	case c.isBFC:
		// A paused flow's segments wait in the switches, and a timer that
		// fires on them sends the whole window again: 10 base RTTs, at
		// least 10 ms of fabric time.
		p.RTO = max(t.BFCMinRTO, 10*p.BaseRTT)
	default:
		p.RTO = t.RTO // plain and sfc; xpass has its own timers
	}
	if (c.sfc || c.isBFC) && p.InitWindow == 0 {
		// SFC's senders start at line rate with a BDP window (section 2.1);
		// BFC's NIC caps a flow at one BDP (App. A.8).
		p.InitWindow = max(udp.MSS, int(p.RateBits/8*p.BaseRTT.Seconds()))
	}
	if *at != 0 {
		p.StartAt = time.Unix(0, *at)
		if d := time.Until(p.StartAt); d < -time.Second || d > time.Hour {
			return nil, fmt.Errorf("-at: %v is %v from now (want a time in the next hour, in ns since 1970)", p.StartAt, d.Round(time.Millisecond))
		}
	}
	c.plan = p
	c.params = map[string]string{"workload": *wl, "size": *size, "flows": fmt.Sprint(*flows), "load": fmt.Sprint(*load), "rate": *rate,
		"arrivals": *arr, "seed": fmt.Sprint(*seed), "mode": *mode, "base_rtt": rtt.Fabric.String(), "pace": *pace}
	if c.sfc {
		c.params["max_pause"] = c.clock.Scale.Fabric(c.maxPause).String()
	}
	if m == transport.DCTCP {
		c.params["dctcp_g"] = fmt.Sprint(*dctcpG)
	}
	for k, v := range hpccParams {
		c.params[k] = v
	}
	if m == transport.DCQCN {
		c.dcqcnLink = link
		dcqcnf.apply(c, link)
	}
	if c.pfc != nil {
		c.params["pfc"] = "true"
		c.params["pfc_priority"] = fmt.Sprint(*pfcf.priority)
	}
	return c, nil
}

func client(args []string) error {
	c, err := parseClient(args)
	if err != nil {
		return err
	}
	p := c.plan
	var bfcHost *bfchost.Host
	if c.isBFC {
		if bfcHost, err = c.bfc.start(c.timers); err != nil {
			return err
		}
		defer bfcHost.Close()
		p.FlowHook = bfcHost.FlowHook
	}
	if c.pfc != nil {
		if err := c.pfc.Listen(); err != nil {
			return fmt.Errorf("-pfc: %w", err)
		}
		defer c.pfc.Close()
		// The mode's hook (bfc's) asks its gate first, then PFC's, then
		// the pacer.
		p.FlowHook = chainHooks(p.FlowHook, c.pfc.FlowHook)
	}
	var bts *sfc.Listener
	if c.sfc {
		if bts, err = sfc.Listen(fmt.Sprintf(":%d", wire.BTSPort), sfc.MaxPause(c.maxPause)); err != nil {
			return fmt.Errorf("-mode sfc: %w", err)
		}
		defer bts.Close()
		p.FlowGate = sfcGate(bts)
	}
	var mu sync.Mutex // flows end on goroutines of their own
	last := time.Now()
	p.Progress = func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) > 2*time.Second || done == total {
			fmt.Fprintf(os.Stderr, "gsperf %s: %d/%d flows done\n", p.Src, done, total)
			last = time.Now()
		}
	}
	if c.fid != nil {
		if d := time.Until(p.StartAt) - fidelityLead; !p.StartAt.IsZero() && d > 0 {
			time.Sleep(d)
		}
		if err := c.fid.begin(); err != nil {
			return err
		}
	}
	recs, err := udp.Run(p)
	if err != nil {
		return err
	}
	run := &results.Run{Name: p.Src, Flows: recs, Params: c.params}
	if bts != nil {
		st := bts.Stats()
		fmt.Fprintf(os.Stderr, "gsperf %s: sfc: %v\n", p.Src, st)
		run.Params["sfc_bts_received"] = fmt.Sprint(st.Received)
		run.Params["sfc_bts_applied"] = fmt.Sprint(st.Paused)
		run.Params["sfc_bts_capped"] = fmt.Sprint(st.Capped)
		run.Params["sfc_bts_refused"] = fmt.Sprint(st.Refused())
	}
	run.SetTimescale(c.clock.Scale)
	if bfcHost != nil {
		c.bfc.finish(bfcHost, p.Src, run.Params)
	}
	if c.pfc != nil {
		pfcFinish(c.pfc, c.clock.Scale, p.Src, run.Params)
	}
	if c.mode == "xpass" {
		var refused uint64
		for _, r := range recs {
			refused += r.Mech["refused"]
		}
		run.Params["xpass_refused"] = fmt.Sprint(refused)
		if refused > 0 {
			fmt.Fprintf(os.Stderr, "gsperf %s: xpass: %d GC messages from the receivers that were not credits, refused\n", p.Src, refused)
		}
	}
	if c.mode == "dctcp" {
		var ece, cuts uint64
		for _, r := range recs {
			ece += r.Mech["ece_acks"]
			cuts += r.Mech["reductions"]
		}
		run.Params["dctcp_ece_acks"] = fmt.Sprint(ece)
		run.Params["dctcp_reductions"] = fmt.Sprint(cuts)
		fmt.Fprintf(os.Stderr, "gsperf %s: dctcp: %d acks echoed a CE mark, %d window cuts\n", p.Src, ece, cuts)
	}
	if c.mode == "hpcc" {
		hpccFinish(recs, p.Src, run.Params, os.Stderr)
	}
	if c.mode == "dcqcn" {
		dcqcnFinish(p.Src, c.dcqcnLink, recs, run.Params)
	}
	run.Fidelity = c.fid.end()
	return finish(run, c.out, c.csv)
}
