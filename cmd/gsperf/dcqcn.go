package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/gswitch/gswitch/perf/results"
	"github.com/gswitch/gswitch/perf/timescale"
	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/perf/udp"
	"github.com/gswitch/gswitch/units"
)

// dcqcnFlags are the client's -dcqcn-* flags: the constants of DCQCN's
// rate machine (perf/transport, dcqcn.go) a researcher would change, in
// the fabric's units. The others (alpha's timer K, F, the floor, the
// notification point's CNP interval) are the paper's, fixed.
type dcqcnFlags struct {
	g                 *float64
	rai, rhai         *string
	timer             *fabricDuration
	bytes             *string
	raiBits, rhaiBits uint64 // after check: fabric bit/s
	bytesN            uint64 // after check
}

func addDCQCNFlags(fs *flag.FlagSet, clock *clockFlags) *dcqcnFlags {
	return &dcqcnFlags{
		g:     fs.Float64("dcqcn-g", transport.DefaultDCQCNG, "dcqcn: alpha's gain g: alpha = (1-g) alpha + g on a CNP, x (1-g) every 55us without one (the paper's 1/256)"),
		rai:   fs.String("dcqcn-rai", "40Mbit", "dcqcn: the additive increase step R_AI of the target rate (the paper's 40Mbit, for 40 Gbit/s hosts) (fabric rate)"),
		rhai:  fs.String("dcqcn-rhai", "400Mbit", "dcqcn: the hyper increase step R_HAI (10 x R_AI, as the HPCC authors' simulator) (fabric rate)"),
		timer: clock.duration("dcqcn-timer", time.Duration(transport.DefaultDCQCNTimer), "dcqcn: the rate-increase timer T (the paper's 55us)"),
		bytes: fs.String("dcqcn-bytes", "10MB", "dcqcn: the byte counter B: a rate-increase event every B bytes sent (the paper's 10MB)"),
	}
}

// check reads the flags; errors name the flag, the value and the fix.
func (f *dcqcnFlags) check() error {
	if !(*f.g > 0 && *f.g <= 1) {
		return fmt.Errorf("-dcqcn-g: %v (want a gain above 0 and at most 1; DCQCN uses 1/256 = %v)", *f.g, transport.DefaultDCQCNG)
	}
	var err error
	if f.raiBits, err = units.ParseRate(*f.rai); err != nil || f.raiBits == 0 {
		return fmt.Errorf("-dcqcn-rai: %q is not a positive rate (e.g. 40Mbit, the paper's)", *f.rai)
	}
	if f.rhaiBits, err = units.ParseRate(*f.rhai); err != nil || f.rhaiBits == 0 {
		return fmt.Errorf("-dcqcn-rhai: %q is not a positive rate (e.g. 400Mbit)", *f.rhai)
	}
	if f.timer.Fabric <= 0 {
		return fmt.Errorf("-dcqcn-timer: %v (want a positive duration, e.g. 55us, the paper's)", f.timer.Fabric)
	}
	frame := uint64(udp.MSS + udp.Overhead)
	if f.bytesN, err = units.ParseSize(*f.bytes); err != nil || f.bytesN < frame || f.bytesN > 1<<50 {
		return fmt.Errorf("-dcqcn-bytes: %q (want a size from one frame, %d bytes, to 1PiB, e.g. 10MB, the paper's)", *f.bytes, frame)
	}
	return nil
}

// apply makes c's plan run DCQCN on hosts of line rate link (fabric
// bit/s: -pace, else -rate): the rate machine on the wall clock, the
// window (transport.DCQCNWindow over -base-rtt, unless -init-window), and
// the params that record them in the fabric's units.
func (f *dcqcnFlags) apply(c *clientSetup, link uint64) {
	sc, t, p := c.clock.Scale, c.timers, &c.plan
	p.DCQCN = transport.DCQCNConfig{
		LineRate:   float64(c.clock.wallBits(link)),
		MinRate:    sc.WallRate(transport.DefaultDCQCNMinRate),
		G:          *f.g,
		RAI:        sc.WallRate(float64(f.raiBits)),
		RHAI:       sc.WallRate(float64(f.rhaiBits)),
		Timer:      f.timer.Wall.Nanoseconds(),
		AlphaTimer: t.DCQCNAlpha.Nanoseconds(),
		Bytes:      int64(f.bytesN),
		F:          transport.DefaultDCQCNF,
		Overhead:   udp.Overhead,
		Burst:      max(p.PaceBurst, 1) * (udp.MSS + udp.Overhead),
	}
	if p.InitWindow == 0 {
		p.InitWindow = transport.DCQCNWindow(p.DCQCN.LineRate, p.BaseRTT.Nanoseconds(), t.CNP.Nanoseconds(), udp.MSS)
	}
	c.params["dcqcn_g"] = fmt.Sprint(*f.g)
	c.params["dcqcn_rai"] = *f.rai
	c.params["dcqcn_rhai"] = *f.rhai
	c.params["dcqcn_timer"] = f.timer.Fabric.String()
	c.params["dcqcn_bytes"] = *f.bytes
	c.params["dcqcn_alpha_timer"] = time.Duration(transport.DefaultDCQCNAlphaTimer).String()
	c.params["dcqcn_f"] = fmt.Sprint(transport.DefaultDCQCNF)
	c.params["dcqcn_min_rate"] = timescale.FormatRate(min(transport.DefaultDCQCNMinRate, float64(link)))
	c.params["dcqcn_line_rate"] = timescale.FormatRate(float64(link))
	c.params["dcqcn_window"] = fmt.Sprint(p.InitWindow)
}

// dcqcnFinish records a dcqcn run's counters in its params: the CNPs the
// flows received and the rate cuts they made, and the mean of their rates
// at their ends (fabric bit/s, from each flow's rate_ppm of the line rate
// link, fabric bit/s) over the flows that ran a sender (a flow whose dial
// failed has no record of one).
func dcqcnFinish(src string, link uint64, recs []results.Flow, params map[string]string) {
	var cnps, cuts, n uint64
	var rate float64
	for _, r := range recs {
		if r.Mech == nil {
			continue
		}
		cnps += r.Mech["cnps"]
		cuts += r.Mech["rate_cuts"]
		rate += float64(r.Mech["rate_ppm"]) / 1e6 * float64(link)
		n++
	}
	if n > 0 {
		rate /= float64(n)
	}
	params["dcqcn_cnps"] = fmt.Sprint(cnps)
	params["dcqcn_rate_cuts"] = fmt.Sprint(cuts)
	params["dcqcn_final_rate"] = strconv.FormatFloat(rate, 'f', 0, 64)
	fmt.Fprintf(os.Stderr, "gsperf %s: dcqcn: %d CNPs received, %d rate cuts, flows ended at %s on average (line rate %s)\n",
		src, cnps, cuts, timescale.FormatRate(rate), timescale.FormatRate(float64(link)))
}
