// Command latency measures how late a thread of this machine wakes up from
// a 100 µs sleep, for MS milliseconds (scripts/experiments/xpass.sh runs it
// beside each experiment: ExpressPass's data queues grow with the
// switches' and hosts' lateness). It prints the lateness that 1% of the
// time is spent in (time-weighted p99), the per-wake-up p99, and the most.
//
//	latency 3000
package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	ms := 1000
	if len(os.Args) > 1 {
		ms, _ = strconv.Atoi(os.Args[1])
	}
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	type sample struct{ late, took time.Duration }
	var ss []sample
	var total time.Duration
	for end := time.Now().Add(time.Duration(ms) * time.Millisecond); time.Now().Before(end); {
		t0 := time.Now()
		ts := unix.NsecToTimespec(100_000)
		unix.Nanosleep(&ts, nil)
		took := time.Since(t0)
		ss = append(ss, sample{max(took-100*time.Microsecond, 0), took})
		total += took
	}
	if len(ss) == 0 {
		return
	}
	sort.Slice(ss, func(i, j int) bool { return ss[i].late > ss[j].late })
	var acc, tw time.Duration
	for _, x := range ss {
		if acc += x.took; acc >= total/100 {
			tw = x.late
			break
		}
	}
	fmt.Printf("lateness of a 100us sleep: time-weighted p99 %v, p99 %v, max %v (%d wake-ups)\n",
		tw, ss[len(ss)/100].late, ss[0].late, len(ss))
}
