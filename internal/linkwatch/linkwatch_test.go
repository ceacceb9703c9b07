package linkwatch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// linkMsg builds an rtnetlink link message as the kernel sends it.
func linkMsg(typ uint16, seq uint32, family uint8, index int32, flags uint32, name string) syscall.NetlinkMessage {
	ifi := nl.NewIfInfomsg(int(family))
	ifi.Index = index
	ifi.Flags = flags
	data := append([]byte{}, ifi.Serialize()...)
	data = append(data, nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(name)).Serialize()...)
	return syscall.NetlinkMessage{Header: syscall.NlMsghdr{Type: typ, Seq: seq}, Data: data}
}

func done(seq uint32, flags uint16) syscall.NetlinkMessage {
	return syscall.NetlinkMessage{Header: syscall.NlMsghdr{Type: unix.NLMSG_DONE, Seq: seq, Flags: flags}, Data: make([]byte, 4)}
}

const upRunning = unix.IFF_UP | unix.IFF_RUNNING

// TestWatcherMessages feeds the watcher message sequences the kernel can
// send, including ones that follow lost messages.
func TestWatcherMessages(t *testing.T) {
	var got []Event
	w := newWatcher([]string{"a", "b"}, func(e Event) { got = append(got, e) })
	w.dumpSeq = 7
	feed := func(ms ...syscall.NetlinkMessage) {
		t.Helper()
		for _, m := range ms {
			if err := w.handle(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	expect := func(step string, want ...Event) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: events %v, want %v", step, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: events %v, want %v", step, got, want)
			}
		}
		got = nil
	}

	// The first dump: nothing reported before it is complete, then every
	// name in order, the missing one as gone.
	feed(linkMsg(unix.RTM_NEWLINK, 7, 0, 3, upRunning, "lo"), linkMsg(unix.RTM_NEWLINK, 7, 0, 5, upRunning, "b"))
	expect("during the first dump")
	feed(done(7, 0))
	expect("first dump", Event{Name: "a"}, Event{Name: "b", Index: 5, Exists: true, AdminUp: true, Up: true})

	// Repeated messages with the same state (counters, XDP) say nothing.
	feed(linkMsg(unix.RTM_NEWLINK, 0, 0, 5, upRunning|unix.IFF_LOWER_UP, "b"))
	expect("same state")
	// Carrier off, admin down.
	feed(linkMsg(unix.RTM_NEWLINK, 0, 0, 5, unix.IFF_UP, "b"), linkMsg(unix.RTM_NEWLINK, 0, 0, 5, 0, "b"))
	expect("carrier, admin", Event{Name: "b", Index: 5, Exists: true, AdminUp: true}, Event{Name: "b", Index: 5, Exists: true})
	// A bridge's port message (AF_BRIDGE) is not about the interface.
	feed(linkMsg(unix.RTM_DELLINK, 0, unix.AF_BRIDGE, 5, 0, "b"))
	expect("AF_BRIDGE DELLINK")

	// Deleted and re-created with a new ifindex.
	feed(linkMsg(unix.RTM_DELLINK, 0, 0, 5, 0, "b"), linkMsg(unix.RTM_NEWLINK, 0, 0, 9, 0, "b"))
	expect("re-created", Event{Name: "b", Index: 5}, Event{Name: "b", Index: 9, Exists: true})
	// The delete message was lost: the new ifindex alone says the old one is gone.
	feed(linkMsg(unix.RTM_NEWLINK, 0, 0, 11, upRunning, "b"))
	expect("lost delete", Event{Name: "b", Index: 9}, Event{Name: "b", Index: 11, Exists: true, AdminUp: true, Up: true})
	// A late delete of the old ifindex changes nothing.
	feed(linkMsg(unix.RTM_DELLINK, 0, 0, 9, 0, "b"))
	expect("stale delete")

	// Renamed away and back.
	feed(linkMsg(unix.RTM_NEWLINK, 0, 0, 11, 0, "bx"))
	expect("renamed away", Event{Name: "b", Index: 11})
	feed(linkMsg(unix.RTM_NEWLINK, 0, 0, 11, 0, "b"))
	expect("renamed back", Event{Name: "b", Index: 11, Exists: true})

	// A dump after lost messages: "a" appeared, "b" went away unseen.
	w.dumpSeq = 8
	clear(w.seen)
	feed(linkMsg(unix.RTM_NEWLINK, 8, 0, 12, unix.IFF_UP, "a"))
	expect("during a later dump", Event{Name: "a", Index: 12, Exists: true, AdminUp: true})
	feed(done(8, 0))
	expect("later dump", Event{Name: "b", Index: 11})

	// An interrupted dump concludes nothing and asks for another.
	w.dumpSeq = 9
	clear(w.seen)
	feed(done(9, unix.NLM_F_DUMP_INTR))
	expect("interrupted dump")
	if !w.redump || w.dumpSeq != 0 {
		t.Errorf("after an interrupted dump: redump %v, dumpSeq %d; want true, 0", w.redump, w.dumpSeq)
	}
}

func randID() string {
	b := make([]byte, 3)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func ipns(t *testing.T, ns string, args ...string) {
	t.Helper()
	a := append([]string{"-n", ns}, args...)
	if out, err := exec.Command("ip", a...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(a, " "), err, out)
	}
}

// watchIn runs Watch in network namespace ns and sends its events to the
// returned channel until the test ends.
func watchIn(t *testing.T, ns string, names []string) <-chan Event {
	t.Helper()
	ch := make(chan Event, 64)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		// This thread enters the namespace and is never unlocked: it
		// exits with the goroutine instead of serving others.
		runtime.LockOSThread()
		f, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			errc <- err
			return
		}
		err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
		f.Close()
		if err != nil {
			errc <- err
			return
		}
		errc <- Watch(ctx, names, func(e Event) { ch <- e })
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-errc:
			if err != nil {
				t.Errorf("Watch: %v", err)
			}
		case <-time.After(2 * time.Second):
			t.Error("Watch did not return within 2 s of its context ending")
		}
	})
	return ch
}

// state is what the namespace test compares: everything but the index.
type state struct {
	Name                string
	Exists, AdminUp, Up bool
}

func next(t *testing.T, ch <-chan Event, step string, want state) Event {
	t.Helper()
	select {
	case e := <-ch:
		if got := (state{e.Name, e.Exists, e.AdminUp, e.Up}); got != want {
			t.Fatalf("%s: event %v (%+v), want %+v", step, e, got, want)
		}
		return e
	case <-time.After(3 * time.Second):
		t.Fatalf("%s: no event within 3 s, want %+v", step, want)
	}
	return Event{}
}

// until is next for a change the kernel reports in steps: events in via
// may come first.
func until(t *testing.T, ch <-chan Event, step string, want state, via ...state) Event {
	t.Helper()
	deadline := time.After(3 * time.Second)
	for {
		select {
		case e := <-ch:
			got := state{e.Name, e.Exists, e.AdminUp, e.Up}
			if got == want {
				return e
			}
			ok := false
			for _, v := range via {
				ok = ok || got == v
			}
			if !ok {
				t.Fatalf("%s: event %v (%+v), want %+v (possibly after %+v)", step, e, got, want, via)
			}
		case <-deadline:
			t.Fatalf("%s: no event %+v within 3 s", step, want)
		}
	}
}

func quiet(t *testing.T, ch <-chan Event, step string) {
	t.Helper()
	select {
	case e := <-ch:
		t.Fatalf("%s: unexpected event %v", step, e)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestWatchNamespace creates, sets down and up, deletes, re-creates and
// renames veths in a fresh network namespace and checks what Watch reports.
func TestWatchNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates a network namespace and veths")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("ip (iproute2) not installed")
	}
	ns := "gslw" + randID()
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Skipf("network namespaces unavailable (ip netns add: %v: %s)", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	ipns(t, ns, "link", "add", "lw1", "type", "veth", "peer", "name", "lw1p")
	ipns(t, ns, "link", "set", "lw1", "up")
	ipns(t, ns, "link", "set", "lw1p", "up")

	ch := watchIn(t, ns, []string{"lw0", "lw1"})
	gone := state{Name: "lw0"}
	adminDown := state{Name: "lw0", Exists: true}
	noCarrier := state{Name: "lw0", Exists: true, AdminUp: true}
	up := state{Name: "lw0", Exists: true, AdminUp: true, Up: true}

	next(t, ch, "start", gone)
	lw1 := next(t, ch, "start", state{Name: "lw1", Exists: true, AdminUp: true, Up: true})

	ipns(t, ns, "link", "add", "lw0", "type", "veth", "peer", "name", "lw0p")
	first := next(t, ch, "created", adminDown)
	ipns(t, ns, "link", "set", "lw0", "up")
	next(t, ch, "set up, peer down", noCarrier)
	ipns(t, ns, "link", "set", "lw0p", "up")
	next(t, ch, "peer up", up)
	ipns(t, ns, "link", "set", "lw0p", "down")
	next(t, ch, "peer down", noCarrier)
	ipns(t, ns, "link", "set", "lw0p", "up")
	next(t, ch, "peer up again", up)
	ipns(t, ns, "link", "set", "lw0", "down")
	next(t, ch, "set down", adminDown)
	ipns(t, ns, "link", "del", "lw0")
	if e := next(t, ch, "deleted", gone); e.Index != first.Index {
		t.Errorf("deleted: index %d, want the deleted interface's %d", e.Index, first.Index)
	}

	ipns(t, ns, "link", "add", "lw0", "type", "veth", "peer", "name", "lw0p")
	second := next(t, ch, "re-created", adminDown)
	if second.Index == first.Index {
		t.Errorf("re-created with the same ifindex %d: the test proves nothing", first.Index)
	}
	ipns(t, ns, "link", "set", "lw0p", "up")
	quiet(t, ch, "peer of a down interface up")
	ipns(t, ns, "link", "set", "lw0", "up")
	// IFF_UP first, IFF_RUNNING when the kernel's link watch sets the
	// operational state: one or two messages.
	until(t, ch, "re-created, set up", up, noCarrier)

	// Deleted while up: the kernel closes it first.
	ipns(t, ns, "link", "del", "lw0")
	until(t, ch, "deleted while up", gone, adminDown, noCarrier)

	// Renamed away and back.
	ipns(t, ns, "link", "set", "lw1", "down")
	next(t, ch, "lw1 down", state{Name: "lw1", Exists: true})
	ipns(t, ns, "link", "set", "lw1", "name", "lw1x")
	next(t, ch, "lw1 renamed away", state{Name: "lw1"})
	ipns(t, ns, "link", "set", "lw1x", "name", "lw1")
	if e := next(t, ch, "lw1 renamed back", state{Name: "lw1", Exists: true}); e.Index != lw1.Index {
		t.Errorf("renamed back: index %d, want %d", e.Index, lw1.Index)
	}
	quiet(t, ch, "end")
}
