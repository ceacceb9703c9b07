// Package sfc is the host side of Source Flow Control (seed 003) for
// gsperf: a listener on the BTS port that pauses the flow a Back-to-Sender
// frame names.
//
// A switch whose queue is congested (or the sender's ToR, from its cache)
// sends the sender an IPv4/UDP datagram to port 19020 (package wire: a GC
// header of type SFC_BTS, the pause in microseconds, and a quote of the
// original packet's headers). The listener reads it from an ordinary UDP
// socket, finds the flow by the quoted 5-tuple (and checks the quoted
// gsperf flow id, when there is one, against it), and sets the flow's
// PauseGate to now + pause: the flow sends nothing more until then. A newer BTS replaces the pause (section 3.3).
//
// The pause is applied on the host's clock, at most MaxPause. At a
// timescale K (package perf/timescale) the pause in the frame is right as
// it is: the switch computes it from its queue and its rates on this
// machine, which are the fabric's divided by K, so the microseconds in the
// frame are already the fabric's pause multiplied by K, wall time (and
// gsperf's -max-pause, in the fabric's time, is multiplied by K too).
//
// # What it accepts
//
// The listener takes a datagram as a BTS only if all of these hold, and
// counts every one it refuses by why (Stats):
//
//   - it came from UDP port 19020 (wire.BTSPort): every switch sends BTS
//     from that port, congested or answering from its cache (WrongPort);
//   - it parses as a BTS (package wire's rules: GC header of type SFC_BTS,
//     a well-formed quote) (Malformed);
//   - the quote names, by its 5-tuple, a flow this host is sending now,
//     and, when it carries a gsperf flow id, that flow's id (Unmatched);
//   - it came from the address that flow sends to: a switch builds the
//     BTS from the quoted packet's destination to its source (WrongSource).
//
// Its pause is then cut to MaxPause (Capped): no datagram can hold a flow
// longer, whatever it says (the field holds up to 71 minutes).
//
// So a host that can send this host datagrams can pause only a flow whose
// 5-tuple it knows, only by sending from that flow's destination address
// (which the switch's source guard refuses to a host that does not own
// it), and for at most MaxPause each time; the switches drop BTS frames
// that hosts send, whole or in fragments. What the listener keeps is one
// entry per running flow.
package sfc

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/wire"
)

// MaxPauseRTTs is how many base RTTs a host's longest pause is by
// default: the switches' rule for their max_pause (mech/sfc.MaxPauseFor
// says why 256).
const MaxPauseRTTs = 256

// DefaultMaxPause is a listener's MaxPause unless told otherwise:
// MaxPauseRTTs of gsperf's default -base-rtt (200us).
const DefaultMaxPause = MaxPauseRTTs * 200 * time.Microsecond

// Stats are what a listener received.
type Stats struct {
	Received    uint64 // datagrams on the BTS port
	WrongPort   uint64 // refused: not from UDP port 19020
	Malformed   uint64 // refused: did not parse as a BTS
	Unmatched   uint64 // refused: naming no flow this host is sending
	WrongSource uint64 // refused: not from the address the named flow sends to
	Paused      uint64 // BTS applied to a flow
	FromCache   uint64 // of those, sent by a near-source cache
	Capped      uint64 // of those, with a pause cut to MaxPause
}

// Refused is the number of datagrams refused, for every reason.
func (s Stats) Refused() uint64 { return s.WrongPort + s.Malformed + s.Unmatched + s.WrongSource }

func (s Stats) String() string {
	return fmt.Sprintf("%d BTS received, %d applied (%d from a ToR's cache, %d cut to the longest pause); refused: %d naming no flow of ours, %d malformed, %d not from port %d, %d not from the flow's destination",
		s.Received, s.Paused, s.FromCache, s.Capped, s.Unmatched, s.Malformed, s.WrongPort, wire.BTSPort, s.WrongSource)
}

type flow struct {
	id    uint64
	tuple wire.FiveTuple
	gate  *transport.PauseGate
	clock func() int64
}

// Listener receives BTS frames for the flows of one host. Register and
// the flow gates are safe for concurrent use.
type Listener struct {
	conn     *net.UDPConn
	maxPause int64 // ns
	mu       sync.Mutex
	byTuple  map[wire.FiveTuple]*flow

	received, wrongPort, malformed, unmatched, wrongSource atomic.Uint64
	paused, fromCache, capped                              atomic.Uint64
	done                                                   chan struct{}
}

// Option sets a listener's parameter.
type Option func(*Listener)

// MaxPause is the longest pause a BTS may put a flow under, on the
// host's clock (default DefaultMaxPause; at least 1us).
func MaxPause(d time.Duration) Option {
	return func(l *Listener) { l.maxPause = max(int64(d), int64(time.Microsecond)) }
}

func newListener(opts ...Option) *Listener {
	l := &Listener{maxPause: int64(DefaultMaxPause), byTuple: map[wire.FiveTuple]*flow{}, done: make(chan struct{})}
	for _, o := range opts {
		o(l)
	}
	return l
}

// Listen opens the BTS port on addr (e.g. ":19020" or "10.1.1.1:19020")
// and starts receiving.
func Listen(addr string, opts ...Option) (*Listener, error) {
	ua, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		return nil, err
	}
	conn, err := net.ListenUDP("udp4", ua)
	if err != nil {
		return nil, fmt.Errorf("the BTS port %s: %w (another gsperf client in SFC mode in this host?)", addr, err)
	}
	conn.SetReadBuffer(4 << 20)
	l := newListener(opts...)
	l.conn = conn
	go l.run()
	return l, nil
}

// Addr is the address the listener receives on.
func (l *Listener) Addr() *net.UDPAddr { return l.conn.LocalAddr().(*net.UDPAddr) }

// Close stops the listener.
func (l *Listener) Close() error {
	err := l.conn.Close()
	<-l.done
	return err
}

// Stats returns the counts so far.
func (l *Listener) Stats() Stats {
	return Stats{Received: l.received.Load(), WrongPort: l.wrongPort.Load(), Malformed: l.malformed.Load(), Unmatched: l.unmatched.Load(),
		WrongSource: l.wrongSource.Load(), Paused: l.paused.Load(), FromCache: l.fromCache.Load(), Capped: l.capped.Load()}
}

func tupleOf(local, remote *net.UDPAddr) (wire.FiveTuple, error) {
	la, ok1 := netip.AddrFromSlice(local.IP)
	ra, ok2 := netip.AddrFromSlice(remote.IP)
	la, ra = la.Unmap(), ra.Unmap()
	if !ok1 || !ok2 || !la.Is4() || !ra.Is4() {
		return wire.FiveTuple{}, errors.New("SFC pauses IPv4 flows only")
	}
	return wire.FiveTuple{Src: la.As4(), Dst: ra.As4(), SrcPort: uint16(local.Port), DstPort: uint16(remote.Port), Proto: wire.ProtoUDP}, nil
}

// Register makes the flow id sending from local to remote pausable and
// returns its gate (to ask before each segment) and a function that
// forgets the flow. clock is the flow's clock (ns), which the gate's pause
// ends are on.
func (l *Listener) Register(id uint64, local, remote *net.UDPAddr, clock func() int64) (*transport.PauseGate, func(), error) {
	t, err := tupleOf(local, remote)
	if err != nil {
		return nil, nil, err
	}
	f := &flow{id: id, tuple: t, gate: &transport.PauseGate{}, clock: clock}
	l.mu.Lock()
	l.byTuple[t] = f
	l.mu.Unlock()
	return f.gate, func() {
		l.mu.Lock()
		if l.byTuple[t] == f {
			delete(l.byTuple, t)
		}
		l.mu.Unlock()
	}, nil
}

func (l *Listener) run() {
	defer close(l.done)
	buf := make([]byte, 2048)
	for {
		n, from, err := l.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		l.Handle(buf[:n], from)
	}
}

// Handle takes one datagram msg (a UDP payload) that arrived on the BTS
// port from the address and port from, and pauses the flow it names if it
// passes the rules of the package doc.
func (l *Listener) Handle(msg []byte, from netip.AddrPort) {
	l.received.Add(1)
	if from.Port() != wire.BTSPort {
		l.wrongPort.Add(1)
		return
	}
	m, err := wire.ParseBTS(msg)
	if err != nil {
		l.malformed.Add(1)
		return
	}
	var f *flow
	if m.HasPorts {
		l.mu.Lock()
		f = l.byTuple[m.Flow]
		l.mu.Unlock()
	}
	if f == nil || m.HasFlowID && m.FlowID != f.id {
		l.unmatched.Add(1)
		return
	}
	if from.Addr().Unmap() != netip.AddrFrom4(m.Flow.Dst) {
		l.wrongSource.Add(1)
		return
	}
	pause := int64(m.Pause) * 1000
	if pause > l.maxPause {
		pause = l.maxPause
		l.capped.Add(1)
	}
	f.gate.PauseUntil(f.clock() + pause)
	l.paused.Add(1)
	if m.Flags&wire.BTSFromCache != 0 {
		l.fromCache.Add(1)
	}
}
