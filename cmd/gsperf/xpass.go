package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/gswitch/gswitch/perf/timescale"
	"github.com/gswitch/gswitch/perf/udp"
	"github.com/gswitch/gswitch/perf/xpass"
	"github.com/gswitch/gswitch/units"
)

// xpFlags are the server's ExpressPass flags (-mode xpass).
type xpFlags struct {
	link                               *string
	alpha, wInit, wMin, target, jitter *float64
	naive                              *bool
	dscp, nicQueue, nicBurst, ackEvery *int
	spin                               *time.Duration
	seed                               *int64
	trace                              *string
}

func addXPFlags(fs *flag.FlagSet) *xpFlags {
	d := xpass.DefaultParams(0)
	return &xpFlags{
		link:     fs.String("xp-link", "", "xpass: this host's link rate, e.g. 500Mbit: its credits are metered to 84/1622 of it (required with -mode xpass) (fabric rate)"),
		alpha:    fs.Float64("xp-alpha", d.Alpha, "xpass: a flow's first credit rate, as a fraction of the maximum"),
		wInit:    fs.Float64("xp-w-init", d.WInit, "xpass: the feedback loop's initial w"),
		wMin:     fs.Float64("xp-w-min", d.WMin, "xpass: the feedback loop's smallest w"),
		target:   fs.Float64("xp-target-loss", d.TargetLossScaling, "xpass: target credit loss = (1 - rate/max) x this"),
		jitter:   fs.Float64("xp-jitter", d.Jitter, "xpass: credit gaps x (1 + U[-j, +j]); 0 for the no-jitter ablation"),
		naive:    fs.Bool("xp-naive", false, "xpass: no feedback: every flow gets credits at the maximum rate (the paper's naive scheme)"),
		dscp:     fs.Int("xp-dscp", int(d.DSCP), "xpass: the credit class (DSCP of credits; the switches' credit_dscp)"),
		nicQueue: fs.Int("xp-nic-queue", d.NICQueue, "xpass: credits the host's NIC queue holds"),
		nicBurst: fs.Int("xp-nic-burst", d.NICBurst, "xpass: credits the host's NIC may send back to back"),
		ackEvery: fs.Int("xp-ack-every", 4, "xpass: acknowledge in-order progress every this many segments (holes and the end at once)"),
		spin:     fs.Duration("xp-spin", 20*time.Microsecond, "xpass: wait the last stretch before a credit is due by spinning (sleeps wake late) (wall time: this machine's)"),
		seed:     fs.Int64("xp-seed", 1, "xpass: seed of the credit jitter"),
		trace:    fs.String("xp-trace", "", "xpass: write a line per feedback update (loss, rate, w) to this file"),
	}
}

// config builds the server's ExpressPass side: the link rate and the
// host's timers on the wall clock (clock.go).
func (x *xpFlags) config(clock *clockFlags, t protocolTimers) (udp.XPassConfig, error) {
	if *x.link == "" {
		return udp.XPassConfig{}, fmt.Errorf("-xp-link: -mode xpass needs this host's link rate, e.g. -xp-link 500Mbit")
	}
	fabric, err := units.ParseRate(*x.link)
	if err != nil {
		return udp.XPassConfig{}, fmt.Errorf("-xp-link: %v", err)
	}
	rate := clock.wallBits(fabric)
	if !clock.Scale.One() && fabric >= 200e3 && rate < 200e3 {
		return udp.XPassConfig{}, fmt.Errorf("-xp-link: %s at timescale %v is %s on this machine, below the 200 kbit/s a host's credit meter takes (a smaller -timescale)",
			*x.link, clock.Scale, timescale.FormatRate(float64(rate)))
	}
	if *x.dscp < 0 || *x.dscp > 63 {
		return udp.XPassConfig{}, fmt.Errorf("-xp-dscp: %d out of range [0, 63]", *x.dscp)
	}
	if *x.ackEvery < 1 || *x.ackEvery > 64 {
		return udp.XPassConfig{}, fmt.Errorf("-xp-ack-every: %d out of range [1, 64]", *x.ackEvery)
	}
	if *x.spin < 0 || *x.spin > time.Millisecond {
		return udp.XPassConfig{}, fmt.Errorf("-xp-spin: %v out of range [0, 1ms]", *x.spin)
	}
	p := xpass.DefaultParams(rate)
	p.RetransmitTimeout, p.StopTimeout, p.IdleStop = t.XPRetransmit, t.XPStop, t.XPIdleStop
	p.Alpha, p.WInit, p.WMin, p.TargetLossScaling, p.Jitter = *x.alpha, *x.wInit, *x.wMin, *x.target, *x.jitter
	p.Naive, p.DSCP, p.NICQueue, p.NICBurst, p.MSS = *x.naive, uint8(*x.dscp), *x.nicQueue, *x.nicBurst, udp.MSS
	if err := p.Validate(); err != nil {
		return udp.XPassConfig{}, err
	}
	xc := udp.XPassConfig{Params: p, AckEvery: *x.ackEvery, Spin: *x.spin, Seed: *x.seed, Timescale: clock.Scale}
	if *x.trace != "" {
		f, err := os.Create(*x.trace)
		if err != nil {
			return udp.XPassConfig{}, fmt.Errorf("-xp-trace: %v", err)
		}
		xc.Trace = f // closed at exit
	}
	return xc, nil
}

// serveXPass runs the server in -mode xpass and prints both counters at exit.
func serveXPass(conn *net.UDPConn, srv *udp.Server, xc udp.XPassConfig, stop <-chan struct{}, every time.Duration) error {
	var last udp.XPassStats
	st, err := udp.ServeXPass(conn, srv, xc, stop, func(s udp.ServerStats, x udp.XPassStats) {
		if x.Host.Sent != last.Host.Sent || x.Host.Active != last.Host.Active {
			fmt.Fprintf(os.Stderr, "gsperf server so far: %v\n  %s\n", s, x.Format(xc.Timescale))
			last = x
		}
	}, every)
	fmt.Printf("gsperf server: %v\n", srv.Stats())
	fmt.Printf("gsperf server %s\n", st.Format(xc.Timescale))
	return err
}
