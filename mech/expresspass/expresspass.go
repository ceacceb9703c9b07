package expresspass

import (
	"fmt"
	"sync/atomic"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/wire"
	"github.com/prometheus/client_golang/prometheus"
)

// Name is the mechanism's key under a port's mechanisms:.
const Name = "expresspass"

// Wire-byte constants of the credit share: a credit is a minimum frame,
// 84 bytes on the wire; each credit lets one full data frame, 1538 bytes on
// the wire, come back.
const (
	CreditWireBytes = 84
	DataWireBytes   = 1538
)

// CreditRateBits is the credit rate of a port of rateBits: rateBits x
// 84/(84+1538), rounded down (the paper's ns-2 value at 10 Gbit/s is
// 64,734,895 B/s: CreditRateBits(10e9)/8).
func CreditRateBits(rateBits uint64) uint64 {
	return rateBits * CreditWireBytes / (CreditWireBytes + DataWireBytes) // rateBits <= 1e12: no overflow
}

// ReasonMalformed is the drop reason of a frame carrying an XP_CREDIT
// message whose IPv4/UDP framing or GC message is refused by package wire:
// it can be neither a credit nor data for anybody.
var ReasonMalformed = pkt.RegisterReason("credit_malformed")

func init() {
	mech.Register(mech.Spec{
		Name:     Name,
		Summary:  "ExpressPass: credits classified by DSCP, metered per port to 84/1622 of the line on the credit lane, the excess dropped",
		Config:   func() any { return &Config{CreditDSCP: wire.DefaultCreditDSCP, CreditQueue: 8, CreditBurst: 2} },
		Controls: []uint8{uint8(wire.TypeXPCredit)},
		// SFC's Admit moves BTS frames to the control lane: after it,
		// the data-queue histogram counts data alone.
		After: []string{"sfc"},
		New:   New,
	})
}

// Config is one port's ExpressPass config.
type Config struct {
	CreditDSCP  int `yaml:"credit_dscp"`  // the credit class: credits carry this DSCP (0-63; one value per switch)
	CreditQueue int `yaml:"credit_queue"` // credits the port's credit lane holds (1-4096; the paper: 4 to 8)
	CreditBurst int `yaml:"credit_burst"` // the credit meter's depth in credits (1-64; the paper: 2)
	// CreditDrop is how the credit lane drops: tail (the default, the
	// paper's switch) or random (random early detection on the credit
	// queue, so every credit has the same chance: CreditDropRandom).
	CreditDrop string `yaml:"credit_drop"`
}

// drop is CreditDrop's policy (after Validate).
func (c *Config) drop() CreditDrop {
	if c.CreditDrop == "random" {
		return CreditDropRandom
	}
	return CreditDropTail
}

// Validate implements mech.Validator.
func (c *Config) Validate(p mech.PortInfo) error {
	if c.CreditDSCP < 0 || c.CreditDSCP > 63 {
		return fmt.Errorf("credit_dscp: %d out of range [0, 63]", c.CreditDSCP)
	}
	if c.CreditQueue < 1 || c.CreditQueue > 4096 {
		return fmt.Errorf("credit_queue: %d credits out of range [1, 4096] (the paper uses 4 to 8)", c.CreditQueue)
	}
	if c.CreditBurst < 1 || c.CreditBurst > 64 {
		return fmt.Errorf("credit_burst: %d credits out of range [1, 64] (the paper uses 2)", c.CreditBurst)
	}
	if c.CreditDrop != "" && c.CreditDrop != "tail" && c.CreditDrop != "random" {
		return fmt.Errorf("credit_drop: %q is neither tail (drop only when the credit queue is full, the paper's switch) nor random (random early drop)", c.CreditDrop)
	}
	if p.Name != "" && p.RateBits == 0 {
		return fmt.Errorf("the port has no rate: expresspass meters credits to 84/1622 of the port's rate (set the port's rate:, e.g. rate: 1Gbit)")
	}
	if p.RateBits != 0 && CreditRateBits(p.RateBits) < 8000 {
		return fmt.Errorf("the port's rate %d bit/s is too low for a credit meter (at least 155kbit)", p.RateBits)
	}
	return nil
}

// Refusal reasons of frames that carry an XP_CREDIT message but do not go
// to a credit lane (gswitch_expresspass_credits_refused_total{why}).
const (
	refusedMalformed = iota // framing or message refused by package wire: dropped
	refusedClass            // another DSCP than the credit class: forwarded as data
	refusedTagged           // VLAN- or BFC-tagged: forwarded as data
	numRefused
)

var refusedNames = [numRefused]string{"malformed", "not_credit_class", "tagged"}

// Depth buckets, in packets, of the data-queue histogram.
var depthBounds = []float64{0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32, 48, 64, 128, 256, 512, 1024}

// depthIndex maps a depth of up to 1024 packets to its bucket.
var depthIndex [1025]uint8

func init() {
	b := 0
	for d := range depthIndex {
		for float64(d) > depthBounds[b] {
			b++
		}
		depthIndex[d] = uint8(b)
	}
}

// rx is what the receiving side counts for one port (any receiving worker
// of the port: atomic).
type rx struct {
	credits atomic.Uint64
	refused [numRefused]atomic.Uint64
}

// port is ExpressPass's egress state on one port where it is enabled.
// hist, sum, count and dataDrops are written by the port's egress worker
// only and read by the collector.
type port struct {
	name      string
	index     int
	hist      [20]atomic.Uint64 // data packets by the data-queue depth (packets) they found: depthBounds, then +Inf
	sum       atomic.Uint64     // sum of those depths
	dataDrops atomic.Uint64     // data packets the traffic manager refused or dropped
}

// XP is the mechanism's instance in one switch.
type XP struct {
	sw    mech.Switch
	dscp  uint8
	names []string // every port's name
	rx    []rx     // per port (every port: credits may arrive anywhere)
	ports []*port  // per port; nil where ExpressPass is not enabled
}

// New builds ExpressPass for a switch: a credit lane on every port where it
// is enabled, metered to CreditRateBits of the port's rate with a bucket of
// credit_burst credits and a queue of credit_queue credits, which keeps
// the credits as credit_drop says (lanePolicy).
func New(sw mech.Switch, ports []mech.Port) (mech.Instance, error) {
	x := &XP{sw: sw, rx: make([]rx, len(ports)), ports: make([]*port, len(ports)), names: make([]string, len(ports))}
	dscpFrom := ""
	for i, p := range ports {
		x.names[i] = p.Name
		if p.Config == nil {
			continue
		}
		c := p.Config.(*Config)
		if err := c.Validate(p.Info()); err != nil {
			return nil, fmt.Errorf("port %s: %w", p.Name, err)
		}
		if dscpFrom == "" {
			x.dscp, dscpFrom = uint8(c.CreditDSCP), p.Name
		} else if uint8(c.CreditDSCP) != x.dscp {
			return nil, fmt.Errorf("port %s: credit_dscp %d differs from port %s's %d (the credit class is one DSCP per switch)", p.Name, c.CreditDSCP, dscpFrom, x.dscp)
		}
		rate := CreditRateBits(p.RateBits)
		if err := sw.SetCreditLane(i, rate, c.CreditBurst*CreditWireBytes, c.CreditQueue, newLanePolicy(i, rate, c.drop())); err != nil {
			return nil, fmt.Errorf("port %s: credit lane: %w", p.Name, err)
		}
		x.ports[i] = &port{name: p.Name, index: i}
	}
	return x, nil
}

// DSCP is the credit class of the switch.
func (x *XP) DSCP() uint8 { return x.dscp }

// Control classifies a frame that carries an XP_CREDIT message (receiving
// worker of port in; the switch has counted it and checked the port's
// role). A credit in the credit class, framed as package wire says, goes to
// the credit lane of whatever port forwarding picks; a credit of another
// DSCP or behind a tag is left as data; a malformed one is dropped.
func (x *XP) Control(in int, b *mech.Batch) {
	r := &x.rx[in]
	for i := range b.Pkts {
		p := &b.Pkts[i]
		if p.Verdict != pkt.Forward || p.Ctl != uint8(wire.TypeXPCredit) {
			continue
		}
		if p.L3Off != wire.EthHeaderLen {
			r.refused[refusedTagged].Add(1)
			continue
		}
		f, msg, err := wire.ParseIPv4UDP(b.Frame(p))
		if err == nil {
			_, err = wire.ParseCredit(msg)
		}
		if err != nil {
			r.refused[refusedMalformed].Add(1)
			p.DropWith(ReasonMalformed)
			continue
		}
		if f.DSCP() != x.dscp {
			r.refused[refusedClass].Add(1)
			continue
		}
		r.credits.Add(1)
		p.Lane = pkt.LaneCredit
	}
}

// Admit records the depth of the data queues (all of the port's, in
// packets) each arriving data packet finds (egress worker of the port).
// Credits go to the credit lane and are not counted here.
func (x *XP) Admit(v *mech.PortView, p *pkt.Packet, now int64) {
	if p.Lane != pkt.LaneData {
		return
	}
	s := x.ports[v.Index()]
	_, depth := v.Total()
	b := len(s.hist) - 1
	if depth < uint32(len(depthIndex)) {
		b = int(depthIndex[depth])
	}
	s.hist[b].Add(1)
	s.sum.Add(uint64(depth))
}

// Dropped counts data packets the traffic manager of the port refused or
// dropped. Credits refused by a full credit lane are counted by the lane
// (CreditLane), not here.
func (x *XP) Dropped(v *mech.PortView, p *pkt.Packet, _ pkt.Reason, _ int64) {
	if p.Lane == pkt.LaneData {
		x.ports[v.Index()].dataDrops.Add(1)
	}
}

// PortStats are ExpressPass's counters of one port.
type PortStats struct {
	CreditsIn        uint64 // credits classified on arrival at this port
	Refused          [numRefused]uint64
	CreditsForwarded uint64 // credits that left on this port's credit lane
	CreditsDropped   uint64 // credits this port's credit lane dropped
	CreditsEarly     uint64 // of those, dropped before the lane was full (credit_drop: random)
	TokenBytes       int64  // the credit meter's bytes at the egress worker's last pass
	DataPackets      uint64 // data packets admitted to the port (the histogram's count)
	DataDepthSum     uint64 // sum of the data-queue depths they found
	DataDrops        uint64
	Hist             [20]uint64 // data packets by depth bucket (DepthBounds, then +Inf), not cumulative
}

// DepthBounds are the upper bounds (packets) of the data-queue histogram's buckets.
func DepthBounds() []float64 { return append([]float64(nil), depthBounds...) }

// Stats returns port i's counters (any goroutine).
func (x *XP) Stats(i int) PortStats {
	var s PortStats
	r := &x.rx[i]
	s.CreditsIn = r.credits.Load()
	for k := range s.Refused {
		s.Refused[k] = r.refused[k].Load()
	}
	if l, ok := x.sw.CreditLane(i); ok {
		s.CreditsForwarded, s.CreditsDropped, s.CreditsEarly, s.TokenBytes = l.Sent, l.Dropped, l.Early, l.TokenBytes
	}
	if p := x.ports[i]; p != nil {
		for k := range p.hist {
			s.Hist[k] = p.hist[k].Load()
			s.DataPackets += s.Hist[k]
		}
		s.DataDepthSum, s.DataDrops = p.sum.Load(), p.dataDrops.Load()
	}
	return s
}

// Quantile returns the upper bound of the histogram bucket holding the
// q-quantile of the data-queue depths a port's data packets found (+Inf
// beyond 1024; 0 with no packets).
func (s PortStats) Quantile(q float64) float64 {
	if s.DataPackets == 0 {
		return 0
	}
	need := q * float64(s.DataPackets)
	var cum uint64
	for k, n := range s.Hist {
		cum += n
		if float64(cum) >= need {
			if k < len(depthBounds) {
				return depthBounds[k]
			}
			break
		}
	}
	return float64(1 << 62)
}

var (
	dIn        = prometheus.NewDesc("gswitch_expresspass_credits_received_total", "Credits classified on arrival at the port (sent on to a credit lane).", []string{"port"}, nil)
	dRefused   = prometheus.NewDesc("gswitch_expresspass_credits_refused_total", "Frames with an XP_CREDIT message received on the port that are not credits: malformed (dropped), not_credit_class or tagged (forwarded as data).", []string{"port", "why"}, nil)
	dForwarded = prometheus.NewDesc("gswitch_expresspass_credits_forwarded_total", "Credits that left on the port's credit lane.", []string{"port"}, nil)
	dDropped   = prometheus.NewDesc("gswitch_expresspass_credits_dropped_total", "Credits the port's credit lane dropped: the congestion signal of ExpressPass.", []string{"port"}, nil)
	dEarly     = prometheus.NewDesc("gswitch_expresspass_credits_dropped_early_total", "Of the credits the port's credit lane dropped, those dropped at random before it was full (credit_drop: random).", []string{"port"}, nil)
	dTokens    = prometheus.NewDesc("gswitch_expresspass_credit_tokens_bytes", "Bytes in the port's credit meter (credit_burst x 84, more while it makes up for time its worker ran late).", []string{"port"}, nil)
	dRate      = prometheus.NewDesc("gswitch_expresspass_credit_rate_bytes_per_second", "The port's credit rate in bytes/s: its rate x 84/1622.", []string{"port"}, nil)
	dDepth     = prometheus.NewDesc("gswitch_expresspass_data_queue_packets", "Depth of the port's data queues (packets) found by each arriving data packet.", []string{"port"}, nil)
	dDataDrops = prometheus.NewDesc("gswitch_expresspass_data_dropped_total", "Data packets the port's traffic manager dropped.", []string{"port"}, nil)
)

// Describe implements prometheus.Collector.
func (x *XP) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dIn, dRefused, dForwarded, dDropped, dEarly, dTokens, dRate, dDepth, dDataDrops} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (x *XP) Collect(ch chan<- prometheus.Metric) {
	for i, name := range x.names {
		s := x.Stats(i)
		ch <- prometheus.MustNewConstMetric(dIn, prometheus.CounterValue, float64(s.CreditsIn), name)
		for k, n := range s.Refused {
			ch <- prometheus.MustNewConstMetric(dRefused, prometheus.CounterValue, float64(n), name, refusedNames[k])
		}
		p := x.ports[i]
		if p == nil {
			continue
		}
		ch <- prometheus.MustNewConstMetric(dForwarded, prometheus.CounterValue, float64(s.CreditsForwarded), name)
		ch <- prometheus.MustNewConstMetric(dDropped, prometheus.CounterValue, float64(s.CreditsDropped), name)
		ch <- prometheus.MustNewConstMetric(dEarly, prometheus.CounterValue, float64(s.CreditsEarly), name)
		ch <- prometheus.MustNewConstMetric(dTokens, prometheus.GaugeValue, float64(s.TokenBytes), name)
		if l, ok := x.sw.CreditLane(i); ok {
			ch <- prometheus.MustNewConstMetric(dRate, prometheus.GaugeValue, float64(l.RateBits)/8, name)
		}
		buckets := make(map[float64]uint64, len(depthBounds))
		var cum uint64
		for k, b := range depthBounds {
			cum += s.Hist[k]
			buckets[b] = cum
		}
		ch <- prometheus.MustNewConstHistogram(dDepth, s.DataPackets, float64(s.DataDepthSum), buckets, name)
		ch <- prometheus.MustNewConstMetric(dDataDrops, prometheus.CounterValue, float64(s.DataDrops), name)
	}
}

var (
	_ mech.ControlHook = (*XP)(nil)
	_ mech.AdmitHook   = (*XP)(nil)
	_ mech.DroppedHook = (*XP)(nil)
)
