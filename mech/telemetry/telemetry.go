package telemetry

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/tm/shaper"
	"github.com/gswitch/gswitch/wire/gsperf"
	"github.com/prometheus/client_golang/prometheus"
)

// Name is the mechanism's key under a port's mechanisms:.
const Name = "int"

// runsAfter is every other mechanism of the switch: int's Egress must see
// the batch as it leaves, after any stage that drops or rewrites frames
// (see doc.go, Where it runs).
var runsAfter = []string{"afq", "bfc", "ecn", "expresspass", "pfabric", "pfc", "sfc"}

func init() {
	mech.Register(mech.Spec{
		Name:    Name,
		Summary: "in-band network telemetry for HPCC: each gsperf data segment with an INT option gets the port's time, tx bytes, queue and rate as it leaves",
		Config:  func() any { return &Config{} },
		After:   runsAfter,
		New:     New,
	})
}

// Config is one port's INT config: int has no keys (`int: {}` enables it).
type Config struct{}

// Validate implements mech.Validator. Every port may run int; one without
// a rate writes rate 0, which HPCC cannot use (doc.go).
func (c *Config) Validate(mech.PortInfo) error { return nil }

// port is int's state on one port. tx, free and rem belong to the port's
// egress worker; the counters are atomics any goroutine reads. The
// padding keeps ports that different egress workers write on different
// cache lines.
type port struct {
	name    string
	tx      uint64 // wire bytes sent through the egress stage (wraps)
	free    int64  // when the port's line is free: the end of the last frame, ns
	rem     uint64 // what free holds beyond the ns, in 1/rate ns
	rate    uint64 // the rate rem is counted at
	written atomic.Uint64
	full    atomic.Uint64
	txPub   atomic.Uint64 // tx as of the last batch, for View
	_       [64]byte
}

// INT is the mechanism's instance in one switch.
type INT struct {
	ports []*port // nil where not enabled
}

// New builds int for a switch.
func New(sw mech.Switch, ports []mech.Port) (mech.Instance, error) {
	t := &INT{ports: make([]*port, len(ports))}
	for i, p := range ports {
		if p.Config == nil {
			continue
		}
		c, ok := p.Config.(*Config)
		if !ok {
			return nil, fmt.Errorf("port %s: int's config is a %T, not a *telemetry.Config", p.Name, p.Config)
		}
		if err := c.Validate(p.Info()); err != nil {
			return nil, fmt.Errorf("port %s: %w", p.Name, err)
		}
		t.ports[i] = &port{name: p.Name}
	}
	return t, nil
}

// wireBytes is what a frame of n bytes takes on the port's line (the
// shaper's count).
func wireBytes(n uint32) uint64 { return uint64(shaper.WireBytes(n)) }

// Egress writes the port's record into each data segment of the batch
// that carries an INT option with a free slot, and counts every frame's
// bytes (egress worker, after every other mechanism's Egress).
func (t *INT) Egress(v *mech.PortView, b *mech.Batch) {
	s := t.ports[v.Index()]
	if s == nil {
		return
	}
	rate := v.RateBits()
	if rate != s.rate {
		s.rate, s.rem = rate, 0
	}
	// after is the wire bytes of the batch still to leave behind the
	// packet at hand: on a line they would be queued when it starts.
	var after uint64
	for i := range b.Pkts {
		if b.Pkts[i].Verdict == pkt.Forward {
			after += wireBytes(b.Pkts[i].Len)
		}
	}
	var queued, written, full uint64
	depth := false
	for i := range b.Pkts {
		p := &b.Pkts[i]
		if p.Verdict != pkt.Forward {
			continue
		}
		w := wireBytes(p.Len)
		after -= w
		ts := s.start(b.Now, w, rate)
		if o, udp := option(b.Frame(p), p); o != nil {
			if !depth {
				bytes, pkts := v.Total()
				queued, depth = bytes+uint64(pkts)*shaper.Overhead, true
			}
			if push(o, udp, uint64(ts), s.tx, queued+after, rate) {
				written++
			} else {
				full++
			}
		}
		s.tx += w
	}
	if written != 0 {
		s.written.Add(written)
	}
	if full != 0 {
		s.full.Add(full)
	}
	s.txPub.Store(s.tx)
}

// start returns when a frame of w wire bytes, released at now, starts on
// the port's line of rate bit/s, and books the line for it: at now if the
// line is free, else when the frame before it ends. A port with no rate
// has no line to book: now.
func (s *port) start(now int64, w, rate uint64) int64 {
	if rate == 0 {
		return now
	}
	if s.free <= now {
		s.free, s.rem = now, 0
	}
	ts := s.free
	n := w*8e9 + s.rem // the frame's time on the line, in 1/rate ns
	s.free += int64(n / rate)
	s.rem = n % rate
	return ts
}

// option returns the INT option of frame, a data segment that carries one
// within its UDP datagram, whole in the frame, and the frame from its UDP
// header on; nil for any other frame.
func option(frame []byte, p *pkt.Packet) (gsperf.INT, []byte) {
	h := gsperf.InUDP(frame, p.Proto, p.L4Off)
	if len(h) <= gsperf.OffType || h[gsperf.OffType] != gsperf.TypeData {
		return nil, nil
	}
	o := h.INT()
	if o == nil {
		return nil, nil
	}
	// The whole datagram must be in the frame, and cover the option: the
	// checksum covers the datagram, so an option past it, or a datagram
	// cut short or in fragments, is not one whose checksum the stage can
	// keep right.
	udp := frame[p.L4Off:]
	n := int(binary.BigEndian.Uint16(udp[4:]))
	if n < gsperf.UDPHeaderLen+gsperf.Len+len(o) || n > len(udp) {
		return nil, nil
	}
	return o, udp
}

// push writes the next hop of o and updates the UDP checksum (udp[6:8])
// incrementally; false if every slot is written, changing nothing.
func push(o gsperf.INT, udp []byte, ts, tx, qlen, rate uint64) bool {
	n := o.Hops()
	at := gsperf.INTHeadLen + gsperf.INTHopLen*n
	if n >= o.Slots() || at+gsperf.INTHopLen > len(o) {
		return false
	}
	ck := binary.BigEndian.Uint16(udp[6:])
	slot := o[at : at+gsperf.INTHopLen]
	// The option starts 72 bytes into the datagram and its slots 24
	// bytes apart: the hop count shares the 16-bit word of the kind byte,
	// and the slot is whole words.
	var old uint32
	if ck != 0 {
		old = sum16(o[:2]) + sum16(slot)
	}
	o.Push(ts, tx, qlen, rate)
	if ck != 0 {
		binary.BigEndian.PutUint16(udp[6:], adjust(ck, old, sum16(o[:2])+sum16(slot)))
	}
	return true
}

// sum16 is the sum of b's big-endian 16-bit words (len(b) even, at most
// a few hundred bytes: no overflow).
func sum16(b []byte) uint32 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	return s
}

// fold is s in 16-bit one's complement (end-around carries).
func fold(s uint32) uint16 {
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// adjust is checksum ck after words summing to from became words summing
// to to: RFC 1624 eqn. 3, HC' = ~(~HC + ~m + m'), with a result of 0 sent
// as 0xffff (a UDP checksum of 0 means none).
func adjust(ck uint16, from, to uint32) uint16 {
	r := ^fold(uint32(^ck) + uint32(^fold(from)) + uint32(fold(to)))
	if r == 0 {
		return 0xffff
	}
	return r
}

// HopsWritten is the number of INT records port i wrote (any goroutine).
func (t *INT) HopsWritten(i int) uint64 {
	if s := t.port(i); s != nil {
		return s.written.Load()
	}
	return 0
}

// SlotsFull is the number of data segments with an INT option whose slots
// were all written when they left port i (any goroutine).
func (t *INT) SlotsFull(i int) uint64 {
	if s := t.port(i); s != nil {
		return s.full.Load()
	}
	return 0
}

// TxBytes is the wire bytes port i had sent through its egress stage at
// its last batch, the counter its records carry (any goroutine).
func (t *INT) TxBytes(i int) uint64 {
	if s := t.port(i); s != nil {
		return s.txPub.Load()
	}
	return 0
}

func (t *INT) port(i int) *port {
	if i < 0 || i >= len(t.ports) {
		return nil
	}
	return t.ports[i]
}

// View reports int's counters on port i (any goroutine).
func (t *INT) View(i int) map[string]any {
	s := t.port(i)
	if s == nil {
		return nil
	}
	return map[string]any{"hops_written": s.written.Load(), "slots_full": s.full.Load(), "tx_bytes": s.txPub.Load()}
}

// RateChanged accepts any rate: the records carry the rate the port has
// when each segment leaves (an unlimited port writes 0, which HPCC cannot
// use).
func (t *INT) RateChanged(int, uint64) error { return nil }

var (
	dWritten = prometheus.NewDesc("gswitch_int_hops_written_total", "INT records the port wrote into gsperf data segments as they left (HPCC).", []string{"port"}, nil)
	dFull    = prometheus.NewDesc("gswitch_int_slots_full_total", "gsperf data segments with an INT option whose slots were all written when they left the port: left alone.", []string{"port"}, nil)
)

// Describe implements prometheus.Collector.
func (t *INT) Describe(ch chan<- *prometheus.Desc) {
	ch <- dWritten
	ch <- dFull
}

// Collect implements prometheus.Collector.
func (t *INT) Collect(ch chan<- prometheus.Metric) {
	for _, s := range t.ports {
		if s == nil {
			continue
		}
		ch <- prometheus.MustNewConstMetric(dWritten, prometheus.CounterValue, float64(s.written.Load()), s.name)
		ch <- prometheus.MustNewConstMetric(dFull, prometheus.CounterValue, float64(s.full.Load()), s.name)
	}
}

var (
	_ mech.EgressHook      = (*INT)(nil)
	_ mech.Viewer          = (*INT)(nil)
	_ mech.RateFollower    = (*INT)(nil)
	_ mech.Validator       = (*Config)(nil)
	_ prometheus.Collector = (*INT)(nil)
)
