package udp

import (
	"encoding/binary"
	"maps"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/perf/results"
	"github.com/gswitch/gswitch/perf/transport"
)

// cmsg appends a control message of level and typ carrying data, as the
// kernel lays it out.
func cmsg(b []byte, level, typ int32, data []byte) []byte {
	m := make([]byte, unix.CmsgSpace(len(data)))
	binary.NativeEndian.PutUint64(m, uint64(unix.CmsgLen(len(data))))
	binary.NativeEndian.PutUint32(m[8:], uint32(level))
	binary.NativeEndian.PutUint32(m[12:], uint32(typ))
	copy(m[unix.CmsgLen(0):], data)
	return append(b, m...)
}

func TestECNOfControlMessages(t *testing.T) {
	if unix.SizeofCmsghdr != 16 {
		t.Skip("the test lays out 64-bit control messages")
	}
	tclass := make([]byte, 4)
	binary.NativeEndian.PutUint32(tclass, 0xb8|ect0) // DSCP 46 and ECT(0)
	other := cmsg(nil, unix.SOL_SOCKET, unix.SO_TIMESTAMP, make([]byte, 16))
	for _, c := range []struct {
		name string
		oob  []byte
		want uint8
	}{
		{"none", nil, 0},
		{"IP_TOS CE", cmsg(nil, unix.IPPROTO_IP, unix.IP_TOS, []byte{0x03}), ecnCE},
		{"IP_TOS ECT(0) with DSCP", cmsg(nil, unix.IPPROTO_IP, unix.IP_TOS, []byte{0x28 | ect0}), ect0},
		{"IP_TOS Not-ECT", cmsg(nil, unix.IPPROTO_IP, unix.IP_TOS, []byte{0x28}), 0},
		{"IPV6_TCLASS", cmsg(nil, unix.IPPROTO_IPV6, unix.IPV6_TCLASS, tclass), ect0},
		{"after another message", cmsg(other, unix.IPPROTO_IP, unix.IP_TOS, []byte{0x03}), ecnCE},
		{"IP_TOS without its byte", cmsg(nil, unix.IPPROTO_IP, unix.IP_TOS, nil), 0},
		{"a length past the buffer", cmsg(nil, unix.IPPROTO_IP, unix.IP_TOS, []byte{0x03})[:unix.CmsgLen(0)], 0},
		{"a short header", []byte{1, 2, 3}, 0},
		{"an unaligned buffer", append([]byte{0}, cmsg(nil, unix.IPPROTO_IP, unix.IP_TOS, []byte{0x03})...)[1:], ecnCE},
	} {
		if got := ecnOf(c.oob); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	zero := cmsg(nil, unix.IPPROTO_IP, unix.IP_TOS, []byte{0x03})
	binary.NativeEndian.PutUint64(zero, 0) // a length of 0 must not loop forever
	if ecnOf(zero) != 0 {
		t.Error("a zero length")
	}
	oob := cmsg(other, unix.IPPROTO_IP, unix.IP_TOS, []byte{0x03})
	if a := testing.AllocsPerRun(1000, func() { ecnOf(oob) }); a != 0 {
		t.Fatalf("%.1f allocations", a)
	}
}

// sendWithECN sends b from a new socket whose datagrams carry the ECN field ecn.
func sendWithECN(t *testing.T, to *net.UDPAddr, ecn int, b []byte) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP("udp", nil, to)
	if err != nil {
		t.Fatal(err)
	}
	level, opt := unix.IPPROTO_IP, unix.IP_TOS
	if to.IP.To4() == nil {
		level, opt = unix.IPPROTO_IPV6, unix.IPV6_TCLASS
	}
	if err := setsockopt(c, level, opt, ecn); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	return c
}

// Over loopback, IPv4, IPv6 and a dual-stack socket: the server reads each
// datagram's ECN field and echoes CE, and only CE, on its ack.
func TestServeEchoesCE(t *testing.T) {
	for _, c := range []struct{ bind, to string }{
		{"127.0.0.1:0", "127.0.0.1"},
		{"[::1]:0", "::1"},
		{":0", "127.0.0.1"}, // every address: IPv4 arrives on an IPv6 socket
	} {
		conn, err := Listen(c.bind)
		if err != nil {
			t.Logf("%s: %v (skipped)", c.bind, err)
			continue
		}
		s := NewServer(ServerConfig{})
		stop := make(chan struct{})
		done := make(chan error)
		go func() { done <- s.Serve(conn, stop, nil, 0) }()
		to := &net.UDPAddr{IP: net.ParseIP(c.to), Port: conn.LocalAddr().(*net.UDPAddr).Port}
		for i, ecn := range []int{0, 1, ect0, ecnCE} {
			seg := segment(uint64(i+1), 0, 100, 100)
			cl := sendWithECN(t, to, ecn, seg)
			cl.SetReadDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 2048)
			n, err := cl.Read(buf)
			cl.Close()
			if err != nil {
				t.Fatalf("%s, ECN %d: no ack: %v", c.bind, ecn, err)
			}
			h, _, err := proto.Decode(buf[:n])
			if err != nil || h.Type != proto.TypeAck || h.Ack != 100 {
				t.Fatalf("%s: ack %+v %v", c.bind, h, err)
			}
			if echo := h.Flags&proto.FlagECE != 0; echo != (ecn == ecnCE) {
				t.Errorf("%s, ECN field %d: the ack's echo is %v", c.bind, ecn, echo)
			}
		}
		close(stop)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		conn.Close()
		if st := s.Stats(); st.Complete != 4 || st.Marked != 1 {
			t.Errorf("%s: %+v", c.bind, st)
		}
	}
}

// The server's read of a datagram and its ECN field allocates nothing.
func TestReadWithECNAllocatesNothing(t *testing.T) {
	conn, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback UDP: %v", err)
	}
	defer conn.Close()
	conn.SetReadBuffer(4 << 20)
	if err := enableRecvECN(conn); err != nil {
		t.Fatal(err)
	}
	const runs = 200
	cl, err := net.DialUDP("udp", nil, conn.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	setsockopt(cl, unix.IPPROTO_IP, unix.IP_TOS, ecnCE)
	seg := segment(1, 0, 1<<40, 1000)
	for range runs + 1 {
		cl.Write(seg)
	}
	s := NewServer(ServerConfig{})
	buf := make([]byte, 65536)
	oob := make([]byte, oobLen)
	out := func([]byte) {}
	marked := 0
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if a := testing.AllocsPerRun(runs, func() {
		n, oobn, _, addr, err := conn.ReadMsgUDPAddrPort(buf, oob)
		if err != nil {
			return
		}
		ce := ecnOf(oob[:oobn]) == ecnCE
		if ce {
			marked++
		}
		s.HandleCE(buf[:n], addr, ce, 1, out) // the same segment again: a duplicate after the first
	}); a != 0 {
		t.Fatalf("%.1f allocations per datagram", a)
	}
	if marked != runs+1 {
		t.Fatalf("%d of %d datagrams read as CE", marked, runs+1)
	}
}

// relay is a server that sees the ECN field of everything a flow sends:
// it reads as Serve does, records each data segment's field, and may
// pretend some segments arrived CE (a marking switch in between).
type relay struct {
	conn *net.UDPConn
	srv  *Server
	mu   sync.Mutex               // the test reads what the relay's goroutine writes
	ecn  map[uint64]map[uint8]int // data segments by flow id and ECN field
	mark func(h proto.Header) bool
}

func newRelay(t *testing.T, mark func(proto.Header) bool) (*relay, func()) {
	conn, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback UDP: %v", err)
	}
	if err := enableRecvECN(conn); err != nil {
		t.Fatal(err)
	}
	r := &relay{conn: conn, srv: NewServer(ServerConfig{}), ecn: map[uint64]map[uint8]int{}, mark: mark}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 65536)
		oob := make([]byte, oobLen)
		var from netip.AddrPort
		out := func(b []byte) { conn.WriteToUDPAddrPort(b, from) }
		for {
			select {
			case <-stop:
				return
			default:
			}
			conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			n, oobn, _, addr, err := conn.ReadMsgUDPAddrPort(buf, oob)
			if err != nil {
				continue
			}
			from = addr
			f := ecnOf(oob[:oobn])
			h, _, err := proto.Decode(buf[:n])
			ce := f == ecnCE
			r.mu.Lock()
			if err == nil && h.Type == proto.TypeData {
				if r.ecn[h.Flow] == nil {
					r.ecn[h.Flow] = map[uint8]int{}
				}
				r.ecn[h.Flow][f]++
				ce = ce || (f != 0 && r.mark != nil && r.mark(h)) // only an ECN-capable segment is marked
			}
			r.srv.HandleCE(buf[:n], from, ce, time.Now().UnixNano(), out)
			r.mu.Unlock()
		}
	}()
	return r, func() { close(stop); <-done; conn.Close() }
}

// runOne runs one flow of size bytes in mode, of flow id id, to a relay,
// and returns its record and its data segments by ECN field.
func (r *relay) runOne(t *testing.T, mode transport.Mode, id, size uint64) (results.Flow, map[uint8]int) {
	t.Helper()
	recs, err := Run(Plan{Dsts: []string{r.conn.LocalAddr().String()}, FixedSize: size, Flows: 1, Arrivals: "burst", RateBits: 1e9,
		BaseRTT: 100 * time.Microsecond, RTO: 10 * time.Millisecond, Timeout: 20 * time.Second, Mode: mode, FlowIDBase: id})
	if err != nil || len(recs) != 1 || !recs[0].Complete {
		t.Fatalf("%v: %v %+v", mode, err, recs)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return recs[0], maps.Clone(r.ecn[id])
}

// A dctcp flow's datagrams leave ECT(0), a plain or pfabric flow's Not-ECT
// as before; a dctcp flow whose segments are marked on the way counts the
// echoes and cuts its window, and its record says so.
func TestDCTCPFlowsOverLoopback(t *testing.T) {
	r, stop := newRelay(t, func(h proto.Header) bool { return h.Seq/MSS%4 == 0 })
	defer stop()
	const size = 2 << 20
	segs := (size + MSS - 1) / MSS

	for i, mode := range []transport.Mode{transport.Plain, transport.PFabric} {
		rec, ecn := r.runOne(t, mode, uint64(i+1), size)
		if len(ecn) != 1 || ecn[0] < segs || rec.Mech != nil {
			t.Fatalf("%v: data segments by ECN field %v (want all %d or more Not-ECT), mech %v", mode, ecn, segs, rec.Mech)
		}
	}

	rec, ecn := r.runOne(t, transport.DCTCP, 3, size)
	if len(ecn) != 1 || ecn[ect0] < segs {
		t.Fatalf("dctcp: data segments by ECN field %v, want all %d or more ECT(0)", ecn, segs)
	}
	r.mu.Lock()
	st := r.srv.Stats()
	r.mu.Unlock()
	t.Logf("dctcp, one segment in four marked: %+v; server marked %d", rec.Mech, st.Marked)
	if rec.Mech["ece_acks"] < uint64(segs/4)-1 || rec.Mech["ece_acks"] > st.Marked || rec.Mech["reductions"] == 0 ||
		rec.Mech["reductions"] > rec.Mech["ece_acks"] || rec.Mech["alpha_ppm"] == 0 || rec.Mech["alpha_ppm"] > 1e6 {
		t.Fatalf("dctcp record %+v (server marked %d)", rec.Mech, st.Marked)
	}
}
