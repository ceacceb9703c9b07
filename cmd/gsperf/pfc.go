package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	bfchost "github.com/gswitch/gswitch/perf/bfc"
	pfchost "github.com/gswitch/gswitch/perf/pfc"
	"github.com/gswitch/gswitch/perf/timescale"
	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/wire"
)

// pfcFlags are the client's flags for -pfc (perf/pfc: the host's NIC
// honours the PFC frames of its switch, as in a RoCE fabric). -pfc is not
// a transport mode: it gates whatever mode runs (plain, dctcp, pfabric,
// sfc, bfc), in front of the host's pacer.
type pfcFlags struct {
	on       *bool
	priority *int
	sw       *string
}

func addPFCFlags(fs *flag.FlagSet) *pfcFlags {
	return &pfcFlags{
		on:       fs.Bool("pfc", false, "honour PFC frames (IEEE 802.1Qbb) from the switch, as a host NIC in a lossless fabric does: the host's flows stop while the switch pauses their priority; a pause lasts its quanta x 512 bit times at the host's link rate (-pace, else -rate); any mode but xpass; needs root"),
		priority: fs.Int("pfc-priority", 0, "pfc: the priority of this host's flows as the switch maps them (0 to 7; gsperf's data carries DSCP 0, which the switch's default DSCP >> 3 makes priority 0)"),
		sw:       fs.String("pfc-switch", "", "pfc: the MAC of the switch port this host's link ends on; PFC frames from any other source are refused (default: the default gateway's, from the ARP table, else the first PFC frame's source)"),
	}
}

// host makes the client's PFC host (nil without -pfc): its link runs at
// linkBits, this machine's rate in bit/s. Nothing is opened yet.
func (f *pfcFlags) host(mode string, linkBits uint64) (*pfchost.Host, pfchost.Config, error) {
	if !*f.on {
		return nil, pfchost.Config{}, nil
	}
	if mode == "xpass" {
		return nil, pfchost.Config{}, fmt.Errorf("-pfc: -mode xpass sends one segment per credit, and no gate holds its flows (use -pfc with plain, dctcp, pfabric, sfc or bfc)")
	}
	if p := *f.priority; p < 0 || p >= wire.PFCPriorities {
		return nil, pfchost.Config{}, fmt.Errorf("-pfc-priority: %d is not a priority (0 to 7; the switch's priority of the flows' DSCP, 0 for gsperf's DSCP 0)", p)
	}
	c := pfchost.Config{RateBits: linkBits, Priority: *f.priority, Gateway: bfchost.GatewayMAC}
	if *f.sw != "" {
		m, err := parseMAC("-pfc-switch", *f.sw)
		if err != nil {
			return nil, pfchost.Config{}, err
		}
		c.Switch = m
	}
	h, err := pfchost.New(c)
	if err != nil {
		return nil, pfchost.Config{}, fmt.Errorf("-pfc: %w", err)
	}
	return h, c, nil
}

// pfcFinish stops the host's listener, reports its counters on stderr and
// puts them in the run's params (the paused time in the fabric's units).
func pfcFinish(h *pfchost.Host, sc timescale.Scale, name string, params map[string]string) {
	h.Close()
	h.Report(os.Stderr, name)
	st := h.Stats()
	params["pfc_frames"] = fmt.Sprint(st.Frames)
	params["pfc_pauses"] = fmt.Sprint(st.Pauses)
	params["pfc_resumes"] = fmt.Sprint(st.Resumes)
	params["pfc_held"] = fmt.Sprint(st.Held)
	params["pfc_paused"] = sc.Fabric(time.Duration(st.PausedNs)).String()
	params["pfc_malformed"] = fmt.Sprint(st.Malformed)
	params["pfc_other"] = fmt.Sprint(st.Other)
	params["pfc_foreign"] = fmt.Sprint(st.Foreign)
}

// flowHook is udp.Plan's FlowHook type.
type flowHook = func(id uint64, cfg *transport.Config, pacer transport.Gate, wake func()) (transport.Gate, func())

// chainHooks runs inner's hook, then outer's with inner's gate in place of
// the pacer: a flow asks outer's gate, then inner's, then the pacer. Either
// may be nil.
func chainHooks(outer, inner flowHook) flowHook {
	switch {
	case outer == nil:
		return inner
	case inner == nil:
		return outer
	}
	return func(id uint64, cfg *transport.Config, pacer transport.Gate, wake func()) (transport.Gate, func()) {
		g, endInner := inner(id, cfg, pacer, wake)
		g, endOuter := outer(id, cfg, g, wake)
		return g, func() { endOuter(); endInner() }
	}
}
