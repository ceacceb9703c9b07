package main

import (
	"flag"
	"fmt"
	"time"

	bfchost "github.com/gswitch/gswitch/perf/bfc"
	"github.com/gswitch/gswitch/perf/timescale"
	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/perf/udp"
	"github.com/gswitch/gswitch/perf/xpass"
)

// Every time and rate gsperf uses, and its clock. Fabric values are given
// (flags) or built in (protocol timers) in the fabric's units and run on
// this machine multiplied (times) or divided (rates) by -timescale K;
// wall values are properties of this machine and are used as they are.
//
//	value                                      clock   default
//	client -rate                               fabric  1Gbit (load, slowdown's ideal time)
//	client -pace                               fabric  unpaced (the host's NIC)
//	client -base-rtt                           fabric  200us (slowdown, BDP windows; hpcc: T)
//	client -rto                                fabric  plain 10ms, pfabric 3 x base-rtt, bfc max(10ms, 10 x base-rtt)
//	client -timeout                            fabric  60s
//	client -timeline                           fabric  off
//	client -bfc-watchdog                       fabric  200ms
//	client -max-pause                          fabric  256 x -base-rtt (sfc: the longest pause a BTS sets)
//	client -dcqcn-rai, -dcqcn-rhai             fabric  40Mbit, 400Mbit (dcqcn's increase steps)
//	client -dcqcn-timer                        fabric  55us (dcqcn's rate-increase timer)
//	client -at                                 wall    an instant (ns since 1970): process start-up
//	server -idle-timeout                       fabric  1m
//	server -xp-link                            fabric  required
//	server -report                             wall    10s (a progress print)
//	server -xp-spin                            wall    20us (spin before a due credit)
//	watch -interval, -duration                 fabric  50ms, 30s
//	fidelity -duration                         wall    (the machine is what it judges)
//	plain RTO floor and backoff cap            fabric  10ms, 1s (transport.DefaultRTO, DefaultMaxRTO)
//	dcqcn alpha timer, floor of the rate       fabric  55us, 100Mbit (transport.DefaultDCQCNAlphaTimer, MinRate)
//	server -mode dcqcn: CNP interval per flow  fabric  50us (transport.DefaultCNPInterval)
//	pfabric probe interval                     fabric  the RTO
//	bfc RTO floor                              fabric  10ms
//	bfc host: paused flow looks again          fabric  2ms (bfc.DefaultPoll)
//	bfc host: listener read timeout            wall    1ms (how late the watchdog looks)
//	xpass sender: request retry, its cap       fabric  100us doubling to 10ms
//	xpass sender: StopTimeout, MinRTO          fabric  2ms, 10ms
//	xpass sender: CreditTimeout                fabric  10ms
//	xpass sender: stop states linger           fabric  50ms (udp.DefaultXPLinger)
//	xpass host: RetransmitTimeout, StopTimeout fabric  100us, 2ms
//	xpass host: IdleStop                       fabric  100ms (or 50 measured RTTs)
//	xpass host: RTT samples kept below         wall    10s (a sanity bound on the echoed µs serial)
//	xpass host: sweep, wait cap                wall    100ms, 200ms (loop bounds)
//	server: completed flows remembered         fabric  30s (udp.DefaultLinger: outlives a retransmission)
//	server: sweep, read deadline               wall    min(5s, limits/4), 200ms (loop bounds)
//	client: progress print, flow wait caps     wall    2s; 50ms, 10ms raw ppoll (loop bounds)
//	client -fidelity: first snapshot lead      wall    250ms before -at
//	SFC pause in a BTS frame                   wall    as the switch computed it: from its wall rates, so
//	                                                   already the fabric's pause x K; applied as it comes,
//	                                                   cut to -max-pause x K
//	-pfc: pause in a PFC frame                 wall    quanta x 512 bit times at the host's link rate on this
//	                                                   machine (-pace, else -rate, / K): the fabric's pause x K,
//	                                                   as the switch sends it at its port's wall rate
//	measured RTTs, feedback period, gaps       wall    measured on this machine (they scale by themselves)
//	hpcc: INT hops' ts and rates               wall    the switch's clock and its ports' rates on this machine, used only
//	                                                   in ratios with T (-base-rtt x K) and each other; W_init and
//	                                                   -hpcc-wai are bytes, the same on both clocks
//
// Byte counts (windows, -init-window, buffers, -size) and counts are the
// same on both clocks.

// fabricDuration is a duration flag given in the fabric's time.
type fabricDuration struct {
	Fabric time.Duration // as given
	Wall   time.Duration // x K: what runs on this machine (after resolve)
}

// clockFlags is a command's -timescale and its flags given in the fabric's
// clock.
type clockFlags struct {
	fs    *flag.FlagSet
	k     *string
	durs  []*fabricDuration
	Scale timescale.Scale // after resolve
}

func addClock(fs *flag.FlagSet) *clockFlags {
	return &clockFlags{fs: fs, k: fs.String("timescale", "1", "run the fabric K times slower than its units say (K >= 1): every rate and time flag is in the fabric's units, rates are divided by K and times multiplied by K on this machine, and reports give both clocks")}
}

// duration registers a duration flag in the fabric's time.
func (c *clockFlags) duration(name string, def time.Duration, usage string) *fabricDuration {
	d := &fabricDuration{Fabric: def, Wall: def}
	c.fs.DurationVar(&d.Fabric, name, def, usage+" (fabric time)")
	c.durs = append(c.durs, d)
	return d
}

// resolve reads -timescale and converts every fabric duration flag to the
// wall clock.
func (c *clockFlags) resolve() error {
	sc, err := timescale.Parse(*c.k)
	if err != nil {
		return fmt.Errorf("-timescale: %w", err)
	}
	c.Scale = sc
	for _, d := range c.durs {
		d.Wall = sc.Wall(d.Fabric)
	}
	return nil
}

// wallBits converts a fabric rate in bit/s to the wall clock.
func (c *clockFlags) wallBits(fabric uint64) uint64 { return c.Scale.WallBits(fabric) }

// protocolTimers are gsperf's built-in protocol timers on the wall clock:
// the fabric defaults of the table above, multiplied by K.
type protocolTimers struct {
	RTO, MaxRTO  time.Duration      // plain transport: initial and minimum timeout, backoff cap
	BFCMinRTO    time.Duration      // -mode bfc: the timeout's floor
	BFCPoll      time.Duration      // -mode bfc: a paused flow looks again
	BFCWatchdog  time.Duration      // -mode bfc: -bfc-watchdog's default
	XPSender     xpass.SenderConfig // -mode xpass senders
	XPLinger     time.Duration      // -mode xpass: stop states after the last ack
	XPRetransmit time.Duration      // xpass host (server): Params.RetransmitTimeout
	XPStop       time.Duration      // xpass host: Params.StopTimeout
	XPIdleStop   time.Duration      // xpass host: Params.IdleStop
	Linger       time.Duration      // server: completed flows remembered
	DCQCNAlpha   time.Duration      // -mode dcqcn: alpha's decay period K
	CNP          time.Duration      // server -mode dcqcn: a flow's least CNP spacing
}

// bfcMinRTO is -mode bfc's floor under 10 base RTTs of timeout.
const bfcMinRTO = 10 * time.Millisecond

// fidelityLead is how long before the client's -at its first fidelity
// snapshot is taken: time for the scrapes, so the start is not delayed.
const fidelityLead = 250 * time.Millisecond

func timersAt(sc timescale.Scale) protocolTimers {
	xs := xpass.DefaultSenderConfig()
	xs.RetransmitTimeout = sc.Wall(xs.RetransmitTimeout)
	xs.MaxRetransmit = sc.Wall(xs.MaxRetransmit)
	xs.StopTimeout = sc.Wall(xs.StopTimeout)
	xs.MinRTO = sc.Wall(xs.MinRTO)
	xs.CreditTimeout = sc.Wall(xs.CreditTimeout)
	xh := xpass.DefaultParams(0)
	return protocolTimers{
		RTO:          sc.Wall(transport.DefaultRTO),
		MaxRTO:       sc.Wall(transport.DefaultMaxRTO),
		BFCMinRTO:    sc.Wall(bfcMinRTO),
		BFCPoll:      sc.Wall(bfchost.DefaultPoll),
		BFCWatchdog:  sc.Wall(bfchost.DefaultWatchdog),
		XPSender:     xs,
		XPLinger:     sc.Wall(udp.DefaultXPLinger),
		XPRetransmit: sc.Wall(xh.RetransmitTimeout),
		XPStop:       sc.Wall(xh.StopTimeout),
		XPIdleStop:   sc.Wall(xh.IdleStop),
		Linger:       sc.Wall(udp.DefaultLinger),
		DCQCNAlpha:   sc.Wall(transport.DefaultDCQCNAlphaTimer),
		CNP:          sc.Wall(transport.DefaultCNPInterval),
	}
}
