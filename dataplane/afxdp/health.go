package afxdp

import (
	"errors"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Errors Err reports. They are fixed values, so Err allocates nothing.
var (
	// ErrUnbound: the socket's device was unregistered (deleted, or moved
	// to another network namespace). The kernel unbound the socket for good:
	// it never again reads or writes its rings. Reclaim its frames, Close
	// it, and open a new socket when the interface comes back.
	ErrUnbound = errors.New("AF_XDP socket unbound: its device went away (ENXIO)")
	// ErrDown: the socket's device is administratively down. The socket
	// stays bound and works again once the device is up.
	ErrDown = errors.New("AF_XDP socket's device is down (ENETDOWN)")
	// ErrClosed: Reclaim or Close let go of the socket's file descriptor.
	ErrClosed = errors.New("AF_XDP socket closed")
)

// Err reports whether the socket can still carry frames: nil while it is
// bound to a device that is up (the carrier may still be off: a veth whose
// peer is down reports nil, and the kernel drops what it sends), ErrDown
// while the device is down, ErrUnbound once the device is gone.
//
// It is one non-blocking recvfrom(2) on the socket, which the kernel answers
// from the socket's state alone (in zero-copy mode it also wakes the
// driver's receive, as WakeFill does): cheap enough to call on every
// timed-out ppoll or every few milliseconds. It does not read SO_ERROR:
// the kernel sets SO_ERROR to ENETDOWN when it unbinds the socket, but
// reading SO_ERROR clears it, so only the first reader would see it.
// poll() on the socket says nothing either: see docs/afxdp.md, "When the
// interface goes away".
//
// Called by the goroutine that owns the socket.
func (s *Socket) Err() error {
	if s.fd < 0 {
		return ErrClosed
	}
	_, _, e := syscall.RawSyscall6(unix.SYS_RECVFROM, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	switch e {
	case 0, unix.EAGAIN:
		return nil
	case unix.ENXIO:
		return ErrUnbound
	case unix.ENETDOWN:
		return ErrDown
	}
	return e
}

// Reclaim takes back every frame the socket's rings hold for the switch and
// appends the frame base addresses to dst:
//
//   - fill ring entries the kernel has not consumed,
//   - rx ring descriptors not yet received (as frame base addresses),
//   - tx ring descriptors the kernel has not consumed,
//   - completion ring entries not yet taken.
//
// Reclaim ends the socket: if its file descriptor is still open, Reclaim
// closes it first, so the kernel removes the socket from its XSKMAP,
// unbinds it if its device is still there, and waits until the device has
// stopped using it; the rings stay mapped until Close. Remove the old
// descriptor from every poll set before calling Reclaim. After Reclaim the
// rings are empty from the switch's side (producer and consumer indices
// agree), a second Reclaim returns only late completions (below), and Close
// frees nothing twice. The usual sequence: Err reports ErrUnbound (or the
// interface was reported deleted, or the switch gives up on a port that is
// down), the owner calls Reclaim, puts the frames back on its free list,
// and calls Close.
//
// Frames the kernel took and never gave back are not on any ring, so
// Reclaim cannot return them; Outstanding counts them:
//
//   - receive side, copy mode: at most one frame per socket, taken from the
//     fill ring for a frame that was then dropped because the rx ring was
//     full (the kernel keeps it on the buffer pool's free list for the next
//     receive, and after the unbind there is none). Zero-copy mode: the
//     frames the driver had posted to its receive ring.
//   - transmit side: descriptors the kernel consumed whose completions have
//     not arrived: copy-mode skbs still in flight (on veth, in the peer's
//     backlog queue). Their completions still land on the completion ring,
//     also after Reclaim closed the descriptor, until the kernel frees the
//     last skb; a later Reclaim (before Close) picks them up. (In the tests
//     none were left once `ip link del` had returned.)
//
// A caller that keeps every frame accounted for adds Outstanding's counts
// to a "lost" state after Reclaim; the UMEM has that many fewer usable frames
// (the kernel never writes to them again, but the switch does not know their
// addresses).
//
// One socket per (device, queue) and fill/completion ring is assumed (as
// Open makes them): the transmit-side arithmetic relates this socket's tx
// ring to its own completion ring.
func (s *Socket) Reclaim(dst []uint64) []uint64 {
	if s.fd >= 0 {
		s.detach()
	}
	if s.fill.mem == nil {
		return dst // closed
	}
	base := ^s.frameMask

	c := &s.comp
	for p := atomic.LoadUint32(c.producer); c.local != p; c.local++ {
		dst = append(dst, c.addrs[c.local&c.mask]&base)
	}
	c.other = c.local
	c.publishConsumer()

	r := &s.rx
	for p := atomic.LoadUint32(r.producer); r.local != p; r.local++ {
		dst = append(dst, r.descs[r.local&r.mask].Addr&base)
	}
	r.other = r.local
	r.publishConsumer()

	f := &s.fill
	cons := atomic.LoadUint32(f.consumer)
	for i := cons; i != f.local; i++ {
		dst = append(dst, f.addrs[i&f.mask]&base)
	}
	f.local = cons
	f.other = cons + f.size
	f.publishProducer()

	t := &s.tx
	cons = t.kernelConsumed(c.local + s.txInvalid)
	for i := cons; i != t.local; i++ {
		dst = append(dst, t.descs[i&t.mask].Addr&base)
	}
	t.local = cons
	t.other = cons + t.size
	atomic.StoreUint32(t.consumer, cons) // the kernel has let go of the ring: it is ours
	t.publishProducer()
	return dst
}

// kernelConsumed is how far the kernel has consumed the tx ring, given done,
// the number of descriptors it has completed or refused: its published
// consumer index, or done if that is further. A guard: in the xsk.c read
// for docs/afxdp.md, a frame dropped by __dev_direct_xmit (carrier off)
// completes while the consumer index is published only with a frame sent
// later; the 6.18 kernel the tests ran on published it at once
// (TestInterfaceDownUp logs it).
func (t *descRing) kernelConsumed(done uint32) uint32 {
	cons := atomic.LoadUint32(t.consumer)
	if int32(done-cons) > 0 {
		cons = done
	}
	if int32(cons-t.local) > 0 {
		cons = t.local
	}
	return cons
}

// detach closes the descriptor (the kernel unbinds the socket and waits for
// the device to stop using it) and keeps the rings mapped.
func (s *Socket) detach() {
	if st, err := s.Stats(); err == nil {
		s.txInvalid = uint32(st.Tx_invalid_descs)
	}
	u := s.umem
	u.mu.Lock()
	u.release(s)
	unix.Close(s.fd)
	s.fd = -1
	u.mu.Unlock()
}

// Outstanding counts frames the kernel has taken from the socket's rings and
// not handed back on a ring: rx taken from the fill ring and not (yet) on
// the rx ring, tx taken from the tx ring and not (yet) on the completion
// ring (nor refused as invalid). On a working socket these are frames in
// the kernel's hands right now; after Reclaim, rx is lost for good and tx
// may still complete (see Reclaim).
//
// Called by the goroutine that owns the socket; reads XDP_STATISTICS while
// the descriptor is open.
func (s *Socket) Outstanding() (rx, tx int) {
	if s.fill.mem == nil {
		return 0, 0
	}
	rx = int(int32(atomic.LoadUint32(s.fill.consumer) - atomic.LoadUint32(s.rx.producer)))
	invalid := s.txInvalid
	if s.fd >= 0 {
		if st, err := s.Stats(); err == nil {
			invalid = uint32(st.Tx_invalid_descs)
		}
	}
	done := atomic.LoadUint32(s.comp.producer) + invalid
	tx = int(int32(s.tx.kernelConsumed(done) - done))
	return max(rx, 0), max(tx, 0)
}
