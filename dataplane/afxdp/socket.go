package afxdp

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// RingSizes are the entry counts of a socket's rings; each must be a power of two.
type RingSizes struct {
	Fill, Completion, Rx, Tx uint32
}

// DefaultRingSizes follow the measurements in docs/afxdp.md ("Measured
// before the switch"): a fill ring larger than the frames it will ever hold
// (a fill ring equal to the pool overflowed there), an rx ring of 8192 and
// a tx ring of 2048.
var DefaultRingSizes = RingSizes{Fill: 16384, Completion: 4096, Rx: 8192, Tx: 2048}

// UMEM is the frame memory shared by all sockets of a switch.
type UMEM struct {
	Mem       []byte
	FrameSize uint32
	NumFrames uint32

	// mu guards the fields below and the closing of its sockets'
	// descriptors: Open binds through other sockets' descriptors, which
	// their owners may close (Reclaim, Close) at the same time. Taken only
	// by Open, Close and Reclaim, never on the hot path.
	mu       sync.Mutex
	fd       int                    // the socket the UMEM is registered on
	ownerUp  bool                   // whether fd has been bound (becomes the first Socket)
	socks    []*Socket              // open sockets: Open shares the UMEM through one that is still bound
	released map[queueKey]time.Time // when a socket of this UMEM let go of (ifindex, queue)
}

type queueKey struct{ ifindex, queue int }

// NewUMEM maps numFrames frames of frameSize bytes (2048 or 4096) and
// registers them with the kernel on a new AF_XDP socket.
func NewUMEM(numFrames, frameSize uint32) (*UMEM, error) {
	if frameSize != 2048 && frameSize != 4096 {
		return nil, fmt.Errorf("frame size %d: must be 2048 or 4096", frameSize)
	}
	if numFrames == 0 {
		return nil, errors.New("UMEM needs at least one frame")
	}
	size := uint64(numFrames) * uint64(frameSize) // in 64 bits: 2^22 frames of 4 KiB wrap a uint32
	if size > 1<<36 {
		return nil, fmt.Errorf("UMEM of %d x %d B is too large", numFrames, frameSize)
	}
	mem, err := unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mmap UMEM (%d x %d B): %w", numFrames, frameSize, err)
	}
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		unix.Munmap(mem)
		return nil, fmt.Errorf("socket(AF_XDP): %w (needs CAP_NET_RAW and a kernel with AF_XDP)", err)
	}
	if err := registerUMEM(fd, mem, frameSize); err != nil {
		unix.Close(fd)
		unix.Munmap(mem)
		return nil, err
	}
	return &UMEM{Mem: mem, FrameSize: frameSize, NumFrames: numFrames, fd: fd}, nil
}

// Close unmaps the UMEM. Close every Socket first.
func (u *UMEM) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	var errs []error
	if !u.ownerUp && u.fd >= 0 {
		errs = append(errs, unix.Close(u.fd))
	}
	u.fd = -1
	if u.Mem != nil {
		errs = append(errs, unix.Munmap(u.Mem))
		u.Mem = nil
	}
	return errors.Join(errs...)
}

// BindFlags choose how the first socket binds; later sockets share its mode.
type BindFlags struct {
	Copy     bool // force copy mode (XDP_COPY); otherwise the kernel uses zero-copy where the driver can
	ZeroCopy bool // require zero-copy (XDP_ZEROCOPY)
	// SG takes and gives frames longer than a UMEM frame as chains of
	// descriptors (XDP_USE_SG, Linux 6.6+): every Desc but a chain's last
	// has XDP_PKT_CONTD in Options, on the rx and the tx ring.
	SG bool
}

// Socket is one AF_XDP socket bound to (ifindex, queue). See the package doc
// for who may call its methods.
type Socket struct {
	fd      int
	Ifindex int
	Queue   int

	umem      *UMEM
	frameMask uint64 // FrameSize-1: an address within a frame, masked, is the frame's base
	txInvalid uint32 // tx descriptors the kernel refused, read when Reclaim detached the socket

	fill descRingAddr
	comp descRingAddr
	rx   descRing
	tx   descRing

	// Kicks counts sendto() calls made by Kick; KickErrs those that failed
	// with an error other than EAGAIN/EBUSY/ENOBUFS.
	Kicks, KickErrs uint64
}

type descRingAddr = addrRing

// Open creates a socket on (ifindex, queue) that shares the UMEM. The first
// socket opened uses the UMEM's own file descriptor.
//
// The kernel shares a UMEM only through a socket that is still bound, and a
// socket whose device was unregistered is unbound for good (bind then fails
// with EBADF). So a later socket binds through any open socket of the UMEM
// that is still bound, and when none is (every device they were bound to went
// away) it registers the UMEM's memory again on itself: the frames and their
// addresses stay the same, the kernel sees a second UMEM over them.
//
// Open may be called from any goroutine, also while the owners of other
// sockets of the UMEM call Reclaim or Close on them.
func (u *UMEM) Open(ifindex, queue int, rs RingSizes, bf BindFlags) (*Socket, error) {
	for _, n := range []uint32{rs.Fill, rs.Completion, rs.Rx, rs.Tx} {
		if n == 0 || n&(n-1) != 0 {
			return nil, fmt.Errorf("ring size %d is not a power of two", n)
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.Mem == nil {
		return nil, errors.New("UMEM is closed")
	}
	s := &Socket{fd: -1, Ifindex: ifindex, Queue: queue, umem: u, frameMask: uint64(u.FrameSize) - 1}
	first := !u.ownerUp && u.fd >= 0
	if first {
		s.fd = u.fd
	} else {
		fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("socket(AF_XDP): %w", err)
		}
		s.fd = fd
	}
	fail := func(what string, err error) (*Socket, error) {
		s.unmapAll()
		if !first {
			unix.Close(s.fd)
		}
		return nil, fmt.Errorf("AF_XDP socket ifindex %d queue %d: %s: %w", ifindex, queue, what, err)
	}
	// Every (device, queue) pair has its own fill and completion ring, also when the UMEM is shared.
	opts := []struct {
		name int
		n    uint32
	}{{unix.XDP_UMEM_FILL_RING, rs.Fill}, {unix.XDP_UMEM_COMPLETION_RING, rs.Completion}, {unix.XDP_RX_RING, rs.Rx}, {unix.XDP_TX_RING, rs.Tx}}
	for _, o := range opts {
		n := o.n
		if err := setsockopt(s.fd, o.name, unsafe.Pointer(&n), 4); err != nil {
			return fail(fmt.Sprintf("ring size option %d = %d", o.name, n), err)
		}
	}
	var off unix.XDPMmapOffsets
	optlen := uint32(unsafe.Sizeof(off))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_XDP, unix.XDP_MMAP_OFFSETS,
		uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&optlen)), 0); e != 0 {
		return fail("XDP_MMAP_OFFSETS", e)
	}
	var err error
	var p unsafe.Pointer
	if s.fill.ring, p, err = mapRing(s.fd, off.Fr, unix.XDP_UMEM_PGOFF_FILL_RING, rs.Fill, 8); err != nil {
		return fail("mmap fill ring", err)
	}
	s.fill.addrs = unsafe.Slice((*uint64)(p), rs.Fill)
	s.fill.other = rs.Fill // all free
	if s.comp.ring, p, err = mapRing(s.fd, off.Cr, unix.XDP_UMEM_PGOFF_COMPLETION_RING, rs.Completion, 8); err != nil {
		return fail("mmap completion ring", err)
	}
	s.comp.addrs = unsafe.Slice((*uint64)(p), rs.Completion)
	if s.rx.ring, p, err = mapRing(s.fd, off.Rx, unix.XDP_PGOFF_RX_RING, rs.Rx, unsafe.Sizeof(Desc{})); err != nil {
		return fail("mmap rx ring", err)
	}
	s.rx.descs = unsafe.Slice((*Desc)(p), rs.Rx)
	if s.tx.ring, p, err = mapRing(s.fd, off.Tx, unix.XDP_PGOFF_TX_RING, rs.Tx, unsafe.Sizeof(Desc{})); err != nil {
		return fail("mmap tx ring", err)
	}
	s.tx.descs = unsafe.Slice((*Desc)(p), rs.Tx)
	s.tx.other = rs.Tx

	// Let one sendto() push a whole batch (Linux >= 6.17; older kernels refuse, which is fine).
	budget := uint32(64)
	_ = setsockopt(s.fd, unix.XDP_MAX_TX_SKB_BUDGET, unsafe.Pointer(&budget), 4)

	err = u.bind(s.fd, ifindex, queue, bf, first)
	if err != nil {
		if errors.Is(err, unix.EBUSY) {
			err = fmt.Errorf("%w (another AF_XDP socket is bound to this queue: is another gswitchd running?)", err)
		}
		return fail("bind", err)
	}
	if first {
		u.ownerUp = true
	}
	u.socks = append(u.socks, s)
	return s, nil
}

// ownerAddr is the bind address of a socket that owns its UMEM registration.
func ownerAddr(ifindex, queue int, bf BindFlags) *unix.SockaddrXDP {
	sa := &unix.SockaddrXDP{Ifindex: uint32(ifindex), QueueID: uint32(queue), Flags: unix.XDP_USE_NEED_WAKEUP}
	if bf.Copy {
		sa.Flags |= unix.XDP_COPY
	}
	if bf.ZeroCopy {
		sa.Flags |= unix.XDP_ZEROCOPY
	}
	if bf.SG {
		sa.Flags |= unix.XDP_USE_SG
	}
	return sa
}

// bind binds fd to (ifindex, queue); u.mu is held. The first socket binds
// as the owner of the UMEM's registration. A later one binds with
// XDP_SHARED_UMEM through an open socket of the UMEM that is still bound
// (sharing sockets inherit copy/zero-copy and need_wakeup from the UMEM);
// when no open socket is bound (the kernel answers EBADF for each), the
// UMEM's memory is registered again on fd, which then binds as an owner.
//
// bind also waits out the kernel's deferred release of a socket of this
// UMEM that was closed on the same queue: the kernel frees a closed
// socket's buffer pool from a work queue after an RCU grace period
// (xp_release_deferred), and until then a bind to that queue fails with
// EBUSY (10 to 40 ms on the development machine). An EBUSY with no such
// socket, or one that lasts a second, is returned. u.mu is let go while
// waiting.
func (u *UMEM) bind(fd, ifindex, queue int, bf BindFlags, owner bool) error {
	k := queueKey{ifindex, queue}
	deadline := time.Now().Add(time.Second)
	for {
		err := errNoBoundSocket
		if !owner {
			err = u.bindShared(fd, ifindex, queue)
		}
		if err == errNoBoundSocket {
			if !owner {
				if err := registerUMEM(fd, u.Mem, u.FrameSize); err != nil {
					return fmt.Errorf("no socket of the UMEM is bound any more, registering it again: %w", err)
				}
				owner = true
			}
			err = unix.Bind(fd, ownerAddr(ifindex, queue, bf))
		}
		if err == nil {
			delete(u.released, k)
			return nil
		}
		if !errors.Is(err, unix.EBUSY) {
			return err
		}
		at, ok := u.released[k]
		if !ok || time.Since(at) > 2*time.Second || time.Now().After(deadline) {
			return err
		}
		u.mu.Unlock()
		time.Sleep(time.Millisecond)
		u.mu.Lock()
	}
}

var errNoBoundSocket = errors.New("no socket of the UMEM is bound")

// bindShared tries each open socket of the UMEM; u.mu is held.
func (u *UMEM) bindShared(fd, ifindex, queue int) error {
	for _, o := range u.socks {
		if o.fd < 0 {
			continue
		}
		sa := &unix.SockaddrXDP{Flags: unix.XDP_SHARED_UMEM, Ifindex: uint32(ifindex), QueueID: uint32(queue), SharedUmemFD: uint32(o.fd)}
		if err := unix.Bind(fd, sa); !errors.Is(err, unix.EBADF) {
			return err
		}
	}
	return errNoBoundSocket
}

func registerUMEM(fd int, mem []byte, frameSize uint32) error {
	reg := unix.XDPUmemReg{
		Addr: uint64(uintptr(unsafe.Pointer(&mem[0]))),
		Len:  uint64(len(mem)),
		Size: frameSize,
	}
	if err := setsockopt(fd, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
		return fmt.Errorf("XDP_UMEM_REG: %w", err)
	}
	return nil
}

// release notes that s let go of its queue (see bind); u.mu is held.
func (u *UMEM) release(s *Socket) {
	if u.released == nil {
		u.released = map[queueKey]time.Time{}
	}
	u.released[queueKey{s.Ifindex, s.Queue}] = time.Now()
}

// FD is the socket's file descriptor, for poll() and the XSKMAP; -1 once
// Reclaim or Close let go of it.
func (s *Socket) FD() int { return s.fd }

// Fill gives frames to the kernel to receive into and returns how many it took.
func (s *Socket) Fill(addrs []uint64) int {
	r := &s.fill
	n := r.free(uint32(len(addrs)))
	if n > uint32(len(addrs)) {
		n = uint32(len(addrs))
	}
	for i := uint32(0); i < n; i++ {
		r.addrs[(r.local+i)&r.mask] = addrs[i]
	}
	if n > 0 {
		r.local += n
		r.publishProducer()
	}
	return int(n)
}

// FillFree is how many more frames the fill ring can take.
func (s *Socket) FillFree() int { return int(s.fill.free(s.fill.size)) }

// Receive copies up to len(descs) received descriptors and releases them from the rx ring.
func (s *Socket) Receive(descs []Desc) int {
	r := &s.rx
	n := r.avail(uint32(len(descs)))
	for i := uint32(0); i < n; i++ {
		descs[i] = r.descs[(r.local+i)&r.mask]
	}
	if n > 0 {
		r.local += n
		r.publishConsumer()
	}
	return int(n)
}

// Transmit queues up to len(descs) descriptors on the tx ring and returns how many fit.
// Call Kick afterwards.
func (s *Socket) Transmit(descs []Desc) int {
	r := &s.tx
	n := r.free(uint32(len(descs)))
	if n > uint32(len(descs)) {
		n = uint32(len(descs))
	}
	for i := uint32(0); i < n; i++ {
		r.descs[(r.local+i)&r.mask] = descs[i]
	}
	if n > 0 {
		r.local += n
		r.publishProducer()
	}
	return int(n)
}

// TxFree is how many descriptors the tx ring can take now.
func (s *Socket) TxFree() int { return int(s.tx.free(s.tx.size)) }

// Complete takes up to len(addrs) addresses of frames the kernel has sent.
func (s *Socket) Complete(addrs []uint64) int {
	r := &s.comp
	n := r.avail(uint32(len(addrs)))
	for i := uint32(0); i < n; i++ {
		addrs[i] = r.addrs[(r.local+i)&r.mask]
	}
	if n > 0 {
		r.local += n
		r.publishConsumer()
	}
	return int(n)
}

// TxPending reports whether descriptors wait on the tx ring for the kernel.
func (s *Socket) TxPending() bool { return s.tx.pending() != 0 }

// Kick asks the kernel to send what is on the tx ring, when it says it needs
// to be asked (need_wakeup). It is a non-blocking sendto() made with
// syscall.RawSyscall6: in copy mode the whole transmit (and, on veth, the
// peer's receive softirq) runs inside this call, and on Go's ordinary
// syscall path the runtime's sysmon retakes the P during it, which stalled
// the worker long enough to overflow rx rings (docs/afxdp.md, "Measured
// before the switch").
func (s *Socket) Kick() {
	if !s.tx.needWakeup() {
		return
	}
	s.Kicks++
	_, _, e := syscall.RawSyscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	switch e {
	case 0, unix.EAGAIN, unix.EBUSY, unix.ENOBUFS, unix.ENETDOWN:
	default:
		s.KickErrs++
	}
}

// WakeFill tells the kernel that frames were added to the fill ring, when it asks.
func (s *Socket) WakeFill() {
	if s.fill.needWakeup() {
		syscall.RawSyscall6(unix.SYS_RECVFROM, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	}
}

// Stats are the kernel's XDP_STATISTICS counters of the socket.
type Stats = unix.XDPStatistics

// Stats reads XDP_STATISTICS. It may be called from any goroutine.
func (s *Socket) Stats() (Stats, error) {
	var st Stats
	optlen := uint32(unsafe.Sizeof(st))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_XDP, unix.XDP_STATISTICS,
		uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&optlen)), 0); e != 0 {
		return st, os.NewSyscallError("getsockopt(XDP_STATISTICS)", e)
	}
	return st, nil
}

// ZeroCopy reports whether the socket runs in zero-copy mode.
func (s *Socket) ZeroCopy() bool {
	var opts uint32
	optlen := uint32(4)
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_XDP, unix.XDP_OPTIONS,
		uintptr(unsafe.Pointer(&opts)), uintptr(unsafe.Pointer(&optlen)), 0); e != 0 {
		return false
	}
	return opts&unix.XDP_OPTIONS_ZEROCOPY != 0
}

// Close unmaps the rings and closes the socket. Frames still on its rings
// are forgotten: call Reclaim first to get them back.
func (s *Socket) Close() error {
	s.unmapAll()
	u := s.umem
	u.mu.Lock()
	defer u.mu.Unlock()
	for i, o := range u.socks {
		if o == s {
			u.socks = append(u.socks[:i], u.socks[i+1:]...)
			break
		}
	}
	if s.fd < 0 {
		return nil
	}
	u.release(s)
	err := unix.Close(s.fd)
	s.fd = -1
	return err
}

func (s *Socket) unmapAll() {
	s.fill.unmap()
	s.comp.unmap()
	s.rx.unmap()
	s.tx.unmap()
}

func setsockopt(fd, name int, val unsafe.Pointer, size uintptr) error {
	if _, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(name), uintptr(val), size, 0); e != 0 {
		return e
	}
	return nil
}
