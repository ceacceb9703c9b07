package bfc

import (
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/wire"
	"github.com/gswitch/gswitch/wire/wiretest"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

var sw = [6]byte{0x02, 0x67, 0x73, 0, 1, 2}

func frame(t wire.Type, seq uint32, q uint16) []byte { return wiretest.BFC(sw, 1, 2, t, seq, q) }

func bitmap(seq uint32, nq int, set ...int) []byte { return wiretest.Bitmap(sw, 1, 2, seq, nq, set...) }

// TestFlowsGetTheirOwnQueues: each flow's header carries its own queue id
// while ids are free; ids come back when flows end; the window is capped
// at the initial window (one BDP).
func TestFlowsGetTheirOwnQueues(t *testing.T) {
	h, err := New(Config{Queues: 3})
	if err != nil {
		t.Fatal(err)
	}
	var ends []func()
	var ids []uint16
	for f := uint64(0); f < 4; f++ {
		cfg := transport.Config{InitWindow: 30000}
		_, end := h.FlowHook(f, &cfg, nil, func() {})
		ends = append(ends, end)
		ids = append(ids, wire.MechBFCQueue(cfg.Mech))
		if cfg.MaxWindow != 30000 {
			t.Fatalf("window cap %d, want the initial window", cfg.MaxWindow)
		}
	}
	if ids[0] != 1 || ids[1] != 2 || ids[2] != 3 || ids[3] == 0 {
		t.Fatalf("ids %v: want 1, 2, 3, then a shared one", ids)
	}
	ends[1]()
	cfg := transport.Config{}
	h.FlowHook(9, &cfg, nil, func() {})
	if q := wire.MechBFCQueue(cfg.Mech); q != 2 {
		t.Fatalf("after flow 1 ended the next flow got id %d, want its 2", q)
	}
	// A host without BFC names no queue and has no gate of its own, but keeps the window cap.
	deaf, _ := New(Config{Deaf: true})
	cfg = transport.Config{InitWindow: 30000}
	if g, _ := deaf.FlowHook(1, &cfg, nil, func() {}); g != nil || cfg.Mech != 0 || cfg.MaxWindow != 30000 {
		t.Fatalf("deaf host: gate %v, mechanism field %#x, window cap %d", g, cfg.Mech, cfg.MaxWindow)
	}
}

// TestPauseResumeBitmap: the host follows its switch's frames: PAUSE and
// RESUME per id, the newest frame about an id wins, a BITMAP sets every id
// (ids beyond its bits resume), id 0 pauses everything, a resume wakes the
// flows of the id, the gate holds a paused flow, and the watchdog resumes
// what nobody refreshes.
func TestPauseResumeBitmap(t *testing.T) {
	h, _ := New(Config{Queues: 8, Watchdog: 5 * time.Millisecond})
	var woken [9]atomic.Int32
	gates := map[uint16]transport.Gate{}
	for f := uint64(1); f <= 8; f++ {
		cfg := transport.Config{}
		var q uint16
		g, _ := h.FlowHook(f, &cfg, nil, func() { woken[q].Add(1) })
		q = wire.MechBFCQueue(cfg.Mech)
		gates[q] = g
	}
	now := int64(1e9)
	want := func(what string, paused ...uint16) {
		t.Helper()
		set := map[uint16]bool{}
		for _, q := range paused {
			set[q] = true
		}
		for q := uint16(1); q <= 8; q++ {
			ok, _ := gates[q].Allow(now, 1000)
			if h.Paused(q) != set[q] || ok == set[q] {
				t.Fatalf("%s: queue %d paused %v, gate open %v; want paused %v", what, q, h.Paused(q), ok, set[q])
			}
		}
	}
	h.Handle(frame(wire.TypeBFCPause, 10, 3), now)
	want("PAUSE 3", 3)
	h.Handle(frame(wire.TypeBFCResume, 9, 3), now)
	want("an older RESUME 3", 3)
	h.Handle(frame(wire.TypeBFCResume, 11, 3), now)
	want("RESUME 3")
	if woken[3].Load() != 1 {
		t.Fatalf("the flow of queue 3 was woken %d times", woken[3].Load())
	}
	h.Handle(bitmap(12, 8, 2, 5), now)
	want("BITMAP {2, 5}", 2, 5)
	h.Handle(bitmap(13, 4, 2), now)
	want("BITMAP {2} of 4 (5 beyond it resumes)", 2)
	h.Handle(frame(wire.TypeBFCPause, 14, 0), now)
	want("PAUSE 0 (all)", 1, 2, 3, 4, 5, 6, 7, 8)
	h.Handle(frame(wire.TypeBFCResume, 15, 0), now)
	want("RESUME 0", 2)
	h.Handle([]byte("not a frame"), now)
	if st := h.Stats(); st.Pauses != 2 || st.Resumes != 3 || st.Bitmaps != 2 || st.Stale != 1 || st.Malformed != 1 || st.Held == 0 {
		t.Fatalf("stats %v", st)
	}
	h.Tick(now + 4e6)
	want("before the watchdog", 2)
	h.Tick(now + 6e6)
	want("the watchdog bound passed, once", 2) // frames that arrived meanwhile are read first
	h.Tick(now + 6e6 + 1e3)
	want("after the watchdog")
	if st := h.Stats(); st.WatchdogResumes != 1 {
		t.Fatalf("watchdog resumes %d", st.WatchdogResumes)
	}
	if woken[2].Load() == 0 {
		t.Fatal("the watchdog woke nobody")
	}
	// A restarted switch numbers from 1 again: heard after the watchdog.
	h.Handle(frame(wire.TypeBFCPause, 1, 4), now+7e6)
	want("a restarted switch", 4)
}

// TestListenReadsPausesOffTheWire: a PAUSE sent on an interface of the
// host's namespace reaches the listener (an AF_PACKET socket) and pauses
// the queue; a RESUME restarts it.
func TestListenReadsPausesOffTheWire(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a network namespace and AF_PACKET sockets")
	}
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		t.Skipf("cannot make a network namespace: %v", err)
	}
	defer func() {
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			panic(err) // the thread stays locked and dies with the test
		}
		runtime.UnlockOSThread()
	}()
	lo, err := netlink.LinkByName("lo")
	if err == nil {
		err = netlink.LinkSetUp(lo)
	}
	if err != nil {
		t.Fatal(err)
	}
	h, _ := New(Config{Queues: 8})
	if err := h.Listen(); err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	tx, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(wire.EtherType)))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(tx)
	to := &unix.SockaddrLinklayer{Ifindex: lo.Attrs().Index, Protocol: htons(wire.EtherType)}
	wait := func(what string, cond func() bool) {
		t.Helper()
		for i := 0; i < 200 && !cond(); i++ {
			time.Sleep(5 * time.Millisecond)
		}
		if !cond() {
			t.Fatalf("%s: stats %v", what, h.Stats())
		}
	}
	if err := unix.Sendto(tx, frame(wire.TypeBFCPause, 1, 6), 0, to); err != nil {
		t.Fatal(err)
	}
	wait("PAUSE 6", func() bool { return h.Paused(6) })
	if err := unix.Sendto(tx, frame(wire.TypeBFCResume, 2, 6), 0, to); err != nil {
		t.Fatal(err)
	}
	wait("RESUME 6", func() bool { return !h.Paused(6) })
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
