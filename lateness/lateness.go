// Package lateness measures how late a thread of this machine wakes from a
// timed sleep, and chooses the timescale at which that lateness is small
// against the time a frame takes on a fabric's fastest link.
//
// A gswitchd worker sleeps in ppoll until the next frame is due and wakes
// late when the machine is busy (on a shared 2-core machine, 0.2 to 20 ms
// at the 99th percentile). At 10 Gbit/s a full frame takes 1.23 us; at
// timescale K (units.Timescale: every rate divided by K, every time
// multiplied by K) it takes K times longer on this machine, so the same
// lateness counts K times less. Measure samples the lateness as a worker
// would see it (a thread locked to itself, the workers' timer slack and
// nice value, deadlines about a frame time apart); Choose picks the
// smallest K of the ladder 1, 2, 5, 10, 20, 50, ... at which the measured
// 99th percentile is under one frame time (1538 bytes on the wire) of the
// fastest link at its fabric rate / K. `gswitchctl topo up` does both for a
// topology with `timescale: auto`; tests and scripts may call them too.
package lateness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/gswitch/gswitch/units"
	"golang.org/x/sys/unix"
)

// Defaults of a measurement.
const (
	// DefaultDuration is how long Measure samples.
	DefaultDuration = 3 * time.Second
	// DefaultPeriod is the time from one wake-up to the next deadline: a
	// full frame at 100 Mbit/s (123 us), the rates at which the switches
	// of one machine run well, so the probe sleeps as long as a worker
	// serving such a port does.
	DefaultPeriod = 123 * time.Microsecond
)

// FrameBytes is a full-size frame on the wire: 1500 bytes of payload, the
// Ethernet header and FCS, preamble and inter-frame gap.
const FrameBytes = 1538

// Options say how Measure samples.
type Options struct {
	// Duration is how long to sample (0: DefaultDuration).
	Duration time.Duration
	// Period is the time from a wake-up to the next deadline (0:
	// DefaultPeriod).
	Period time.Duration
	// Nice is the probe thread's nice value: the switches' workers' (their
	// config's nice key), so that it competes for the CPUs as they do. A
	// negative value needs root or CAP_SYS_NICE.
	Nice int
	// Slice is the probe thread's scheduler slice, the workers' (their
	// config's slice key; 0: the kernel's default; Linux 6.12 and later).
	Slice time.Duration
	// Realtime is the probe thread's SCHED_FIFO priority, the workers'
	// (their config's realtime key; 0: an ordinary thread at Nice).
	Realtime int
}

// Result is what a measurement saw: how late the thread woke after each
// deadline (0 when on time).
type Result struct {
	Duration time.Duration // how long it sampled
	Period   time.Duration
	Nice     int
	Slice    time.Duration
	Realtime int
	Wakeups  int
	P50      time.Duration
	P99      time.Duration
	Max      time.Duration
}

// String writes the result for people: "lateness p50 12 us, p99 420 us,
// max 3.1 ms over 3 s (24000 wake-ups 123 us apart, nice -10)" (and the
// slice, when one was set).
func (r Result) String() string {
	sl := ""
	if r.Realtime > 0 {
		return fmt.Sprintf("lateness p50 %s, p99 %s, max %s over %s (%d wake-ups %s apart, realtime %d)",
			units.FormatDuration(r.P50), units.FormatDuration(r.P99), units.FormatDuration(r.Max), units.FormatDuration(r.Duration),
			r.Wakeups, units.FormatDuration(r.Period), r.Realtime)
	}
	if r.Slice != 0 {
		sl = ", slice " + units.FormatDuration(r.Slice)
	}
	return fmt.Sprintf("lateness p50 %s, p99 %s, max %s over %s (%d wake-ups %s apart, nice %d%s)",
		units.FormatDuration(r.P50), units.FormatDuration(r.P99), units.FormatDuration(r.Max), units.FormatDuration(r.Duration),
		r.Wakeups, units.FormatDuration(r.Period), r.Nice, sl)
}

// Measure samples, on a thread of its own, how late a timed sleep in ppoll
// ends, for o.Duration or until ctx ends (then it returns what it has, and
// ctx's error if it had nothing).
func Measure(ctx context.Context, o Options) (Result, error) {
	if o.Duration <= 0 {
		o.Duration = DefaultDuration
	}
	if o.Period <= 0 {
		o.Period = DefaultPeriod
	}
	type out struct {
		late []time.Duration
		took time.Duration
		err  error
	}
	done := make(chan out, 1)
	go func() {
		// Locked for good: the thread's timer slack and nice value are the
		// probe's, and the thread ends with the goroutine.
		runtime.LockOSThread()
		if err := probeThread(o.Nice, o.Slice, o.Realtime); err != nil {
			done <- out{err: err}
			return
		}
		late := make([]time.Duration, 0, int(o.Duration/o.Period)+16)
		start := time.Now()
		now := start
		for now.Sub(start) < o.Duration && ctx.Err() == nil {
			deadline := now.Add(o.Period)
			ts := unix.NsecToTimespec(int64(o.Period))
			if _, err := unix.Ppoll(nil, &ts, nil); err != nil && !errors.Is(err, unix.EINTR) {
				done <- out{err: fmt.Errorf("ppoll: %w", err)}
				return
			}
			now = time.Now()
			late = append(late, max(now.Sub(deadline), 0))
		}
		done <- out{late: late, took: now.Sub(start)}
	}()
	got := <-done
	if got.err != nil {
		return Result{}, got.err
	}
	if len(got.late) == 0 {
		return Result{}, cmp.Or(ctx.Err(), errors.New("no wake-up measured"))
	}
	r := Summarize(got.late)
	r.Duration, r.Period, r.Nice, r.Slice, r.Realtime = got.took, o.Period, o.Nice, o.Slice, o.Realtime
	return r, nil
}

// probeThread gives the calling (locked) thread a worker's timer slack,
// nice value and slice, or realtime priority.
func probeThread(nice int, slice time.Duration, realtime int) error {
	// As gswitchd's workers: wake when asked, not up to 50 us later.
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	if realtime > 0 {
		a := unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: uint32(realtime)}
		if err := unix.SchedSetAttr(0, &a, 0); err != nil {
			return fmt.Errorf("realtime %d: sched_setattr (needs root or CAP_SYS_NICE, as the switches' workers do): %w", realtime, err)
		}
		return nil
	}
	if nice == 0 && slice == 0 {
		return nil
	}
	a := unix.SchedAttr{Policy: 0 /* SCHED_OTHER */, Nice: int32(nice), Runtime: uint64(slice)}
	if err := unix.SchedSetAttr(0, &a, 0); err != nil {
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("nice %d: needs root or CAP_SYS_NICE, as the switches' workers do: %w", nice, err)
		}
		return fmt.Errorf("nice %d, slice %v: sched_setattr: %w", nice, slice, err)
	}
	return nil
}

// Summarize returns the 50th and 99th percentiles and the largest of
// lateness samples (the percentiles of the samples, one per wake-up).
func Summarize(late []time.Duration) Result {
	if len(late) == 0 {
		return Result{}
	}
	s := slices.Clone(late)
	slices.Sort(s)
	at := func(q float64) time.Duration {
		return s[min(len(s)-1, int(q*float64(len(s))))]
	}
	return Result{Wakeups: len(s), P50: at(0.50), P99: at(0.99), Max: s[len(s)-1]}
}
