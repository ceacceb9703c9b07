// Package metrics exports a running switch to Prometheus.
//
// The collector reads the switch's counters and gauges at scrape time with
// atomic loads (plus one getsockopt(XDP_STATISTICS) per socket), so the
// forwarding path never touches a Prometheus object. It runs on the HTTP
// server's goroutines.
package metrics

import (
	"strconv"
	"strings"

	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/fidelity"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/sched"
	"github.com/gswitch/gswitch/wire"
	"github.com/prometheus/client_golang/prometheus"
)

// PortInfo describes how a port was set up, for gswitch_port_info.
type PortInfo struct {
	Interface string
	XDPMode   string // native or generic
	ZeroCopy  bool
}

// Collector is a prometheus.Collector over a switch.
type Collector struct {
	sw   *dataplane.Switch
	info []PortInfo
}

// New returns a collector for sw; info[i] describes port i (may be nil).
func New(sw *dataplane.Switch, info []PortInfo) *Collector { return &Collector{sw: sw, info: info} }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("gswitch_"+name, help, labels, nil)
}

var (
	dRxPackets  = desc("port_rx_packets_total", "Frames received on the port.", "port")
	dRxBytes    = desc("port_rx_bytes_total", "Bytes received on the port (frames without FCS).", "port")
	dTxPackets  = desc("port_tx_packets_total", "Frames sent on the port.", "port")
	dTxBytes    = desc("port_tx_bytes_total", "Bytes sent on the port (frames without FCS).", "port")
	dTxLate     = desc("port_tx_late_seconds_total", "Line time the shaped port lost while frames waited to leave: its worker came back later than the shaper's catch-up could make up (the top-level catchup key, default 5ms).", "port")
	dFlooded    = desc("port_flooded_total", "Frames received on the port that were flooded (broadcast, multicast or unknown destination).", "port")
	dDrops      = desc("drops_total", "Frames dropped by the switch, by port and reason. Ingress reasons (malformed, same_port, bad_descriptor) count on the ingress port, the others on the egress port.", "port", "reason")
	dMalformed  = desc("malformed_total", "Malformed frames received, by what was wrong.", "port", "kind")
	dDepthB     = desc("queue_depth_bytes", "Bytes queued in the port's egress queue.", "port", "queue")
	dDepthP     = desc("queue_depth_packets", "Packets queued in the port's egress queue.", "port", "queue")
	dPaused     = desc("queue_paused", "1 while the egress queue is paused.", "port", "queue")
	dCtrl       = desc("control_queue_depth_packets", "Frames waiting in the port's control lane (frames the switch emits).", "port")
	dCredit     = desc("credit_queue_depth_packets", "Credits waiting in the port's credit lane.", "port")
	dRound      = desc("rsp_round", "Current round of the port's rotating strict priority (rsp) scheduler.", "port")
	dUp         = desc("port_up", "1 while the port's interface is up.", "port")
	dCtlRx      = desc("control_received_total", "Control messages of the mechanisms (gswitch control header) received on the port, by type, forged ones included.", "port", "kind")
	dForged     = desc("control_forged_total", "Control messages of a type only switches send (a mechanism's switch-to-switch or switch-to-sender frames, anything to the switches' control port (UDP 19020), the first fragment of a datagram to it) that arrived on a host port and were dropped as forged, by type; kind upstream_tag counts frames carrying the switch-to-switch upstream-queue tag.", "port", "kind")
	dEmitted    = desc("emitted_total", "Frames the switch built and queued on the port, by kind.", "port", "kind")
	dUnrouted   = desc("emit_unrouted_total", "Frames the switch built to be routed (such as a message back to a sender) that found no route, neighbour or learnt port, by kind.", "kind")
	dEmitFailed = desc("emit_failed_total", "Frames the switch meant to emit on the port but could not (no frame free, lane full, port down), by kind.", "port", "kind")
	dBufUsed    = desc("buffer_used_bytes", "Bytes held in the shared buffer by all egress queues.")
	dBufSize    = desc("buffer_size_bytes", "Size of the shared buffer.")
	dRate       = desc("port_rate_bytes_per_second", "Egress line rate of the port in bytes per second (bit/s / 8; 0 = unlimited); changes with gswitchctl set.", "port")
	dInfo       = desc("port_info", "How the port is attached.", "port", "interface", "xdp_mode", "zerocopy", "queues")
	dXsk        = desc("xsk_kernel_total", "The kernel's AF_XDP socket counters (XDP_STATISTICS).", "port", "queue", "counter")
	dFrames     = desc("umem_frames", "UMEM frames by where they are.", "state")
	dFramesTot  = desc("umem_size_frames", "UMEM frames in all (the sum of gswitch_umem_frames over its states).")
	dMAC        = desc("mac_table_entries", "Live entries in the MAC learning table.")
	dMACFull    = desc("mac_table_full_total", "Addresses that could not be learnt because their slots were taken.")
	dMACPort    = desc("mac_table_port_entries", "Live addresses learnt on the port.", "port")
	dMACEvents  = desc("mac_learn_total", "What learning did with source addresses it did not know on their port: learned (new), moved (to another port), move_refused (moved again within move_hold: kept on its port), port_full (the port's limit), table_full (no slot), contended.", "result")
	dARP        = desc("arp_total", "What the neighbour (ARP) table of an L3 switch did with ARP that could bind an address: learnt (an unbound address bound), move_refused (ARP that would move a bound or static address to another MAC or port, ignored), unsolicited (a reply the switch did not ask for, or gratuitous ARP, for an unbound address: ignored), rate_limited (the port's budget of new bindings was spent), full (no free slot on the address's two paths).", "result")
	dPasses     = desc("worker_passes_total", "Passes of the worker's loop.", "worker")
	dSleeps     = desc("worker_sleeps_total", "Times the worker slept in poll().", "worker")
	dWakeups    = desc("worker_wakeups_total", "Times the worker was woken by a socket or another worker (not by its timeout).", "worker")
	dSpinning   = desc("worker_spinning", "1 while the worker polls for up to the spin time before it sleeps: it does so while frames mostly come within that time of each other (adaptive spinning).", "worker")
	// The fidelity metrics (package fidelity reads them; docs/operations.md, Fidelity).
	dTimescale  = desc("timescale", "K of the switch's timescale: the fabric it emulates runs K times slower than this machine's clock (1: none). Every time in these metrics is this machine's.")
	dWakeLate   = desc("worker_wake_late_seconds", "How late the worker's timed wake-ups came: the clock after ppoll minus the deadline of the first timer it slept for (a shaped frame or credit may leave, a frame on a delay line is due, a mechanism's tick), counted when the deadline had passed. A wake-up by an event before the deadline, and a sleep with no timer, count nothing.", "worker")
	dPassGap    = desc("worker_pass_gap_seconds", "Time from the start of one pass of the worker's loop to the start of the next, when it did not sleep in between: the pass's own work and any time its thread was runnable but not running.", "worker")
	dTickLate   = desc("worker_tick_late_seconds", "How late the mechanisms' timers ran on the worker: when a tick ran minus when it had asked to.", "worker")
	dCreditLate = desc("port_credit_late_seconds_total", "Line time the port's credit lane lost while credits waited to leave: its worker came back later than the lane's meter could make up (the top-level catchup key). 0 on a port without a credit lane.", "port")
	dDelayErr   = desc("port_delay_error_seconds", "How late frames left the port's delay lines (delay and rx_delay) against the time they were due. Only ports with a delay.", "port")
	allDescs    = []*prometheus.Desc{dTimescale, dWakeLate, dPassGap, dTickLate, dCreditLate, dDelayErr, dSpinning, dUnrouted, dMACPort, dMACEvents, dPaused, dCtrl, dCredit, dRound, dUp, dCtlRx, dForged, dEmitted, dEmitFailed, dBufUsed, dBufSize, dRxPackets, dRxBytes, dTxPackets, dTxBytes, dTxLate, dFlooded, dDrops, dMalformed, dDepthB, dDepthP, dRate, dInfo, dXsk, dFrames, dFramesTot, dMAC, dMACFull, dARP, dPasses, dSleeps, dWakeups}
	xskCounters = []string{"rx_dropped", "rx_invalid_descs", "tx_invalid_descs", "rx_ring_full", "rx_fill_ring_empty_descs", "tx_ring_empty_descs"}
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), l...)
	}
	gauge := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	histogram := func(d *prometheus.Desc, h *fidelity.Counts, l ...string) {
		n, b := fidelity.PromBuckets(h.N[:])
		ch <- prometheus.MustNewConstHistogram(d, n, float64(h.SumNs)/1e9, b, l...)
	}
	gauge(dTimescale, c.sw.Timescale())
	for i, p := range c.sw.Ports() {
		k := c.sw.Counters(i)
		counter(dRxPackets, k.RxPackets, p.Name)
		counter(dRxBytes, k.RxBytes, p.Name)
		counter(dTxPackets, k.TxPackets, p.Name)
		counter(dTxBytes, k.TxBytes, p.Name)
		ch <- prometheus.MustNewConstMetric(dTxLate, prometheus.CounterValue, float64(k.TxLateNs)/1e9, p.Name)
		ch <- prometheus.MustNewConstMetric(dCreditLate, prometheus.CounterValue, float64(k.CreditLateNs)/1e9, p.Name)
		if h, ok := c.sw.DelayErrors(i); ok {
			histogram(dDelayErr, &h, p.Name)
		}
		counter(dFlooded, k.Flooded, p.Name)
		for r := 1; r < pkt.NumReasons(); r++ {
			counter(dDrops, k.Drops[r], p.Name, pkt.Reason(r).String())
		}
		if k.ForgedTags != 0 {
			counter(dForged, k.ForgedTags, p.Name, "upstream_tag")
		}
		for t := range k.ControlRx {
			if k.ControlRx[t] != 0 {
				counter(dCtlRx, k.ControlRx[t], p.Name, KindName(uint8(t)))
			}
			if k.Forged[t] != 0 {
				counter(dForged, k.Forged[t], p.Name, KindName(uint8(t)))
			}
			if k.Emitted[t] != 0 || k.EmitFailed[t] != 0 {
				counter(dEmitted, k.Emitted[t], p.Name, KindName(uint8(t)))
				counter(dEmitFailed, k.EmitFailed[t], p.Name, KindName(uint8(t)))
			}
		}
		up := 1.0
		if p.Down() {
			up = 0
		}
		gauge(dUp, up, p.Name)
		for e := 1; e < pkt.NumErrs; e++ {
			counter(dMalformed, k.Malformed[e], p.Name, pkt.Err(e).String())
		}
		s := p.Scheduler()
		for q := 0; q < s.NumQueues(); q++ {
			b, n := s.Depth(q)
			gauge(dDepthB, float64(b), p.Name, strconv.Itoa(q))
			gauge(dDepthP, float64(n), p.Name, strconv.Itoa(q))
			v := 0.0
			if s.Paused(q) {
				v = 1
			}
			gauge(dPaused, v, p.Name, strconv.Itoa(q))
		}
		_, cn := p.ControlDepth()
		gauge(dCtrl, float64(cn), p.Name)
		if _, n, ok := p.CreditDepth(); ok {
			gauge(dCredit, float64(n), p.Name)
		}
		if vw, ok := s.(sched.Viewer); ok {
			if r := vw.View().Round; r != nil {
				gauge(dRound, float64(*r), p.Name)
			}
		}
		gauge(dRate, float64(p.RateBits())/8, p.Name)
		if i < len(c.info) {
			inf := c.info[i]
			gauge(dInfo, 1, p.Name, inf.Interface, inf.XDPMode, strconv.FormatBool(inf.ZeroCopy), strconv.Itoa(len(p.Links())))
		}
		for q, l := range p.Links() {
			sl, ok := l.(dataplane.StatsLink)
			if !ok {
				continue
			}
			st, err := sl.Stats()
			if err != nil {
				continue
			}
			vals := []uint64{st.Rx_dropped, st.Rx_invalid_descs, st.Tx_invalid_descs, st.Rx_ring_full, st.Rx_fill_ring_empty_descs, st.Tx_ring_empty_descs}
			for j, v := range vals {
				counter(dXsk, v, p.Name, strconv.Itoa(q), xskCounters[j])
			}
		}
	}
	for k, v := range c.sw.Unrouted() {
		if v != 0 {
			counter(dUnrouted, v, KindName(uint8(k)))
		}
	}
	f := c.sw.Frames()
	for _, s := range []struct {
		n string
		v uint64
	}{{"free", f.Free}, {"fill", f.Fill}, {"handoff", f.Handoff}, {"queued", f.Queued}, {"tx", f.Tx}, {"delayed", f.Delayed}, {"returning", f.Returning}, {"assembling", f.Assembling}} {
		gauge(dFrames, float64(s.v), s.n)
	}
	gauge(dFramesTot, float64(f.Total))
	gauge(dBufUsed, float64(c.sw.Buffer().Used()))
	gauge(dBufSize, float64(c.sw.Buffer().Size()))
	ms := c.sw.MACTable().Stats(c.sw.Now())
	gauge(dMAC, float64(ms.Entries))
	counter(dMACFull, ms.TableFull)
	for i, p := range c.sw.Ports() {
		if i < len(ms.PerPort) {
			gauge(dMACPort, float64(ms.PerPort[i]), p.Name)
		}
	}
	for _, e := range []struct {
		n string
		v uint64
	}{{"learned", ms.Learned}, {"moved", ms.Moves}, {"move_refused", ms.MoveRefused}, {"port_full", ms.PortFull}, {"table_full", ms.TableFull}, {"contended", ms.Contended}} {
		counter(dMACEvents, e.v, e.n)
	}
	if n := c.sw.Neighbors(); n != nil {
		a := n.Counters()
		for _, e := range []struct {
			n string
			v uint64
		}{{"learnt", a.Learnt}, {"move_refused", a.MoveRefused}, {"unsolicited", a.Unsolicited}, {"rate_limited", a.RateLimited}, {"full", a.Full}} {
			counter(dARP, e.v, e.n)
		}
	}
	for w := 0; w < c.sw.Workers(); w++ {
		st := c.sw.WorkerStats(w)
		ws := strconv.Itoa(w)
		counter(dPasses, st.Passes, ws)
		counter(dSleeps, st.Sleeps, ws)
		counter(dWakeups, st.Wakeups, ws)
		spinning := 0.0
		if st.Spinning {
			spinning = 1
		}
		gauge(dSpinning, spinning, ws)
		histogram(dWakeLate, &st.WakeLate, ws)
		histogram(dPassGap, &st.PassGap, ws)
		histogram(dTickLate, &st.TickLate, ws)
	}
}

// KindName names a gswitch control message type for the kind label
// (the wire package's type names).
func KindName(t uint8) string {
	switch t {
	case 0:
		return "arp" // ARP requests the L3 stage sends for next hops
	case 255:
		return "icmp_error" // ICMP time exceeded
	}
	return strings.ToLower(wire.Type(t).Name())
}
