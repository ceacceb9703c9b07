package ecn

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// depthBounds are the upper bounds (packets) of the queue histogram's
// buckets: fine at the bottom, every 8 packets from 8 to 256 (the
// thresholds DCTCP and RED run at on 250- to 1000-packet buffers, so a
// queue about K can be told from one at K + N), then coarse.
var depthBounds = func() []float64 {
	b := []float64{0, 1, 2, 4}
	for d := 8; d <= 256; d += 8 {
		b = append(b, float64(d))
	}
	return append(b, 384, 512, 1024, 4096)
}()

// nDepth is the number of buckets: depthBounds, then +Inf.
const nDepth = 4 + 32 + 4 + 1

// depthIndex maps a depth of up to maxIndexed packets to its bucket.
const maxIndexed = 4096

var depthIndex [maxIndexed + 1]uint8

func init() {
	if len(depthBounds)+1 != nDepth {
		panic("ecn: depth buckets")
	}
	b := 0
	for d := range depthIndex {
		for float64(d) > depthBounds[b] {
			b++
		}
		depthIndex[d] = uint8(b)
	}
}

// depthHist counts the depths (packets) of the queue each arriving
// packet found, written by the port's worker, read by scrapes.
type depthHist struct {
	n   [nDepth]atomic.Uint64
	sum atomic.Uint64
}

// add records a packet that found depth packets in its queue. The port's
// egress worker is the only writer: a load and a store, not a locked add.
func (h *depthHist) add(depth uint32) {
	b := nDepth - 1
	if depth <= maxIndexed {
		b = int(depthIndex[depth])
	}
	h.n[b].Store(h.n[b].Load() + 1)
	h.sum.Store(h.sum.Load() + uint64(depth))
}

var dDepth = prometheus.NewDesc("gswitch_ecn_queue_packets",
	"Depth (packets) of its queue that each ECN-capable or IP data packet found on arrival at the port, before joining it: the depth marking compares.",
	[]string{"port"}, nil)

// metric is the histogram as a Prometheus metric of port name.
func (h *depthHist) metric(name string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(depthBounds))
	var cum uint64
	for i, b := range depthBounds {
		cum += h.n[i].Load()
		buckets[b] = cum
	}
	cum += h.n[nDepth-1].Load()
	return prometheus.MustNewConstHistogram(dDepth, cum, float64(h.sum.Load()), buckets, name)
}
