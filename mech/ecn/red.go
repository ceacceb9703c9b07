package ecn

import (
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"sync/atomic"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/units"
	"github.com/prometheus/client_golang/prometheus"
)

// Modes (the mode key).
const (
	// ModeStep is DCTCP's step marking at K (the default).
	ModeStep = "step"
	// ModeRED is RED's marking between kmin and kmax (red.go).
	ModeRED = "red"
)

// Mode red's defaults, for the keys left 0: DCQCN's (Zhu et al.,
// SIGCOMM 2015) for its 40 Gbit/s switches, in bytes.
const (
	DefaultKMin = 5000   // 5 KB
	DefaultKMax = 200000 // 200 KB
	DefaultPMax = 0.01   // 1%
	// IdlePacket is the size in bytes of the "small packet" whose
	// transmission time at the port's rate counts a queue's idle time
	// for RED's decay of its average (m = idle time / transmission time).
	IdlePacket = 500
)

// ReasonRED is the drop reason of the packets RED chose to mark that were
// not ECN-capable: RED drops them, as it would without ECN.
var ReasonRED = pkt.RegisterReason("red")

// refuseREDKeys reports a key of mode red set in mode step.
func (c *Config) refuseREDKeys() error {
	var key, val string
	switch {
	case c.KMin != 0:
		key, val = "kmin", c.KMin.String()
	case c.KMax != 0:
		key, val = "kmax", c.KMax.String()
	case c.KMinPackets != 0:
		key, val = "kmin_packets", strconv.Itoa(c.KMinPackets)
	case c.KMaxPackets != 0:
		key, val = "kmax_packets", strconv.Itoa(c.KMaxPackets)
	case c.PMax != 0:
		key, val = "pmax", fmtFloat(c.PMax)
	case c.Weight != 0:
		key, val = "weight", fmtFloat(c.Weight)
	default:
		return nil
	}
	return fmt.Errorf("%s: %s is a key of mode red (set mode: red, or remove %s: mode step marks above k)", key, val, key)
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// validateRED checks mode red's keys and fills in their defaults.
func (c *Config) validateRED(p mech.PortInfo) error {
	switch {
	case c.K != 0:
		return fmt.Errorf("k: %s is a key of mode step (mode red's thresholds are kmin and kmax: use those, or mode: step)", c.K)
	case c.KPackets != 0:
		return fmt.Errorf("k_packets: %d is a key of mode step (mode red's thresholds are kmin_packets and kmax_packets: use those, or mode: step)", c.KPackets)
	case c.RTT != 0:
		return fmt.Errorf("rtt: %s is a key of mode step (the RTT of its default K; mode red's defaults need none): remove it, or use mode: step", c.RTT)
	}
	if c.KMin != 0 && c.KMinPackets != 0 {
		return fmt.Errorf("kmin: %s and kmin_packets: %d are both set (set one: kmin in bytes, or kmin_packets in packets)", c.KMin, c.KMinPackets)
	}
	if c.KMax != 0 && c.KMaxPackets != 0 {
		return fmt.Errorf("kmax: %s and kmax_packets: %d are both set (set one: kmax in bytes, or kmax_packets in packets)", c.KMax, c.KMaxPackets)
	}
	for _, k := range []struct {
		key string
		v   units.Size
	}{{"kmin", c.KMin}, {"kmax", c.KMax}} {
		if k.v > MaxK {
			return fmt.Errorf("%s: %s is more than 1GiB (lower it)", k.key, k.v)
		}
	}
	for _, k := range []struct {
		key string
		v   int
	}{{"kmin_packets", c.KMinPackets}, {"kmax_packets", c.KMaxPackets}} {
		if k.v < 0 || k.v > MaxKPackets {
			return fmt.Errorf("%s: %d out of range [0, %d] (0 = the threshold in bytes)", k.key, k.v, MaxKPackets)
		}
	}
	packets := c.KMinPackets != 0 || c.KMaxPackets != 0
	if packets {
		// One average is compared with both thresholds: one unit.
		switch {
		case c.KMin != 0:
			return fmt.Errorf("kmin: %s is in bytes and kmax_packets: %d in packets: RED compares one average with both (set kmin and kmax in bytes, or kmin_packets and kmax_packets)", c.KMin, c.KMaxPackets)
		case c.KMax != 0:
			return fmt.Errorf("kmax: %s is in bytes and kmin_packets: %d in packets: RED compares one average with both (set kmin and kmax in bytes, or kmin_packets and kmax_packets)", c.KMax, c.KMinPackets)
		case c.KMinPackets == 0:
			return fmt.Errorf("kmin_packets: unset while kmax_packets: %d is set: the defaults are in bytes (set kmin_packets too, or kmin and kmax in bytes)", c.KMaxPackets)
		case c.KMaxPackets == 0:
			return fmt.Errorf("kmax_packets: unset while kmin_packets: %d is set: the defaults are in bytes (set kmax_packets too, or kmin and kmax in bytes)", c.KMinPackets)
		}
		if c.KMinPackets >= c.KMaxPackets {
			return fmt.Errorf("kmin_packets: %d is not below kmax_packets: %d: RED's probability grows from kmin to kmax (lower kmin_packets, or raise kmax_packets)", c.KMinPackets, c.KMaxPackets)
		}
	} else {
		minNote, maxNote := "", ""
		if c.KMin == 0 {
			c.KMin, minNote = DefaultKMin, " (the default)"
		}
		if c.KMax == 0 {
			c.KMax, maxNote = DefaultKMax, " (the default)"
		}
		if c.KMin >= c.KMax {
			return fmt.Errorf("kmin: %s%s is not below kmax: %s%s: RED's probability grows from kmin to kmax (lower kmin, or raise kmax)", c.KMin, minNote, c.KMax, maxNote)
		}
		if p.BufferBytes != 0 && uint64(c.KMax) >= p.BufferBytes {
			return fmt.Errorf("kmax: %s%s is not below the port's buffer (%s): the queue would never reach it (lower kmax, or raise the port's buffer)", c.KMax, maxNote, units.Size(p.BufferBytes))
		}
	}
	switch {
	case c.PMax == 0:
		c.PMax = DefaultPMax
	case !(c.PMax > 0 && c.PMax <= 1):
		return fmt.Errorf("pmax: %s out of range (0, 1]: the marking probability at kmax (0 = %s, DCQCN's)", fmtFloat(c.PMax), fmtFloat(DefaultPMax))
	}
	if !(c.Weight >= 0 && c.Weight < 1) {
		return fmt.Errorf("weight: %s out of range [0, 1): the EWMA weight w_q of the averaged depth (0 = the instantaneous depth, as DCQCN; RED's paper runs 0.002)", fmtFloat(c.Weight))
	}
	if c.Weight > 0 && p.Name != "" && p.RateBits == 0 {
		return fmt.Errorf("weight: %s needs the port's rate: RED decays its average over the time a queue idles, counted in transmission times at the rate (set the port's rate, or weight: 0 for the instantaneous depth)", fmtFloat(c.Weight))
	}
	return nil
}

// red is mode red's state on one port. The egress worker owns all of it
// but dropped, pub and pubSeen, which it publishes for other goroutines.
type red struct {
	packets    bool    // thresholds and average in packets, else in bytes
	kmin, kmax float64 // thresholds
	pmax, w    float64
	rng        rand.PCG // seeded at New from crypto/rand: hosts cannot choose it

	// Per queue, when w > 0: the average, the time of the last arrival,
	// and the time Dequeued saw the queue empty.
	avg       []float64
	last      []int64
	idleSince []int64
	busy      uint64 // queues holding packets Dequeued has not seen leave (bit q: queue q)
	pendQ     int    // the queue Admit's packet takes, for its Enqueued to set in busy; -1: none
	seen      uint64 // queues that have had an arrival (the worker's copy of pubSeen)

	dropped atomic.Uint64   // not ECN-capable packets RED chose: dropped
	pub     []atomic.Uint64 // per queue, the average at its last arrival (float64 bits)
	pubSeen atomic.Uint64   // queues whose pub is meaningful
}

// newRED builds mode red's state for port p from its validated config.
func newRED(c *Config, p *mech.Port) *red {
	n := max(p.Queues, 1)
	if p.View != nil {
		n = max(n, p.View.Queues())
	}
	r := &red{packets: c.KMinPackets != 0, pmax: c.PMax, w: c.Weight, pendQ: -1,
		avg: make([]float64, n), last: make([]int64, n), idleSince: make([]int64, n), pub: make([]atomic.Uint64, n)}
	if r.packets {
		r.kmin, r.kmax = float64(c.KMinPackets), float64(c.KMaxPackets)
	} else {
		r.kmin, r.kmax = float64(c.KMin), float64(c.KMax)
	}
	var seed [16]byte
	crand.Read(seed[:]) // never fails (it aborts the program if the kernel cannot give randomness)
	r.rng.Seed(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:]))
	return r
}

// admitRED is Admit in mode red, for a packet taking queue q, which holds
// bytes and pkts: RED's average, then its choice (egress worker).
func (e *ECN) admitRED(s *port, p *pkt.Packet, q int, bytes uint64, pkts uint32, rateBits uint64, now int64) {
	r := s.red
	d := float64(bytes)
	if r.packets {
		d = float64(pkts)
	}
	a := d
	if q < len(r.avg) {
		if r.w > 0 {
			a = r.average(q, d, rateBits, now)
			if q < 64 {
				r.pendQ = q
			}
		}
		r.pub[q].Store(math.Float64bits(a))
		if q < 64 && r.seen&(1<<q) == 0 {
			r.seen |= 1 << q
			r.pubSeen.Or(1 << q)
		}
	}
	if a < r.kmin {
		return
	}
	if a < r.kmax {
		// RED's p_b, without the count that spaces marks out (p_a).
		pb := r.pmax * (a - r.kmin) / (r.kmax - r.kmin)
		if float64(r.rng.Uint64()>>11)*0x1p-53 >= pb {
			return
		}
	}
	switch p.TOS & 3 {
	case 0:
		s.notECT.Add(1)
		r.dropped.Add(1)
		p.DropWith(ReasonRED)
	case 3: // already CE: stays so, and counts as marked
		s.marking = true
	default:
		s.marking = pkt.MarkCE(e.mem[p.Addr:p.Addr+uint64(p.Len)], p)
	}
}

// average is RED's update of queue q's average on an arrival that finds
// the queue at depth d (Floyd and Jacobson, Fig. 2): avg += w (d - avg)
// if the queue holds packets, else avg *= (1 - w)^m, m the number of
// small packets (IdlePacket) the port could have sent since the queue
// went empty.
func (r *red) average(q int, d float64, rateBits uint64, now int64) float64 {
	a := r.avg[q]
	if d > 0 {
		a += r.w * (d - a)
	} else if a != 0 {
		start := r.idleSince[q]
		if q >= 64 || r.busy&(1<<q) != 0 {
			// The queue emptied without a Dequeued (its packets
			// were evicted or flushed): idle since its last arrival
			// at the latest.
			start = r.last[q]
		}
		if idle := now - start; idle > 0 {
			if rateBits == 0 {
				a = 0 // an unlimited port (the config refuses it): no time to count in
			} else {
				m := float64(idle) * float64(rateBits) / (8 * IdlePacket * 1e9)
				a *= math.Pow(1-r.w, m)
			}
		}
	}
	r.avg[q], r.last[q] = a, now
	return a
}

// averaging is the instance New returns when a port runs RED with a
// weight: ECN, and the Dequeued hook that notes when a queue goes idle,
// for RED's decay. Ports without it (mode step, or weight 0) return at
// once; a switch without such a port has no Dequeued hook of ecn at all.
type averaging struct{ *ECN }

// Dequeued notes the queues the batch left empty, and when (egress
// worker).
func (a averaging) Dequeued(v *mech.PortView, b *mech.Batch) {
	s := a.ports[v.Index()]
	if s == nil || s.red == nil {
		return
	}
	r := s.red
	for m := r.busy; m != 0; m &= m - 1 {
		q := bits.TrailingZeros64(m)
		if _, n := v.Backlog(q); n == 0 {
			r.busy &^= 1 << q
			r.idleSince[q] = b.Now
		}
	}
}

// rateChanged refuses an unlimited rate on a port whose average decays
// over idle time counted at the rate.
func (r *red) rateChanged(rateBits uint64) error {
	if rateBits == 0 && r.w > 0 {
		return fmt.Errorf("ecn's RED on this port averages with weight %s and counts a queue's idle time in transmission times at the port's rate, which an unlimited port has not: keep a rate, or configure weight: 0 first", fmtFloat(r.w))
	}
	return nil
}

// Average is port i's averaged depth of queue q as of the queue's last
// arrival, in the unit of its thresholds (bytes, or packets), and whether
// the port runs RED and the queue has seen an arrival (any goroutine).
func (e *ECN) Average(i, q int) (float64, bool) {
	if i < 0 || i >= len(e.ports) || e.ports[i] == nil || e.ports[i].red == nil {
		return 0, false
	}
	r := e.ports[i].red
	if q < 0 || q >= len(r.pub) || q < 64 && r.pubSeen.Load()&(1<<q) == 0 {
		return 0, false
	}
	return math.Float64frombits(r.pub[q].Load()), true
}

// REDDropped is the number of packets port i's RED chose to mark but
// dropped, not being ECN-capable (any goroutine).
func (e *ECN) REDDropped(i int) uint64 {
	if i < 0 || i >= len(e.ports) || e.ports[i] == nil || e.ports[i].red == nil {
		return 0
	}
	return e.ports[i].red.dropped.Load()
}

// view adds mode red's settings, drops and averages to a port's View.
func (r *red) view(v map[string]any) {
	v["mode"] = ModeRED
	unit := "bytes"
	if r.packets {
		unit = "packets"
	}
	v["kmin_"+unit], v["kmax_"+unit] = uint64(r.kmin), uint64(r.kmax)
	v["pmax"], v["weight"] = r.pmax, r.w
	v["red_dropped"] = r.dropped.Load()
	avg := map[string]float64{}
	for m := r.pubSeen.Load(); m != 0; m &= m - 1 {
		q := bits.TrailingZeros64(m)
		avg[strconv.Itoa(q)] = math.Float64frombits(r.pub[q].Load())
	}
	v["average_"+unit] = avg
}

var (
	dREDDropped  = prometheus.NewDesc("gswitch_ecn_red_dropped_total", "Packets the port's RED chose to mark that were not ECN-capable: dropped (reason red).", []string{"port"}, nil)
	dKMinBytes   = prometheus.NewDesc("gswitch_ecn_red_kmin_bytes", "The port's RED lower threshold kmin in bytes.", []string{"port"}, nil)
	dKMaxBytes   = prometheus.NewDesc("gswitch_ecn_red_kmax_bytes", "The port's RED upper threshold kmax in bytes.", []string{"port"}, nil)
	dKMinPackets = prometheus.NewDesc("gswitch_ecn_red_kmin_packets", "The port's RED lower threshold kmin in packets (kmin_packets).", []string{"port"}, nil)
	dKMaxPackets = prometheus.NewDesc("gswitch_ecn_red_kmax_packets", "The port's RED upper threshold kmax in packets (kmax_packets).", []string{"port"}, nil)
	dAvgBytes    = prometheus.NewDesc("gswitch_ecn_red_average_bytes", "The averaged depth RED compared at the queue's last arrival, in bytes (the instantaneous depth with weight 0).", []string{"port", "queue"}, nil)
	dAvgPackets  = prometheus.NewDesc("gswitch_ecn_red_average_packets", "The averaged depth RED compared at the queue's last arrival, in packets (the instantaneous depth with weight 0).", []string{"port", "queue"}, nil)
)

// collect sends mode red's metrics of port name.
func (r *red) collect(ch chan<- prometheus.Metric, name string) {
	ch <- prometheus.MustNewConstMetric(dREDDropped, prometheus.CounterValue, float64(r.dropped.Load()), name)
	lo, hi, avg := dKMinBytes, dKMaxBytes, dAvgBytes
	if r.packets {
		lo, hi, avg = dKMinPackets, dKMaxPackets, dAvgPackets
	}
	ch <- prometheus.MustNewConstMetric(lo, prometheus.GaugeValue, r.kmin, name)
	ch <- prometheus.MustNewConstMetric(hi, prometheus.GaugeValue, r.kmax, name)
	for m := r.pubSeen.Load(); m != 0; m &= m - 1 {
		q := bits.TrailingZeros64(m)
		ch <- prometheus.MustNewConstMetric(avg, prometheus.GaugeValue, math.Float64frombits(r.pub[q].Load()), name, strconv.Itoa(q))
	}
}

var _ mech.DequeuedHook = averaging{}
