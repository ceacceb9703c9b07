// Package sfc is the host side of Source Flow Control (seed 003) for
// gsperf: a listener on the BTS port that pauses the flow a Back-to-Sender
// frame names.
//
// A switch whose queue is congested (or the sender's ToR, from its cache)
// sends the sender an IPv4/UDP datagram to port 19020 (package wire: a GC
// header of type SFC_BTS, the pause in microseconds, and a quote of the
// original packet's headers). The listener reads it from an ordinary UDP
// socket, finds the flow by the quoted gsperf flow id (checked against the
// quoted 5-tuple) or, when the quote holds no flow id, by the 5-tuple, and
// sets the flow's PauseGate to now + pause: the flow sends nothing more
// until then. A newer BTS replaces the pause (section 3.3).
//
// The pause is applied as it comes, on the host's clock. At a timescale K
// (package perf/timescale) that is right as it is: the switch computes the
// pause from its queue and its rates on this machine, which are the
// fabric's divided by K, so the microseconds in the frame are already the
// fabric's pause multiplied by K, wall time.
//
// The listener trusts what reaches the port, as a host trusts its ToR (the
// switches drop BTS frames sent by hosts); datagrams that do not parse or
// name no flow of this host are counted and ignored. What it keeps is one
// entry per running flow.
package sfc

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/wire"
)

// Stats are what a listener received.
type Stats struct {
	Received  uint64 // datagrams on the BTS port
	Malformed uint64 // that did not parse as a BTS
	Unmatched uint64 // BTS naming no flow of this host
	Paused    uint64 // BTS applied to a flow
	FromCache uint64 // of those, sent by a near-source cache
}

func (s Stats) String() string {
	return fmt.Sprintf("%d BTS received, %d applied (%d from a ToR's cache), %d naming no flow of ours, %d malformed",
		s.Received, s.Paused, s.FromCache, s.Unmatched, s.Malformed)
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
	conn    *net.UDPConn
	mu      sync.Mutex
	byID    map[uint64]*flow
	byTuple map[wire.FiveTuple]*flow

	received, malformed, unmatched, paused, fromCache atomic.Uint64
	done                                              chan struct{}
}

// Listen opens the BTS port on addr (e.g. ":19020" or "10.1.1.1:19020")
// and starts receiving.
func Listen(addr string) (*Listener, error) {
	ua, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		return nil, err
	}
	conn, err := net.ListenUDP("udp4", ua)
	if err != nil {
		return nil, fmt.Errorf("the BTS port %s: %w (another gsperf client in SFC mode in this host?)", addr, err)
	}
	conn.SetReadBuffer(4 << 20)
	l := &Listener{conn: conn, byID: map[uint64]*flow{}, byTuple: map[wire.FiveTuple]*flow{}, done: make(chan struct{})}
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
	return Stats{Received: l.received.Load(), Malformed: l.malformed.Load(), Unmatched: l.unmatched.Load(),
		Paused: l.paused.Load(), FromCache: l.fromCache.Load()}
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
	l.byID[id] = f
	l.byTuple[t] = f
	l.mu.Unlock()
	return f.gate, func() {
		l.mu.Lock()
		if l.byID[id] == f {
			delete(l.byID, id)
		}
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
		n, err := l.conn.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		l.Handle(buf[:n])
	}
}

// Handle applies one BTS message (a UDP payload from the BTS port).
func (l *Listener) Handle(msg []byte) {
	l.received.Add(1)
	m, err := wire.ParseBTS(msg)
	if err != nil {
		l.malformed.Add(1)
		return
	}
	l.mu.Lock()
	var f *flow
	if m.HasFlowID {
		if g := l.byID[m.FlowID]; g != nil && (!m.HasPorts || g.tuple == m.Flow) {
			f = g
		}
	} else if m.HasPorts {
		f = l.byTuple[m.Flow]
	}
	l.mu.Unlock()
	if f == nil {
		l.unmatched.Add(1)
		return
	}
	f.gate.PauseUntil(f.clock() + int64(m.Pause)*1000)
	l.paused.Add(1)
	if m.Flags&wire.BTSFromCache != 0 {
		l.fromCache.Add(1)
	}
}
