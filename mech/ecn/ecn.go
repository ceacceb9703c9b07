package ecn

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/units"
	"github.com/prometheus/client_golang/prometheus"
)

// Name is the mechanism's key under a port's mechanisms:.
const Name = "ecn"

// Defaults and bounds of the config.
const (
	// DefaultRTT is the RTT of the default K when the port has none (the
	// config's default port rtt).
	DefaultRTT = 200 * time.Microsecond
	// MinDefaultK is the least default K in bytes: two full frames.
	MinDefaultK = 2 * 1514
	// MaxK bounds k (bytes) and MaxKPackets k_packets.
	MaxK        = 1 << 30
	MaxKPackets = 1 << 20
)

func init() {
	mech.Register(mech.Spec{
		Name:    Name,
		Summary: "ECN marking: DCTCP's step at K (mode step), or RED's probability between kmin and kmax (mode red)",
		Config:  func() any { return &Config{} },
		// It reads the queue the packet takes: the one BFC assigns, or
		// the calendar round of AFQ's rank.
		After: []string{mech.QueueSetter, mech.RankSetter},
		New:   New,
	})
}

// Config is one port's ECN config. K, KPackets and RTT are mode step's
// keys; KMin to Weight mode red's (red.go).
type Config struct {
	// Mode is step (the default, also for "") or red.
	Mode string `yaml:"mode"`
	// K is the marking threshold in bytes (0: k_packets, or the default
	// rate x rtt / 7, at least MinDefaultK).
	K units.Size `yaml:"k"`
	// KPackets is the marking threshold in packets (0: K in bytes).
	KPackets int `yaml:"k_packets"`
	// RTT is the round-trip time of the default K (0: the port's rtt, else
	// DefaultRTT).
	RTT units.Duration `yaml:"rtt"`
	// KMin is RED's lower threshold in bytes (0: KMinPackets, or
	// DefaultKMin).
	KMin units.Size `yaml:"kmin"`
	// KMax is RED's upper threshold in bytes (0: KMaxPackets, or
	// DefaultKMax).
	KMax units.Size `yaml:"kmax"`
	// KMinPackets is RED's lower threshold in packets (0: KMin in bytes).
	KMinPackets int `yaml:"kmin_packets"`
	// KMaxPackets is RED's upper threshold in packets (0: KMax in bytes).
	KMaxPackets int `yaml:"kmax_packets"`
	// PMax is RED's marking probability at KMax, in (0, 1] (0: DefaultPMax).
	PMax float64 `yaml:"pmax"`
	// Weight is RED's EWMA weight w_q of the averaged depth, in [0, 1)
	// (0: the instantaneous depth).
	Weight float64 `yaml:"weight"`
}

// Validate implements mech.Validator. In mode step it sets RTT to the
// port's when it is 0; in mode red it fills in RED's defaults (red.go).
func (c *Config) Validate(p mech.PortInfo) error {
	switch c.Mode {
	case "", ModeStep:
	case ModeRED:
		return c.validateRED(p)
	default:
		return fmt.Errorf("mode: %q is not a mode (use step, DCTCP's threshold K, or red, RED's probability between kmin and kmax)", c.Mode)
	}
	if err := c.refuseREDKeys(); err != nil {
		return err
	}
	if c.K != 0 && c.KPackets != 0 {
		return fmt.Errorf("k: %s and k_packets: %d are both set (set one: k in bytes, or k_packets in packets)", c.K, c.KPackets)
	}
	if c.K > MaxK {
		return fmt.Errorf("k: %s is more than 1GiB", c.K)
	}
	if p.BufferBytes != 0 && uint64(c.K) >= p.BufferBytes {
		return fmt.Errorf("k: %s is not below the port's buffer (%s): no packet would ever be marked (lower k, or raise the port's buffer)", c.K, units.Size(p.BufferBytes))
	}
	if c.KPackets < 0 || c.KPackets > MaxKPackets {
		return fmt.Errorf("k_packets: %d out of range [0, %d]", c.KPackets, MaxKPackets)
	}
	// rtt is on this machine's clock here (x K, like a port's rtt it may
	// default to): its bound is a second of the fabric's time.
	if c.RTT < 0 || c.RTT.D() > p.Timescale.Wall(time.Second) {
		return fmt.Errorf("rtt: %s out of range (0 = the port's rtt, up to 1s of the fabric's time)", p.Timescale.Fabric(c.RTT.D()))
	}
	if c.RTT == 0 {
		c.RTT = units.Duration(DefaultRTT)
		if p.RTTNs > 0 {
			c.RTT = units.Duration(p.RTTNs)
		}
	}
	if c.K == 0 && c.KPackets == 0 && p.Name != "" && p.RateBits == 0 {
		return fmt.Errorf("the port has no rate, so no default K (rate x rtt / 7): set k (bytes) or k_packets, or the port's rate")
	}
	return nil
}

// DefaultK is the default threshold in bytes of a port of rateBits with
// round trip rtt: DCTCP's bound C x RTT / 7, at least MinDefaultK.
func DefaultK(rateBits uint64, rtt time.Duration) uint64 {
	k := uint64(float64(rateBits) / 8 * rtt.Seconds() / 7)
	return max(k, MinDefaultK)
}

// port is ECN's state on one port. k is written by RateChanged (any
// goroutine) and read by the egress worker; marking, the pending mark,
// belongs to the egress worker; the counters are atomics. red is mode
// red's state (nil in mode step).
type port struct {
	name    string
	k       atomic.Uint64 // threshold in bytes (kPkts == 0)
	kPkts   uint32        // threshold in packets; 0: in bytes
	derived bool          // k follows the rate
	rtt     time.Duration
	marking bool // Admit marked the packet it saw; its Enqueued counts it
	marked  atomic.Uint64
	notECT  atomic.Uint64
	depth   depthHist // the depths arriving packets found (gswitch_ecn_queue_packets)
	red     *red
}

// ECN is the mechanism's instance in one switch.
type ECN struct {
	mem   []byte
	ports []*port // nil where not enabled
}

// New builds ECN for a switch. The instance is an *ECN, or, when a port
// runs RED with a weight (whose average decays over the time its queues
// idle), an *ECN with the Dequeued hook that sees them go idle: Of
// returns the *ECN of either.
func New(sw mech.Switch, ports []mech.Port) (mech.Instance, error) {
	e := &ECN{mem: sw.Mem(), ports: make([]*port, len(ports))}
	averages := false
	for i, p := range ports {
		if p.Config == nil {
			continue
		}
		c := p.Config.(*Config)
		if err := c.Validate(p.Info()); err != nil {
			return nil, fmt.Errorf("port %s: %w", p.Name, err)
		}
		s := &port{name: p.Name, kPkts: uint32(c.KPackets), rtt: c.RTT.D()}
		if c.Mode == ModeRED {
			s.red = newRED(c, &p)
			averages = averages || s.red.w > 0
			e.ports[i] = s
			continue
		}
		switch {
		case c.KPackets != 0:
		case c.K != 0:
			s.k.Store(uint64(c.K))
		default:
			s.derived = true
			s.k.Store(DefaultK(p.RateBits, s.rtt))
		}
		e.ports[i] = s
	}
	if averages {
		return averaging{e}, nil
	}
	return e, nil
}

// Of returns the *ECN of an instance New built (nil for another
// mechanism's).
func Of(inst mech.Instance) *ECN {
	switch e := inst.(type) {
	case *ECN:
		return e
	case averaging:
		return e.ECN
	}
	return nil
}

// Admit marks the packet CE if the queue it takes holds more than K (mode
// step), or as RED chooses (mode red: admitRED) (egress worker).
func (e *ECN) Admit(v *mech.PortView, p *pkt.Packet, now int64) {
	s := e.ports[v.Index()]
	s.marking = false
	if s.red != nil {
		s.red.pendQ = -1
	}
	if p.Lane != pkt.LaneData || p.Flags&(pkt.FlagIPv4|pkt.FlagIPv6) == 0 {
		return
	}
	q := v.QueueOf(p)
	if q < 0 {
		return
	}
	bytes, pkts := v.Backlog(q)
	s.depth.add(pkts)
	if s.red != nil {
		e.admitRED(s, p, q, bytes, pkts, v.RateBits(), now)
		return
	}
	if s.kPkts != 0 {
		if pkts <= s.kPkts {
			return
		}
	} else if bytes <= s.k.Load() {
		return
	}
	switch p.TOS & 3 {
	case 0:
		s.notECT.Add(1)
	case 3: // already CE
	default:
		s.marking = pkt.MarkCE(e.mem[p.Addr:p.Addr+uint64(p.Len)], p)
	}
}

// Enqueued counts the mark of the packet Admit marked, now that it is
// queued; in mode red with a weight it notes that the packet's queue is
// busy (see averaging.Dequeued).
func (e *ECN) Enqueued(v *mech.PortView, p *pkt.Packet, now int64) {
	s := e.ports[v.Index()]
	if s.marking {
		s.marked.Add(1)
		s.marking = false
	}
	if r := s.red; r != nil && r.pendQ >= 0 {
		r.busy |= 1 << uint(r.pendQ)
	}
}

// Marked is the number of packets port i marked CE and queued (any goroutine).
func (e *ECN) Marked(i int) uint64 {
	if i < 0 || i >= len(e.ports) || e.ports[i] == nil {
		return 0
	}
	return e.ports[i].marked.Load()
}

// NotCapable is the number of packets that found port i's queue above K
// (mode step), or that RED chose to mark (mode red, where they were
// dropped), but were not ECN-capable (any goroutine).
func (e *ECN) NotCapable(i int) uint64 {
	if i < 0 || i >= len(e.ports) || e.ports[i] == nil {
		return 0
	}
	return e.ports[i].notECT.Load()
}

// RateChanged recomputes a K derived from the rate; a K the config sets
// stays. An unlimited rate leaves a derived K nothing to follow, and RED's
// idle decay (weight > 0) nothing to count idle time in.
func (e *ECN) RateChanged(i int, rateBits uint64) error {
	if i >= 0 && i < len(e.ports) && e.ports[i] != nil && e.ports[i].red != nil {
		return e.ports[i].red.rateChanged(rateBits)
	}
	if i < 0 || i >= len(e.ports) || e.ports[i] == nil || !e.ports[i].derived {
		return nil
	}
	if rateBits == 0 {
		return fmt.Errorf("ecn's K is rate x rtt / 7 on this port, and an unlimited port has no rate: set k or k_packets in the config first")
	}
	e.ports[i].k.Store(DefaultK(rateBits, e.ports[i].rtt))
	return nil
}

// View reports ECN's threshold on port i and its counters (any goroutine).
func (e *ECN) View(i int) map[string]any {
	if i < 0 || i >= len(e.ports) || e.ports[i] == nil {
		return nil
	}
	s := e.ports[i]
	v := map[string]any{"marked": s.marked.Load(), "not_capable": s.notECT.Load()}
	if s.red != nil {
		s.red.view(v)
		return v
	}
	if s.kPkts != 0 {
		v["k_packets"] = s.kPkts
	} else {
		v["k_bytes"] = s.k.Load()
		v["k_from_rate"] = s.derived
		if s.derived {
			v["rtt_us"] = s.rtt.Microseconds()
		}
	}
	return v
}

var (
	dMarked   = prometheus.NewDesc("gswitch_ecn_marked_total", "Packets the port's ECN marking (step or RED) marked CE, or chose to mark already CE in mode red (counted once queued).", []string{"port"}, nil)
	dNotECT   = prometheus.NewDesc("gswitch_ecn_not_capable_total", "Packets chosen for a mark that were not ECN-capable: above K and left unmarked (mode step), or dropped (mode red, also in gswitch_ecn_red_dropped_total).", []string{"port"}, nil)
	dKBytes   = prometheus.NewDesc("gswitch_ecn_threshold_bytes", "The port's marking threshold K in bytes.", []string{"port"}, nil)
	dKPackets = prometheus.NewDesc("gswitch_ecn_threshold_packets", "The port's marking threshold K in packets (k_packets).", []string{"port"}, nil)
)

// Describe implements prometheus.Collector.
func (e *ECN) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dMarked, dNotECT, dDepth, dKBytes, dKPackets, dREDDropped, dKMinBytes, dKMaxBytes, dKMinPackets, dKMaxPackets, dAvgBytes, dAvgPackets} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (e *ECN) Collect(ch chan<- prometheus.Metric) {
	for _, s := range e.ports {
		if s == nil {
			continue
		}
		ch <- prometheus.MustNewConstMetric(dMarked, prometheus.CounterValue, float64(s.marked.Load()), s.name)
		ch <- prometheus.MustNewConstMetric(dNotECT, prometheus.CounterValue, float64(s.notECT.Load()), s.name)
		ch <- s.depth.metric(s.name)
		if s.red != nil {
			s.red.collect(ch, s.name)
			continue
		}
		if s.kPkts != 0 {
			ch <- prometheus.MustNewConstMetric(dKPackets, prometheus.GaugeValue, float64(s.kPkts), s.name)
		} else {
			ch <- prometheus.MustNewConstMetric(dKBytes, prometheus.GaugeValue, float64(s.k.Load()), s.name)
		}
	}
}

var (
	_ mech.AdmitHook    = (*ECN)(nil)
	_ mech.EnqueuedHook = (*ECN)(nil)
	_ mech.Viewer       = (*ECN)(nil)
	_ mech.RateFollower = (*ECN)(nil)
)
