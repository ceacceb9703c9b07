package main

import (
	"flag"
	"fmt"
	"os"

	bfchost "github.com/gswitch/gswitch/perf/bfc"
)

// bfcFlags are the client's flags for -mode bfc (perf/bfc: the host side
// of BFC, as the paper's NIC).
type bfcFlags struct {
	queues   *int
	watchdog *fabricDuration
	pauses   *bool
}

func addBFCFlags(fs *flag.FlagSet, clock *clockFlags) *bfcFlags {
	return &bfcFlags{
		queues:   fs.Int("bfc-queues", 128, "bfc: queue ids handed to the host's flows, one per active flow (1 to 4095; 1: every flow in one queue)"),
		watchdog: clock.duration("bfc-watchdog", bfchost.DefaultWatchdog, "bfc: resume the flows of pauses the switch has not refreshed this long"),
		pauses:   fs.Bool("bfc-pauses", true, "bfc: honour pauses; false is a NIC without BFC (the paper's \"BFC - NIC\"): no queue ids, pauses ignored, one BDP in flight per flow"),
	}
}

// start opens the host's pause listener (none with -bfc-pauses=false).
func (b *bfcFlags) start(t protocolTimers) (*bfchost.Host, error) {
	wd := b.watchdog.Wall
	if wd == 0 { // the default, on the wall clock
		wd = t.BFCWatchdog
	}
	h, err := bfchost.New(bfchost.Config{Queues: *b.queues, Watchdog: wd, Poll: t.BFCPoll, Deaf: !*b.pauses})
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
}
