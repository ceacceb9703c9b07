package udp

import (
	"math"

	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/wire/gsperf"
)

// INTLen is the INT option an hpcc flow's data segments carry with
// HPCCConfig.Hops = hops (0: transport.DefaultINTHops; more than
// gsperf.MaxINTHops are cut to it): Run shortens those segments' payload
// by it, so that their frames stay within 1514 bytes.
func INTLen(hops int) int {
	if hops <= 0 {
		hops = transport.DefaultINTHops
	}
	return gsperf.INTLen(min(hops, gsperf.MaxINTHops))
}

// hpccMech is an hpcc flow's record of what its sender measured: acks that
// carried INT, the most hops one carried, hops measured and skipped,
// per-RTT updates, and at the end the window and reference window (bytes)
// and U (parts per million).
func hpccMech(st transport.HPCCStats) map[string]uint64 {
	return map[string]uint64{"int_acks": st.INTAcks, "hops": uint64(st.Hops), "samples": st.Samples, "skipped": st.Skipped,
		"updates": st.Updates, "window_bytes": uint64(math.Round(st.Window)), "wc_bytes": uint64(math.Round(st.Wc)),
		"u_ppm": uint64(math.Round(min(st.U, 1e12) * 1e6))}
}
