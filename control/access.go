package control

import (
	"fmt"
	"net"
	"os"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Tier is what a peer of the control socket may do.
type Tier int

// The tiers, each allowing what the ones below it allow.
const (
	// TierNone may not use the socket at all.
	TierNone Tier = iota
	// TierRead may ask what changes nothing and shows no frame: every view.
	TierRead
	// TierAdmin may also change the switch and capture frames.
	TierAdmin
)

func (t Tier) String() string {
	switch t {
	case TierRead:
		return "read"
	case TierAdmin:
		return "admin"
	}
	return "none"
}

// Kind is one kind of request the server answers, and the tier it needs.
type Kind struct {
	Cmd  string
	Tier Tier
	What string // what it does, for the log and the docs
}

// Kinds classifies every request the server answers: the read tier gets
// what changes nothing and reveals no frame's contents, the admin tier
// what changes the switch or shows frames. A command missing here is
// unknown to the server (TestEveryCommandIsClassified checks that Handle
// answers no other).
var Kinds = []Kind{
	{"info", TierRead, "what the switch is"},
	{"health", TierRead, "whether it forwards"},
	{"ports", TierRead, "ports and their counters"},
	{"queues", TierRead, "a port's queues"},
	{"mac", TierRead, "the MAC table"},
	{"routes", TierRead, "the routing table"},
	{"neighbors", TierRead, "the neighbour cache"},
	{"flows", TierRead, "what the mechanisms report"},
	{"stats", TierRead, "every port's counters"},
	{"fidelity", TierRead, "how late the workers ran and the line time the ports lost"},
	{"set", TierAdmin, "changes a port while gswitchd runs"},
	{"reload", TierAdmin, "re-reads the config file and applies it"},
	{"capture", TierAdmin, "shows the frames of a port"},
}

// Commands lists what the server answers, in the order of Kinds.
var Commands = func() []string {
	var c []string
	for _, k := range Kinds {
		c = append(c, k.Cmd)
	}
	return c
}()

// tierOf is the tier cmd needs; an unknown command needs TierRead (it is
// answered with an error that lists the known ones).
func tierOf(cmd string) Tier {
	for _, k := range Kinds {
		if k.Cmd == cmd {
			return k.Tier
		}
	}
	return TierRead
}

// isKind reports whether cmd is one of Kinds.
func isKind(cmd string) bool {
	for _, k := range Kinds {
		if k.Cmd == cmd {
			return true
		}
	}
	return false
}

// peer is who is at the other end of a connection, as the kernel saw it
// when the peer connected (SO_PEERCRED, SO_PEERGROUPS).
type peer struct {
	uid, gid uint32
	pid      int32
	groups   []uint32 // supplementary groups; nil: unknown (read from /proc)
	tier     Tier
}

func (p *peer) String() string {
	return fmt.Sprintf("uid %d pid %d", p.uid, p.pid)
}

// inGroup reports whether the peer has gid among its groups.
func (p *peer) inGroup(gid int) bool {
	if gid < 0 {
		return false
	}
	if int(p.gid) == gid {
		return true
	}
	if p.groups != nil {
		for _, g := range p.groups {
			if int(g) == gid {
				return true
			}
		}
		return false
	}
	// No SO_PEERGROUPS (Linux before 4.13): the groups /proc/PID/status
	// lists, as long as the peer lives.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "Groups:"); ok {
			for _, g := range strings.Fields(rest) {
				if g == strconv.Itoa(gid) {
					return true
				}
			}
		}
	}
	return false
}

// peerOf reads the credentials of c's peer.
func peerOf(c *net.UnixConn) (*peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var p *peer
	var cerr error
	raw.Control(func(fd uintptr) {
		cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err != nil {
			cerr = err
			return
		}
		p = &peer{uid: cred.Uid, gid: cred.Gid, pid: cred.Pid}
		p.groups, _ = peerGroups(int(fd))
	})
	if cerr != nil {
		return nil, fmt.Errorf("reading the peer's credentials: %v", cerr)
	}
	return p, nil
}

// peerGroups reads SO_PEERGROUPS: the supplementary groups the peer had
// when it connected (an array of gid_t). x/sys has no getter for it.
func peerGroups(fd int) ([]uint32, error) {
	n := 64
	for {
		buf := make([]uint32, n)
		size := uint32(4 * n)
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_PEERGROUPS,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&size)), 0)
		if e == unix.ERANGE && int(size/4) > n {
			n = int(size / 4)
			continue
		}
		if e != 0 {
			return nil, e
		}
		return buf[:size/4], nil
	}
}

// access is who may do what on the socket: the groups of the read and the
// admin tier (-1: none) and their names for messages.
type access struct {
	readGid, adminGid     int
	readGroup, adminGroup string
}

func lookupGroup(key, name string) (int, error) {
	if name == "" {
		return -1, nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return -1, fmt.Errorf("%s: %q: %v (create it with groupadd, or leave %s out)", key, name, err, key)
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return -1, fmt.Errorf("%s: %q has gid %q", key, name, g.Gid)
	}
	return gid, nil
}

// tierOf is what p may do: root and gswitchd's own user are admins, then
// the admin group, then the read group.
func (a *access) tierOf(p *peer) Tier {
	switch {
	case p.uid == 0 || int(p.uid) == os.Geteuid():
		return TierAdmin
	case p.inGroup(a.adminGid):
		return TierAdmin
	case p.inGroup(a.readGid):
		return TierRead
	}
	return TierNone
}

// refuseConn is the answer to a peer that may not connect.
func (a *access) refuseConn(p *peer) string {
	return fmt.Sprintf("permission denied: uid %d is not root and not in gswitchd's control group (%s)", p.uid, a.groupsText())
}

func (a *access) groupsText() string {
	var g []string
	if a.readGroup != "" {
		g = append(g, "control.group "+a.readGroup+" reads")
	}
	if a.adminGroup != "" {
		g = append(g, "control.admin_group "+a.adminGroup+" reads and changes")
	}
	if len(g) == 0 {
		return "none is set: root and gswitchd's user only"
	}
	return strings.Join(g, ", ")
}

// refuseAdmin is the answer to a read-tier peer asking for cmd.
func (a *access) refuseAdmin(p *peer, cmd string) string {
	how := "set control.admin_group in gswitchd's config to a group that may, and add the user to it"
	if a.adminGroup != "" {
		how = fmt.Sprintf("members of control.admin_group %s may: add the user to it (usermod -aG %s USER, then log in again)", a.adminGroup, a.adminGroup)
	}
	return fmt.Sprintf("permission denied: %s %s, which needs the admin tier; uid %d may only read (control.group %s): %s, or run as root",
		cmd, kindWhat(cmd), p.uid, a.readGroup, how)
}

func kindWhat(cmd string) string {
	for _, k := range Kinds {
		if k.Cmd == cmd {
			return k.What
		}
	}
	return ""
}

// logLimiter keeps a peer that is refused again and again from flooding
// gswitchd's log: at most burst lines at once, then rate a second; the
// lines left out are counted into the next one.
type logLimiter struct {
	mu         sync.Mutex
	tokens     float64
	last       time.Time
	suppressed int
}

const (
	refusalLogBurst = 20
	refusalLogRate  = 5 // lines per second
)

// allow reports whether a line may be logged now, and how many were left
// out since the last one that was.
func (l *logLimiter) allow(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last.IsZero() {
		l.tokens = refusalLogBurst
	} else {
		l.tokens = min(refusalLogBurst, l.tokens+now.Sub(l.last).Seconds()*refusalLogRate)
	}
	l.last = now
	if l.tokens < 1 {
		l.suppressed++
		return false, 0
	}
	l.tokens--
	n := l.suppressed
	l.suppressed = 0
	return true, n
}
