package dataplane

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// The workers' threads: each worker is a goroutine locked to an OS thread
// of its own, pinned, with the nice value and slice the config asks for.

// Start runs every worker on its own goroutine, locked to an OS thread
// (pinned to its CPU when Config.CPUs says so). An error (a worker could
// not be pinned) leaves the other workers running: Stop them.
func (s *Switch) Start() error {
	s.started = true
	// A worker needs one of the runtime's Ps to run Go code, and must take
	// one again after every ppoll. With as many Ps as CPUs, the rest of the
	// process (a scrape's Collect, the garbage collector's mark workers)
	// can hold them all, and a worker back from its sleep then waits for a
	// P that an ordinary goroutine holds, whatever its thread's priority
	// (realtime, nice). Every worker gets a P beyond the CPUs', so it waits
	// only for the CPU, which the kernel gives by priority.
	if n := runtime.NumCPU() + len(s.workers); runtime.GOMAXPROCS(0) < n {
		runtime.GOMAXPROCS(n)
	}
	if s.cfg.Realtime > 0 {
		if err := s.realtimeProcess(); err != nil {
			return err
		}
	}
	pinned := make(chan error, len(s.workers))
	for _, w := range s.workers {
		s.wg.Add(1)
		go func(w *worker) {
			defer s.wg.Done()
			// Locked for good: the thread's timer slack, CPU set, nice value
			// and slice are the worker's, and a goroutine that exits locked
			// takes its thread with it instead of handing those to others.
			runtime.LockOSThread()
			// Wake from ppoll when asked, not up to 50 us later (the kernel's
			// default timer slack): link delays and shaped frames are timed by it.
			unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
			if cpus := s.cfg.CPUs; len(cpus) > 0 {
				cpu := cpus[w.id%len(cpus)]
				var set unix.CPUSet
				set.Set(cpu)
				if err := unix.SchedSetaffinity(0, &set); err != nil {
					pinned <- fmt.Errorf("cpus: pinning worker %d to CPU %d: %w", w.id, cpu, err)
					return
				}
			}
			if err := s.setSched(); err != nil {
				pinned <- fmt.Errorf("worker %d: %w", w.id, err)
				return
			}
			pinned <- nil
			w.run()
		}(w)
	}
	var err error
	for range s.workers {
		err = cmp.Or(err, <-pinned)
	}
	return err
}

// realtimeProcess puts every thread of the process under SCHED_FIFO one
// priority below the workers' (at 1 when the workers' is 1); the threads
// the runtime starts later inherit it from the thread that starts them
// (the runtime starts threads for a locked goroutine, as a worker's is,
// from its template thread, not from the worker's). A worker is not alone
// in its process:
// back from a system call (its ppoll) it cannot go on while another thread
// holds its goroutine for a moment (Go 1.26: the runtime's monitor, sysmon,
// looking whether to take its P back; runtime/metrics counting goroutines
// for a scrape), and it spins (sched_yield) until that thread lets go. An
// ordinary thread preempted at that moment, by a busy loop on the other
// CPU or by the realtime worker itself on its own, kept a realtime worker
// spinning for 28 to 52 ms at a time beside a busy loop (perf sched:
// runtime.exitsyscall -> casgstatus -> osyield, the lost line time of
// the namespace tests). Realtime, those threads no longer wait
// behind ordinary ones: preempted by a worker on its CPU, one is pushed to
// a CPU that runs an ordinary thread. One priority below the workers, a
// worker woken while one of them runs takes the CPU at once: a scrape of a
// switch with many ports and queues takes milliseconds (7 ms for 33 ports
// of 16 queues), and at the workers' own priority it kept a worker from
// its timers that long (docs/results.md, "Realtime switches beside a busy
// loop").
func (s *Switch) realtimeProcess() error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("realtime %d: listing the process's threads: %w", s.cfg.Realtime, err)
	}
	a := unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: uint32(max(s.cfg.Realtime-1, 1))}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetAttr(tid, &a, 0); err != nil && !errors.Is(err, unix.ESRCH) {
			if errors.Is(err, unix.EPERM) {
				return fmt.Errorf("realtime: %d needs root or CAP_SYS_NICE (run gswitchd as root or remove realtime:): %w", s.cfg.Realtime, err)
			}
			return fmt.Errorf("realtime %d: sched_setattr on thread %d: %w", s.cfg.Realtime, tid, err)
		}
	}
	return nil
}

// setSched gives the calling thread (a worker's) the configured realtime
// priority (SCHED_FIFO), or nice value and slice. Nice and slice are per
// thread in Linux; sched_setattr sets both at once and keeps SCHED_OTHER.
func (s *Switch) setSched() error {
	if s.cfg.Realtime > 0 {
		a := unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: uint32(s.cfg.Realtime)}
		if err := unix.SchedSetAttr(0, &a, 0); err != nil {
			if errors.Is(err, unix.EPERM) {
				return fmt.Errorf("realtime: %d needs root or CAP_SYS_NICE (run gswitchd as root or remove realtime:): %w", s.cfg.Realtime, err)
			}
			return fmt.Errorf("realtime %d: sched_setattr: %w", s.cfg.Realtime, err)
		}
		return nil
	}
	if s.cfg.Nice == 0 && s.cfg.Slice == 0 {
		return nil
	}
	a := unix.SchedAttr{Policy: 0 /* SCHED_OTHER */, Nice: int32(s.cfg.Nice), Runtime: uint64(s.cfg.Slice)}
	err := unix.SchedSetAttr(0, &a, 0)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("nice: %d needs root or CAP_SYS_NICE (run gswitchd as root or set nice: 0): %w", s.cfg.Nice, err)
	case errors.Is(err, unix.EINVAL) && s.cfg.Slice != 0:
		return fmt.Errorf("slice: %v refused by the kernel (a slice for ordinary threads needs Linux 6.12; remove slice:): %w", s.cfg.Slice, err)
	}
	return fmt.Errorf("nice %d, slice %v: sched_setattr: %w", s.cfg.Nice, s.cfg.Slice, err)
}

// Stop stops the workers and waits for them. Frames still queued stay
// where they are; Close releases the sockets.
func (s *Switch) Stop() {
	s.stopping.Store(true)
	for _, w := range s.workers {
		w.nap.wake()
	}
	s.wg.Wait()
}

// Close releases the workers' eventfds. Call after Stop.
func (s *Switch) Close() error {
	s.closeWorkers()
	return nil
}

func (s *Switch) closeWorkers() {
	for _, w := range s.workers {
		w.nap.close()
	}
}

// Step runs one pass of worker w's loop and reports whether it did any
// work; the time since its last pass counts as a pass gap, as in the
// running loop (WorkerStats.PassGap). Tests use it to drive the switch
// deterministically; do not mix it with Start.
func (s *Switch) Step(w int) bool { return s.workers[w].step(s.clock.Now()) }

// cpuList writes a CPU set as a list such as "0-3,6".
func cpuList(set *unix.CPUSet) string {
	var b []byte
	for c := 0; c < 1024; c++ {
		if !set.IsSet(c) {
			continue
		}
		e := c
		for e+1 < 1024 && set.IsSet(e+1) {
			e++
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "%d", c)
		if e > c {
			b = fmt.Appendf(b, "-%d", e)
		}
		c = e
	}
	return string(b)
}
