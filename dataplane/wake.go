package dataplane

import (
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sleeper is how a worker sleeps and is woken: an eventfd other goroutines
// write, and the set of descriptors the worker sleeps on in ppoll (its
// sockets of ports that are up, and the eventfd; built by
// worker.buildPoll). The worker's goroutine alone polls; sleeping and
// resumed are for any goroutine.
type sleeper struct {
	efd        int // eventfd other workers write to wake this one
	wone       uint64
	rbuf       uint64
	pollfds    []unix.PollFd
	pollPort   []int // port of each pollfd (-1: the eventfd)
	unpollable bool  // some link has no descriptor to poll (in-memory links)
	ts         unix.Timespec
	sleeping   atomic.Bool
	resumed    atomic.Bool // a paused queue of one of its ports was resumed (any goroutine): pass again before sleeping
}

// open creates the eventfd.
func (z *sleeper) open() error {
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return err
	}
	z.efd, z.wone = efd, 1
	return nil
}

// close releases the eventfd.
func (z *sleeper) close() {
	if z.efd >= 0 {
		unix.Close(z.efd)
		z.efd = -1
	}
}

// wakeIfSleeping writes the eventfd if the worker is (about to be) asleep.
func (z *sleeper) wakeIfSleeping() {
	if z.sleeping.Load() {
		z.wake()
	}
}

// wake writes the eventfd.
func (z *sleeper) wake() {
	if z.efd >= 0 {
		syscall.RawSyscall(unix.SYS_WRITE, uintptr(z.efd), uintptr(unsafe.Pointer(&z.wone)), 8)
	}
}

// resume tells the worker that a paused queue of one of its ports was
// resumed, and wakes it: a worker whose ports hold only paused frames
// sleeps until something wakes it.
func (z *sleeper) resume() {
	z.resumed.Store(true)
	z.wakeIfSleeping()
}

// poll sleeps in ppoll on the descriptor set for at most timeout ns and
// returns how many descriptors are ready (the worker's goroutine).
func (z *sleeper) poll(timeout int64) int {
	z.ts = unix.NsecToTimespec(timeout)
	n, _ := unix.Ppoll(z.pollfds, &z.ts, nil)
	z.sleeping.Store(false)
	return n
}

// drain reads the eventfd, which poll found written.
func (z *sleeper) drain() {
	syscall.RawSyscall(unix.SYS_READ, uintptr(z.efd), uintptr(unsafe.Pointer(&z.rbuf)), 8)
}
