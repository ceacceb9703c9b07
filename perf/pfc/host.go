// Package pfc is the host side of priority flow control (IEEE 802.1Qbb)
// for gsperf: a NIC that honours the PFC frames its switch sends (the
// switch side is mech/pfc). In a RoCE fabric the NIC stops a priority's
// transmission when its switch port pauses it; gsperf's flows stop the
// same way.
//
// # Model
//
// The host's flows all carry one priority (Config.Priority: the switch's
// priority of their DSCP; gsperf's data has DSCP 0, priority 0). The host
// reads the PFC frames (EtherType 0x8808, package wire) arriving on its
// link on an AF_PACKET socket in its namespace, since they are not IP,
// and keeps, per priority, when the pause in force ends: a frame's time
// for a priority it enables replaces the time left, quanta x 512 bit
// times at the link's rate (Config.RateBits, this machine's rate: under a
// timescale K, the fabric's rate / K, so the pause is the fabric's x K),
// at most MaxPause; a time of 0 resumes at once. A flow's gate holds it
// while its priority is paused, and wakes it at the pause's end or at a
// resume.
//
// # What it accepts
//
// As the BFC host (perf/bfc): a frame received, not sent, by this host, on
// the interface of the first accepted frame; addressed to 01:80:C2:00:00:01
// (the MAC control group, which no bridge forwards, so it comes from the
// other end of the link); from the switch's MAC (Config.Switch, else the
// default gateway's, Config.Gateway, else the source of the first frame
// that parses) (Foreign otherwise); that parses as PFC (Malformed; 802.3x
// PAUSE, opcode 0x0001, is counted as Other and ignored).
//
// # Goroutines
//
// A Host is shared by all the flows of a client: the gates and Paused are
// safe for concurrent use; the listener goroutine applies frames; FlowHook
// runs on each flow's goroutine. Times are the host's own monotonic clock
// (Config.Clock), whatever clock the flows run on.
package pfc

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

// MaxPause bounds one pause, as the switch does (mech/pfc): at very low
// rates 65535 quanta last hours.
const MaxPause = time.Minute

// Config configures a host.
type Config struct {
	// RateBits is the rate of the host's link on this machine in bit/s: a
	// quantum is 512 bit times at it. Required.
	RateBits uint64
	// Priority is the priority of the host's flows, 0..7 (the switch's
	// priority of their DSCP: 0 for gsperf's DSCP 0).
	Priority int
	// Switch is the MAC of the switch port the host's link ends on: frames
	// from any other source are refused. Zero: Gateway's answer, else the
	// source of the first frame that parses.
	Switch [6]byte
	// Gateway, if set, returns the MAC of the host's default gateway
	// (perf/bfc's GatewayMAC reads the kernel's tables), asked when the
	// first frame arrives and Switch is zero.
	Gateway func() ([6]byte, bool)
	// Clock is the host's clock in ns (nil: monotonic time since New).
	Clock func() int64
}

// Stats counts what the host received and did.
type Stats struct {
	Pauses, Resumes  uint64 // non-zero and zero times for the host's priority, applied
	Frames           uint64 // PFC frames accepted (any priority)
	Malformed, Other uint64 // frames that do not parse as PFC; MAC control frames of another opcode (802.3x PAUSE)
	Foreign          uint64 // refused: not from the switch at the end of the host's link
	Held             uint64 // times a flow asked to send and its priority was paused
	PausedNs         uint64 // time the host's priority was paused, pauses that ended
}

func (s Stats) String() string {
	return fmt.Sprintf("%d PFC frames accepted (%d pauses, %d resumes of the host's priority); refused: %d malformed, %d not PFC, %d not from the switch; %d times a segment was held; paused %v",
		s.Frames, s.Pauses, s.Resumes, s.Malformed, s.Other, s.Foreign, s.Held, time.Duration(s.PausedNs))
}

// Host is a gsperf client's PFC state.
type Host struct {
	cfg   Config
	clock func() int64
	until [wire.PFCPriorities]atomic.Int64 // when each priority's pause ends (host clock); 0: not paused
	since atomic.Int64                     // when the host's priority's pause in force began

	// Listener goroutine only.
	peer linklocal.Peer // whom frames are taken from

	mu     sync.Mutex
	wakers map[uint64]func()

	stats struct {
		pauses, resumes, frames, malformed, other, foreign, held, pausedNs atomic.Uint64
	}
	listener *linklocal.Listener
}

// New returns a host that listens to nothing yet (Listen, or Handle in
// tests).
func New(c Config) (*Host, error) {
	if c.RateBits == 0 {
		return nil, errors.New("rate: a pause quantum is 512 bit times at the link's rate, and no rate was given")
	}
	if c.Priority < 0 || c.Priority >= wire.PFCPriorities {
		return nil, fmt.Errorf("priority: %d is not a priority (0..7)", c.Priority)
	}
	h := &Host{cfg: c, clock: c.Clock, wakers: map[uint64]func(){}, peer: linklocal.NewPeer(wire.PFCDst, c.Switch, c.Gateway)}
	if h.clock == nil {
		start := time.Now()
		h.clock = func() int64 { return time.Since(start).Nanoseconds() + 1 }
	}
	return h, nil
}

// Paused reports whether the host's priority is paused now, and for how
// much longer (ns; any goroutine).
func (h *Host) Paused() (bool, int64) {
	u := h.until[h.cfg.Priority].Load()
	if u == 0 {
		return false, 0
	}
	if left := u - h.clock(); left > 0 {
		return true, left
	}
	return false, 0
}

// Stats returns the counters (any goroutine).
func (h *Host) Stats() Stats {
	s := &h.stats
	return Stats{Pauses: s.pauses.Load(), Resumes: s.resumes.Load(), Frames: s.frames.Load(), Malformed: s.malformed.Load(),
		Other: s.other.Load(), Foreign: s.foreign.Load(), Held: s.held.Load(), PausedNs: s.pausedNs.Load()}
}

// FlowHook is udp.Plan's FlowHook: the flow gets a gate that holds it
// while the host's priority is paused (in front of the host's pacer, if
// any), woken when a resume arrives.
func (h *Host) FlowHook(flow uint64, cfg *transport.Config, pacer transport.Gate, wake func()) (transport.Gate, func()) {
	h.mu.Lock()
	h.wakers[flow] = wake
	h.mu.Unlock()
	return &gate{h: h, next: pacer}, func() {
		h.mu.Lock()
		delete(h.wakers, flow)
		h.mu.Unlock()
	}
}

type gate struct {
	h    *Host
	next transport.Gate
}

// Allow implements transport.Gate: closed while the priority is paused,
// asking again when the pause ends (on the flow's own clock).
func (g *gate) Allow(now int64, n int) (bool, int64) {
	if paused, left := g.h.Paused(); paused {
		g.h.stats.held.Add(1)
		return false, now + left
	}
	if g.next != nil {
		return g.next.Allow(now, n)
	}
	return true, 0
}

// wakeAll wakes every flow (a resume).
func (h *Host) wakeAll() {
	h.mu.Lock()
	fs := make([]func(), 0, len(h.wakers))
	for _, f := range h.wakers {
		fs = append(fs, f)
	}
	h.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// Handle applies one frame received on the host's link (the listener
// goroutine; tests call it directly), if it passes the rules of the
// package doc.
func (h *Host) Handle(frame []byte) { h.handle(frame, 0, h.clock()) }

// handle is Handle for a frame received on interface ifindex (0: not
// known) at now (host clock).
func (h *Host) handle(frame []byte, ifindex int, now int64) {
	if len(frame) < 14 {
		h.stats.malformed.Add(1)
		return
	}
	if !h.peer.Addressed(frame, ifindex) {
		h.stats.foreign.Add(1)
		return
	}
	m, err := wire.ParsePFCFrame(frame)
	switch {
	case err == wire.ErrWrongType:
		h.stats.other.Add(1)
		return
	case err != nil:
		h.stats.malformed.Add(1)
		return
	}
	if !h.peer.Accept(frame, ifindex) {
		h.stats.foreign.Add(1)
		return
	}
	h.stats.frames.Add(1)
	for pr := 0; pr < wire.PFCPriorities; pr++ {
		if m.Enable&(1<<pr) == 0 {
			continue
		}
		mine := pr == h.cfg.Priority
		var end int64
		if t := m.Time[pr]; t != 0 {
			end = now + min(wire.PauseNs(t, h.cfg.RateBits), int64(MaxPause))
		}
		old := h.until[pr].Swap(end)
		if !mine {
			continue
		}
		wasPaused := old > now
		if old != 0 && (end == 0 || !wasPaused) {
			h.account(old, now) // the pause in force (or one that ran out) ends
		}
		if end == 0 {
			h.stats.resumes.Add(1)
			if wasPaused {
				h.wakeAll()
			}
			continue
		}
		h.stats.pauses.Add(1)
		if !wasPaused {
			h.since.Store(now)
		}
	}
}

// account adds the pause that ended at until (or now, if sooner) to the
// paused time.
func (h *Host) account(until, now int64) {
	if d := min(until, now) - h.since.Load(); d > 0 {
		h.stats.pausedNs.Add(uint64(d))
	}
}

// Listen opens an AF_PACKET socket for EtherType 0x8808 on every interface
// of the host's network namespace and applies what arrives until Close.
// It needs CAP_NET_RAW.
func (h *Host) Listen() error {
	l, err := linklocal.Listen(wire.EtherTypeMACControl, 100*time.Millisecond, "PFC frames", func(frame []byte, ifindex int, sent bool) {
		if frame != nil && !sent {
			h.handle(frame, ifindex, h.clock())
		}
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
	fmt.Fprintf(w, "gsperf %s pfc: %v\n", name, h.Stats())
}
