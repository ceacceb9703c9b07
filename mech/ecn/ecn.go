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
		Summary: "ECN step marking (DCTCP): packets arriving at a queue deeper than K are marked CE",
		Config:  func() any { return &Config{} },
		// It reads the queue the packet takes: the one BFC assigns, or
		// the calendar round of AFQ's rank.
		After: []string{mech.QueueSetter, mech.RankSetter},
		New:   New,
	})
}

// Config is one port's ECN config.
type Config struct {
	// K is the marking threshold in bytes (0: k_packets, or the default
	// rate x rtt / 7, at least MinDefaultK).
	K units.Size `yaml:"k"`
	// KPackets is the marking threshold in packets (0: K in bytes).
	KPackets int `yaml:"k_packets"`
	// RTT is the round-trip time of the default K (0: the port's rtt, else
	// DefaultRTT).
	RTT units.Duration `yaml:"rtt"`
}

// Validate implements mech.Validator. It sets RTT to the port's when it
// is 0.
func (c *Config) Validate(p mech.PortInfo) error {
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
	if c.RTT < 0 || c.RTT.D() > time.Second {
		return fmt.Errorf("rtt: %s out of range (0 = the port's rtt, up to 1s)", c.RTT)
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
// belongs to the egress worker; the counters are atomics.
type port struct {
	name    string
	k       atomic.Uint64 // threshold in bytes (kPkts == 0)
	kPkts   uint32        // threshold in packets; 0: in bytes
	derived bool          // k follows the rate
	rtt     time.Duration
	marking bool // Admit marked the packet it saw; its Enqueued counts it
	marked  atomic.Uint64
	notECT  atomic.Uint64
}

// ECN is the mechanism's instance in one switch.
type ECN struct {
	mem   []byte
	ports []*port // nil where not enabled
}

// New builds ECN for a switch.
func New(sw mech.Switch, ports []mech.Port) (mech.Instance, error) {
	e := &ECN{mem: sw.Mem(), ports: make([]*port, len(ports))}
	for i, p := range ports {
		if p.Config == nil {
			continue
		}
		c := p.Config.(*Config)
		if err := c.Validate(p.Info()); err != nil {
			return nil, fmt.Errorf("port %s: %w", p.Name, err)
		}
		s := &port{name: p.Name, kPkts: uint32(c.KPackets), rtt: c.RTT.D()}
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
	return e, nil
}

// Admit marks the packet CE if the queue it takes holds more than K
// (egress worker).
func (e *ECN) Admit(v *mech.PortView, p *pkt.Packet, now int64) {
	s := e.ports[v.Index()]
	s.marking = false
	if p.Lane != pkt.LaneData || p.Flags&(pkt.FlagIPv4|pkt.FlagIPv6) == 0 {
		return
	}
	q := v.QueueOf(p)
	if q < 0 {
		return
	}
	bytes, pkts := v.Backlog(q)
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
// queued.
func (e *ECN) Enqueued(v *mech.PortView, p *pkt.Packet, now int64) {
	if s := e.ports[v.Index()]; s.marking {
		s.marked.Add(1)
		s.marking = false
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
// but were not ECN-capable (any goroutine).
func (e *ECN) NotCapable(i int) uint64 {
	if i < 0 || i >= len(e.ports) || e.ports[i] == nil {
		return 0
	}
	return e.ports[i].notECT.Load()
}

// RateChanged recomputes a K derived from the rate; a K the config sets
// stays. An unlimited rate leaves a derived K nothing to follow.
func (e *ECN) RateChanged(i int, rateBits uint64) error {
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
	dMarked   = prometheus.NewDesc("gswitch_ecn_marked_total", "Packets the port's ECN step marking marked CE (counted once queued).", []string{"port"}, nil)
	dNotECT   = prometheus.NewDesc("gswitch_ecn_not_capable_total", "Packets that found the port's queue above K but were not ECN-capable: left unmarked, not dropped.", []string{"port"}, nil)
	dKBytes   = prometheus.NewDesc("gswitch_ecn_threshold_bytes", "The port's marking threshold K in bytes.", []string{"port"}, nil)
	dKPackets = prometheus.NewDesc("gswitch_ecn_threshold_packets", "The port's marking threshold K in packets (k_packets).", []string{"port"}, nil)
)

// Describe implements prometheus.Collector.
func (e *ECN) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dMarked, dNotECT, dKBytes, dKPackets} {
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
