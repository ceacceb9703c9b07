package afxdp

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gswitch/gswitch/bpf"
)

// These tests wire a veth pair (one end in a fresh network namespace), put
// gswitchd's XDP program on the root-namespace end, bind an AF_XDP socket
// to it and then take the interface away under the socket.

const (
	testFrames    = 64
	testFrameSize = 2048
)

var testRings = RingSizes{Fill: 64, Completion: 64, Rx: 64, Tx: 64}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates a network namespace, veths, an XDP program and AF_XDP sockets")
	}
	for _, tool := range []string{"ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (iproute2)", tool)
		}
	}
}

func randID() string {
	b := make([]byte, 3)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// pair is a veth whose end Name is in the root namespace and whose peer,
// eth0, is in namespace NS. Both are up, without IPv6 (no stray frames).
type pair struct {
	Name, NS string
}

func newPair(t *testing.T, ns, name string) pair {
	t.Helper()
	if ns == "" {
		ns = "gsx" + randID()
		run(t, "ip", "netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
		run(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	if name == "" {
		name = "gsx" + randID()
	}
	p := pair{Name: name, NS: ns}
	run(t, "ip", "link", "add", name, "type", "veth", "peer", "name", "eth0", "netns", ns)
	t.Cleanup(func() { exec.Command("ip", "link", "del", name).Run() })
	os.WriteFile("/proc/sys/net/ipv6/conf/"+name+"/disable_ipv6", []byte("1"), 0)
	run(t, "ip", "link", "set", name, "up")
	run(t, "ip", "-n", ns, "link", "set", "eth0", "up")
	return p
}

func (p pair) ifindex(t *testing.T) int {
	t.Helper()
	ifc, err := net.InterfaceByName(p.Name)
	if err != nil {
		t.Fatal(err)
	}
	return ifc.Index
}

// send writes frames with ethertype 0x88b5 (local experimental), tagged
// with seq, from the peer's end (eth0 in the namespace).
func (p pair) send(t *testing.T, seq ...uint32) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		// The thread enters the namespace and is never unlocked: it exits
		// with this goroutine instead of going back to the scheduler.
		runtime.LockOSThread()
		errc <- func() error {
			f, err := os.Open("/var/run/netns/" + p.NS)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
				return fmt.Errorf("setns: %w", err)
			}
			ifc, err := net.InterfaceByName("eth0")
			if err != nil {
				return err
			}
			fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			sa := &unix.SockaddrLinklayer{Ifindex: ifc.Index, Halen: 6, Addr: [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
			for _, s := range seq {
				if err := unix.Sendto(fd, testFrame(s), 0, sa); err != nil {
					return fmt.Errorf("sendto: %w", err)
				}
			}
			return nil
		}()
	}()
	if err := <-errc; err != nil {
		t.Fatalf("sending from %s/eth0: %v", p.NS, err)
	}
}

// sendUntilReceived sends frames from the peer, seq and up, until s
// receives some (the peer may take a moment to see the carrier), for up to
// two seconds.
func (p pair) sendUntilReceived(t *testing.T, s *Socket, seq uint32) []Desc {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	var got []Desc
	buf := make([]Desc, 8)
	for ; len(got) == 0 && time.Now().Before(deadline); seq++ {
		p.send(t, seq)
		time.Sleep(5 * time.Millisecond)
		got = append(got, buf[:s.Receive(buf)]...)
	}
	return got
}

func testFrame(seq uint32) []byte {
	f := make([]byte, 60)
	copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x88, 0xb5})
	binary.BigEndian.PutUint32(f[14:], seq)
	return f
}

// attach opens a socket on queue 0 of the pair's root-namespace end and
// attaches gswitchd's XDP program there with the socket in its XSKMAP.
func attach(t *testing.T, u *UMEM, p pair) (*Socket, *bpf.Port) {
	t.Helper()
	s, err := u.Open(p.ifindex(t), 0, testRings, BindFlags{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	prog, err := bpf.Load()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Close() })
	if err := prog.Register(0, s.FD()); err != nil {
		t.Fatal(err)
	}
	if err := prog.Attach(p.ifindex(t), bpf.ModeAuto); err != nil {
		t.Fatal(err)
	}
	return s, prog
}

func newUMEM(t *testing.T) *UMEM {
	t.Helper()
	u, err := NewUMEM(testFrames, testFrameSize)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	return u
}

// receive waits up to a second for n frames on s and returns their
// descriptors.
func receive(t *testing.T, s *Socket, n int) []Desc {
	t.Helper()
	var got []Desc
	buf := make([]Desc, 64)
	deadline := time.Now().Add(time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		k := s.Receive(buf[:n-len(got)])
		got = append(got, buf[:k]...)
		if k == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if len(got) != n {
		t.Fatalf("received %d frames, want %d", len(got), n)
	}
	return got
}

// waitRx waits until the rx ring holds n descriptors the socket has not received.
func waitRx(t *testing.T, s *Socket, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if s.rx.avail(^uint32(0)) >= uint32(n) {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("rx ring holds %d frames, want %d", s.rx.avail(^uint32(0)), n)
}

// pollOnce polls s's descriptor for timeout and returns the ready count,
// the events and how long it took. It may run on any goroutine (it reports
// errors with t.Errorf).
func pollOnce(t *testing.T, fd int, events int16, timeout time.Duration) (int, int16, time.Duration) {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: events}}
	start := time.Now()
	for {
		// A signal (the Go runtime preempts goroutines with SIGURG, more
		// often under -race) ends ppoll early with EINTR: poll again for
		// the rest of the timeout, as a worker's sleep would.
		left := timeout - time.Since(start)
		if left < 0 {
			left = 0
		}
		ts := unix.NsecToTimespec(left.Nanoseconds())
		pfd[0].Revents = 0
		n, err := unix.Ppoll(pfd, &ts, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			t.Errorf("ppoll(%#x, %v): %v", events, timeout, err)
		}
		return n, pfd[0].Revents, time.Since(start)
	}
}

func soError(t *testing.T, fd int) unix.Errno {
	t.Helper()
	v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		t.Fatal(err)
	}
	return unix.Errno(v)
}

func sendtoErr(fd int) unix.Errno {
	_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	return e
}

// ledger checks that every frame of the UMEM comes back exactly once.
type ledger struct {
	t    *testing.T
	seen map[uint64]string
}

func newLedger(t *testing.T) *ledger { return &ledger{t: t, seen: map[uint64]string{}} }

func (l *ledger) add(how string, addrs ...uint64) {
	l.t.Helper()
	for _, a := range addrs {
		b := a &^ (testFrameSize - 1)
		if prev, ok := l.seen[b]; ok {
			l.t.Errorf("frame %#x came back twice: %s and %s", b, prev, how)
		}
		l.seen[b] = how
	}
}

func (l *ledger) descs(how string, ds []Desc) {
	l.t.Helper()
	for _, d := range ds {
		l.add(how, d.Addr)
	}
}

// complete asserts that all testFrames frames came back.
func (l *ledger) complete(lost int) {
	l.t.Helper()
	if len(l.seen)+lost != testFrames {
		var missing []uint64
		for i := uint64(0); i < testFrames; i++ {
			if _, ok := l.seen[i*testFrameSize]; !ok {
				missing = append(missing, i*testFrameSize)
			}
		}
		l.t.Errorf("%d frames came back and %d are outstanding, want %d; missing %#x", len(l.seen), lost, testFrames, missing)
	}
}

func frameAddrs(from, to int) []uint64 {
	var a []uint64
	for i := from; i < to; i++ {
		a = append(a, uint64(i)*testFrameSize)
	}
	return a
}

// transmit queues frames [from, to) on s's tx ring, each holding testFrame(seq).
func transmit(t *testing.T, u *UMEM, s *Socket, from, to int) {
	t.Helper()
	var ds []Desc
	for _, a := range frameAddrs(from, to) {
		f := testFrame(uint32(a))
		copy(u.Mem[a:], f)
		ds = append(ds, Desc{Addr: a, Len: uint32(len(f))})
	}
	if n := s.Transmit(ds); n != len(ds) {
		t.Fatalf("tx ring took %d of %d", n, len(ds))
	}
}

// completions waits up to a second for n completions.
func completions(t *testing.T, s *Socket, n int) []uint64 {
	t.Helper()
	var got []uint64
	buf := make([]uint64, 64)
	deadline := time.Now().Add(time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		k := s.Complete(buf[:n-len(got)])
		got = append(got, buf[:k]...)
		if k == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if len(got) != n {
		t.Fatalf("%d completions, want %d", len(got), n)
	}
	return got
}

// TestInterfaceDeleted deletes the veth under a socket with frames on all
// four rings and checks what the kernel does and that Reclaim returns
// every frame exactly once.
func TestInterfaceDeleted(t *testing.T) {
	requireRoot(t)
	u := newUMEM(t)
	p := newPair(t, "", "")
	s, _ := attach(t, u, p)
	led := newLedger(t)

	// Frames 0-39 on the fill ring, 40-47 sent, 48-55 queued but not sent
	// (no kick: nothing drives the tx ring of a copy-mode socket but
	// sendto and poll), 56-63 stay with the test.
	if n := s.Fill(frameAddrs(0, 40)); n != 40 {
		t.Fatalf("fill ring took %d of 40", n)
	}
	led.add("kept", frameAddrs(56, 64)...)
	transmit(t, u, s, 40, 48)
	s.Kick()
	led.add("completed before", completions(t, s, 5)...) // 3 stay on the completion ring
	p.send(t, 1, 2, 3, 4, 5)
	waitRx(t, s, 5)
	led.descs("received before", receive(t, s, 2)) // 3 stay on the rx ring

	if err := s.Err(); err != nil {
		t.Fatalf("Err before the delete: %v", err)
	}
	if n, ev, _ := pollOnce(t, s.FD(), unix.POLLIN, 0); n != 1 || ev != unix.POLLIN {
		t.Fatalf("poll before the delete with 3 frames on the rx ring: n=%d revents=%#x, want POLLIN", n, ev)
	}

	// A worker asleep in ppoll while the interface goes away.
	type pollResult struct {
		n       int
		revents int16
		took    time.Duration
	}
	asleep := make(chan pollResult, 1)
	go func() {
		// POLLIN would fire at once (frames on the rx ring): wait for
		// errors and hangups only, as ppoll always does.
		n, ev, took := pollOnce(t, s.FD(), 0, 600*time.Millisecond)
		asleep <- pollResult{n, ev, took}
	}()
	time.Sleep(100 * time.Millisecond)
	// Queued now, after the poll above drove the tx ring (poll sends in
	// copy mode), and not kicked: they are on the tx ring at the delete.
	transmit(t, u, s, 48, 56)
	start := time.Now()
	run(t, "ip", "link", "del", p.Name)
	t.Logf("ip link del took %v", time.Since(start).Round(time.Millisecond))

	r := <-asleep
	t.Logf("ppoll asleep across the delete: n=%d revents=%#x after %v", r.n, r.revents, r.took.Round(time.Millisecond))
	if r.n != 0 || r.took < 500*time.Millisecond {
		t.Errorf("ppoll asleep across the delete returned n=%d revents=%#x after %v; want a plain timeout (the kernel's xsk_poll reports no events for an unbound socket)", r.n, r.revents, r.took)
	}
	n, ev, took := pollOnce(t, s.FD(), unix.POLLIN|unix.POLLOUT, 50*time.Millisecond)
	t.Logf("ppoll(POLLIN|POLLOUT) after the delete: n=%d revents=%#x after %v", n, ev, took.Round(time.Millisecond))
	if n != 0 || took < 40*time.Millisecond {
		t.Errorf("ppoll(POLLIN|POLLOUT) after the delete: n=%d revents=%#x after %v, want a timeout with no events", n, ev, took)
	}
	if err := s.Err(); err != ErrUnbound {
		t.Errorf("Err after the delete = %v, want ErrUnbound", err)
	}
	if e := soError(t, s.FD()); e != unix.ENETDOWN {
		t.Errorf("SO_ERROR after the delete = %v, want ENETDOWN", e)
	}
	if e := soError(t, s.FD()); e != 0 {
		t.Errorf("SO_ERROR read a second time = %v, want 0 (reading clears it)", e)
	}
	if err := s.Err(); err != ErrUnbound {
		t.Errorf("Err after SO_ERROR was read = %v, want ErrUnbound (sticky)", err)
	}
	if e := sendtoErr(s.FD()); e != unix.ENXIO {
		t.Errorf("sendto after the delete = %v, want ENXIO", e)
	}
	t.Logf("rings after the delete: fill %d..%d, rx %d..%d, tx %d..%d, completion %d..%d",
		*s.fill.consumer, *s.fill.producer, *s.rx.consumer, *s.rx.producer, *s.tx.consumer, *s.tx.producer, *s.comp.consumer, *s.comp.producer)

	rx, tx := s.Outstanding()
	got := s.Reclaim(nil)
	led.add("reclaimed", got...)
	t.Logf("Reclaim returned %d frames; outstanding rx %d tx %d", len(got), rx, tx)
	if rx != 0 || tx != 0 {
		t.Errorf("Outstanding = %d, %d; want 0, 0 (copy mode, no rx ring overflow, the delete freed the skbs)", rx, tx)
	}
	led.complete(rx + tx)
	if want := 40 - 5 + 3 + 8 + 3; len(got) != want { // fill, rx, tx, completion
		t.Errorf("Reclaim returned %d frames, want %d", len(got), want)
	}
	if s.FD() != -1 || s.Err() != ErrClosed {
		t.Errorf("after Reclaim: FD %d, Err %v; want -1, ErrClosed", s.FD(), s.Err())
	}
	if again := s.Reclaim(nil); len(again) != 0 {
		t.Errorf("second Reclaim returned %#x, want nothing", again)
	}
	if s.TxPending() || s.FillFree() != int(testRings.Fill) {
		t.Errorf("after Reclaim: TxPending %v, FillFree %d; want false, %d", s.TxPending(), s.FillFree(), testRings.Fill)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close after Reclaim: %v", err)
	}
}

// TestInterfaceDownUp sets the interface down and up under a socket: the
// socket stays bound, its fill-ring frames stay there, and reception resumes
// on the same socket. Then the peer goes down (carrier off) while frames are
// sent: the kernel drops and completes one per sendto. Reclaim of the still
// bound socket returns the rest, and a new socket opens on the same queue.
func TestInterfaceDownUp(t *testing.T) {
	requireRoot(t)
	u := newUMEM(t)
	p := newPair(t, "", "")
	s, prog := attach(t, u, p)
	led := newLedger(t)

	s.Fill(frameAddrs(0, 32))
	p.send(t, 1, 2, 3)
	first := receive(t, s, 3)
	fillCons := *s.fill.consumer

	run(t, "ip", "link", "set", p.Name, "down")
	if err := s.Err(); err != ErrDown {
		t.Errorf("Err with the interface down = %v, want ErrDown", err)
	}
	if a := testing.AllocsPerRun(100, func() { _ = s.Err() }); a != 0 {
		t.Errorf("Err allocates %.1f times per call", a)
	}
	n, ev, took := pollOnce(t, s.FD(), unix.POLLIN|unix.POLLOUT, 50*time.Millisecond)
	t.Logf("ppoll(POLLIN|POLLOUT) with the interface down: n=%d revents=%#x after %v", n, ev, took.Round(time.Millisecond))
	if n != 0 || took < 40*time.Millisecond {
		t.Errorf("ppoll with the interface down: n=%d revents=%#x after %v, want a timeout with no events", n, ev, took)
	}
	if e := soError(t, s.FD()); e != 0 {
		t.Errorf("SO_ERROR with the interface down = %v, want 0", e)
	}
	if e := sendtoErr(s.FD()); e != unix.ENETDOWN {
		t.Errorf("sendto with the interface down = %v, want ENETDOWN", e)
	}

	run(t, "ip", "link", "set", p.Name, "up")
	if err := s.Err(); err != nil {
		t.Errorf("Err after up = %v, want nil", err)
	}
	if *s.fill.consumer != fillCons {
		t.Errorf("fill ring consumer moved from %d to %d across down/up", fillCons, *s.fill.consumer)
	}
	second := p.sendUntilReceived(t, s, 10)
	if len(second) == 0 {
		t.Fatal("no frame received on the same socket after down/up")
	}
	for _, d := range second {
		seq := binary.BigEndian.Uint32(u.Mem[d.Addr+14:])
		if seq < 10 {
			t.Errorf("received seq %d after up, want >= 10", seq)
		}
	}
	led.descs("received before down", first)
	led.descs("received after up", second)

	// Carrier off: the peer goes down, the kernel drops what we send.
	run(t, "ip", "-n", p.NS, "link", "set", "eth0", "down")
	if err := s.Err(); err != nil {
		t.Errorf("Err with the peer down = %v, want nil (the device is up; only its carrier is off)", err)
	}
	transmit(t, u, s, 32, 40)
	kicks := 0
	for ; kicks < 3; kicks++ {
		s.Kick()
	}
	done := completions(t, s, kicks) // one dropped frame completes per sendto
	led.add("completed while carrier off", done...)
	t.Logf("carrier off: %d kicks, %d completions, tx consumer published at %d of %d", kicks, len(done), *s.tx.consumer, *s.tx.producer)
	led.add("kept", frameAddrs(40, 64)...)

	rx, tx := s.Outstanding()
	got := s.Reclaim(nil)
	led.add("reclaimed", got...)
	t.Logf("Reclaim of a bound socket returned %d frames; outstanding rx %d tx %d", len(got), rx, tx)
	if rx != 0 || tx != 0 {
		t.Errorf("Outstanding = %d, %d; want 0, 0", rx, tx)
	}
	led.complete(rx + tx)

	// The other way back from a port that went down: give its frames back
	// (above), close the socket and open a new one on the same queue. The
	// kernel releases the old socket's queue a little later; Open waits.
	s.Close()
	run(t, "ip", "-n", p.NS, "link", "set", "eth0", "up")
	start := time.Now()
	s2, err := u.Open(p.ifindex(t), 0, testRings, BindFlags{})
	if err != nil {
		t.Fatalf("Open on the same queue right after Close: %v", err)
	}
	t.Cleanup(func() { s2.Close() })
	t.Logf("Open on the same queue right after Close took %v", time.Since(start).Round(time.Millisecond))
	if err := prog.Register(0, s2.FD()); err != nil {
		t.Fatal(err)
	}
	s2.Fill(frameAddrs(0, 8))
	if got := p.sendUntilReceived(t, s2, 100); len(got) == 0 {
		t.Fatal("no frame received on the new socket")
	}
}

// TestReopenAfterOwnerGone deletes the interface of the socket that owns the
// UMEM registration, re-creates it and opens a socket on it; then deletes
// every interface so no socket of the UMEM is bound, and opens one again.
func TestReopenAfterOwnerGone(t *testing.T) {
	requireRoot(t)
	u := newUMEM(t)
	a := newPair(t, "", "")
	b := newPair(t, "", "")
	sa, _ := attach(t, u, a) // owns the registration
	sb, _ := attach(t, u, b)

	run(t, "ip", "link", "del", a.Name)
	if sa.Err() != ErrUnbound || sb.Err() != nil {
		t.Fatalf("after deleting a: Err %v, %v; want ErrUnbound, nil", sa.Err(), sb.Err())
	}
	// What a plain XDP_SHARED_UMEM bind through the owner does now.
	a = newPair(t, a.NS, a.Name)
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []int{unix.XDP_UMEM_FILL_RING, unix.XDP_UMEM_COMPLETION_RING, unix.XDP_RX_RING} {
		n := uint32(64)
		if err := setsockopt(fd, o, unsafePointer(&n), 4); err != nil {
			t.Fatal(err)
		}
	}
	err = unix.Bind(fd, &unix.SockaddrXDP{Flags: unix.XDP_SHARED_UMEM, Ifindex: uint32(a.ifindex(t)), SharedUmemFD: uint32(sa.FD())})
	unix.Close(fd)
	t.Logf("bind with XDP_SHARED_UMEM through the unbound owner: %v", err)
	if !errors.Is(err, unix.EBADF) {
		t.Errorf("bind through the unbound owner = %v, want EBADF", err)
	}
	// The owner of the dead socket gives it up while another goroutine
	// opens the new one (the race detector checks the UMEM's bookkeeping).
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		sa.Reclaim(nil)
		sa.Close()
	}()
	s2, _ := attach(t, u, a)
	<-closed
	s2.Fill(frameAddrs(0, 8))
	a.send(t, 7)
	if d := receive(t, s2, 1)[0]; binary.BigEndian.Uint32(u.Mem[d.Addr+14:]) != 7 {
		t.Errorf("frame received on the re-created interface holds seq %d, want 7", binary.BigEndian.Uint32(u.Mem[d.Addr+14:]))
	}

	// Now no socket of the UMEM stays bound.
	run(t, "ip", "link", "del", a.Name)
	run(t, "ip", "link", "del", b.Name)
	if s2.Err() != ErrUnbound || sb.Err() != ErrUnbound {
		t.Fatalf("after deleting both: Err %v, %v; want ErrUnbound twice", s2.Err(), sb.Err())
	}
	a = newPair(t, a.NS, a.Name)
	s3, _ := attach(t, u, a)
	s3.Fill(frameAddrs(16, 24))
	a.send(t, 9)
	d := receive(t, s3, 1)[0]
	if d.Addr < 16*testFrameSize || d.Addr >= 24*testFrameSize || binary.BigEndian.Uint32(u.Mem[d.Addr+14:]) != 9 {
		t.Errorf("frame received after re-registering: addr %#x seq %d; want a frame of 16..23 holding seq 9", d.Addr, binary.BigEndian.Uint32(u.Mem[d.Addr+14:]))
	}
	// The re-registered socket is the UMEM's to share through.
	b = newPair(t, b.NS, b.Name)
	s4, _ := attach(t, u, b)
	s4.Fill(frameAddrs(32, 40))
	b.send(t, 11)
	if d := receive(t, s4, 1)[0]; !slices.Contains(frameAddrs(32, 40), d.Addr&^(testFrameSize-1)) {
		t.Errorf("frame received on the fourth socket at %#x, want one of frames 32..39", d.Addr)
	}
}

func unsafePointer(p *uint32) unsafe.Pointer { return unsafe.Pointer(p) }

// TestRxOverflowThenDeleted overflows a small rx ring, so the kernel keeps
// a frame it took from the fill ring on its buffer pool's free list, then
// deletes the interface: received + Reclaim + Outstanding must cover every
// frame once. In native mode the kernel publishes the fill ring's consumer
// index only with a successful receive, so the frame on the free list may
// still be on the fill ring as far as the switch can see (and Reclaim
// returns it); in generic mode it is published and Outstanding counts it.
func TestRxOverflowThenDeleted(t *testing.T) {
	requireRoot(t)
	for _, mode := range []bpf.Mode{bpf.ModeNative, bpf.ModeGeneric} {
		t.Run(mode.String(), func(t *testing.T) { rxOverflowThenDeleted(t, mode) })
	}
}

func rxOverflowThenDeleted(t *testing.T, mode bpf.Mode) {
	u := newUMEM(t)
	p := newPair(t, "", "")
	rings := testRings
	rings.Rx = 8
	s, err := u.Open(p.ifindex(t), 0, rings, BindFlags{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	prog, err := bpf.Load()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Close() })
	if err := prog.Register(0, s.FD()); err != nil {
		t.Fatal(err)
	}
	if err := prog.Attach(p.ifindex(t), mode); err != nil {
		t.Fatal(err)
	}
	led := newLedger(t)
	led.add("kept", frameAddrs(16, 64)...)
	s.Fill(frameAddrs(0, 16))
	p.send(t, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
	waitRx(t, s, 8)
	time.Sleep(10 * time.Millisecond)
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Rx_ring_full == 0 {
		t.Fatalf("rx_ring_full = 0 after 12 frames into an 8-slot rx ring: %+v", st)
	}
	led.descs("received", receive(t, s, 3))
	t.Logf("XDP mode %s; rx_ring_full %d; fill consumer %d, rx producer %d", prog.Mode, st.Rx_ring_full, *s.fill.consumer, *s.rx.producer)

	run(t, "ip", "link", "del", p.Name)
	if err := s.Err(); err != ErrUnbound {
		t.Fatalf("Err after the delete = %v, want ErrUnbound", err)
	}
	got := s.Reclaim(nil)
	led.add("reclaimed", got...)
	rx, tx := s.Outstanding()
	t.Logf("Reclaim returned %d frames; outstanding rx %d tx %d", len(got), rx, tx)
	if rx > 1 || tx != 0 {
		t.Errorf("Outstanding = %d, %d; want at most one rx frame (the pool's free list) and no tx", rx, tx)
	}
	led.complete(rx + tx)
}
