package topo

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// newNamespace creates the named network namespace (bound at
// /run/netns/<name>, as ip netns does), calls made once it exists, then
// setup with the calling OS thread inside it (for /proc/sys writes), and
// returns the thread to its namespace. A thread that cannot return is not
// unlocked, so the runtime ends it with the goroutine.
func newNamespace(name string, made func() error, setup func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer orig.Close()
		err = enterNewNamespace(name)
		if err == nil {
			if err = made(); err == nil {
				err = setup()
			}
		}
		if serr := netns.Set(orig); serr != nil {
			errc <- errors.Join(err, fmt.Errorf("returning to the original namespace: %w", serr))
			return
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	return <-errc
}

// enterNewNamespace moves the calling (locked) thread into a new network
// namespace and binds it to /run/netns/<name>; it refuses an existing name.
func enterNewNamespace(name string) error {
	if err := os.MkdirAll(netnsDir, 0o755); err != nil {
		return err
	}
	path := nsPath(name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return err // exists: someone made it since the clash check
	}
	f.Close()
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		os.Remove(path)
		return fmt.Errorf("unshare: %w", err)
	}
	self := fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid())
	if err := unix.Mount(self, path, "none", unix.MS_BIND, ""); err != nil {
		os.Remove(path)
		return fmt.Errorf("binding %s: %w", path, err)
	}
	return nil
}

// writeSysctl writes /proc/sys/<key> in the calling thread's network namespace.
func writeSysctl(key, value string) error {
	return os.WriteFile("/proc/sys/"+key, []byte(value), 0o644)
}

// procStat returns a process's state letter and start time (fields 3 and 22 of /proc/<pid>/stat).
func procStat(pid int) (state byte, start uint64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	i := bytes.LastIndexByte(b, ')') // the command name may hold spaces and parentheses
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	return f[0][0], start, err
}

func procStart(pid int) (uint64, error) {
	_, s, err := procStat(pid)
	return s, err
}

// procAlive: the process exists and is not a zombie.
func procAlive(pid int) bool {
	st, _, err := procStat(pid)
	return err == nil && st != 'Z' && st != 'X'
}

func procCmdline(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// procMatches says whether pr is still the process Up started: same command line and start time.
func procMatches(pr process) bool {
	if pr.PID <= 0 || !procAlive(pr.PID) || !slices.Equal(procCmdline(pr.PID), pr.Argv) {
		return false
	}
	start, err := procStart(pr.PID)
	return err == nil && (pr.Start == 0 || start == pr.Start)
}

// pids lists the processes in /proc.
func pids() []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// procsRunningConfigs finds processes whose command line is "<binary> -config <path>"
// for one of the given config paths.
func procsRunningConfigs(configs map[string]bool) []int {
	var out []int
	for _, pid := range pids() {
		a := procCmdline(pid)
		if len(a) == 3 && a[1] == "-config" && configs[a[2]] && procAlive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// stopProcesses sends SIGTERM (gswitchd detaches its XDP programs), and
// SIGKILL to what is still alive after 5 s.
func stopProcesses(set map[int]bool) error {
	if len(set) == 0 {
		return nil
	}
	for pid := range set {
		syscall.Kill(pid, syscall.SIGTERM)
	}
	if waitGone(set, 5*time.Second) {
		return nil
	}
	for pid := range set {
		if procAlive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if !waitGone(set, 2*time.Second) {
		return fmt.Errorf("processes %v still alive after SIGKILL", keys(set))
	}
	return nil
}

func waitGone(set map[int]bool, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		alive := false
		for pid := range set {
			if procAlive(pid) {
				alive = true
			}
		}
		if !alive {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func keys(m map[int]bool) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// killInNamespace kills (SIGKILL) every process whose network namespace is
// ns: a process left in it would keep the namespace, and its veth, alive.
func killInNamespace(ns string) error {
	var want unix.Stat_t
	if err := unix.Stat(nsPath(ns), &want); err != nil {
		return nil // gone already
	}
	set := map[int]bool{}
	for _, pid := range pids() {
		if pid == os.Getpid() {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(filepath.Join("/proc", strconv.Itoa(pid), "ns", "net"), &st) == nil && st.Dev == want.Dev && st.Ino == want.Ino {
			set[pid] = true
		}
	}
	for pid := range set {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	if !waitGone(set, 2*time.Second) {
		return fmt.Errorf("namespace %s: processes %v still alive after SIGKILL", ns, keys(set))
	}
	return nil
}
