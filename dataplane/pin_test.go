package dataplane

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/units"
	"golang.org/x/sys/unix"
)

// TestWorkersPinnedToCPUs: with Config.CPUs, every worker's thread runs on
// its CPU only (worker i on CPUs[i mod len]), and a CPU the process may not
// use is refused by New, naming the entry.
func TestWorkersPinnedToCPUs(t *testing.T) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Fatal(err)
	}
	if allowed.Count() < 2 {
		t.Skip("this process may use one CPU only: a pinned thread looks like any other")
	}
	cpu := -1
	for c := 0; c < 1024; c++ {
		if allowed.IsSet(c) {
			cpu = c
		}
	}
	pinned := func() int { // threads of this process allowed on cpu alone
		n := 0
		tasks, _ := filepath.Glob("/proc/self/task/*/status")
		for _, f := range tasks {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok && strings.TrimSpace(v) == fmt.Sprint(cpu) {
					n++
				}
			}
		}
		return n
	}
	before := pinned()
	s, _, _ := testSwitch(t, 2, 2, 1024, func(c *Config) { c.CPUs = []int{cpu} })
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	if got := pinned() - before; got != 2 {
		t.Fatalf("%d threads pinned to CPU %d after starting two workers with cpus [%d], want 2", got, cpu, cpu)
	}

	mem := make([]byte, 256*frameSize)
	ml := NewMemLink(mem, frameSize, 64)
	cfg := Config{Config: config.Config{Ports: []config.Port{{Name: "a"}}, CPUs: []int{cpu, 1023}}}
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	_, err := New(cfg, mem, frameSize, [][]Link{{ml}})
	if allowed.IsSet(1023) {
		return
	}
	if err == nil || !strings.Contains(err.Error(), "cpus[1]") {
		t.Fatalf("CPU 1023 accepted or not named: %v", err)
	}
}

// TestWorkersNiceAndSlice: with Config.Nice and Config.Slice, every
// worker's thread runs at that nice value with that scheduler slice, and
// the other threads of the process keep theirs.
func TestWorkersNiceAndSlice(t *testing.T) {
	const nice = 7 // positive: allowed without privilege
	const slice = 300 * time.Microsecond
	withNice := func() (n int, slices []uint64) { // threads of this process at nice
		tasks, _ := filepath.Glob("/proc/self/task/*")
		for _, d := range tasks {
			tid, err := strconv.Atoi(filepath.Base(d))
			if err != nil {
				continue
			}
			a, err := unix.SchedGetAttr(tid, 0)
			if err != nil || a.Nice != nice {
				continue
			}
			n++
			slices = append(slices, a.Runtime)
		}
		return n, slices
	}
	before, _ := withNice()
	s, _, _ := testSwitch(t, 2, 2, 1024, func(c *Config) { c.Nice, c.Slice = nice, units.Duration(slice) })
	if err := s.Start(); err != nil {
		if strings.Contains(err.Error(), "slice") {
			t.Skipf("this kernel takes no slice for ordinary threads: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	n, slices := withNice()
	if n-before != 2 {
		t.Fatalf("%d threads at nice %d after starting two workers with nice %d, want 2", n-before, nice, nice)
	}
	for _, sl := range slices {
		if sl != uint64(slice) {
			t.Errorf("a worker's slice is %v, want %v", time.Duration(sl), slice)
		}
	}
	if before != 0 {
		t.Logf("%d threads were at nice %d before", before, nice)
	}
}
