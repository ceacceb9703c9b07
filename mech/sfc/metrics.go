package sfc

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("gswitch_sfc_"+name, help, labels, nil)
}

var (
	dSent       = desc("bts_sent_total", "BTS frames the port's SFC stage sent back to senders of packets headed to the port, by what set the pause: queue (the port's own queue above q_th), cache (the near-source cache, for a local sender), estimator.", "port", "source")
	dSuppressed = desc("bts_suppressed_total", "BTS the port's SFC stage did not send: bloom (the flow had one this period), drained (the pause came out at zero).", "port", "reason")
	dFailed     = desc("bts_failed_total", "BTS the port's SFC stage built but could not send (no free frame, no route back, control lane full).", "port")
	dCacheHits  = desc("cache_hits_total", "Packets of local senders headed to the port that found a live pause for their destination in the cache.", "port")
	dRx         = desc("bts_received_total", "BTS frames that arrived on the port (a fabric port) on their way to their sender.", "port")
	dUpdates    = desc("cache_updates_total", "Cacheable BTS that arrived on the port and raised or created a cache entry.", "port")
	dLaned      = desc("bts_forwarded_total", "BTS frames that left by the port on its control lane (forwarded toward their sender).", "port")
	dBloom      = desc("bloom_flows", "Flows in the port's Bloom filters in the current period.", "port")
	dBloomMax   = desc("bloom_flows_max", "Most flows the port's Bloom filters held in any one period.", "port")
	dPeak       = desc("queue_peak_bytes", "The deepest queue of the port a packet found on arrival (bytes).", "port")
	dDepth      = desc("queue_depth_bytes", "Depth of the port's queue that each arriving packet found (bytes).", "port")
	dConf       = desc("port_info", "SFC on the port: mode, and the thresholds in bytes (0: the port has no rate, so no trigger).", "port", "mode", "q_th_bytes", "q_tg_bytes")
	dEntries    = desc("cache_entries", "Live entries (pause not ended) in the switch's pause cache.")
	dCapacity   = desc("cache_capacity", "Slots of the switch's pause cache.")
	dEvictions  = desc("cache_evictions_total", "Live cache entries replaced because their bucket was full.")
	dContended  = desc("cache_contended_total", "Cache updates given up because another worker was writing the slot.")
	dInserts    = desc("cache_inserts_total", "Cache entries created.")
	dEstimate   = desc("estimator_bytes", "The incast estimator's bytes toward the destination in the last rtt (DRE), as of the last packet.", "port", "destination")
	dCapped     = desc("pause_capped_total", "Pauses cut to the port's max_pause: sent (a BTS the port's stage built would have carried more) or received (a BTS that arrived on the port carried more: its cache entry, if any, holds max_pause).", "port", "direction")
	dMaxPause   = desc("max_pause_seconds", "The port's max_pause: the longest pause its BTS carry and its BTS may set in the cache.", "port")
	allDescs    = []*prometheus.Desc{dSent, dSuppressed, dFailed, dCacheHits, dRx, dUpdates, dLaned, dBloom, dBloomMax, dPeak, dDepth,
		dConf, dEntries, dCapacity, dEvictions, dContended, dInserts, dEstimate, dCapped, dMaxPause}
)

// Describe implements prometheus.Collector.
func (s *SFC) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector (any goroutine).
func (s *SFC) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), l...)
	}
	gauge := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	now := s.sw.Now()
	for _, p := range s.ports {
		if p == nil {
			continue
		}
		for src := range p.sent {
			counter(dSent, p.sent[src].Load(), p.name, sourceNames[src])
		}
		counter(dSuppressed, p.suppressed.Load(), p.name, "bloom")
		counter(dSuppressed, p.drained.Load(), p.name, "drained")
		counter(dFailed, p.failed.Load(), p.name)
		counter(dCacheHits, p.cacheHits.Load(), p.name)
		counter(dRx, p.btsRx.Load(), p.name)
		counter(dUpdates, p.cacheUpdates.Load(), p.name)
		counter(dLaned, p.btsLaned.Load(), p.name)
		gauge(dBloom, float64(p.bloom.occupancy(now)), p.name)
		gauge(dBloomMax, float64(p.bloom.maxFlows.Load()), p.name)
		gauge(dPeak, float64(p.peak.Load()), p.name)
		buckets := make(map[float64]uint64, len(histBounds))
		var n uint64
		for i, b := range histBounds {
			n += p.hist[i].Load()
			buckets[float64(b)] = n
		}
		n += p.hist[len(histBounds)].Load()
		ch <- prometheus.MustNewConstHistogram(dDepth, n, float64(p.histSum.Load()), buckets, p.name)
		gauge(dConf, 1, p.name, p.mode.String(), strconv.FormatUint(p.qth, 10), strconv.FormatUint(p.qtg, 10))
		counter(dCapped, p.cappedSent.Load(), p.name, "sent")
		counter(dCapped, p.cappedRx.Load(), p.name, "received")
		gauge(dMaxPause, float64(p.maxPause)/1e9, p.name)
		if p.est != nil {
			for _, d := range p.est.dsts {
				gauge(dEstimate, float64(d.pub.Load()), p.name, d.ip.String())
			}
		}
	}
	if c := s.cache; c != nil {
		gauge(dEntries, float64(c.live(now)))
		gauge(dCapacity, float64(len(c.slots)))
		counter(dEvictions, c.evictions.Load())
		counter(dContended, c.contended.Load())
		counter(dInserts, c.inserts.Load())
	}
}

// Sent is the number of BTS port i's stage sent, by source: queue, cache,
// estimator (any goroutine).
func (s *SFC) Sent(i int) (queue, cache, estimator uint64) {
	p := s.ports[i]
	if p == nil {
		return 0, 0, 0
	}
	return p.sent[srcQueue].Load(), p.sent[srcCache].Load(), p.sent[srcEstimator].Load()
}

// Suppressed is the number of BTS port i's Bloom filter suppressed (any goroutine).
func (s *SFC) Suppressed(i int) uint64 {
	if p := s.ports[i]; p != nil {
		return p.suppressed.Load()
	}
	return 0
}

// Capped is the number of pauses port i cut to its max_pause: in BTS it
// sent, and in BTS that arrived on it (any goroutine).
func (s *SFC) Capped(i int) (sent, received uint64) {
	if p := s.ports[i]; p != nil {
		return p.cappedSent.Load(), p.cappedRx.Load()
	}
	return 0, 0
}

// CacheRemaining is how long the cache still pauses senders toward (ip,
// dscp) at the switch's now, in ns (any goroutine).
func (s *SFC) CacheRemaining(ip [4]byte, dscp uint8) int64 {
	if s.cache == nil {
		return 0
	}
	return s.cache.remaining(cacheKey(ip, dscp), s.sw.Now())
}

// CacheEntries is the number of live cache entries (any goroutine).
func (s *SFC) CacheEntries() int {
	if s.cache == nil {
		return 0
	}
	return s.cache.live(s.sw.Now())
}

// Peak is the deepest queue of port i an arriving packet found (bytes).
func (s *SFC) Peak(i int) uint64 {
	if p := s.ports[i]; p != nil {
		return p.peak.Load()
	}
	return 0
}
