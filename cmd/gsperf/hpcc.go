package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/gswitch/gswitch/perf/results"
	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/units"
	wiregs "github.com/gswitch/gswitch/wire/gsperf"
)

// hpccFlags are the client's -mode hpcc flags (perf/transport's hpcc.go):
// the INT slots, eta, maxStage and W_AI. T is -base-rtt and the line rate
// of W_init = line x T is -pace, else -rate.
type hpccFlags struct {
	hops     *int
	eta      *float64
	maxStage *int
	wai      *string
}

func addHPCCFlags(fs *flag.FlagSet) *hpccFlags {
	return &hpccFlags{
		hops: fs.Int("int-hops", transport.DefaultINTHops, fmt.Sprintf("hpcc: INT slots each data segment reserves, 1 to %d, at least the switch ports running int on the path (HPCC's simulator reserves 5); each slot takes 24 bytes (and the option 8) from the payload, so frames stay 1514 bytes", wiregs.MaxINTHops)),
		eta:  fs.Float64("hpcc-eta", transport.DefaultHPCCEta, "hpcc: the target utilization eta, in (0, 1] (the paper's 0.95)"),
		maxStage: fs.Int("hpcc-max-stage", transport.DefaultHPCCMaxStage,
			"hpcc: maxStage, additive increases before a multiplicative one (the paper's 5; 0: every update multiplicative, as HPCC's simulator runs by default)"),
		wai: fs.String("hpcc-wai", "", "hpcc: W_AI, the window's additive increase per RTT, e.g. 80B (default 4e-4 of W_init = line x -base-rtt, HPCC's simulator's; the paper's guideline for up to N flows on a link is W_init x (1 - eta) / N)"),
	}
}

// config is the transport's HPCC config for a line of lineBits and a base
// RTT of rttNs (both on this machine's clock), and the params that record
// it (W_AI and W_init in bytes, the same on both clocks).
func (f *hpccFlags) config(lineBits float64, rttNs int64) (transport.HPCCConfig, map[string]string, error) {
	c := transport.HPCCConfig{LineRate: lineBits, BaseRTT: rttNs, Eta: *f.eta, Hops: *f.hops, MaxStage: *f.maxStage}
	if *f.hops < 1 || *f.hops > wiregs.MaxINTHops {
		return c, nil, fmt.Errorf("-int-hops: %d (want 1 to %d slots: at least the switch ports running int on the path)", *f.hops, wiregs.MaxINTHops)
	}
	if !(*f.eta > 0 && *f.eta <= 1) {
		return c, nil, fmt.Errorf("-hpcc-eta: %v (want a utilization above 0 and at most 1; HPCC uses %v)", *f.eta, transport.DefaultHPCCEta)
	}
	if *f.maxStage < 0 || *f.maxStage > 1000 {
		return c, nil, fmt.Errorf("-hpcc-max-stage: %d (want 0 to 1000; HPCC uses %d)", *f.maxStage, transport.DefaultHPCCMaxStage)
	}
	if *f.maxStage == 0 {
		c.MaxStage = -1 // the transport's 0 is its default
	}
	wInit := lineBits / 8e9 * float64(rttNs)
	wai := transport.DefaultHPCCWAI * wInit
	if *f.wai != "" {
		b, err := units.ParseSize(*f.wai)
		if err != nil || b == 0 || float64(b) > wInit {
			return c, nil, fmt.Errorf("-hpcc-wai: %q (want a size from 1 byte to W_init = line x -base-rtt = %.0f bytes, e.g. 80B)", *f.wai, wInit)
		}
		wai = float64(b)
	}
	c.WAI = wai
	params := map[string]string{"int_hops": fmt.Sprint(*f.hops), "hpcc_eta": fmt.Sprint(*f.eta), "hpcc_max_stage": fmt.Sprint(*f.maxStage),
		"hpcc_wai_bytes": fmt.Sprintf("%.1f", wai), "hpcc_w_init_bytes": fmt.Sprintf("%.0f", wInit)}
	return c, params, nil
}

// hpccFinish records what the run's HPCC senders measured in params (acks
// that carried INT, the most hops an ack carried, and the flows' mean
// final window and U) and says it on w.
func hpccFinish(recs []results.Flow, src string, params map[string]string, w io.Writer) {
	var acks, hops, n uint64
	var win, u float64
	for _, r := range recs {
		if r.Mech == nil {
			continue
		}
		acks += r.Mech["int_acks"]
		hops = max(hops, r.Mech["hops"])
		win += float64(r.Mech["window_bytes"])
		u += float64(r.Mech["u_ppm"]) / 1e6
		n++
	}
	if n > 0 {
		win, u = win/float64(n), u/float64(n)
	}
	params["hpcc_int_acks"] = fmt.Sprint(acks)
	params["hpcc_hops"] = fmt.Sprint(hops)
	params["hpcc_window_bytes"] = fmt.Sprintf("%.0f", win)
	params["hpcc_u"] = fmt.Sprintf("%.3f", u)
	fmt.Fprintf(w, "gsperf %s: hpcc: %d acks carried INT, up to %d hops; flows ended with a window of %.0f bytes and U %.3f on average\n", src, acks, hops, win, u)
	switch {
	case acks == 0:
		fmt.Fprintf(w, "gsperf %s: hpcc: no ack carried the INT option: the server did not echo it, and the flows ran at the line rate with W_init\n", src)
	case hops == 0:
		fmt.Fprintf(w, "gsperf %s: hpcc: no switch wrote a hop: no port on the path runs int (mechanisms: {int: {}}), and the flows ran at the line rate with W_init\n", src)
	}
}
