// Package linklocal is what gsperf's host sides of the link-level
// mechanisms share (perf/bfc's pauses, perf/pfc's PFC frames): a listener
// of one EtherType on an AF_PACKET socket, and the rule that a frame is
// taken only from the switch at the other end of the host's link.
package linklocal

import (
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Listener reads the frames of one EtherType arriving on any interface of
// the host's network namespace, on a goroutine of its own, until Close.
type Listener struct {
	fd   int
	stop atomic.Bool
	done chan struct{}
}

// Listen opens an AF_PACKET socket for etherType and calls read, on the
// listener's goroutine, with each frame it reads (the buffer is reused:
// read must not keep it), the interface it came on and whether this host
// sent it (an AF_PACKET socket sees those too), and with a nil frame
// whenever poll passes without one, so that read can run timers. what
// names the frames in the error. It needs CAP_NET_RAW.
func Listen(etherType uint16, poll time.Duration, what string, read func(frame []byte, ifindex int, sent bool)) (*Listener, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(etherType)))
	if err != nil {
		return nil, fmt.Errorf("%s are read on an AF_PACKET socket, which needs CAP_NET_RAW (run as root): %w", what, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(etherType)}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("binding the socket of %s: %w", what, err)
	}
	tv := unix.NsecToTimeval(max(poll, time.Microsecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, err
	}
	l := &Listener{fd: fd, done: make(chan struct{})}
	go l.run(read)
	return l, nil
}

func (l *Listener) run(read func([]byte, int, bool)) {
	defer close(l.done)
	buf := make([]byte, 2048)
	for !l.stop.Load() {
		n, from, err := unix.Recvfrom(l.fd, buf, 0)
		if err != nil || n <= 0 {
			read(nil, 0, false)
			continue
		}
		ifindex, sent := source(from)
		read(buf[:n], ifindex, sent)
	}
}

// source reads the interface a frame came on and whether this host sent
// it; a source that is not a link-layer address counts as sent (not
// received from the link).
func source(from unix.Sockaddr) (ifindex int, sent bool) {
	ll, ok := from.(*unix.SockaddrLinklayer)
	if !ok {
		return 0, true
	}
	return ll.Ifindex, ll.Pkttype == unix.PACKET_OUTGOING
}

// Close stops the listener and waits for its goroutine (at most one
// poll). A nil Listener is closed.
func (l *Listener) Close() error {
	if l == nil {
		return nil
	}
	l.stop.Store(true)
	<-l.done
	return unix.Close(l.fd)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Peer is the rule for whom a host takes link-level frames from: frames
// to Dst (a group no bridge forwards, so they come from the other end of
// the link), from the switch's MAC, on the interface of the first frame
// taken. The switch's MAC is given (MAC), or the default gateway's
// (Gateway, asked when the first frame that parses arrives), or that
// frame's source. A Peer is used by one goroutine.
type Peer struct {
	Dst     [6]byte
	MAC     [6]byte
	Gateway func() ([6]byte, bool)
	known   bool
	ifindex int
}

// NewPeer returns the rule for frames to dst from mac (zero: learned as
// above).
func NewPeer(dst, mac [6]byte, gateway func() ([6]byte, bool)) Peer {
	return Peer{Dst: dst, MAC: mac, Gateway: gateway, known: mac != [6]byte{}}
}

// Addressed reports whether frame (at least 14 bytes) is to Dst and, once
// the switch is known, from it, on its interface (ifindex 0: not known,
// not checked). A frame that fails is foreign.
func (p *Peer) Addressed(frame []byte, ifindex int) bool {
	if [6]byte(frame[0:6]) != p.Dst {
		return false
	}
	return !p.known || [6]byte(frame[6:12]) == p.MAC && (ifindex == 0 || p.ifindex == 0 || ifindex == p.ifindex)
}

// Accept is called for a frame that was Addressed and parsed: the first
// such frame names the switch (the gateway's MAC if the kernel knows it,
// else the frame's source) and its interface. It reports false if the
// frame is not from the switch so named (foreign).
func (p *Peer) Accept(frame []byte, ifindex int) bool {
	if !p.known {
		p.MAC, p.known = [6]byte(frame[6:12]), true
		if p.Gateway != nil {
			if gw, ok := p.Gateway(); ok {
				p.MAC = gw
			}
		}
		if [6]byte(frame[6:12]) != p.MAC {
			return false
		}
	}
	if p.ifindex == 0 {
		p.ifindex = ifindex
	}
	return true
}
