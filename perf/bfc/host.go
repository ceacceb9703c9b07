// Package bfc is the host side of Backpressure Flow Control for gsperf
// (gsperf client -mode bfc): what the paper's source NIC does (section
// 3.3.2).
//
// # Model
//
// The host is the first upstream hop of its flows. It gives every active
// flow a queue id of its own from a pool (1..Queues; shared only when more
// flows are active than ids), writes it in each segment's gsperf header
// (the mechanism field, wire.MechBFC), and honours the PAUSE, RESUME and
// BITMAP frames its switch sends back naming those ids: a paused flow sends
// nothing until it is resumed. The frames are link-local Ethernet (EtherType
// 0x88B6, package wire); the host reads them on an AF_PACKET socket in its
// namespace, since they are not IP. Queue id 0 means "every queue": a
// switch port in single mode pauses the whole host, as PFC would.
//
// Each queue follows the newest frame about it (serial numbers, as the
// switch does); a BITMAP sets every queue. If the switch refreshes no pause
// for Watchdog (it sends a bitmap every period while anything is paused),
// the host resumes everything and counts it: no frame can hold a flow
// longer than that unless the switch keeps saying so.
//
// # What it accepts
//
// Only the host's own switch may pause it, and only the ids it handed out.
// A frame is taken if all of these hold; every other is refused and
// counted (Stats):
//
//   - it was received, not sent, by this host (the socket also sees the
//     host's own outgoing frames), on the interface the first accepted
//     frame came in on (Foreign);
//   - it is addressed to 01:80:C2:00:00:0E, the link-local group no bridge
//     or gswitch forwards, so it comes from the device at the other end
//     of the host's link (Foreign);
//   - it comes from the switch's MAC: Config.Switch, else the host's
//     default gateway's (Config.Gateway, the kernel's ARP entry, in an L3
//     fabric), else the source of the first frame that parses (Foreign);
//   - it parses as a PAUSE, RESUME or BITMAP (package wire) (Malformed);
//   - a PAUSE or RESUME names an id this host hands out (0, every id, or
//     1..Queues); a BITMAP's bits beyond Queues are ignored (BadQueue).
//
// The flows' windows are capped at one bandwidth-delay product (the
// paper's NIC cap, App. A.8), so a host whose pauses are lost or late
// cannot flood its switch. Flows start at the line rate when the client is
// paced (-pace).
//
// # Goroutines
//
// A Host is shared by all the flows of a client: Paused and the gates are
// safe for concurrent use; the listener goroutine applies frames; FlowHook
// runs on each flow's goroutine.
package bfc

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gswitch/gswitch/perf/linklocal"
	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/wire"
)

// Default timers of a host. Both are protocol timers (a fabric's time):
// gsperf multiplies them by its timescale. The listener's read timeout
// (1 ms, the watchdog's tick) is this machine's: it only bounds how late
// the watchdog looks.
const (
	DefaultWatchdog = 200 * time.Millisecond
	DefaultPoll     = 2 * time.Millisecond
)

// Config configures a host.
type Config struct {
	Queues   int           // queue ids handed to flows: 1..Queues (default 128, at most 4095)
	Watchdog time.Duration // resume everything nobody refreshed this long (default DefaultWatchdog)
	Poll     time.Duration // a paused flow looks again this often even if no resume wakes it (default DefaultPoll)
	// Deaf makes a host without BFC (the paper's "BFC - NIC", App. A.8):
	// no queue id in the header (so switches never pause it), nothing
	// listened to; only the one-BDP window remains.
	Deaf bool
	// Switch is the MAC of the switch port the host's link ends on: frames
	// from any other source are refused. Zero: Gateway's answer, else the
	// source of the first frame that parses.
	Switch [6]byte
	// Gateway, if set, returns the MAC of the host's default gateway
	// (GatewayMAC reads the kernel's tables), asked when the first frame
	// arrives and Switch is zero.
	Gateway func() ([6]byte, bool)
}

func (c *Config) defaults() error {
	if c.Queues == 0 {
		c.Queues = 128
	}
	if c.Queues < 1 || c.Queues > wire.MaxQueues-1 {
		return fmt.Errorf("queues: %d (1 to %d)", c.Queues, wire.MaxQueues-1)
	}
	if c.Watchdog == 0 {
		c.Watchdog = DefaultWatchdog
	}
	if c.Poll == 0 {
		c.Poll = DefaultPoll
	}
	if c.Watchdog < 0 || c.Poll < 0 {
		return errors.New("watchdog and poll must be positive")
	}
	return nil
}

// Stats counts what the host received and did.
type Stats struct {
	Pauses, Resumes, Bitmaps uint64 // frames from the switch received and applied or not
	Stale, Malformed         uint64 // frames (or bitmaps' parts) older than the state, frames that do not parse
	Foreign                  uint64 // refused: not from the switch at the end of the host's link (see the package doc)
	BadQueue                 uint64 // refused: a PAUSE or RESUME of an id the host does not hand out, or a BITMAP with such bits
	WatchdogResumes          uint64 // times the watchdog resumed everything
	Held                     uint64 // segments a pause held back (counted each time a flow asked)
	MostPaused               int    // the most queue ids paused at once
}

// Refused is the number of frames refused, for every reason.
func (s Stats) Refused() uint64 { return s.Malformed + s.Foreign + s.BadQueue }

func (s Stats) String() string {
	return fmt.Sprintf("%d PAUSE, %d RESUME, %d BITMAP received (%d stale, %d malformed); refused: %d not from the switch, %d naming ids not ours; %d watchdog resumes; %d times a segment was held; at most %d queues paused at once",
		s.Pauses, s.Resumes, s.Bitmaps, s.Stale, s.Malformed, s.Foreign, s.BadQueue, s.WatchdogResumes, s.Held, s.MostPaused)
}

// Host is a gsperf client's BFC state.
type Host struct {
	cfg         Config
	paused      [wire.MaxQueues / 64]atomic.Uint64 // bit q: queue id q is paused (q = 0: all)
	lastRefresh atomic.Int64                       // unix ns of the last PAUSE or BITMAP applied

	// Listener goroutine only.
	qseq   [wire.MaxQueues]uint64 // 1<<32 | seq of the newest frame applied per queue; 0 none
	sender uint32
	npaus  int
	armed  bool           // the watchdog found no refresh at the last tick
	peer   linklocal.Peer // whom frames are taken from

	mu     sync.Mutex
	free   []uint16                     // ids not in use, least recently released first
	users  [wire.MaxQueues]int          // flows on each id
	wakers map[uint16]map[uint64]func() // id -> flow -> its wake

	stats struct {
		pauses, resumes, bitmaps, stale, malformed, watchdog, held atomic.Uint64
		foreign, badQueue                                          atomic.Uint64
		most                                                       atomic.Int64
	}
	listener *linklocal.Listener
}

// New returns a host that listens to nothing yet (Listen, or Handle in tests).
func New(c Config) (*Host, error) {
	if err := c.defaults(); err != nil {
		return nil, err
	}
	h := &Host{cfg: c, wakers: map[uint16]map[uint64]func(){}, peer: linklocal.NewPeer(wire.LinkLocalDst, c.Switch, c.Gateway)}
	for q := 1; q <= c.Queues; q++ {
		h.free = append(h.free, uint16(q))
	}
	return h, nil
}

// Paused reports whether queue id q may not send now (any goroutine).
func (h *Host) Paused(q uint16) bool {
	q &= wire.MaxQueues - 1
	return h.paused[0].Load()&1 != 0 || h.paused[q/64].Load()&(1<<(q%64)) != 0
}

// Stats returns the counters (any goroutine).
func (h *Host) Stats() Stats {
	return Stats{Pauses: h.stats.pauses.Load(), Resumes: h.stats.resumes.Load(), Bitmaps: h.stats.bitmaps.Load(),
		Stale: h.stats.stale.Load(), Malformed: h.stats.malformed.Load(), Foreign: h.stats.foreign.Load(), BadQueue: h.stats.badQueue.Load(),
		WatchdogResumes: h.stats.watchdog.Load(), Held: h.stats.held.Load(), MostPaused: int(h.stats.most.Load())}
}

// acquire hands a flow a queue id: one no flow uses, the least recently
// released first (its pause state is the likeliest to be over), else the
// id with the fewest flows.
func (h *Host) acquire(flow uint64, wake func()) uint16 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var q uint16
	if len(h.free) > 0 {
		q = h.free[0]
		h.free = h.free[1:]
	} else {
		q = 1
		for i := 2; i <= h.cfg.Queues; i++ {
			if h.users[i] < h.users[q] {
				q = uint16(i)
			}
		}
	}
	h.users[q]++
	if h.wakers[q] == nil {
		h.wakers[q] = map[uint64]func(){}
	}
	h.wakers[q][flow] = wake
	return q
}

func (h *Host) release(q uint16, flow uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.wakers[q], flow)
	if h.users[q]--; h.users[q] == 0 {
		h.free = append(h.free, q)
	}
}

// wake wakes the flows of queue id q (all flows for q < 0).
func (h *Host) wake(q int) {
	h.mu.Lock()
	var fs []func()
	for id, m := range h.wakers {
		if q < 0 || int(id) == q {
			for _, f := range m {
				fs = append(fs, f)
			}
		}
	}
	h.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// FlowHook is udp.Plan's FlowHook: the flow gets a queue id in its header,
// a window of at most its initial window (one BDP), and a gate that holds
// it while its id is paused (in front of the host's pacer, if any).
func (h *Host) FlowHook(flow uint64, cfg *transport.Config, pacer transport.Gate, wake func()) (transport.Gate, func()) {
	if cfg.InitWindow > 0 {
		cfg.MaxWindow = cfg.InitWindow
	}
	if h.cfg.Deaf {
		return pacer, func() {}
	}
	q := h.acquire(flow, wake)
	cfg.Mech, _ = wire.MechBFC(q)
	return &gate{h: h, q: q, next: pacer}, func() { h.release(q, flow) }
}

type gate struct {
	h    *Host
	q    uint16
	next transport.Gate
}

// Allow implements transport.Gate.
func (g *gate) Allow(now int64, n int) (bool, int64) {
	if g.h.Paused(g.q) {
		g.h.stats.held.Add(1)
		return false, now + int64(g.h.cfg.Poll)
	}
	if g.next != nil {
		return g.next.Allow(now, n)
	}
	return true, 0
}

// set pauses or resumes queue id q (listener goroutine).
func (h *Host) set(q int, pause bool) {
	w := &h.paused[q/64]
	bit := uint64(1) << (q % 64)
	was := w.Load()&bit != 0
	if pause == was {
		return
	}
	if pause {
		w.Or(bit)
		h.npaus++
		if int64(h.npaus) > h.stats.most.Load() {
			h.stats.most.Store(int64(h.npaus))
		}
		return
	}
	w.And(^bit)
	h.npaus--
	if q == 0 {
		h.wake(-1)
	} else {
		h.wake(q)
	}
}

func (h *Host) newer(q int, seq uint32) bool {
	old := h.qseq[q]
	if old != 0 && !wire.SeqAfter(seq, uint32(old)) {
		return false
	}
	h.qseq[q] = 1<<32 | uint64(seq)
	return true
}

// Handle applies one frame received on the host's link (the listener
// goroutine; tests call it directly), if it passes the rules of the
// package doc. now is the wall clock in ns.
func (h *Host) Handle(frame []byte, now int64) { h.handle(frame, 0, now) }

// handle is Handle for a frame received on interface ifindex (0: not
// known).
func (h *Host) handle(frame []byte, ifindex int, now int64) {
	if len(frame) < 14 {
		h.stats.malformed.Add(1)
		return
	}
	if !h.peer.Addressed(frame, ifindex) {
		h.stats.foreign.Add(1)
		return
	}
	m, err := wire.ParseBFCFrame(frame)
	if err != nil {
		h.stats.malformed.Add(1)
		return
	}
	if !h.peer.Accept(frame, ifindex) {
		h.stats.foreign.Add(1)
		return
	}
	if id := uint32(m.Switch)<<16 | uint32(m.Port); id != h.sender {
		h.sender = id
		clear(h.qseq[:])
	}
	switch m.Type {
	case wire.TypeBFCPause, wire.TypeBFCResume:
		pause := m.Type == wire.TypeBFCPause
		if pause {
			h.stats.pauses.Add(1)
		} else {
			h.stats.resumes.Add(1)
		}
		if int(m.Queue) > h.cfg.Queues {
			h.stats.badQueue.Add(1) // an id this host never hands out
			return
		}
		if pause {
			h.lastRefresh.Store(now)
		}
		if !h.newer(int(m.Queue), m.Seq) {
			h.stats.stale.Add(1)
			return
		}
		h.set(int(m.Queue), pause)
	case wire.TypeBFCBitmap:
		h.stats.bitmaps.Add(1)
		h.lastRefresh.Store(now)
		stale := false
		for q := h.cfg.Queues + 1; q < int(m.NQueues); q++ {
			if wire.BitmapGet(m.Bitmap, q) {
				h.stats.badQueue.Add(1) // ids this host never hands out: ignored, counted once per frame
				break
			}
		}
		for q := 0; q <= h.cfg.Queues; q++ {
			on := wire.BitmapGet(m.Bitmap, q) // false beyond nqueues: the bitmap is authoritative
			if !on && h.qseq[q] == 0 && h.paused[q/64].Load()&(1<<(q%64)) == 0 {
				continue // never heard of, not paused: nothing to order
			}
			if !h.newer(q, m.Seq) {
				stale = true
				continue
			}
			h.set(q, on)
		}
		if stale {
			h.stats.stale.Add(1)
		}
	}
}

// Tick runs the watchdog (listener goroutine). The bound must be exceeded
// at two ticks with a read of the socket in between: frames that arrived
// while the host had no CPU are read first, and they may be the refresh.
func (h *Host) Tick(now int64) {
	if h.npaus == 0 || now-h.lastRefresh.Load() <= int64(h.cfg.Watchdog) {
		h.armed = false
		return
	}
	if !h.armed {
		h.armed = true
		return
	}
	h.armed = false
	for q := range h.paused {
		h.paused[q].Store(0)
	}
	h.npaus = 0
	clear(h.qseq[:])
	h.sender = 0
	h.stats.watchdog.Add(1)
	h.wake(-1)
}

// Listen opens an AF_PACKET socket for EtherType 0x88B6 on every interface
// of the host's network namespace and applies what arrives until Close,
// running the watchdog at least every millisecond. It needs CAP_NET_RAW.
func (h *Host) Listen() error {
	l, err := linklocal.Listen(wire.EtherType, time.Millisecond, "BFC pause frames", func(frame []byte, ifindex int, sent bool) {
		now := time.Now().UnixNano()
		switch {
		case frame == nil:
		case sent:
			h.stats.foreign.Add(1)
		default:
			h.handle(frame, ifindex, now)
		}
		h.Tick(now)
	})
	h.listener = l
	return err
}

// Close stops the listener.
func (h *Host) Close() error {
	l := h.listener
	h.listener = nil
	return l.Close()
}

// Report prints the stats to w.
func (h *Host) Report(w io.Writer, name string) {
	fmt.Fprintf(w, "gsperf %s bfc: %v\n", name, h.Stats())
}
