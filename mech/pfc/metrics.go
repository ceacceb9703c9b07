package pfc

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("gswitch_pfc_"+name, help, labels, nil)
}

var (
	dFramesSent  = desc("frames_sent_total", "PFC frames the port sent its upstream neighbour.", "port")
	dEmitFailed  = desc("emit_failed_total", "PFC frames the port could not send (no frame, lane full, port down); it tries again.", "port")
	dPausesSent  = desc("pauses_sent_total", "Pauses of the priority the port sent (XOFF crossed), refreshes not counted.", "port", "priority")
	dRefreshSent = desc("refreshes_sent_total", "Pauses of the priority the port sent again before the last one ran out, while above XON.", "port", "priority")
	dResumesSent = desc("resumes_sent_total", "Zero-time pauses (resumes) of the priority the port sent (XON reached).", "port", "priority")
	dUpPaused    = desc("upstream_paused", "1 while the port has its neighbour's priority paused.", "port", "priority")
	dHeld        = desc("held_bytes", "Bytes of the priority that came in on the port and are held in any egress queue of the switch (compared with XOFF and XON).", "port", "priority")
	dHrDrops     = desc("headroom_drops_total", "Packets of the priority that came in on the port dropped because the bytes held of it would pass xoff + headroom: the upstream sent on past its pause (reason pfc_headroom).", "port", "priority")
	dUnderflow   = desc("held_underflows_total", "Subtractions from a held count without their addition (a bug if ever non-zero).", "port")
	dFramesRx    = desc("frames_received_total", "PFC frames received on the port.", "port")
	dPausesRx    = desc("pauses_received_total", "Non-zero pause times for the priority received on the port.", "port", "priority")
	dResumesRx   = desc("resumes_received_total", "Zero pause times (resumes) for the priority received on the port.", "port", "priority")
	dIgnoredRx   = desc("ignored_received_total", "Pause times for the priority received and not honoured: not a lossless priority here, or the watchdog ignores it.", "port", "priority")
	dMalformed   = desc("malformed_received_total", "MAC control frames received on the port that do not parse as PFC (dropped, reason malformed).", "port")
	dOtherOp     = desc("other_opcode_received_total", "MAC control frames of another opcode (802.3x PAUSE) received on the port (dropped, reason link_local).", "port")
	dNotEnabled  = desc("not_enabled_received_total", "PFC frames received on a port where PFC does not run (dropped, reason link_local).", "port")
	dPaused      = desc("paused", "1 while the neighbour has the port's priority paused.", "port", "priority")
	dPausedSecs  = desc("paused_seconds_total", "Time the neighbour had the port's priority paused.", "port", "priority")
	dTrips       = desc("watchdog_trips_total", "Times the watchdog found the priority paused longer than watchdog with packets queued, and stopped honouring its pauses.", "port", "priority")
	dRestores    = desc("watchdog_restores_total", "Times the watchdog honoured the priority's pauses again, none having come for watchdog_restore.", "port", "priority")
	dStorm       = desc("watchdog_storm", "1 while the watchdog ignores the priority's pauses on the port.", "port", "priority")
	dWdDrops     = desc("watchdog_drops_total", "Packets of the priority the port dropped while the watchdog ignored its pauses (watchdog_action: drop; reason pfc_watchdog).", "port", "priority")
	dXOFF        = desc("xoff_bytes", "The port's XOFF threshold.", "port")
	dXON         = desc("xon_bytes", "The port's XON threshold.", "port")
	dHeadroom    = desc("headroom_bytes", "The port's headroom: what may still arrive after XOFF is crossed.", "port")
)

var allDescs = []*prometheus.Desc{dFramesSent, dEmitFailed, dPausesSent, dRefreshSent, dResumesSent, dUpPaused, dHeld, dHrDrops, dUnderflow,
	dFramesRx, dPausesRx, dResumesRx, dIgnoredRx, dMalformed, dOtherOp, dNotEnabled, dPaused, dPausedSecs, dTrips, dRestores,
	dStorm, dWdDrops, dXOFF, dXON, dHeadroom}

// Describe implements prometheus.Collector.
func (b *PFC) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector (any goroutine).
func (b *PFC) Collect(ch chan<- prometheus.Metric) {
	c := func(d *prometheus.Desc, v uint64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), l...)
	}
	g := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	bit := func(m uint32, pr int) float64 { return float64(m >> uint(pr) & 1) }
	now := b.sw.Now()
	for i, s := range b.ports {
		if s == nil {
			c(dNotEnabled, b.unclaim[i].Load(), b.names[i])
			continue
		}
		n := s.name
		c(dFramesSent, s.framesSent.Load(), n)
		c(dEmitFailed, s.emitFailed.Load(), n)
		c(dUnderflow, s.underflow.Load(), n)
		c(dFramesRx, s.framesRx.Load(), n)
		c(dMalformed, s.malformed.Load(), n)
		c(dOtherOp, s.otherOpRx.Load(), n)
		g(dXOFF, float64(s.xoff.Load()), n)
		g(dXON, float64(s.xon.Load()), n)
		g(dHeadroom, float64(s.headroom.Load()), n)
		sent, storm := s.pubSent.Load(), s.storm.Load()
		for pr := 0; pr < nprio; pr++ {
			l := strconv.Itoa(pr)
			tx, rx := &s.tx[pr], &s.rx[pr]
			c(dPausesSent, tx.xoff.Load(), n, l)
			c(dRefreshSent, tx.refresh.Load(), n, l)
			c(dResumesSent, tx.xon.Load(), n, l)
			g(dUpPaused, bit(sent, pr), n, l)
			g(dHeld, float64(s.held[pr].Load()), n, l)
			c(dHrDrops, s.hrDrops[pr].Load(), n, l)
			c(dPausesRx, rx.pausesRx.Load(), n, l)
			c(dResumesRx, rx.resumesRx.Load(), n, l)
			c(dIgnoredRx, rx.ignoredRx.Load(), n, l)
			paused, ns := rx.pausedFor(now)
			g(dPaused, paused, n, l)
			ch <- prometheus.MustNewConstMetric(dPausedSecs, prometheus.CounterValue, float64(ns)/1e9, n, l)
			c(dTrips, rx.trips.Load(), n, l)
			c(dRestores, rx.restores.Load(), n, l)
			g(dStorm, bit(storm, pr), n, l)
			c(dWdDrops, rx.wdDrops.Load(), n, l)
		}
	}
}

// pausedFor reports whether the priority is paused at now (1 or 0) and
// the time it has been paused in all, the pause in force included (any
// goroutine).
func (st *rxPrio) pausedFor(now int64) (float64, uint64) {
	ns := st.pausedNs.Load()
	if u := st.until.Load(); u > now {
		if d := now - st.since.Load(); d > 0 {
			ns += uint64(d)
		}
		return 1, ns
	}
	return 0, ns
}

// Stats is a snapshot of one port's PFC state and counters.
type Stats struct {
	XOFF, XON, Headroom     uint64
	FramesSent, EmitFailed  uint64
	PausesSent, ResumesSent [nprio]uint64 // XOFF crossings, XON
	RefreshesSent           [nprio]uint64
	UpstreamPaused          uint8 // bit p: the neighbour was last told to pause priority p
	Held                    [nprio]int64
	HeadroomDrops           [nprio]uint64 // packets that came in here dropped past xoff + headroom
	FramesRx, Malformed     uint64
	OtherOpcodeRx           uint64
	PausesRx, ResumesRx     [nprio]uint64
	IgnoredRx               [nprio]uint64
	Paused                  uint8 // bit p: the neighbour has priority p paused now
	PausedNs                [nprio]uint64
	Trips, Restores         [nprio]uint64
	Storm, Dropping         uint8 // priorities the watchdog ignores, drops
	WatchdogDrops           [nprio]uint64
	Underflow               uint64
}

// Stats returns port i's state and counters (any goroutine); zero if PFC
// does not run there.
func (b *PFC) Stats(i int) Stats {
	if i < 0 || i >= len(b.ports) || b.ports[i] == nil {
		return Stats{}
	}
	s := b.ports[i]
	now := b.sw.Now()
	st := Stats{XOFF: s.xoff.Load(), XON: s.xon.Load(), Headroom: s.headroom.Load(), FramesSent: s.framesSent.Load(),
		EmitFailed: s.emitFailed.Load(), UpstreamPaused: uint8(s.pubSent.Load()), FramesRx: s.framesRx.Load(),
		Malformed: s.malformed.Load(), OtherOpcodeRx: s.otherOpRx.Load(), Storm: uint8(s.storm.Load()),
		Dropping: uint8(s.dropping.Load()), Underflow: s.underflow.Load()}
	for pr := 0; pr < nprio; pr++ {
		tx, rx := &s.tx[pr], &s.rx[pr]
		st.PausesSent[pr], st.ResumesSent[pr], st.RefreshesSent[pr] = tx.xoff.Load(), tx.xon.Load(), tx.refresh.Load()
		st.Held[pr], st.HeadroomDrops[pr] = s.held[pr].Load(), s.hrDrops[pr].Load()
		st.PausesRx[pr], st.ResumesRx[pr], st.IgnoredRx[pr] = rx.pausesRx.Load(), rx.resumesRx.Load(), rx.ignoredRx.Load()
		p, ns := rx.pausedFor(now)
		if p != 0 {
			st.Paused |= 1 << uint(pr)
		}
		st.PausedNs[pr] = ns
		st.Trips[pr], st.Restores[pr], st.WatchdogDrops[pr] = rx.trips.Load(), rx.restores.Load(), rx.wdDrops.Load()
	}
	return st
}

// NotEnabledRx is the number of PFC frames received on port i, where PFC
// does not run (any goroutine).
func (b *PFC) NotEnabledRx(i int) uint64 {
	if i < 0 || i >= len(b.unclaim) {
		return 0
	}
	return b.unclaim[i].Load()
}

// View reports PFC's settings and state on port i (any goroutine).
func (b *PFC) View(i int) map[string]any {
	if i < 0 || i >= len(b.ports) || b.ports[i] == nil {
		return nil
	}
	s := b.ports[i]
	st := b.Stats(i)
	queues := make([]uint16, nprio)
	for pr := range queues {
		queues[pr] = s.queueOf[pr]
	}
	return map[string]any{
		"priority_from": s.cfg.PriorityFrom, "lossless": s.lossless, "queues": queues,
		"xoff_bytes": st.XOFF, "xon_bytes": st.XON, "headroom_bytes": st.Headroom, "pause_quanta": s.quanta,
		"held_bytes": st.Held, "upstream_paused": st.UpstreamPaused, "paused": st.Paused,
		"watchdog_storm": st.Storm, "watchdog_ms": s.wdog / 1e6, "watchdog_action": s.cfg.WatchdogAction,
	}
}
