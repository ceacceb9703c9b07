package udp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/wire/gsperf"
)

// Server defaults (ServerConfig's zero fields).
const (
	DefaultMaxFlows     = 4096
	DefaultTotalPending = 256 << 20
	DefaultIdleTimeout  = time.Minute
	DefaultLinger       = 30 * time.Second
)

// ServerConfig bounds what a server keeps. Zero fields take the defaults.
type ServerConfig struct {
	MaxFlows     int           // incomplete flows at once (DefaultMaxFlows); the first segment of one more is dropped
	FlowPending  int64         // out-of-order bytes one flow holds (transport.DefaultFlowPending)
	TotalPending int64         // out-of-order bytes all flows hold together (DefaultTotalPending)
	IdleTimeout  time.Duration // an incomplete flow silent this long is forgotten (DefaultIdleTimeout)
	Linger       time.Duration // a completed flow is remembered this long, to acknowledge late retransmissions (DefaultLinger)
	MaxDone      int           // completed flows remembered; beyond, the oldest is forgotten early (4 x MaxFlows)
	// CNPInterval makes every flow's receiver DCQCN's notification
	// point: a CE data segment gets its sender a CNP, at most one per
	// interval per flow (transport.Receiver.SendCNPs). 0: no CNPs.
	CNPInterval time.Duration
}

func (c *ServerConfig) defaults() {
	if c.MaxFlows <= 0 {
		c.MaxFlows = DefaultMaxFlows
	}
	if c.FlowPending <= 0 {
		c.FlowPending = transport.DefaultFlowPending
	}
	if c.TotalPending <= 0 {
		c.TotalPending = DefaultTotalPending
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.Linger <= 0 {
		c.Linger = DefaultLinger
	}
	if c.MaxDone <= 0 {
		c.MaxDone = 4 * c.MaxFlows
	}
}

// ServerStats count what a server received, kept and refused.
type ServerStats struct {
	Flows, Complete, Bytes uint64 // flows started, completed, and the bytes of the completed ones
	Corrupt                uint64 // segments whose bytes were not the flow's pattern
	Malformed              uint64 // datagrams that are not gsperf data or probes
	Invalid                uint64 // segments with an absurd header: size 0 or over 2^50, another size than the flow's, no payload, bytes past the flow's end
	RefusedFlows           uint64 // first segments dropped: MaxFlows flows incomplete
	RefusedFlow            uint64 // out-of-order segments dropped: their flow held FlowPending bytes
	RefusedTotal           uint64 // out-of-order segments dropped: all flows held TotalPending bytes
	Abandoned              uint64 // incomplete flows forgotten after IdleTimeout without a segment
	Evicted                uint64 // completed flows forgotten before Linger to make room (MaxDone)
	Active                 int    // incomplete flows now
	PeakActive             int    // most incomplete flows at once
	Pending, PeakPending   int64  // out-of-order bytes held now, and at most
	Marked                 uint64 // data segments that arrived CE-marked (their acks echo it: FlagECE)
	CNPs                   uint64 // CNPs sent (CNPInterval)
}

// String is the one-line summary the gsperf server prints (scripts read
// its first four numbers).
func (s ServerStats) String() string {
	return fmt.Sprintf("%d flows, %d complete, %d bytes, %d corrupt segments, %d invalid segments, %d malformed datagrams; "+
		"refused: %d new flows (flow cap), %d segments (flow buffer full), %d segments (total buffer full); "+
		"%d flows active (peak %d), %d out-of-order bytes held (peak %d); %d flows abandoned, %d completed flows forgotten early; "+
		"%d segments arrived CE-marked, %d CNPs sent",
		s.Flows, s.Complete, s.Bytes, s.Corrupt, s.Invalid, s.Malformed,
		s.RefusedFlows, s.RefusedFlow, s.RefusedTotal,
		s.Active, s.PeakActive, s.Pending, s.PeakPending, s.Abandoned, s.Evicted, s.Marked, s.CNPs)
}

// flowKey names a flow: its sender's address and its id.
type flowKey struct {
	from netip.AddrPort
	flow uint64
}

type activeFlow struct {
	r    *transport.Receiver
	last int64 // ns: the last segment
}

type doneFlow struct {
	size uint64
	at   int64 // ns: completion
}

type doneSlot struct {
	k  flowKey
	at int64
}

// Server receives gsperf flows and acknowledges them. Its state is bounded
// by its ServerConfig: incomplete flows (each a transport.Receiver sharing
// one transport.Budget of out-of-order bytes) and, in a ring in the order
// they completed, completed flows (their size only, to acknowledge late
// retransmissions). A Server is used by one goroutine: Serve's, or a
// test's calling Handle and Sweep.
type Server struct {
	cfg       ServerConfig
	budget    transport.Budget
	active    map[flowKey]*activeFlow
	done      map[flowKey]doneFlow
	ring      []doneSlot // completed flows, oldest at head
	head, n   int
	st        ServerStats
	ack       []byte
	lastSweep int64
}

// NewServer returns a server bounded by cfg.
func NewServer(cfg ServerConfig) *Server {
	cfg.defaults()
	s := &Server{cfg: cfg, active: map[flowKey]*activeFlow{}, done: map[flowKey]doneFlow{}, ack: make([]byte, proto.HeaderLen)}
	s.budget.Max = cfg.TotalPending
	return s
}

// Config is the server's configuration with the defaults filled in.
func (s *Server) Config() ServerConfig { return s.cfg }

// Stats returns the counters.
func (s *Server) Stats() ServerStats {
	st := s.st
	st.Active = len(s.active)
	st.Pending, st.PeakPending = s.budget.Used(), s.budget.Peak()
	return st
}

// Handle takes one datagram b from a sender at now (ns, any monotonic
// origin) and sends the ack, if any, through out (which must not keep the
// slice). It allocates only for a new flow and for an out-of-order segment
// it keeps.
func (s *Server) Handle(b []byte, from netip.AddrPort, now int64, out func([]byte)) {
	s.HandleCE(b, from, false, now, out)
}

// HandleCE is Handle for a datagram that arrived with the ECN field CE if
// ce: the ack echoes the mark (FlagECE), for DCTCP's senders. Every flow
// is answered so: a datagram that is not ECN-capable can never be CE, so
// the echo costs other modes nothing. (A completed flow's late segments
// are answered without the echo: their sender has no window left to cut.)
// With a CNPInterval a CE data segment of an incomplete flow also gets
// its sender a CNP, through out before the ack, at most one per interval
// per flow.
func (s *Server) HandleCE(b []byte, from netip.AddrPort, ce bool, now int64, out func([]byte)) {
	h, payload, err := proto.Decode(b)
	if err != nil || (h.Type != proto.TypeData && h.Type != proto.TypeProbe) {
		s.st.Malformed++
		return
	}
	k := flowKey{from, h.Flow}
	f := s.active[k]
	if f == nil {
		if d, ok := s.done[k]; ok {
			if transport.CompletedAck(h, payload, d.size, s.ack) {
				out(s.ack)
			} else {
				s.st.Invalid++
			}
			return
		}
		if !transport.ValidSize(h.Size) {
			s.st.Invalid++
			return
		}
		if len(s.active) >= s.cfg.MaxFlows {
			s.st.RefusedFlows++
			return
		}
		f = &activeFlow{r: transport.NewLimitedReceiver(h.Flow, transport.Limits{FlowPending: s.cfg.FlowPending, Shared: &s.budget})}
		f.r.SendCNPs(s.cfg.CNPInterval.Nanoseconds())
		s.active[k] = f
		s.st.Flows++
		s.st.PeakActive = max(s.st.PeakActive, len(s.active))
	}
	r := f.r
	corrupt, refused, starved, invalid, marked, cnps := r.Corrupt, r.Refused, r.Starved, r.Invalid, r.Marked, r.CNPs
	r.OnPacketINT(h, payload, gsperf.Header(b).INT(), ce, now, out) // HPCC's senders read the INT option back in the ack
	s.st.Marked += r.Marked - marked
	s.st.CNPs += r.CNPs - cnps
	s.st.Corrupt += r.Corrupt - corrupt
	s.st.RefusedFlow += r.Refused - refused
	s.st.RefusedTotal += r.Starved - starved
	s.st.Invalid += r.Invalid - invalid
	f.last = now
	if r.Complete() {
		s.st.Complete++
		s.st.Bytes += r.Delivered()
		r.Release()
		delete(s.active, k)
		s.remember(k, r.Size(), now)
	}
}

// remember keeps a completed flow's size, forgetting the oldest completed
// flow if MaxDone are kept.
func (s *Server) remember(k flowKey, size uint64, now int64) {
	if s.n == len(s.ring) {
		if len(s.ring) < s.cfg.MaxDone { // grow by doubling, up to MaxDone
			ring := make([]doneSlot, min(max(2*len(s.ring), 64), s.cfg.MaxDone))
			for i := range s.n {
				ring[i] = s.ring[(s.head+i)%len(s.ring)]
			}
			s.ring, s.head = ring, 0
		} else if s.popDone() {
			s.st.Evicted++
		}
	}
	s.ring[(s.head+s.n)%len(s.ring)] = doneSlot{k, now}
	s.n++
	s.done[k] = doneFlow{size, now}
}

// popDone forgets the oldest completed flow and reports whether it was
// still remembered (not superseded by a later completion of the same key).
func (s *Server) popDone() bool {
	o := s.ring[s.head]
	s.ring[s.head] = doneSlot{}
	s.head = (s.head + 1) % len(s.ring)
	s.n--
	if d, ok := s.done[o.k]; ok && d.at == o.at {
		delete(s.done, o.k)
		return true
	}
	return false
}

// Sweep forgets incomplete flows silent for IdleTimeout and completed flows
// older than Linger.
func (s *Server) Sweep(now int64) {
	s.lastSweep = now
	idle := s.cfg.IdleTimeout.Nanoseconds()
	for k, f := range s.active {
		if now-f.last >= idle {
			f.r.Release()
			delete(s.active, k)
			s.st.Abandoned++
		}
	}
	linger := s.cfg.Linger.Nanoseconds()
	for s.n > 0 && now-s.ring[s.head].at >= linger {
		s.popDone()
	}
}

// sweepEvery is how often Serve sweeps: often enough that nothing outlives
// its limit by more than a quarter of it, at most every 5 s.
func (s *Server) sweepEvery() int64 {
	return min(5*time.Second, s.cfg.IdleTimeout/4, s.cfg.Linger/4).Nanoseconds()
}

// Serve receives datagrams on conn and acknowledges them until stop is
// closed. If report is not nil, Serve calls it (from its goroutine) with
// the counters every interval. It reads each datagram's ECN field (it
// asks the kernel for it, enableRecvECN) and echoes CE on the ack.
func (s *Server) Serve(conn *net.UDPConn, stop <-chan struct{}, report func(ServerStats), interval time.Duration) error {
	if err := enableRecvECN(conn); err != nil {
		return err
	}
	buf := make([]byte, 65536)
	oob := make([]byte, oobLen) // reused: a datagram's control messages are read before the next arrives
	start := time.Now()
	var from netip.AddrPort
	out := func(b []byte) { conn.WriteToUDPAddrPort(b, from) }
	lastReport := int64(0)
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, oobn, _, addr, err := conn.ReadMsgUDPAddrPort(buf, oob)
		now := time.Since(start).Nanoseconds()
		if err == nil {
			from = addr
			s.HandleCE(buf[:n], from, ecnOf(oob[:oobn]) == ecnCE, now, out)
		} else if !timeout(err) {
			return err
		}
		if now-s.lastSweep >= s.sweepEvery() {
			s.Sweep(now)
		}
		if report != nil && interval > 0 && now-lastReport >= interval.Nanoseconds() {
			report(s.Stats())
			lastReport = now
		}
	}
}

func timeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Listen opens a server's socket on exactly bind, "host:port", and nowhere
// else: an IPv4 address gets an IPv4-only socket (0.0.0.0: every IPv4
// address), an IPv6 address an IPv6-only one ([::]: every IPv6 address;
// a zone as in [fe80::1%eth0] is kept), a host name the one address it
// resolves to (several are refused: name one), and an empty host every
// address, IPv4 and IPv6. The port is a number; 0 picks a free one.
func Listen(bind string) (*net.UDPConn, error) {
	host, port, err := net.SplitHostPort(bind)
	if err != nil {
		return nil, fmt.Errorf("%q is not host:port (write e.g. 10.0.0.2:5500, [fd00::2]:5500, or :5500 for every address)", bind)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("%q: port %q is not a number from 0 to 65535", bind, port)
	}
	if host == "" {
		conn, err := net.ListenUDP("udp", &net.UDPAddr{Port: int(p)})
		if err != nil {
			return nil, fmt.Errorf("%q: cannot listen on every address: %w (is the port in use?)", bind, err)
		}
		return conn, nil
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, fmt.Errorf("%q: host %q is not an IP address and does not resolve: %w", bind, host, err)
		}
		uniq := map[netip.Addr]bool{}
		var list []string
		for _, ip := range ips {
			if ip = ip.Unmap(); !uniq[ip] {
				uniq[ip] = true
				list = append(list, ip.String())
				a = ip
			}
		}
		if len(uniq) != 1 {
			return nil, fmt.Errorf("%q: %s resolves to %s; name the one address to listen on", bind, host, strings.Join(list, ", "))
		}
	}
	a = a.Unmap()
	network := "udp6"
	if a.Is4() {
		network = "udp4"
	}
	conn, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(netip.AddrPortFrom(a, uint16(p))))
	if err != nil {
		return nil, fmt.Errorf("%q: cannot listen: %w (use an address of this host and a free port, or an empty host for every address)", bind, err)
	}
	return conn, nil
}
