package pfc

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/sched"
	"github.com/gswitch/gswitch/wire"
)

// Name is the mechanism's key under a port's mechanisms:.
const Name = "pfc"

var (
	// metaCounted is PFC's scratch bit of pkt.Packet.Meta: the packet's
	// bytes were added to its ingress port's count of its priority when it
	// was queued, so its leaving takes them off.
	metaCounted = pkt.RegisterMeta(Name)
	// ReasonWatchdog drops the packets of a priority the watchdog stopped
	// honouring pauses for, with watchdog_action: drop.
	ReasonWatchdog = pkt.RegisterReason("pfc_watchdog")
	// ReasonHeadroom drops the packets of a lossless priority that would
	// take the bytes its ingress port holds of it past xoff + headroom:
	// the upstream went on sending past the pause (it ignores pauses).
	ReasonHeadroom = pkt.RegisterReason("pfc_headroom")
)

func init() {
	mech.Register(mech.Spec{
		Name:       Name,
		Summary:    "IEEE 802.1Qbb priority flow control: per-priority pause frames to the upstream above XOFF, resumed at XON, with a watchdog",
		Config:     defaultConfig,
		Schedulers: []string{"drr", "prio", "fifo"},
		SetsQueue:  true,
		Controls:   []uint8{uint8(wire.TypePFC)},
		New:        New,
	})
}

const (
	nprio = wire.PFCPriorities
	// idleTick is how often a worker's timers run with nothing paused
	// either way (wall: a loop bound of this machine).
	idleTick = int64(time.Second)
	// retryNs is how soon a port tries again to send a PFC frame it could
	// not send (no free frame, lane full, port down).
	retryNs = int64(100 * time.Microsecond)
	// minRefresh bounds how often a port refreshes its pauses, whatever
	// pause_quanta and the rate make half a pause.
	minRefresh = int64(time.Microsecond)
	// cacheLine pads the counts every egress worker writes away from the
	// fields around them.
	cacheLine = 64
)

// rxPrio is what a port's neighbour said of one priority: written by the
// Control hook (any receiving worker) and the port's egress worker, read
// by any goroutine.
type rxPrio struct {
	until  atomic.Int64 // when the pause in force ends (switch clock); 0: not paused
	since  atomic.Int64 // when the pause in force began (for the paused time; the watchdog keeps its own runs)
	lastRx atomic.Int64 // the last pause (time > 0) received, honoured or not
	// Counters.
	pausedNs, pausesRx, resumesRx, ignoredRx, trips, restores, wdDrops atomic.Uint64
}

// txPrio counts what a port sent its neighbour about one priority (the
// port's egress worker writes, any goroutine reads).
type txPrio struct{ xoff, refresh, xon atomic.Uint64 }

// run is the watchdog's view of one priority's pauses from the neighbour:
// its egress worker's own (reconcile), so that no other goroutine's
// stores can pair a pause with the start of another.
type run struct {
	start int64 // when the priority's run of pauses began (switch clock); 0: none
	brk   int64 // when the break in the run that is going on began; 0: none
}

// port is PFC's state on one port where it is enabled. Settings are fixed
// at New unless marked.
type port struct {
	idx    int
	name   string
	mac    [6]byte
	worker int // the port's egress worker: sends its PFC frames, runs its timers and egress hooks
	sch    sched.Scheduler
	view   *mech.PortView
	cfg    Config
	delay  int64 // the link's one-way delay (ns), for the thresholds derived from the rate

	// Classification of packets that came in here (priority), and of
	// packets leaving here (queue).
	fromPCP    bool
	dscpPrio   [64]uint8
	queueOf    [nprio]uint16 // egress queue of each priority
	prioQueues [nprio]uint64 // the same, as a mask of queues
	lossless   uint8         // bit p: priority p is lossless here

	quanta     uint16
	wdog       int64 // 0: watchdog off
	grace      int64 // a break in a run of pauses shorter than this does not end it (wdog / 4)
	restore    int64
	dropAction bool

	rate                atomic.Uint64 // line rate in bit/s (RateChanged)
	xoff, xon, headroom atomic.Uint64 // bytes (follow the rate where derived)

	// Ingress accounting: bytes of the packets that came in on this port,
	// by priority, held in any egress queue of the switch (any egress
	// worker adds and subtracts), and the packets dropped past xoff +
	// headroom. Every egress worker writes them per packet: the padding
	// keeps them off the lines of the settings read per packet (xoff,
	// xon, rate) and of the egress worker's own state (sent, nextRefresh),
	// which would otherwise bounce between the workers' caches with them.
	_       [cacheLine]byte
	held    [nprio]atomic.Int64
	hrDrops [nprio]atomic.Uint64
	_       [cacheLine]byte

	// Sending side (egress worker).
	sent        uint8 // priorities the neighbour was last told to pause
	pubSent     atomic.Uint32
	nextRefresh int64
	tx          [nprio]txPrio
	wd          [nprio]run // the watchdog's runs of received pauses (egress worker)
	framesSent  atomic.Uint64
	emitFailed  atomic.Uint64
	underflow   atomic.Uint64

	// Receiving side.
	rx         [nprio]rxPrio
	applied    atomic.Uint64 // queues of this port PFC paused
	storm      atomic.Uint32 // priorities whose pauses the watchdog ignores (egress worker writes)
	dropping   atomic.Uint32 // of those, the ones whose packets it drops
	framesRx   atomic.Uint64
	malformed  atomic.Uint64
	otherOpRx  atomic.Uint64 // MAC control frames that are not PFC (802.3x PAUSE)
	notEnabled atomic.Uint64
}

// PFC is the mechanism's instance in one switch.
type PFC struct {
	sw       mech.Switch
	ems      []mech.Emitter
	ports    []*port // nil where PFC is not enabled
	names    []string
	unclaim  []atomic.Uint64 // PFC frames received on ports where PFC does not run
	byWorker [][]int         // ports by egress worker
}

// New builds PFC for a switch.
func New(sw mech.Switch, ports []mech.Port) (mech.Instance, error) {
	b := &PFC{sw: sw, ports: make([]*port, len(ports)), names: make([]string, len(ports)),
		unclaim: make([]atomic.Uint64, len(ports)), byWorker: make([][]int, sw.Workers())}
	for w := 0; w < sw.Workers(); w++ {
		b.ems = append(b.ems, sw.Emitter(w))
	}
	for i, mp := range ports {
		b.names[i] = mp.Name
		if mp.Config == nil {
			continue
		}
		c := mp.Config.(*Config)
		if err := c.Validate(mp.Info()); err != nil {
			return nil, fmt.Errorf("port %s: %w", mp.Name, err)
		}
		if mp.Queues < 1 {
			return nil, fmt.Errorf("port %s: the scheduler has no queues", mp.Name)
		}
		s := &port{idx: i, name: mp.Name, worker: sw.EgressWorker(i), sch: sw.Scheduler(i), view: mp.View, cfg: *c, delay: mp.DelayNs,
			fromPCP: c.PriorityFrom == FromPCP, quanta: uint16(c.PauseQuanta), wdog: int64(c.Watchdog),
			grace: int64(c.Watchdog) / 4, restore: int64(c.WatchdogRestore), dropAction: c.WatchdogAction == ActionDrop}
		copy(s.mac[:], mp.MAC)
		for d := range s.dscpPrio {
			s.dscpPrio[d] = uint8(d >> 3)
		}
		for d, pr := range c.DSCPMap {
			s.dscpPrio[d] = uint8(pr)
		}
		nq := min(mp.Queues, 64)
		for pr := 0; pr < nprio; pr++ {
			q := pr % nq
			if v, ok := c.QueueMap[pr]; ok {
				q = v
			}
			s.queueOf[pr], s.prioQueues[pr] = uint16(q), 1<<uint(q)
		}
		if c.Priorities == nil {
			s.lossless = 0xff
		}
		for _, pr := range c.Priorities {
			s.lossless |= 1 << uint(pr)
		}
		s.setRate(mp.RateBits)
		b.ports[i] = s
		b.byWorker[s.worker] = append(b.byWorker[s.worker], i)
	}
	return b, nil
}

// setRate installs the port's rate and the thresholds derived from it
// (any goroutine).
func (s *port) setRate(rateBits uint64) {
	t := s.cfg.thresholds(rateBits, s.delay)
	s.headroom.Store(t.headroom)
	s.xoff.Store(t.xoff)
	s.xon.Store(t.xon)
	s.rate.Store(rateBits)
}

// priority is the priority of packet p as the port it came in on reads it
// (its priority_from and dscp_map).
func (s *port) priority(p *pkt.Packet) int {
	if s.fromPCP {
		return int(p.PCP & 7)
	}
	return int(s.dscpPrio[p.TOS>>2])
}

// classify returns p's priority and the PFC port p came in on (nil if PFC
// does not run there, and then the priority is as egress port e reads it).
func (b *PFC) classify(e *port, p *pkt.Packet) (int, *port) {
	var in *port
	if int(p.InPort) < len(b.ports) {
		in = b.ports[p.InPort]
	}
	if in != nil {
		return in.priority(p), in
	}
	return e.priority(p), nil
}

// Admit sets the packet's egress queue from its priority, drops it if the
// watchdog drops that priority here, and marks it for its ingress port's
// count if the priority is lossless there; it drops it instead if that
// count would pass the ingress port's xoff + headroom (egress worker).
func (b *PFC) Admit(v *mech.PortView, p *pkt.Packet, now int64) {
	s := b.ports[v.Index()]
	if p.Lane != pkt.LaneData {
		return
	}
	pr, in := b.classify(s, p)
	p.Queue = s.queueOf[pr]
	p.Meta &^= metaCounted
	if s.dropping.Load()&(1<<uint(pr)) != 0 {
		s.rx[pr].wdDrops.Add(1)
		p.DropWith(ReasonWatchdog)
		return
	}
	if in != nil && in.lossless&(1<<uint(pr)) != 0 {
		// The priority's headroom is spent: its upstream went on sending
		// after the pause should have stopped it (it ignores pauses). As a
		// switch does when a priority's headroom is exhausted, drop, so one
		// upstream's priority cannot take the shared buffer.
		if in.held[pr].Load()+int64(p.Len) > int64(in.xoff.Load()+in.headroom.Load()) {
			in.hrDrops[pr].Add(1)
			p.DropWith(ReasonHeadroom)
			return
		}
		p.Meta |= metaCounted
	}
}

// Enqueued adds a marked packet's bytes to its ingress port's count of its
// priority; crossing XOFF upward has the ingress port pause the priority
// upstream.
func (b *PFC) Enqueued(v *mech.PortView, p *pkt.Packet, now int64) {
	if p.Meta&metaCounted == 0 || p.Lane != pkt.LaneData {
		return
	}
	in := b.ports[p.InPort]
	n, l := in.held[in.priority(p)].Add(int64(p.Len)), int64(p.Len)
	if x := int64(in.xoff.Load()); n > x && n-l <= x {
		b.poke(b.ports[v.Index()].worker, in, now)
	}
}

// left takes a marked packet that left the port's queues (sent, evicted,
// flushed) off its ingress port's count; crossing XON downward has the
// ingress port resume the priority upstream (egress worker).
func (b *PFC) left(w int, p *pkt.Packet, now int64) {
	if p.Meta&metaCounted == 0 || p.Lane != pkt.LaneData || int(p.InPort) >= len(b.ports) {
		return
	}
	in := b.ports[p.InPort]
	if in == nil {
		return
	}
	h := &in.held[in.priority(p)]
	l := int64(p.Len)
	n := h.Add(-l)
	if n < 0 {
		h.Add(l) // cannot happen: every subtraction follows its addition
		in.underflow.Add(1)
		return
	}
	if x := int64(in.xon.Load()); n <= x && n+l > x {
		b.poke(w, in, now)
	}
}

// poke has port in compare its counts with its thresholds: at once if
// worker w, running the hook, is in's egress worker (which sends all of
// in's PFC frames, so they leave in the order of its decisions), else at
// that worker's next pass. Either way that worker's tick runs next pass,
// to take up the refresh or retry the decision set.
func (b *PFC) poke(w int, in *port, now int64) {
	if w == in.worker {
		b.sync(in, now)
	}
	b.sw.TickSoon(in.worker, b)
}

// Dropped: a packet refused at admission was never counted; one dropped
// later (evicted, flushed) leaves the queues.
func (b *PFC) Dropped(v *mech.PortView, p *pkt.Packet, r pkt.Reason, now int64) {
	if v.Admitting() {
		return
	}
	b.left(b.ports[v.Index()].worker, p, now)
}

// Dequeued takes the released packets off their ingress ports' counts.
func (b *PFC) Dequeued(v *mech.PortView, bt *mech.Batch) {
	w := b.ports[v.Index()].worker
	for i := range bt.Pkts {
		b.left(w, &bt.Pkts[i], bt.Now)
	}
}

// Egress drops the packets of the priorities the watchdog drops on this
// port that were queued before it tripped (their queues were resumed, so
// they leave at once, into the drop).
func (b *PFC) Egress(v *mech.PortView, bt *mech.Batch) {
	s := b.ports[v.Index()]
	d := s.dropping.Load()
	if d == 0 {
		return
	}
	for i := range bt.Pkts {
		p := &bt.Pkts[i]
		if p.Verdict != pkt.Forward || p.Lane != pkt.LaneData {
			continue
		}
		if pr, _ := b.classify(s, p); d&(1<<uint(pr)) != 0 {
			s.rx[pr].wdDrops.Add(1)
			p.DropWith(ReasonWatchdog)
		}
	}
}

// sync sends port s's neighbour what changed: a pause of every lossless
// priority whose count went above XOFF, a zero-time pause (resume) of
// every paused one that came back to XON, and, every half pause time, a
// refresh of those still paused; all in one frame. It returns when it
// wants to run again (egress worker of s).
func (b *PFC) sync(s *port, now int64) int64 {
	xoff, xon := int64(s.xoff.Load()), int64(s.xon.Load())
	var on, off uint8
	for pr := 0; pr < nprio; pr++ {
		bit := uint8(1) << uint(pr)
		if s.lossless&bit == 0 {
			continue
		}
		n := s.held[pr].Load()
		switch {
		case s.sent&bit == 0 && n > xoff:
			on |= bit
		case s.sent&bit != 0 && n <= xon:
			off |= bit
		}
	}
	if on|off == 0 && (s.sent == 0 || now < s.nextRefresh) {
		if s.sent != 0 {
			return s.nextRefresh
		}
		return math.MaxInt64
	}
	paused := (s.sent | on) &^ off
	m := wire.PFC{Enable: paused | off}
	for pr := 0; pr < nprio; pr++ {
		if paused&(1<<uint(pr)) != 0 {
			m.Time[pr] = s.quanta
		}
	}
	if !b.send(s, &m) {
		return now + retryNs
	}
	for pr := 0; pr < nprio; pr++ {
		bit := uint8(1) << uint(pr)
		switch {
		case on&bit != 0:
			s.tx[pr].xoff.Add(1)
		case off&bit != 0:
			s.tx[pr].xon.Add(1)
		case paused&bit != 0:
			s.tx[pr].refresh.Add(1)
		}
	}
	s.sent = paused
	s.pubSent.Store(uint32(paused))
	if paused == 0 {
		return math.MaxInt64
	}
	s.nextRefresh = now + max(wire.PauseNs(s.quanta, s.rate.Load())/2, minRefresh)
	return s.nextRefresh
}

// send sends m out of port s on its control lane (egress worker of s).
func (b *PFC) send(s *port, m *wire.PFC) bool {
	em := b.ems[s.worker]
	buf := em.Frame(s.idx, uint8(wire.TypePFC))
	if buf == nil {
		s.emitFailed.Add(1)
		return false
	}
	n, err := wire.BuildPFC(buf, s.mac, *m)
	if err != nil {
		em.Abort()
		s.emitFailed.Add(1)
		return false
	}
	if !em.Send(n, pkt.LaneControl) {
		s.emitFailed.Add(1)
		return false
	}
	s.framesSent.Add(1)
	return true
}

// Tick runs the timers of the ports whose egress worker is w: each port's
// frames to its neighbour (pauses, refreshes, resumes another worker's
// hook asked for), and the pauses its neighbour sent it (expiry,
// watchdog).
func (b *PFC) Tick(w int, now int64) int64 {
	next := now + idleTick
	for _, i := range b.byWorker[w] {
		s := b.ports[i]
		next = min(next, b.sync(s, now), b.reconcile(s, now))
	}
	return next
}

// RateChanged follows a change of a port's rate: the length of a quantum,
// and the thresholds derived from the rate. A port without a rate has no
// quantum, and at a rate where pause_quanta is too short a pause would
// lapse between refreshes: both refused.
func (b *PFC) RateChanged(i int, rateBits uint64) error {
	if i < 0 || i >= len(b.ports) || b.ports[i] == nil {
		return nil
	}
	if rateBits == 0 {
		return fmt.Errorf("pfc's pause times are quanta of 512 bit times at the port's rate, and an unlimited port has none: keep a rate")
	}
	s := b.ports[i]
	if err := s.cfg.checkPause(rateBits, s.delay); err != nil {
		return err
	}
	s.setRate(rateBits)
	return nil
}

var (
	_ mech.AdmitHook    = (*PFC)(nil)
	_ mech.EnqueuedHook = (*PFC)(nil)
	_ mech.DroppedHook  = (*PFC)(nil)
	_ mech.DequeuedHook = (*PFC)(nil)
	_ mech.EgressHook   = (*PFC)(nil)
	_ mech.ControlHook  = (*PFC)(nil)
	_ mech.TickHook     = (*PFC)(nil)
	_ mech.RateFollower = (*PFC)(nil)
	_ mech.Viewer       = (*PFC)(nil)
)
