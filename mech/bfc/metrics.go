package bfc

import (
	"math"
	"math/bits"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("gswitch_bfc_"+name, help, labels, nil)
}

var (
	dPausesSent  = desc("pauses_sent_total", "PAUSE frames sent out of the port to its upstream neighbour (counter 0 -> 1).", "port")
	dResumesSent = desc("resumes_sent_total", "RESUME frames sent out of the port to its upstream neighbour (counter 1 -> 0).", "port")
	dBitmapsSent = desc("bitmaps_sent_total", "BITMAP frames sent out of the port (periodic, while a counter is above zero).", "port")
	dEmitFailed  = desc("emit_failed_total", "PAUSE, RESUME or BITMAP frames the port could not send (no frame, lane full, port down); the next bitmap heals them.", "port")
	dPausesRx    = desc("pauses_received_total", "PAUSE frames received on the port.", "port")
	dResumesRx   = desc("resumes_received_total", "RESUME frames received on the port.", "port")
	dBitmapsRx   = desc("bitmaps_received_total", "BITMAP frames received on the port.", "port")
	dStaleRx     = desc("stale_received_total", "Received frames (or parts of bitmaps) older than what the queue already follows: ignored.", "port")
	dBadQueueRx  = desc("bad_queue_received_total", "Received frames naming a queue the port does not have: ignored.", "port")
	dMalformedRx = desc("malformed_received_total", "Received BFC frames that do not parse (dropped, reason malformed).", "port")
	dNotPeerRx   = desc("not_peer_received_total", "BFC frames received on a port whose peer is not bfc (dropped, reason unclaimed_control).", "port")
	dWatchdog    = desc("watchdog_resumes_total", "Queues of the port resumed by the watchdog: paused by the neighbour and not refreshed by a bitmap in time.", "port")
	dPaused      = desc("paused_queues", "Queues of the port its neighbour has paused now.", "port")
	dActive      = desc("counters_active", "Pause counters of the port (per upstream queue of its neighbour) above zero: upstream queues paused now.", "port")
	dOverTh      = desc("over_threshold_total", "Packets queued at the port that found their queue above Th and raised their upstream queue's pause counter.", "port")
	dUnderflow   = desc("pause_underflows_total", "Pause counter decrements without an increment (a bug if ever non-zero).", "port")
	dTableSize   = desc("flow_table_size", "Entries of the port's flow table (dynamic assignment).", "port")
	dOccupancy   = desc("flow_table_entries", "Flow-table entries with packets in the switch.", "port")
	dCollisions  = desc("flow_collisions_total", "Packets whose flow-table entry was held by another flow (they share its queue).", "port")
	dSticky      = desc("sticky_total", "Flows that came back within the sticky time and kept their queue.", "port")
	dStickyReuse = desc("sticky_reuse_total", "Of those, flows whose queue had meanwhile gone to a new flow (they share it).", "port")
	dAssigned    = desc("assigned_total", "New flows given a queue, by how: an empty queue or, none being empty, a random one.", "port", "how")
	dThreshold   = desc("threshold_bytes", "The pause threshold Th (wire bytes) the last packet with an upstream queue was compared with.", "port")
	dThFloor     = desc("threshold_floor_bytes", "The least Th of the port.", "port")
	dHRTT        = desc("hrtt_seconds", "The port's one-hop RTT (hrtt; Th uses the largest of the switch's).", "port")
	dTagged      = desc("tagged_total", "Data frames sent with the upstream-queue tag.", "port")
	dUntagged    = desc("tags_removed_total", "Tags removed from frames received on the port.", "port")
	dTagSkipped  = desc("tag_skipped_total", "Frames sent untagged toward a BFC neighbour because the tag would not fit.", "port")
	dHostQueued  = desc("host_queue_total", "Packets from a host that named their upstream queue in the gsperf header.", "port")
	dQueueInteg  = desc("queue_byte_seconds_total", "Integral of the queue's length (wire bytes) over time: its increase over an interval / the interval is the mean queue.", "port", "queue")
	dQueueWM     = desc("queue_watermark_bytes", "Highest length (wire bytes) of the queue since the previous scrape (cleared on read, as a switch's watermark register).", "port", "queue")
)

// Describe implements prometheus.Collector.
func (b *BFC) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dPausesSent, dResumesSent, dBitmapsSent, dEmitFailed, dPausesRx, dResumesRx, dBitmapsRx,
		dStaleRx, dBadQueueRx, dMalformedRx, dNotPeerRx, dWatchdog, dPaused, dActive, dOverTh, dUnderflow, dTableSize, dOccupancy,
		dCollisions, dSticky, dStickyReuse, dAssigned, dThreshold, dThFloor, dHRTT, dTagged, dUntagged, dTagSkipped, dHostQueued,
		dQueueInteg, dQueueWM} {
		ch <- d
	}
}

// Collect implements prometheus.Collector (any goroutine).
func (b *BFC) Collect(ch chan<- prometheus.Metric) {
	c := func(d *prometheus.Desc, v uint64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), l...)
	}
	g := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	for _, s := range b.ports {
		if s == nil {
			continue
		}
		n, m := s.name, &s.m
		if s.ctr != nil {
			c(dPausesSent, m.pausesSent.Load(), n)
			c(dResumesSent, m.resumesSent.Load(), n)
			c(dBitmapsSent, m.bitmapsSent.Load(), n)
			c(dEmitFailed, m.emitFailed.Load(), n)
			g(dActive, float64(s.active.Load()), n)
		}
		if s.peer == peerBFC {
			c(dPausesRx, m.pausesRx.Load(), n)
			c(dResumesRx, m.resumesRx.Load(), n)
			c(dBitmapsRx, m.bitmapsRx.Load(), n)
			c(dStaleRx, m.staleRx.Load(), n)
			c(dBadQueueRx, m.badQueueRx.Load(), n)
			c(dMalformedRx, m.malformedRx.Load(), n)
			c(dWatchdog, m.watchdog.Load(), n)
			g(dPaused, float64(bits.OnesCount64(s.up.paused.Load())), n)
			c(dTagged, m.tagged.Load(), n)
			c(dUntagged, m.untagged.Load(), n)
			c(dTagSkipped, m.tagSkipped.Load(), n)
		} else {
			c(dNotPeerRx, m.notPeerRx.Load(), n)
		}
		if s.peer == peerHost {
			c(dHostQueued, m.hostQueued.Load(), n)
		}
		c(dOverTh, m.overTh.Load(), n)
		c(dUnderflow, m.underflow.Load(), n)
		if s.table != nil {
			g(dTableSize, float64(len(s.table)), n)
			g(dOccupancy, float64(m.occupancy.Load()), n)
			c(dCollisions, m.collisions.Load(), n)
			c(dSticky, m.stickyHits.Load(), n)
			c(dStickyReuse, m.stickyReuse.Load(), n)
			c(dAssigned, m.assignEmpty.Load(), n, "empty")
			c(dAssigned, m.assignRandom.Load(), n, "random")
		}
		g(dThreshold, float64(m.th.Load()), n)
		g(dThFloor, float64(s.thFloor), n)
		g(dHRTT, float64(s.hrtt)/1e9, n)
		for q := range s.qs {
			qs := &s.qs[q]
			l := strconv.Itoa(q)
			ch <- prometheus.MustNewConstMetric(dQueueInteg, prometheus.CounterValue, math.Float64frombits(qs.pubI.Load()), n, l)
			g(dQueueWM, float64(qs.wm.Swap(0)), n, l)
		}
	}
}
