// Command wake times how long a thread blocked in ppoll on an eventfd takes
// to run after another thread writes the eventfd: the cost of one wake-up,
// which a sleeping gswitchd worker pays for the first frame of a burst and
// a host pays for each reply. It measures three placements, N wake-ups
// each, GAP apart (so the wakee's CPU goes idle in between):
//
//	same       waker and wakee pinned to one CPU
//	other      wakee pinned to another CPU than the waker (idle: it must be roused)
//	unpinned   both where the kernel puts them
//
//	go run ./scripts/experiments/wake [N] [GAP]   (defaults 2000 500us)
package main

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func pin(cpu int) {
	if cpu < 0 {
		return
	}
	var s unix.CPUSet
	s.Set(cpu)
	if err := unix.SchedSetaffinity(0, &s); err != nil {
		fmt.Fprintln(os.Stderr, "wake:", err)
		os.Exit(1)
	}
}

// run returns the sorted wake-up latencies with the waker on CPU wc and the
// wakee on ec (-1: not pinned).
func run(wc, ec, n int, gap time.Duration) []time.Duration {
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wake:", err)
		os.Exit(1)
	}
	defer unix.Close(efd)
	var t0, done atomic.Int64
	lat := make([]time.Duration, n)
	fin := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		pin(ec)
		pfd := [1]unix.PollFd{{Fd: int32(efd), Events: unix.POLLIN}}
		var b [8]byte
		for i := 0; i < n; i++ {
			// A raw system call: the Go runtime does not take part in the wake-up.
			unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd[0])), 1, 0, 0, 0, 0)
			now := time.Now().UnixNano()
			unix.Read(efd, b[:])
			lat[i] = time.Duration(now - t0.Load())
			done.Store(int64(i + 1))
		}
		close(fin)
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pin(wc)
	one := [8]byte{1}
	// The waker sleeps in nanosleep, not in the Go scheduler, whose idle
	// threads spin a while and would hold a shared CPU from the wakee.
	g, w := unix.NsecToTimespec(gap.Nanoseconds()), unix.NsecToTimespec(20e3)
	for i := 0; i < n; i++ {
		unix.Nanosleep(&g, nil)
		t0.Store(time.Now().UnixNano())
		unix.Write(efd, one[:])
		for done.Load() < int64(i+1) {
			unix.Nanosleep(&w, nil)
		}
	}
	<-fin
	if wc >= 0 { // leave this thread pinned to nothing in particular
		var all unix.CPUSet
		for c := 0; c < runtime.NumCPU(); c++ {
			all.Set(c)
		}
		unix.SchedSetaffinity(0, &all)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat
}

func main() {
	n, gap := 2000, 500*time.Microsecond
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	if len(os.Args) > 2 {
		gap, _ = time.ParseDuration(os.Args[2])
	}
	if n < 100 || gap <= 0 {
		fmt.Fprintln(os.Stderr, "usage: wake [N >= 100] [GAP, e.g. 500us]")
		os.Exit(2)
	}
	if runtime.NumCPU() < 2 {
		fmt.Fprintln(os.Stderr, "wake: needs two CPUs")
		os.Exit(1)
	}
	q := func(l []time.Duration, p float64) float64 { return float64(l[int(p*float64(len(l)-1))]) / 1e3 }
	fmt.Printf("%d wake-ups each, %v apart\n| placement | p50 µs | p90 µs | p99 µs |\n|---|---|---|---|\n", n, gap)
	for _, c := range []struct {
		name   string
		wc, ec int
	}{{"same CPU (0, 0)", 0, 0}, {"other CPU (0 wakes 1)", 0, 1}, {"unpinned", -1, -1}} {
		l := run(c.wc, c.ec, n, gap)
		fmt.Printf("| %s | %.1f | %.1f | %.1f |\n", c.name, q(l, 0.5), q(l, 0.9), q(l, 0.99))
	}
}
