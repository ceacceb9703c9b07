package sfc

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"sync/atomic"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/wire"
)

// ReasonBadBTS drops a BTS from a fabric port that does not parse (package
// wire's rules): a host could not act on it either.
var ReasonBadBTS pkt.Reason

// metaBTS is SFC's scratch bit of pkt.Packet.Meta: the packet caused a BTS.
var metaBTS uint16

func init() {
	ReasonBadBTS = pkt.RegisterReason("bad_bts")
	metaBTS = pkt.RegisterMeta("sfc")
	mech.Register(mech.Spec{
		Name:     "sfc",
		Summary:  "Source Flow Control: back-to-sender pause frames from congested queues, Bloom suppression, near-source pause cache",
		Config:   func() any { return NewConfig() },
		Controls: []uint8{uint8(wire.TypeSFCBTS)},
		// The trigger reads the depth of the queue the packet takes:
		// the one BFC assigned, or the round AFQ's rank chose.
		After: []string{mech.QueueSetter, mech.RankSetter},
		New:   New,
	})
}

// Sources of a BTS (the term of the pause that won, Algorithm 1 lines
// 23-24), a label of gswitch_sfc_bts_sent_total.
const (
	srcQueue     = iota // the port's own queue: (qd - Q_Tg)/R
	srcCache            // the near-source cache: the remaining cached pause
	srcEstimator        // the incast estimator
	numSources
)

var sourceNames = [numSources]string{"queue", "cache", "estimator"}

// port is SFC on one port. The trigger state (bloom, estimator) belongs to
// the port's egress worker; the counters are atomics any goroutine reads.
type port struct {
	idx  int
	name string
	params
	host bool
	rate uint64 // bits/s; 0: unshaped (no trigger)
	nq   int

	bloom *bloom
	est   *estimator // nil unless the estimator is on

	sent                          [numSources]atomic.Uint64
	suppressed, drained, failed   atomic.Uint64
	cappedSent, cappedRx          atomic.Uint64
	cacheHits                     atomic.Uint64
	btsRx, cacheUpdates, btsLaned atomic.Uint64
	peak                          atomic.Uint64
	hist                          [len(histBounds) + 1]atomic.Uint64
	histSum                       atomic.Uint64
}

// histBounds are the upper bounds (bytes) of the queue-depth histogram: 0,
// then 1 KiB to 48 MiB in steps of x1.5 and x1.33 (1, 1.5, 2, 3, 4, 6 KiB...).
var histBounds = func() (b [33]uint64) {
	for k := 0; k < 16; k++ {
		b[1+2*k], b[2+2*k] = 1024<<k, 1536<<k
	}
	return b
}()

// SFC is the mechanism's instance in one switch.
type SFC struct {
	sw    mech.Switch
	mem   []byte
	id    uint16
	ports []*port // nil where not enabled
	roles []mech.Role
	macs  [][6]byte
	cache *cache // nil unless some port runs ingress_cache
	// caching: this switch fills its cache from BTS it forwards, because it
	// has local senders to answer (a host port) and a port in ingress_cache
	// mode (ToR-only caching, as in the paper's simulation).
	caching bool
}

// New builds SFC for a switch.
func New(sw mech.Switch, ports []mech.Port) (mech.Instance, error) {
	s := &SFC{sw: sw, mem: sw.Mem(), id: sw.ID(), ports: make([]*port, len(ports)), roles: make([]mech.Role, len(ports)),
		macs: make([][6]byte, len(ports))}
	entries, anyCache := 0, false
	for i, p := range ports {
		s.roles[i] = p.Role
		if len(p.MAC) == 6 {
			s.macs[i] = [6]byte(p.MAC)
		}
		if p.Config == nil {
			continue
		}
		c := p.Config.(*Config)
		r, err := c.resolve(p.RateBits)
		if err != nil {
			return nil, fmt.Errorf("port %s: %w", p.Name, err)
		}
		if !p.View.Exact() || !p.View.Classifies() {
			return nil, fmt.Errorf("port %s: sfc needs a scheduler that reports a queue's exact backlog and the queue of a packet; %s does not", p.Name, p.Scheduler)
		}
		nq := p.View.Queues()
		pt := &port{idx: i, name: p.Name, params: r, host: p.Role == mech.RoleHost, nq: nq,
			bloom: newBloom(nq, r.bloomBits, r.hashes, r.bloomReset)}
		pt.rate = p.RateBits
		if r.estimator {
			pt.est = newEstimator(r.estDsts, r.rtt, r.estRate)
		}
		s.ports[i] = pt
		if r.mode == ModeIngressCache {
			anyCache = true
			entries = max(entries, r.cache)
		}
	}
	if anyCache {
		s.cache = newCache(entries)
		for _, p := range ports {
			s.caching = s.caching || p.Role == mech.RoleHost
		}
	}
	return s, nil
}

// trigger reports whether the port's queue can trigger a BTS (it has a
// rate, hence thresholds).
func (p *port) trigger() bool { return p.qth > 0 }

// observe records the depth an arriving packet finds (peak, histogram).
func (p *port) observe(qd uint64) {
	if qd > p.peak.Load() {
		p.peak.Store(qd)
	}
	i := sort.Search(len(histBounds), func(i int) bool { return histBounds[i] >= qd })
	p.hist[i].Add(1)
	p.histSum.Add(qd)
}

// pauseNs is T_P = (qd - Q_Tg)/R in ns; 0 when the queue is at or below
// the target.
func pauseNs(qd, qtg, rateBits uint64) int64 {
	if qd <= qtg || rateBits == 0 {
		return 0
	}
	ns := float64(qd-qtg) * 8e9 / float64(rateBits)
	return int64(min(ns, math.MaxInt64/4))
}

// pauseUs is the pause carried in a BTS: ns rounded up to microseconds,
// saturating.
func pauseUs(ns int64) uint32 {
	us := (ns + 999) / 1000
	return uint32(min(us, math.MaxUint32))
}

// isControl reports whether p is a control message of ours (a BTS, an
// ExpressPass credit): SFC never triggers a BTS about one.
func isControl(p *pkt.Packet) bool { return p.Flags&pkt.FlagControl != 0 }

// flow reports whether p is a packet a BTS can name: IPv4 with a TCP or UDP
// header (the quote carries its ports, by which the sender finds the flow).
// ICMP, other protocols and non-first fragments name no flow to pause.
func flow(p *pkt.Packet) bool {
	return p.Flags&pkt.FlagIPv4 != 0 && p.L4Off != 0 && (p.Proto == pkt.ProtoTCP || p.Proto == pkt.ProtoUDP)
}

// Admit is SFC's ingress stage for the egress queue p is headed to
// (Algorithm 1, SfcIngress and SfcEgress; the port's egress worker):
//
//   - a BTS passing through goes on the port's control lane (the paper's
//     high-priority queue) and never triggers a BTS (lines 3-8);
//   - a data packet finds its queue's exact depth; if it exceeds Q_Th
//     (line 10), or the cache holds a live pause for its destination (line
//     11, packets of local senders in mode ingress_cache), or the estimator
//     asks for a pause, and the Bloom filter has not seen its flow this
//     period (line 13), a BTS goes back to its sender with the pause
//     max(cache time, estimate, (qd - Q_Tg)/R) (lines 20-25), at most the
//     port's max_pause. The packet itself always goes on.
func (s *SFC) Admit(v *mech.PortView, p *pkt.Packet, now int64) {
	i := v.Index()
	pt := s.ports[i]
	if isControl(p) {
		if p.Ctl == uint8(wire.TypeSFCBTS) {
			p.Lane = pkt.LaneControl
			pt.btsLaned.Add(1)
		}
		return
	}
	if p.Lane != pkt.LaneData || !flow(p) {
		return
	}
	q := v.QueueOf(p)
	if q < 0 || q >= pt.nq {
		return
	}
	qd, _ := v.Backlog(q)
	pt.observe(qd)
	if pt.mode != ModeIngress && pt.mode != ModeIngressCache {
		return
	}
	congested := pt.trigger() && qd > pt.qth
	var cacheNs, estNs int64
	if s.roles[p.InPort] == mech.RoleHost && (pt.mode == ModeIngressCache || pt.est != nil) {
		frame := s.mem[p.Addr : p.Addr+uint64(p.Len)]
		ip := frame[p.L3Off:]
		if pt.mode == ModeIngressCache && s.cache != nil {
			if cacheNs = s.cache.remaining(cacheKey([4]byte(ip[16:20]), p.DSCP()), now); cacheNs > 0 {
				pt.cacheHits.Add(1)
			}
		}
		if pt.est != nil {
			estNs = pt.est.observe(binary.BigEndian.Uint32(ip[16:20]), p.Len, now)
		}
	}
	if !congested && cacheNs <= 0 && estNs <= 0 {
		return
	}
	var queueNs int64
	if congested {
		queueNs = pauseNs(qd, pt.qtg, pt.rate)
	}
	s.signal(pt, p, q, qd, queueNs, cacheNs, estNs, now, s.sw.EgressWorker(i))
}

// signal suppresses or sends the BTS about p (egress worker of pt).
func (s *SFC) signal(pt *port, p *pkt.Packet, q int, qd uint64, queueNs, cacheNs, estNs, now int64, w int) {
	if pt.bloom.testAndSet(q, pt.bloom.key.Flow(s.mem, p), now) {
		pt.suppressed.Add(1)
		return
	}
	pause, src := queueNs, srcQueue
	if cacheNs > pause {
		pause, src = cacheNs, srcCache
	}
	if estNs > pause {
		pause, src = estNs, srcEstimator
	}
	if pause <= 0 {
		pt.drained.Add(1) // the queue fell to the target before the BTS was built
		return
	}
	if pause > pt.maxPause {
		pause = pt.maxPause // never more, whatever the queue, the cache or the estimator say
		pt.cappedSent.Add(1)
	}
	var flags uint16
	switch {
	case src == srcCache:
		flags = wire.BTSFromCache
	case src == srcEstimator:
		flags = wire.BTSFromEstimator
	case pt.host:
		flags = wire.BTSCacheable // congestion on a server-facing port (line 25)
	}
	m := wire.BTS{Flags: flags, Pause: pauseUs(pause), Switch: s.id, Port: uint16(pt.idx), Queue: uint16(q),
		Depth: uint32(min(qd, math.MaxUint32))}
	if s.send(w, p, pt.dscp, &m) {
		pt.sent[src].Add(1)
		p.Meta |= metaBTS
	} else {
		pt.failed.Add(1)
	}
}

// send builds the BTS about p's frame and queues it on the control lane of
// the port toward p's sender (worker w). The switch routes it: on an L3
// switch by its IPv4 destination (the original source), which also sets its
// MACs for the hop; on an L2 switch by the learnt port of its destination
// MAC (the original source MAC), from the MAC of the port p came in on.
func (s *SFC) send(w int, p *pkt.Packet, dscp uint8, m *wire.BTS) bool {
	em := s.sw.Emitter(w)
	buf := em.Frame(mech.Routed, uint8(wire.TypeSFCBTS))
	if buf == nil {
		return false
	}
	frame := s.mem[p.Addr : p.Addr+uint64(p.Len)]
	macs := wire.MACs{Dst: [6]byte(frame[6:12]), Src: s.macs[p.InPort]}
	n, err := wire.BuildBTS(buf, macs, dscp, frame, int(p.L3Off), int(p.L4Off), *m)
	if err != nil {
		em.Abort()
		return false
	}
	return em.Send(n, pkt.LaneControl)
}

// Control takes BTS frames received on fabric ports (receiving worker):
// each is checked (package wire: a BTS that does not parse is dropped as
// bad_bts), counted, and, when it is cacheable and this switch caches,
// recorded in the pause cache: cache[(src IP, DSCP of the quoted header)] =
// max(old, now + min(pause, max_pause)) (lines 3-6; the BTS's source IP is
// the congested receiver's; max_pause is the receiving port's). It is then
// forwarded toward its destination, the original sender, like any packet;
// a BTS is never consumed by a switch (the sender is the only one to act
// on it, and the ToR's cache only copies it).
func (s *SFC) Control(in int, b *mech.Batch) {
	for k := range b.Pkts {
		p := &b.Pkts[k]
		if p.Ctl != uint8(wire.TypeSFCBTS) || p.Verdict != pkt.Forward {
			continue
		}
		ip, msg, err := wire.ParseIPv4UDP(b.Frame(p))
		if err != nil || ip.DstPort != wire.BTSPort {
			p.DropWith(ReasonBadBTS)
			continue
		}
		m, err := wire.ParseBTS(msg)
		if err != nil {
			p.DropWith(ReasonBadBTS)
			continue
		}
		pt := s.ports[in]
		if pt == nil {
			continue
		}
		pt.btsRx.Add(1)
		pause := int64(m.Pause) * 1000
		if pause > pt.maxPause {
			pause = pt.maxPause // a neighbour's (or a forger's) hour is not cached
			pt.cappedRx.Add(1)
		}
		if m.Flags&wire.BTSCacheable == 0 || !s.caching || pt.mode != ModeIngressCache {
			continue
		}
		end := b.Now + pause
		if s.cache.update(cacheKey(ip.Src, m.Quote[1]>>2), end, b.Now) {
			pt.cacheUpdates.Add(1)
		}
	}
}

// Dequeued is the trigger of mode egress ("Egress BTS", section 2.3): a
// packet leaving a queue that is still above Q_Th sends its sender a BTS
// with the pause (qd - Q_Tg)/R for the depth it leaves behind, at most one
// per dequeued packet, suppressed by the same Bloom filter (egress worker).
func (s *SFC) Dequeued(v *mech.PortView, b *mech.Batch) {
	pt := s.ports[v.Index()]
	if pt.mode != ModeEgress || !pt.trigger() {
		return
	}
	for k := range b.Pkts {
		p := &b.Pkts[k]
		if p.Verdict != pkt.Forward || isControl(p) || !flow(p) || int(p.Queue) >= pt.nq {
			continue
		}
		qd, _ := v.Backlog(int(p.Queue))
		if qd <= pt.qth {
			continue
		}
		s.signal(pt, p, int(p.Queue), qd, pauseNs(qd, pt.qtg, pt.rate), 0, 0, b.Now, b.Worker)
	}
}

var (
	_ mech.AdmitHook    = (*SFC)(nil)
	_ mech.ControlHook  = (*SFC)(nil)
	_ mech.DequeuedHook = (*SFC)(nil)
)
