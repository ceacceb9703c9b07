package udp

import (
	"encoding/binary"
	"errors"
	"math/rand"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/perf/transport"
)

// segment encodes a data segment of flow with n pattern bytes at seq.
func segment(flow, seq, size uint64, n int) []byte {
	b := make([]byte, proto.HeaderLen+n)
	(&proto.Header{Type: proto.TypeData, Flow: flow, Seq: seq, Size: size}).Encode(b)
	transport.Fill(b[proto.HeaderLen:], flow, seq)
	return b
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

var client = netip.MustParseAddrPort("10.0.0.1:40000")

// checkBudget checks that the flows' receivers are charged what the
// shared budget says, within the caps.
func checkBudget(t *testing.T, s *Server) {
	t.Helper()
	var sum int64
	for _, f := range s.active {
		if f.r.Held() > s.cfg.FlowPending {
			t.Fatalf("a flow holds %d bytes, cap %d", f.r.Held(), s.cfg.FlowPending)
		}
		sum += f.r.Held()
	}
	if sum != s.budget.Used() || s.budget.Used() > s.cfg.TotalPending || s.budget.Peak() > s.cfg.TotalPending {
		t.Fatalf("flows hold %d, budget used %d (peak %d), cap %d", sum, s.budget.Used(), s.budget.Peak(), s.cfg.TotalPending)
	}
}

// 100k forged flow ids: the server keeps MaxFlows of them and refuses and
// counts the rest; memory stays what MaxFlows flows take.
func TestServerCapsFlows(t *testing.T) {
	s := NewServer(ServerConfig{})
	const n = 100_000
	before := heapInUse()
	acks := 0
	b := segment(0, 0, 1<<30, 1000)
	for i := uint64(0); i < n; i++ {
		binary.BigEndian.PutUint64(b[8:], i) // flow id; the pattern is wrong, which only counts as corrupt
		s.Handle(b, client, int64(i+1), func([]byte) { acks++ })
	}
	grew := int64(heapInUse()) - int64(before)
	st := s.Stats()
	t.Logf("%d flow ids: %d kept, %d refused, heap grew %d bytes (%d per flow kept)", n, st.Active, st.RefusedFlows, grew, grew/int64(st.Active))
	if len(s.active) != DefaultMaxFlows || st.Active != DefaultMaxFlows || st.PeakActive != DefaultMaxFlows ||
		st.Flows != DefaultMaxFlows || st.RefusedFlows != n-DefaultMaxFlows || acks != DefaultMaxFlows {
		t.Fatalf("kept %d flows, stats %+v, %d acks", len(s.active), st, acks)
	}
	if grew > DefaultMaxFlows*1024 {
		t.Fatalf("heap grew %d bytes for %d flows", grew, DefaultMaxFlows)
	}
	runtime.KeepAlive(s)
}

// Flows sending out-of-order segments at offsets up to 2^40: each flow
// holds at most FlowPending, all of them at most TotalPending; what does
// not fit is dropped, counted and not acknowledged.
func TestServerCapsOutOfOrderBytes(t *testing.T) {
	cfg := ServerConfig{MaxFlows: 64, FlowPending: 1 << 20, TotalPending: 8 << 20}
	s := NewServer(cfg)
	rng := rand.New(rand.NewSource(2))
	before := heapInUse()
	acks, sent := 0, 0
	send := func(flow uint64) {
		off := 1 + uint64(rng.Int63n(1<<40))
		s.Handle(segment(flow, off, transport.MaxFlowSize, 1400), client, 1, func([]byte) { acks++ })
		sent++
	}
	for flow := uint64(1); flow <= 4; flow++ { // four flows fill their own buffers
		for range 1000 {
			send(flow)
		}
	}
	for range 1000 { // then all of them the rest
		for flow := uint64(1); flow <= 64; flow++ {
			send(flow)
		}
	}
	grew := int64(heapInUse()) - int64(before)
	st := s.Stats()
	t.Logf("%d segments of 1400 bytes in 64 flows: %d acked (kept), %d refused by the flow cap, %d by the total cap; %d bytes held (peak %d); heap grew %d",
		sent, acks, st.RefusedFlow, st.RefusedTotal, st.Pending, st.PeakPending, grew)
	checkBudget(t, s)
	kept := 0
	for _, f := range s.active {
		kept += f.r.PendingSegments()
	}
	if st.RefusedFlow == 0 || st.RefusedTotal == 0 || kept != acks || st.RefusedFlow+st.RefusedTotal != uint64(sent-acks) {
		t.Fatalf("sent %d, acked %d, kept %d, stats %+v", sent, acks, kept, st)
	}
	if st.Pending < cfg.TotalPending-64*1500 {
		t.Fatalf("holds %d of %d: the total cap refused too early", st.Pending, cfg.TotalPending)
	}
	if grew > 2*cfg.TotalPending {
		t.Fatalf("heap grew %d bytes, total cap %d", grew, cfg.TotalPending)
	}
	runtime.KeepAlive(s)
}

// Silent incomplete flows are forgotten after IdleTimeout, refunding what
// they held, and make room for new flows; flows still sending stay.
func TestServerForgetsSilentFlows(t *testing.T) {
	const sec = int64(time.Second)
	s := NewServer(ServerConfig{MaxFlows: 2, IdleTimeout: 10 * time.Second})
	drop := func([]byte) {}
	s.Handle(segment(1, 1400, 1<<20, 1400), client, 1*sec, drop) // out of order: held
	s.Handle(segment(2, 0, 1<<20, 1400), client, 1*sec, drop)
	s.Handle(segment(3, 0, 1<<20, 1400), client, 2*sec, drop)
	if st := s.Stats(); st.RefusedFlows != 1 || st.Pending == 0 {
		t.Fatalf("stats %+v", st)
	}
	s.Handle(segment(2, 1400, 1<<20, 1400), client, 9*sec, drop)
	s.Sweep(10*sec + 1) // flow 1 silent for 9 s: kept
	if len(s.active) != 2 {
		t.Fatalf("%d flows after 9 s of silence", len(s.active))
	}
	s.Sweep(11 * sec) // flow 1 silent for 10 s: gone
	st := s.Stats()
	if len(s.active) != 1 || st.Abandoned != 1 || st.Pending != 0 || s.active[flowKey{client, 2}] == nil {
		t.Fatalf("%d flows, stats %+v", len(s.active), st)
	}
	s.Handle(segment(3, 0, 1<<20, 1400), client, 12*sec, drop)
	if st := s.Stats(); st.Active != 2 || st.RefusedFlows != 1 || st.Flows != 3 {
		t.Fatalf("after the sweep a new flow should get in: %+v", st)
	}
}

// Completed flows do not count against MaxFlows; the server remembers at
// most MaxDone of them, for Linger, and acknowledges their late
// retransmissions in full.
func TestServerRemembersCompletedFlowsBoundedly(t *testing.T) {
	s := NewServer(ServerConfig{MaxFlows: 16, MaxDone: 100, Linger: 30 * time.Second})
	const n = 10_000
	for i := uint64(1); i <= n; i++ {
		s.Handle(segment(i, 0, 500, 500), client, int64(i), func([]byte) {})
	}
	st := s.Stats()
	if st.Complete != n || st.RefusedFlows != 0 || st.Active != 0 || len(s.done) != 100 || s.n != 100 || len(s.ring) != 100 || st.Evicted != n-100 {
		t.Fatalf("stats %+v, %d remembered (ring %d of %d)", st, len(s.done), s.n, len(s.ring))
	}
	var ack proto.Header
	s.Handle(segment(n, 0, 500, 500), client, n+1, func(b []byte) { ack, _, _ = proto.Decode(b) })
	if ack.Type != proto.TypeAck || ack.Ack != 500 || ack.Flow != n {
		t.Fatalf("late retransmission acked %+v", ack)
	}
	if st := s.Stats(); st.Flows != n || st.Active != 0 {
		t.Fatalf("a late retransmission started a flow: %+v", st)
	}
	s.Sweep(n + 1 + int64(30*time.Second))
	if len(s.done) != 0 || s.n != 0 || s.Stats().Evicted != n-100 {
		t.Fatalf("%d completed flows remembered after Linger", len(s.done))
	}
}

// Datagrams that are not gsperf segments or whose header is absurd are
// counted and leave no state.
func TestServerCountsMalformedAndInvalid(t *testing.T) {
	s := NewServer(ServerConfig{})
	lying := segment(1, 0, 1000, 100)
	binary.BigEndian.PutUint16(lying[6:], 200) // header length past the datagram
	short := segment(1, 0, 1000, 100)
	binary.BigEndian.PutUint16(short[6:], 10) // header length below the header
	ack := segment(1, 0, 1000, 100)
	ack[3] = proto.TypeAck
	acks := 0
	out := func([]byte) { acks++ }
	for _, b := range [][]byte{[]byte("not gsperf"), make([]byte, proto.HeaderLen), lying, short, ack, nil} {
		s.Handle(b, client, 1, out)
	}
	for _, b := range [][]byte{
		segment(1, 0, 0, 100),                       // size 0
		segment(1, 0, transport.MaxFlowSize+1, 100), // size over 2^50
		segment(1, 0, ^uint64(0), 100),
	} {
		s.Handle(b, client, 1, out)
	}
	if st := s.Stats(); st.Malformed != 6 || st.Invalid != 3 || st.Flows != 0 || len(s.active) != 0 || acks != 0 {
		t.Fatalf("stats %+v, %d flows, %d acks", st, len(s.active), acks)
	}
	s.Handle(segment(1, 0, 1000, 100), client, 2, out) // a real flow, then absurd segments of it
	for _, b := range [][]byte{segment(1, ^uint64(0)-10, 1000, 100), segment(1, 1<<40, 1000, 100), segment(1, 100, 1<<40, 100), segment(1, 950, 1000, 100)} {
		s.Handle(b, client, 3, out)
	}
	if st := s.Stats(); st.Invalid != 7 || st.Flows != 1 || acks != 1 || st.Pending != 0 {
		t.Fatalf("stats %+v, %d acks", st, acks)
	}
}

// The receive path allocates nothing for in-order segments of a flow, for
// refused new flows and for malformed datagrams.
func TestServerHotPathAllocatesNothing(t *testing.T) {
	s := NewServer(ServerConfig{MaxFlows: 1})
	b := segment(1, 0, 1<<40, 1400)
	out := func([]byte) {}
	off := uint64(0)
	if a := testing.AllocsPerRun(1000, func() {
		binary.BigEndian.PutUint64(b[16:], off)
		transport.Fill(b[proto.HeaderLen:], 1, off)
		s.Handle(b, client, 1, out)
		off += 1400
	}); a != 0 {
		t.Fatalf("%.1f allocations per in-order segment", a)
	}
	refused := segment(2, 0, 1<<40, 1400)
	if a := testing.AllocsPerRun(1000, func() { s.Handle(refused, client, 1, out) }); a != 0 {
		t.Fatalf("%.1f allocations per refused flow", a)
	}
	junk := []byte("junk")
	if a := testing.AllocsPerRun(1000, func() { s.Handle(junk, client, 1, out) }); a != 0 {
		t.Fatalf("%.1f allocations per malformed datagram", a)
	}
	if st := s.Stats(); st.RefusedFlows < 1000 || st.Malformed < 1000 || st.Corrupt != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// Over a loopback socket: the server acknowledges a flow among junk,
// reports its counters while it runs, forgets a silent flow while nothing
// arrives, and stops when told.
func TestServeOverLoopback(t *testing.T) {
	conn, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback UDP: %v", err)
	}
	s := NewServer(ServerConfig{IdleTimeout: 100 * time.Millisecond})
	stop := make(chan struct{})
	done := make(chan error)
	var mu sync.Mutex
	var reports []ServerStats
	go func() {
		done <- s.Serve(conn, stop, func(st ServerStats) { mu.Lock(); reports = append(reports, st); mu.Unlock() }, 10*time.Millisecond)
	}()
	c, err := net.DialUDP("udp", nil, conn.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("not a gsperf segment"))
	c.Write(make([]byte, proto.HeaderLen)) // zeros: bad magic
	seg := segment(9, 0, 100, 100)
	(&proto.Header{Type: proto.TypeData, Flow: 9, Size: 100, Flags: proto.FlagFIN}).Encode(seg)
	c.Write(seg)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2048)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("no ack: %v", err)
	}
	h, _, err := proto.Decode(buf[:n])
	if err != nil || h.Type != proto.TypeAck || h.Ack != 100 {
		t.Fatalf("ack %+v, %v", h, err)
	}
	// An incomplete flow, then silence: Serve forgets it after IdleTimeout
	// even though nothing else arrives.
	c.Write(segment(10, 0, 1000, 100))
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		abandoned := len(reports) > 0 && reports[len(reports)-1].Abandoned == 1 && reports[len(reports)-1].Active == 0
		mu.Unlock()
		if abandoned {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the silent flow was not forgotten")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Malformed != 2 || st.Flows != 2 || st.Complete != 1 || st.Bytes != 100 || st.Abandoned != 1 {
		t.Fatalf("server stats %+v", st)
	}
}

func sockopt(t *testing.T, c *net.UDPConn, level, opt int) int {
	t.Helper()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var serr error
	raw.Control(func(fd uintptr) { v, serr = syscall.GetsockoptInt(int(fd), level, opt) })
	if serr != nil {
		t.Fatal(serr)
	}
	return v
}

// Listen binds exactly the address it is given: the family of an address
// and nothing else; every address only for an empty host.
func TestListenBindsWhereTold(t *testing.T) {
	for _, c := range []struct {
		bind   string
		family int
		v6only int // -1: not IPv6
		local  string
	}{
		{"127.0.0.1:0", syscall.AF_INET, -1, "127.0.0.1"},
		{"0.0.0.0:0", syscall.AF_INET, -1, "0.0.0.0"},
		{"[::ffff:127.0.0.1]:0", syscall.AF_INET, -1, "127.0.0.1"},
		{"[::1]:0", syscall.AF_INET6, 1, "::1"},
		{"[::]:0", syscall.AF_INET6, 1, "::"},
		{":0", syscall.AF_INET6, 0, "::"},
	} {
		conn, err := Listen(c.bind)
		if err != nil {
			if c.family == syscall.AF_INET6 && strings.Contains(err.Error(), "address") {
				t.Logf("%s: %v (no IPv6 here?)", c.bind, err)
				continue
			}
			t.Fatalf("%s: %v", c.bind, err)
		}
		la := conn.LocalAddr().(*net.UDPAddr)
		fam := sockopt(t, conn, syscall.SOL_SOCKET, syscall.SO_DOMAIN)
		v6only := -1
		if fam == syscall.AF_INET6 {
			v6only = sockopt(t, conn, syscall.IPPROTO_IPV6, syscall.IPV6_V6ONLY)
		}
		if fam != c.family || v6only != c.v6only || la.IP.String() != c.local || la.Port == 0 {
			t.Errorf("%s: bound %v, family %d (want %d), v6only %d (want %d)", c.bind, la, fam, c.family, v6only, c.v6only)
		}
		conn.Close()
	}
}

// An address Listen cannot bind, or cannot read, is an error that says so.
func TestListenErrors(t *testing.T) {
	for bind, want := range map[string]string{
		"192.0.2.1:5500":             "cannot listen",
		"::1:5500":                   "not host:port",
		"127.0.0.1":                  "not host:port",
		"127.0.0.1:http":             "not a number",
		"127.0.0.1:70000":            "not a number",
		"256.1.1.1:5500":             "not an IP address",
		"host.that.is.invalid:5500":  "does not resolve",
		"[fe80::1%nosuchif0]:5500":   "cannot listen",
		"[2001:db8::1234]:5500":      "cannot listen",
		"127.0.0.1:5500:5500":        "not host:port",
		"[127.0.0.1:5500":            "not host:port",
		"localhost.invalid.:5500000": "not a number",
	} {
		conn, err := Listen(bind)
		if err == nil {
			conn.Close()
			t.Errorf("%s: bound %v", bind, conn.LocalAddr())
			continue
		}
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), bind) {
			t.Errorf("%s: %q, want it to name the address and say %q", bind, err, want)
		}
	}
	// A port in use.
	a, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback UDP: %v", err)
	}
	defer a.Close()
	busy := a.LocalAddr().String()
	if b, err := Listen(busy); err == nil {
		b.Close()
		t.Errorf("bound %s twice", busy)
	} else if !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("%s in use: %v", busy, err)
	}
}

// A host name binds the one address it resolves to; a name with several
// addresses is refused.
func TestListenHostName(t *testing.T) {
	ips, err := net.DefaultResolver.LookupNetIP(t.Context(), "ip", "localhost")
	if err != nil {
		t.Skipf("localhost does not resolve: %v", err)
	}
	uniq := map[netip.Addr]bool{}
	for _, ip := range ips {
		uniq[ip.Unmap()] = true
	}
	conn, err := Listen("localhost:0")
	if len(uniq) > 1 {
		if err == nil || !strings.Contains(err.Error(), "name the one address") {
			t.Fatalf("localhost has %v: %v", ips, err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	got := conn.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
	if !uniq[got] {
		t.Fatalf("localhost is %v; bound %v", ips, got)
	}
}

// heldGate holds its flow until open is set.
type heldGate struct{ open *atomic.Bool }

func (g heldGate) Allow(now int64, n int) (bool, int64) {
	if g.open.Load() {
		return true, 0
	}
	return false, now + int64(30*time.Second) // nothing but a wake gets it going sooner
}

// TestFlowHook: the hook sees each flow, its gate is asked before sending
// (the flow waits until it opens, then completes), and its end runs when
// the flow is done.
func TestFlowHook(t *testing.T) {
	conn, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback UDP: %v", err)
	}
	srv := NewServer(ServerConfig{IdleTimeout: time.Second})
	stop := make(chan struct{})
	done := make(chan error)
	go func() { done <- srv.Serve(conn, stop, nil, 0) }()
	var open atomic.Bool
	var ended atomic.Int32
	p := Plan{Dsts: []string{conn.LocalAddr().String()}, FixedSize: 20000, Flows: 1, Arrivals: "burst", RateBits: 1e9,
		BaseRTT: 100 * time.Microsecond, Timeout: 20 * time.Second,
		FlowHook: func(id uint64, cfg *transport.Config, pacer transport.Gate, wake func()) (transport.Gate, func()) {
			if pacer != nil {
				t.Error("no pacer was asked for")
			}
			cfg.Mech = 0x7700 << 48
			go func() {
				time.Sleep(200 * time.Millisecond)
				open.Store(true)
				wake()
			}()
			return heldGate{&open}, func() { ended.Add(1) }
		}}
	start := time.Now()
	recs, err := Run(p)
	took := time.Since(start)
	close(stop)
	<-done
	if err != nil || len(recs) != 1 || !recs[0].Complete {
		t.Fatalf("run: %v %+v", err, recs)
	}
	if took < 200*time.Millisecond || took > 5*time.Second {
		t.Fatalf("the held flow finished after %v: the gate was not asked, or the flow never asked again", took)
	}
	if ended.Load() != 1 {
		t.Fatalf("end ran %d times", ended.Load())
	}
}
