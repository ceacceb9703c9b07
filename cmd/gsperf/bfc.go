package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	bfchost "github.com/gswitch/gswitch/perf/bfc"
	"github.com/gswitch/gswitch/perf/udp"
)

// bfcFlags are the client's flags for -mode bfc (perf/bfc: the host side
// of BFC, as the paper's NIC).
type bfcFlags struct {
	queues   *int
	watchdog *time.Duration
	pauses   *bool
}

func addBFCFlags(fs *flag.FlagSet) *bfcFlags {
	return &bfcFlags{
		queues:   fs.Int("bfc-queues", 128, "bfc: queue ids handed to the host's flows, one per active flow (1 to 4095; 1: every flow in one queue)"),
		watchdog: fs.Duration("bfc-watchdog", 200*time.Millisecond, "bfc: resume the flows of pauses the switch has not refreshed this long"),
		pauses:   fs.Bool("bfc-pauses", true, "bfc: honour pauses; false is a NIC without BFC (the paper's \"BFC - NIC\"): no queue ids, pauses ignored, one BDP in flight per flow"),
	}
}

// start opens the host's pause listener (none with -bfc-pauses=false).
func (b *bfcFlags) start() (*bfchost.Host, error) {
	h, err := bfchost.New(bfchost.Config{Queues: *b.queues, Watchdog: *b.watchdog, Deaf: !*b.pauses})
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

// plan makes p run BFC's host side: a queue id per flow, pauses honoured,
// windows of one BDP (at the rate and base RTT) unless -init-window says,
// and, unless -rto says, a retransmission timeout of 10 base RTTs (at least
// 10 ms): a paused flow's segments wait in the switches, and a timer that
// fires on them sends the whole window again.
func (b *bfcFlags) plan(h *bfchost.Host, p *udp.Plan) {
	p.FlowHook = h.FlowHook
	if p.InitWindow == 0 {
		p.InitWindow = max(udp.MSS, int(p.RateBits/8*p.BaseRTT.Seconds()))
	}
	if p.RTO == 0 {
		p.RTO = max(10*time.Millisecond, 10*p.BaseRTT)
	}
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
