package main

import (
	"flag"
	"fmt"
	"net"
	"os"

	bfchost "github.com/gswitch/gswitch/perf/bfc"
)

// bfcFlags are the client's flags for -mode bfc (perf/bfc: the host side
// of BFC, as the paper's NIC).
type bfcFlags struct {
	queues   *int
	watchdog *fabricDuration
	pauses   *bool
	sw       *string
}

func addBFCFlags(fs *flag.FlagSet, clock *clockFlags) *bfcFlags {
	return &bfcFlags{
		queues:   fs.Int("bfc-queues", 128, "bfc: queue ids handed to the host's flows, one per active flow (1 to 4095; 1: every flow in one queue)"),
		watchdog: clock.duration("bfc-watchdog", bfchost.DefaultWatchdog, "bfc: resume the flows of pauses the switch has not refreshed this long"),
		pauses:   fs.Bool("bfc-pauses", true, "bfc: honour pauses; false is a NIC without BFC (the paper's \"BFC - NIC\"): no queue ids, pauses ignored, one BDP in flight per flow"),
		sw:       fs.String("bfc-switch", "", "bfc: the MAC of the switch port this host's link ends on; pause frames from any other source are refused (default: the default gateway's, from the ARP table, else the first pause frame's source)"),
	}
}

// start opens the host's pause listener (none with -bfc-pauses=false).
func (b *bfcFlags) start(t protocolTimers) (*bfchost.Host, error) {
	wd := b.watchdog.Wall
	if wd == 0 { // the default, on the wall clock
		wd = t.BFCWatchdog
	}
	c := bfchost.Config{Queues: *b.queues, Watchdog: wd, Poll: t.BFCPoll, Deaf: !*b.pauses, Gateway: bfchost.GatewayMAC}
	if *b.sw != "" {
		m, err := switchMAC(*b.sw)
		if err != nil {
			return nil, err
		}
		c.Switch = m
	}
	h, err := bfchost.New(c)
	if err != nil {
		return nil, fmt.Errorf("-bfc-queues, -bfc-watchdog: %w", err)
	}
	if *b.pauses {
		if err := h.Listen(); err != nil {
			return nil, err
		}
	}
	return h, nil
}

func (b *bfcFlags) finish(h *bfchost.Host, name string, params map[string]string) {
	h.Close()
	h.Report(os.Stderr, name)
	st := h.Stats()
	params["bfc_pauses"] = fmt.Sprint(st.Pauses)
	params["bfc_resumes"] = fmt.Sprint(st.Resumes)
	params["bfc_bitmaps"] = fmt.Sprint(st.Bitmaps)
	params["bfc_watchdog_resumes"] = fmt.Sprint(st.WatchdogResumes)
	params["bfc_held"] = fmt.Sprint(st.Held)
	params["bfc_refused"] = fmt.Sprint(st.Refused())
}

// switchMAC reads -bfc-switch: a unicast Ethernet address.
func switchMAC(s string) ([6]byte, error) { return parseMAC("-bfc-switch", s) }

// parseMAC reads a switch port's MAC given to flag name: a unicast
// Ethernet address.
func parseMAC(name, s string) ([6]byte, error) {
	m, err := net.ParseMAC(s)
	if err != nil || len(m) != 6 || m[0]&1 != 0 || [6]byte(m) == [6]byte{} {
		return [6]byte{}, fmt.Errorf("%s: %q is not a unicast Ethernet address (e.g. 02:67:73:00:01:02, the switch port's MAC)", name, s)
	}
	return [6]byte(m), nil
}
