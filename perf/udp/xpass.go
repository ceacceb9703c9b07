package udp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/perf/results"
	"github.com/gswitch/gswitch/perf/timescale"
	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/perf/xpass"
	"github.com/gswitch/gswitch/wire"
)

// XPassConfig is a gsperf server's ExpressPass side.
type XPassConfig struct {
	Params   xpass.Params
	AckEvery int           // in-order progress is acknowledged one segment in AckEvery (1: every segment)
	Spin     time.Duration // the last stretch before a credit is due is waited by spinning, not by sleeping (ppoll wakes late)
	Seed     int64         // jitter
	Trace    io.Writer     // if set, a line per feedback update (time, flow, loss, rate before and after, w)
	// Timescale is the fabric's timescale, for the trace's header: the
	// trace is in this machine's clock (times and rates wall).
	Timescale timescale.Scale
}

// DefaultXPLinger is how long an xpass flow whose bytes are all
// acknowledged runs its stop states at most (Plan.XPLinger): a protocol
// time (a fabric's), multiplied by gsperf's timescale.
const DefaultXPLinger = 50 * time.Millisecond

// creditPayload is what a credit datagram carries: the 16-byte GC message
// and 2 bytes of zeros, so the frame is 60 bytes (a veth does not pad).
const creditPayload = wire.HeaderLen + wire.CreditBodyLen + 2

// xpSocket sends and receives on a UDP socket's descriptor directly:
// credits with the credit class in an IP_TOS control message, acks
// without, receptions without blocking; nothing allocates.
type xpSocket struct {
	fd    int
	sa    unix.RawSockaddrInet4
	from  unix.RawSockaddrAny
	flen  uint32
	iov   unix.Iovec
	msg   unix.Msghdr
	cmsg  [unix.SizeofCmsghdr + 8]byte // IP_TOS: one int, aligned
	frame [creditPayload]byte
}

func newXPSocket(fd int, dscp uint8) *xpSocket {
	s := &xpSocket{fd: fd}
	h := (*unix.Cmsghdr)(unsafe.Pointer(&s.cmsg[0]))
	h.Level, h.Type = unix.IPPROTO_IP, unix.IP_TOS
	h.SetLen(unix.CmsgLen(4))
	binary.NativeEndian.PutUint32(s.cmsg[unix.SizeofCmsghdr:], uint32(dscp)<<2)
	return s
}

func (s *xpSocket) setDest(to netip.AddrPort) {
	s.sa.Family = unix.AF_INET
	p := (*[2]byte)(unsafe.Pointer(&s.sa.Port))
	p[0], p[1] = byte(to.Port()>>8), byte(to.Port())
	s.sa.Addr = to.Addr().As4()
}

// send sends b to the address of the last setDest, with the credit class if tos.
func (s *xpSocket) send(b []byte, tos bool) error {
	s.iov.Base = &b[0]
	s.iov.SetLen(len(b))
	s.msg = unix.Msghdr{Name: (*byte)(unsafe.Pointer(&s.sa)), Namelen: unix.SizeofSockaddrInet4, Iov: &s.iov, Iovlen: 1}
	if tos {
		s.msg.Control = &s.cmsg[0]
		s.msg.SetControllen(unix.CmsgSpace(4))
	}
	_, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(s.fd), uintptr(unsafe.Pointer(&s.msg)), unix.MSG_DONTWAIT)
	if e != 0 {
		return e
	}
	return nil
}

// recv reads one datagram without blocking; ok is false when none waits.
func (s *xpSocket) recv(b []byte) (n int, from netip.AddrPort, ok bool) {
	s.flen = unix.SizeofSockaddrAny
	r, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(s.fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), unix.MSG_DONTWAIT,
		uintptr(unsafe.Pointer(&s.from)), uintptr(unsafe.Pointer(&s.flen)))
	if e != 0 {
		return 0, netip.AddrPort{}, false
	}
	if s.from.Addr.Family != unix.AF_INET {
		return int(r), netip.AddrPort{}, true
	}
	sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(&s.from))
	p := (*[2]byte)(unsafe.Pointer(&sa.Port))
	return int(r), netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(p[0])<<8|uint16(p[1])), true
}

// wait blocks in ppoll until the socket has a datagram or d has passed.
func (s *xpSocket) wait(d time.Duration) {
	ts := unix.NsecToTimespec(int64(max(d, 0)))
	pfd := [1]unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}}
	unix.Ppoll(pfd[:], &ts, nil)
}

// XPassStats are what an ExpressPass server counted.
//
// A server takes, of the GC messages, XP_REQUEST from anyone (a request
// starts a flow, keyed by its sender's address and port and the flow id;
// credits go back to that address, at most MaxFlows flows at once, each
// stopped when its data stops coming) and XP_STOP from the sender of the
// flow it names; every other GC message is refused and counted.
type XPassStats struct {
	Host                 xpass.HostStats
	AcksSent, AcksThin   uint64 // acks sent, and left out (in-order progress between every AckEvery-th)
	SendErrors           uint64 // datagrams the socket refused (its buffer full)
	Requests, Stops, Bad uint64 // GC messages received: XP_REQUEST, XP_STOP, malformed (or a request for 0 bytes)
	WrongKind            uint64 // refused: GC messages of other kinds (credits, BTS, ...: a server is sent none)
	Unmatched            uint64 // refused: XP_STOP naming no flow of its sender
}

func (s XPassStats) String() string { return s.Format(timescale.Scale{}) }

// Format is String for a server run at timescale sc: the credit rate on
// both clocks (xpass.HostStats.Format).
func (s XPassStats) Format(sc timescale.Scale) string {
	return fmt.Sprintf("%s; acks %d sent, %d thinned; %d send errors; %d requests, %d stops, %d bad GC messages; refused: %d GC messages of other kinds, %d stops naming no flow of their sender",
		s.Host.Format(sc), s.AcksSent, s.AcksThin, s.SendErrors, s.Requests, s.Stops, s.Bad, s.WrongKind, s.Unmatched)
}

// ServeXPass is Serve for -mode xpass: it receives flows as Serve does,
// and sends each flow credits (package perf/xpass) from the same socket,
// so a credit carries the flow's ports reversed. conn must be an IPv4
// socket. The loop runs on a locked OS thread: it sleeps in ppoll until
// the next credit is due less spin, then spins, because the gaps between
// credits (13 µs at 1 Gbit/s) are shorter than a sleep's lateness.
func ServeXPass(conn *net.UDPConn, srv *Server, xc XPassConfig, stop <-chan struct{}, report func(ServerStats, XPassStats), interval time.Duration) (XPassStats, error) {
	var st XPassStats
	la, ok := conn.LocalAddr().(*net.UDPAddr)
	if !ok || la.IP.To4() == nil {
		return st, errors.New("-mode xpass serves on an IPv4 address (give -bind an IPv4 address, e.g. 10.1.2.1:5500)")
	}
	xc.Params.MaxFlows = srv.cfg.MaxFlows
	if xc.AckEvery <= 0 {
		xc.AckEvery = 1
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	raw, err := conn.SyscallConn()
	if err != nil {
		return st, err
	}
	fd := -1
	raw.Control(func(f uintptr) { fd = int(f) })
	sock := newXPSocket(fd, xc.Params.DSCP)
	start := time.Now()
	clock := func() int64 { return time.Since(start).Nanoseconds() + 1 }
	host, err := xpass.NewHost(xc.Params, xc.Seed, clock())
	if err != nil {
		return st, err
	}
	if xc.Trace != nil {
		tw := bufio.NewWriter(xc.Trace)
		defer tw.Flush()
		if !xc.Timescale.One() {
			fmt.Fprintf(tw, "# timescale %v: times and rates are wall clock (fabric time = t / %v, fabric rate = rate x %v)\n", xc.Timescale, xc.Timescale, xc.Timescale)
		}
		fmt.Fprintln(tw, "# t_ms sender/flow total dropped loss rtt_us rate_before rate_after w_after (rates in B/s)")
		host.OnUpdate = func(k xpass.Key, now int64, b, a xpass.Feedback) {
			fmt.Fprintf(tw, "%.3f %v/%d %d %d %.3f %.0f %d %d %.4f\n", float64(now)/1e6, k.From, k.Flow, b.Total, b.Dropped,
				float64(b.Dropped)/float64(b.Total), b.RTT*1e6, b.Cur, a.Cur, a.W)
		}
	}
	var stopped atomic.Bool
	go func() { <-stop; stopped.Store(true) }()
	buf := make([]byte, 65536)
	x := &xpHandler{host: host, srv: srv, st: &st, ackEvery: xc.AckEvery}
	x.sendAck = func(b []byte, to netip.AddrPort) bool {
		sock.setDest(to)
		return sock.send(b, false) == nil
	}
	sendCredit := func(k xpass.Key, c wire.Credit) {
		n, _ := wire.PutCredit(sock.frame[:], c)
		sock.frame[n], sock.frame[n+1] = 0, 0
		sock.setDest(k.From)
		if sock.send(sock.frame[:], true) != nil {
			st.SendErrors++
		}
	}
	lastReport, lastSweep := int64(0), int64(0)
	spin := xc.Spin.Nanoseconds()
	for !stopped.Load() {
		now := clock()
		for {
			n, f, ok := sock.recv(buf)
			if !ok {
				break
			}
			if f.IsValid() {
				x.handle(buf[:n], f, now)
			}
			now = clock()
		}
		next := host.Poll(now, sendCredit)
		if now-lastSweep >= 100e6 {
			host.Sweep(now)
			if now-srv.lastSweep >= srv.sweepEvery() {
				srv.Sweep(now)
			}
			lastSweep = now
		}
		if report != nil && interval > 0 && now-lastReport >= interval.Nanoseconds() {
			st.Host = host.Stats()
			report(srv.Stats(), st)
			lastReport = now
		}
		wait := min(next, now+200e6) - clock()
		if wait > spin {
			sock.wait(time.Duration(wait - spin))
		}
	}
	st.Host = host.Stats()
	return st, nil
}

// xpHandler takes the datagrams an ExpressPass server receives: requests
// and stops for the credit sender, data for the gsperf receiver (whose acks
// it thins) and for the credit sender (the echoed credits). Used by the
// server's goroutine.
type xpHandler struct {
	host     *xpass.Host
	srv      *Server
	st       *XPassStats
	ackEvery int
	sendAck  func(b []byte, to netip.AddrPort) bool
	from     netip.AddrPort
	flow     *xpass.Flow
	ackOut   func([]byte)
}

// handle takes one datagram b from a host at now.
func (x *xpHandler) handle(b []byte, from netip.AddrPort, now int64) {
	x.from = from
	if xpass.IsCredit(b) {
		h, err := wire.ParseHeader(b)
		switch {
		case err != nil:
			x.st.Bad++
		case h.Type == wire.TypeXPRequest:
			if r, err := wire.ParseXPRequest(b); err == nil && r.Size > 0 {
				x.st.Requests++
				x.host.Request(xpass.Key{From: from, Flow: r.FlowID}, r.Size, now)
			} else {
				x.st.Bad++
			}
		case h.Type == wire.TypeXPStop:
			if s, err := wire.ParseXPStop(b); err != nil {
				x.st.Bad++
			} else if x.host.Stop(xpass.Key{From: from, Flow: s.FlowID}, now) {
				x.st.Stops++
			} else {
				x.st.Unmatched++
			}
		default:
			x.st.WrongKind++
		}
		return
	}
	x.flow = nil
	if h, _, err := proto.Decode(b); err == nil && h.Type == proto.TypeData {
		k := xpass.Key{From: from, Flow: h.Flow}
		x.host.OnData(k, h.Mech, now)
		x.flow = x.host.Flow(k)
	}
	if x.ackOut == nil {
		x.ackOut = func(a []byte) {
			if h, _, err := proto.Decode(a); err == nil && !x.flow.KeepAck(h, x.ackEvery) {
				x.st.AcksThin++
				return
			}
			if !x.sendAck(a, x.from) {
				x.st.SendErrors++
				return
			}
			x.st.AcksSent++
		}
	}
	x.srv.Handle(b, from, now, x.ackOut)
}

// runXPFlow runs one flow in -mode xpass: XP_REQUEST, then one segment per
// credit that arrives, until every byte is acknowledged and the credits
// are stopped, or the plan's timeout. Its socket is connected to the
// receiver, so the kernel gives it datagrams from the receiver's address
// and port only; of the GC messages it takes credits and counts the rest
// as refused (the flow record's mechanism counter "refused").
func runXPFlow(r *results.Flow, p Plan, runStart time.Time) {
	raddr, err := net.ResolveUDPAddr("udp4", r.Dst)
	if err != nil {
		return
	}
	conn, err := net.DialUDP("udp4", nil, raddr)
	if err != nil {
		return
	}
	defer conn.Close()
	conn.SetWriteBuffer(4 << 20)
	conn.SetReadBuffer(4 << 20)
	raw, err := conn.SyscallConn()
	if err != nil {
		return
	}
	fd := -1
	raw.Control(func(f uintptr) { fd = int(f) })
	clock := func() int64 { return time.Since(runStart).Nanoseconds() + 1 }
	sc := p.XPSender
	sc.MSS = MSS
	s := xpass.NewSender(sc, r.ID, r.Size, clock())
	linger := p.XPLinger.Nanoseconds()
	if linger <= 0 {
		linger = DefaultXPLinger.Nanoseconds()
	}
	r.StartUnixNs = time.Now().UnixNano()
	out := func(b []byte) { syscall.Write(fd, b) } // the socket is connected
	buf := make([]byte, 2048)
	// With a pace (the host's line rate), a segment leaves no sooner than
	// the host's NIC would let it: credits that arrive faster (a sender
	// thread that did not run for a while finds several at once) wait
	// here, up to maxOwed, and are spent as the pace allows. The segments
	// of a burst of credits then reach the bottleneck at line rate, as a
	// NIC would send them, not all at once.
	var pacer *transport.Pacer
	if p.Pace > 0 {
		pacer = transport.NewPacer(p.Pace, Overhead, MSS+Overhead)
	}
	const maxOwed = 64
	var owed [maxOwed]wire.Credit
	var refused uint64 // GC messages that are not credits (the socket is connected: all from the server)
	oh, on := 0, 0
	spend := func(now int64) int64 {
		for on > 0 {
			if ok, wake := pacer.Allow(now, MSS); !ok {
				return wake
			}
			s.OnCredit(owed[oh], now, out)
			oh, on = (oh+1)%maxOwed, on-1
		}
		return 0
	}
	drain := func() {
		for {
			n, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), unix.MSG_DONTWAIT, 0, 0)
			if e != 0 {
				return
			}
			b := buf[:n]
			now := clock()
			if xpass.IsCredit(b) {
				if c, ok := creditOf(b); !ok {
					refused++
				} else {
					if pacer == nil {
						s.OnCredit(c, now, out)
					} else if on < maxOwed {
						owed[(oh+on)%maxOwed] = c
						on++
						spend(now)
					} else {
						s.Wasted++ // more credits than the NIC could have used: dropped, as by a full queue
					}
				}
				continue
			}
			if h, _, err := proto.Decode(b); err == nil {
				s.OnAck(h, now)
			}
		}
	}
	deadline := time.Now().Add(p.Timeout)
	step := p.Timeline.Nanoseconds()
	if step > 0 {
		r.TimelineStepNs = step
	}
	pfd := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for !s.Closed() && time.Now().Before(deadline) {
		drain()
		now := clock()
		next := s.Poll(now, out)
		if pacer != nil {
			if wake := spend(now); wake != 0 {
				next = minNonZero(next, wake)
			}
		}
		if s.Done() && now-s.End > linger { // acknowledged; the stop states linger at most XPLinger
			break
		}
		wait := int64(50e6)
		if next != 0 {
			wait = min(wait, next-now)
		}
		if step > 0 {
			for el := now - s.Start; int64(len(r.Timeline)+1)*step <= el; {
				r.Timeline = append(r.Timeline, s.Acked())
			}
			wait = min(wait, int64(len(r.Timeline)+1)*step-(now-s.Start))
		}
		ts := unix.NsecToTimespec(max(wait, 0))
		unix.Ppoll(pfd[:], &ts, nil)
	}
	if !s.Closed() {
		s.Abort(clock(), out) // the receiver must stop its credits
	}
	r.Retransmits = s.Retransmits
	if step > 0 {
		r.Timeline = append(r.Timeline, s.Acked())
	}
	r.Mech = map[string]uint64{"credits": s.Credits, "wasted": s.Wasted, "requests": s.Requests, "stops": s.Stops, "segments": s.Sent,
		"refused": refused}
	if s.FirstCredit != 0 {
		r.Mech["first_credit_ns"] = uint64(s.FirstCredit - s.Start)
	}
	if s.Done() {
		r.Complete = true
		r.FCTNs = s.End - s.Start
	}
}

// creditOf is what an xpass sender takes of a GC message from its
// receiver: a credit, and nothing else (requests and stops go the other
// way; other kinds are not the receiver's to send).
func creditOf(b []byte) (wire.Credit, bool) {
	c, err := wire.ParseCredit(b)
	return c, err == nil
}

func minNonZero(a, b int64) int64 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}
