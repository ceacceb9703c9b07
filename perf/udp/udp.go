// Package udp runs gsperf flows over real UDP sockets: a server that
// receives flows on one socket (server.go), and a client that starts flows
// from a schedule, each on its own socket (its own 5-tuple, so a switch
// hashes the flows apart).
//
// The server is reachable by anybody who can send to its port, so what it
// keeps is bounded whatever arrives: a number of incomplete flows, the
// out-of-order bytes each holds and all of them hold together, a number
// of completed flows it remembers, and time limits on both kinds. What
// it refuses or drops is counted in ServerStats.
//
// The ECN field (ecn.go): a dctcp or dcqcn flow's socket sends ECT(0),
// every other flow's Not-ECT; the server reads each datagram's field and
// echoes CE on its ack, for whichever flow it arrives in, and a server
// with a CNP interval (ServerConfig.CNPInterval, DCQCN's notification
// point) also sends the flow's sender CNPs.
package udp

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/perf/results"
	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/perf/workload"
	"github.com/gswitch/gswitch/perf/xpass"
	"github.com/gswitch/gswitch/wire/gsperf"
)

// Plan is a client's schedule of flows.
type Plan struct {
	Src        string   // this host's name in the records
	Dsts       []string // server addresses (host:port); each flow picks one at random
	Workload   string   // builtin workload name or file; "" with FixedSize
	FixedSize  uint64   // every flow this size (incast, fixed-size patterns)
	Flows      int
	Load       float64 // fraction of RateBits this sender offers
	RateBits   float64 // bottleneck rate for load and slowdown
	Arrivals   string  // poisson or lognormal; "burst" starts all flows at once (incast)
	Seed       int64
	Mode       transport.Mode
	BaseRTT    time.Duration
	InitWindow int // bytes; 0 = 10 segments (plain) or one BDP at RateBits x BaseRTT (pfabric)
	RTO        time.Duration
	MaxRTO     time.Duration // plain: the backed-off timeout's cap (0: transport.DefaultMaxRTO)
	DCTCPG     float64       // dctcp: the gain g (0: transport.DefaultDCTCPG)
	// HPCC configures hpcc flows (zero fields: transport's defaults). Run
	// shortens their segments by the INT option, so frames stay 1514
	// bytes, and sets the wire overhead their rate is charged with and
	// (Burst 0) their rate's burst to PaceBurst frames.
	HPCC transport.HPCCConfig
	// DCQCN is a dcqcn flow's rate machine, its rates and times on this
	// machine's clock (zero fields: transport's defaults, which are the
	// fabric's: right at timescale 1 only; LineRate 0: Pace, else
	// RateBits; Overhead 0: Overhead; Burst 0: PaceBurst frames).
	DCQCN      transport.DCQCNConfig
	FlowIDBase uint64
	Timeout    time.Duration // give up on flows still running this long after the last start
	Timeline   time.Duration // record each flow's acknowledged bytes at this step (0: off)
	Pace       float64       // this host's line rate in bit/s: all its flows together send no faster (0: off)
	PaceBurst  int           // full segments a paced host may send back to back (0: PaceBurst)
	StartAt    time.Time     // wall-clock time the schedule begins (zero: now), so clients on several hosts start together
	Progress   func(done, total int)
	// XPSender holds the timers of -mode xpass senders (zero fields: the
	// defaults, xpass.DefaultSenderConfig); its MSS is MSS.
	XPSender xpass.SenderConfig
	// XPLinger is how long an xpass flow, every byte acknowledged, still
	// runs its stop states (0: DefaultXPLinger).
	XPLinger time.Duration
	// FlowHook, if set, prepares each flow as it starts (a mechanism's host
	// side): it may change the flow's transport config (its header field,
	// its window), returns the gate to ask before each segment (given the
	// host's pacer, nil if none) and a function to call when the flow ends.
	// wake interrupts the flow's wait for acks (any goroutine, any time).
	FlowHook func(id uint64, cfg *transport.Config, pacer transport.Gate, wake func()) (transport.Gate, func())

	// FlowGate, if set, gives each flow a gate of a mechanism's host side
	// (SFC's pause), asked before the pacer; clock is the flow's clock, conn
	// its socket. done is called when the flow ends.
	FlowGate func(id uint64, conn *net.UDPConn, clock func() int64) (g transport.Gate, done func(), err error)
}

// Overhead is what a gsperf segment adds on the wire to its payload:
// gsperf 64 + UDP 8 + IPv4 20 + Ethernet 14 + preamble, FCS and gap 24.
const Overhead = proto.HeaderLen + 8 + 20 + 14 + 24

// MSS is the payload of a full segment (a 1514-byte frame).
const MSS = 1514 - 14 - 20 - 8 - proto.HeaderLen

// PaceBurst is how many full segments a paced host may send back to back
// by default (Plan.PaceBurst): enough to ride out the client's timer
// slack, a quarter of the smallest pFabric buffer (16 frames).
const PaceBurst = 4

// Run executes the plan and returns one record per flow.
func Run(p Plan) ([]results.Flow, error) {
	if len(p.Dsts) == 0 || p.Flows <= 0 {
		return nil, errors.New("a plan needs destinations and flows")
	}
	rng := rand.New(rand.NewSource(p.Seed))
	var sizes func() uint64
	mean := float64(p.FixedSize)
	if p.FixedSize > 0 {
		sizes = func() uint64 { return p.FixedSize }
	} else {
		c, err := workload.Open(p.Workload)
		if err != nil {
			return nil, err
		}
		s := workload.NewSampler(c, rand.New(rand.NewSource(p.Seed+1)), p.Flows)
		sizes = s.Next
		mean = c.Mean()
	}
	var gap func() float64
	if p.Arrivals == "burst" {
		gap = func() float64 { return 0 }
	} else {
		a, err := workload.ForLoad(p.Arrivals, p.Load, p.RateBits, mean)
		if err != nil {
			return nil, err
		}
		gap = func() float64 { return a.Next(rng) }
	}
	cfg, overhead := senderConfig(p)
	var pacer *transport.Pacer
	if p.Pace > 0 {
		pacer = transport.NewPacer(p.Pace, overhead, paceBurst(p)*(MSS+Overhead))
	}
	recs := make([]results.Flow, p.Flows)
	var wg sync.WaitGroup
	var done atomic.Int64
	var active atomic.Int32 // flows running
	if d := time.Until(p.StartAt); d > 0 {
		time.Sleep(d)
	}
	start := time.Now()
	at := 0.0
	for i := 0; i < p.Flows; i++ {
		at += gap()
		dst := p.Dsts[rng.Intn(len(p.Dsts))]
		size := sizes()
		recs[i] = results.Flow{ID: p.FlowIDBase + uint64(i), Src: p.Src, Dst: dst, Size: size, StartNs: int64(at * 1e9)}
		if d := time.Until(start.Add(time.Duration(at * 1e9))); d > 0 {
			time.Sleep(d)
		}
		wg.Add(1)
		go func(r *results.Flow) {
			defer wg.Done()
			active.Add(1)
			defer active.Add(-1)
			if p.Mode == transport.XPass {
				runXPFlow(r, p, start) // credits pace the flow: no window, no pacer
			} else {
				runFlow(cfg, r, p, start, pacer, &active)
			}
			if p.Progress != nil {
				p.Progress(int(done.Add(1)), p.Flows)
			}
		}(&recs[i])
	}
	wg.Wait()
	for i := range recs {
		r := &recs[i]
		if r.Complete {
			r.Slowdown = float64(r.FCTNs) / results.Ideal(r.Size, p.RateBits, p.BaseRTT.Nanoseconds(), MSS, Overhead)
		}
	}
	return recs, nil
}

// rawWaitMax bounds a flow's wait in a raw ppoll (runFlow).
const rawWaitMax = 10 * time.Millisecond

func runFlow(cfg transport.Config, r *results.Flow, p Plan, runStart time.Time, pacer *transport.Pacer, active *atomic.Int32) {
	raddr, err := net.ResolveUDPAddr("udp", r.Dst)
	if err != nil {
		return
	}
	conn, err := net.DialUDP("udp", nil, raddr)
	if err != nil {
		return
	}
	defer conn.Close()
	conn.SetWriteBuffer(4 << 20)
	if cfg.Mode == transport.DCTCP || cfg.Mode == transport.DCQCN { // other modes send Not-ECT, as they always did
		if setECT(conn) != nil {
			return
		}
	}
	raw, err := conn.SyscallConn()
	if err != nil {
		return
	}
	// One clock for the whole run, so the flows of this host can share its pacer.
	clock := func() int64 { return time.Since(runStart).Nanoseconds() + 1 }
	var gate transport.Gate
	if pacer != nil {
		gate = pacer
	}
	if p.FlowHook != nil {
		var end func()
		gate, end = p.FlowHook(r.ID, &cfg, gate, func() { conn.SetReadDeadline(time.Now()) })
		defer end()
	}
	s := transport.NewSender(cfg, r.ID, r.Size, clock())
	r.StartUnixNs = time.Now().UnixNano()
	if p.FlowGate != nil {
		g, done, err := p.FlowGate(r.ID, conn, clock)
		if err != nil {
			return
		}
		defer done()
		if gate != nil {
			g = transport.All(g, gate) // the mechanism's pause first, then the pacer (or the hook's gate)
		}
		gate = g
	}
	s.Gate(gate)
	out := func(b []byte) { conn.Write(b) }
	buf := make([]byte, 2048)
	onAck := func(n int) {
		if h, _, err := proto.Decode(buf[:n]); err == nil {
			s.OnAckINT(h, gsperf.Header(buf[:n]).INT(), clock()) // the INT option HPCC's acks echo (nil: none)
		}
	}
	// drain hands the sender every ack already waiting in the socket, so a
	// client that was descheduled for longer than the timeout learns what
	// arrived meanwhile before its timer fires (Poll runs the timer first).
	drain := func() {
		for {
			n := 0
			raw.Control(func(fd uintptr) { n, _ = unix.Read(int(fd), buf) }) // Go's sockets are non-blocking
			if n <= 0 {
				return
			}
			onAck(n)
		}
	}
	deadline := time.Now().Add(p.Timeout)
	step := p.Timeline.Nanoseconds()
	if step > 0 {
		r.TimelineStepNs = step
	}
	for !s.Done() && time.Now().Before(deadline) {
		drain()
		next := s.Poll(clock(), out)
		wait := 50 * time.Millisecond
		if next != 0 {
			wait = min(wait, time.Duration(next-clock()))
		}
		if step > 0 {
			for now := clock() - s.Start; int64(len(r.Timeline)+1)*step <= now; {
				r.Timeline = append(r.Timeline, s.Acked())
			}
			wait = min(wait, time.Duration(int64(len(r.Timeline)+1)*step-(clock()-s.Start)))
		}
		if s.Done() {
			break
		}
		// Wait for an ack or the next deadline. The Go runtime's timers sleep
		// in epoll_wait with millisecond resolution: a read deadline 60 µs
		// away fires about 1.1 ms late here, which would stretch every pacing
		// gap. Short waits therefore block in ppoll (about 0.09 ms late);
		// longer ones use the runtime's poller, which holds no thread, so
		// hundreds of concurrent flows wait cheaply (a client of many flows
		// all blocking in ppoll did worse on the web-search workload).
		//
		// While the client has fewer flows than Ps, a flow waits up to
		// rawWaitMax in ppoll as a raw system call, which keeps its P: the
		// runtime neither hands the P to another thread nor wakes its
		// monitor every 20 µs to look, which a blocking ppoll or a poller
		// wait costs on every pacing gap. Sixteen paced clients of one flow
		// each spent more than the two cores of a test machine switching
		// threads that way (docs/results.md, gsperf). A signal (the
		// runtime's preemption, a stop-the-world) ends the raw wait early.
		if hold := wait < rawWaitMax && int(active.Load()) < runtime.GOMAXPROCS(0); hold || wait < time.Millisecond {
			ts := unix.NsecToTimespec(int64(max(wait, 0)))
			raw.Control(func(fd uintptr) {
				pfd := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
				if hold {
					unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd[0])), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
				} else {
					unix.Ppoll(pfd[:], &ts, nil)
				}
			})
			continue
		}
		conn.SetReadDeadline(time.Now().Add(wait))
		if n, err := conn.Read(buf); err == nil {
			onAck(n)
		}
	}
	r.Retransmits, r.Timeouts = s.Retransmits, s.Timeouts
	if cfg.Mode == transport.DCTCP {
		r.Mech = map[string]uint64{"ece_acks": s.ECEAcks, "reductions": s.Reductions, "alpha_ppm": uint64(math.Round(s.Alpha() * 1e6))}
	}
	if st, ok := s.HPCC(); ok {
		r.Mech = hpccMech(st)
	}
	if cfg.Mode == transport.DCQCN {
		r.Mech = map[string]uint64{"cnps": s.CNPs, "rate_cuts": s.RateCuts, "alpha_ppm": uint64(math.Round(s.RateAlpha() * 1e6)),
			"rate_ppm": uint64(math.Round(s.Rate() / s.LineRate() * 1e6))}
	}
	if step > 0 {
		r.Timeline = append(r.Timeline, s.Acked())
	}
	if s.Done() {
		r.Complete = true
		r.FCTNs = s.End - s.Start
	}
}

// senderConfig is the transport config of p's flows, and what each of
// their segments adds on the wire to its payload.
func senderConfig(p Plan) (cfg transport.Config, overhead int) {
	cfg = transport.Config{Mode: p.Mode, MSS: MSS, RTO: int64(p.RTO), MaxRTO: int64(p.MaxRTO), InitWindow: p.InitWindow, DCTCPG: p.DCTCPG}
	if p.Mode == transport.DCQCN {
		cfg.DCQCN = dcqcnConfig(p)
	}
	if cfg.InitWindow == 0 && p.Mode == transport.PFabric {
		cfg.InitWindow = max(MSS, int(p.RateBits/8*p.BaseRTT.Seconds()))
	}
	overhead = Overhead
	if p.Mode == transport.HPCC {
		cfg.HPCC = p.HPCC
		opt := INTLen(p.HPCC.Hops)
		cfg.MSS, overhead = MSS-opt, Overhead+opt
		cfg.HPCC.Overhead = overhead
		if cfg.HPCC.Burst == 0 {
			// Two segments: a flow woken late catches up one segment. Not
			// the pacer's burst: HPCC reads every queued packet in the INT
			// as load (u = qlen / (B T) + ...), so hosts' bursts of four
			// from eight senders at once, 32 packets against a B T of
			// about 10, cut every window (TestHPCCIncast8: 0.81 of the line
			// with the pacer's burst of four).
			cfg.HPCC.Burst = min(2, paceBurst(p)) * (MSS + Overhead)
		}
	}
	return cfg, overhead
}

// paceBurst is the full segments p's host may send back to back.
func paceBurst(p Plan) int {
	if p.PaceBurst <= 0 {
		return PaceBurst
	}
	return p.PaceBurst
}

// dcqcnConfig is p.DCQCN with the plan's defaults: the line rate is the
// host's pace, else the bottleneck's rate; the overhead gsperf's; the
// burst the pacer's.
func dcqcnConfig(p Plan) transport.DCQCNConfig {
	c := p.DCQCN
	if c.LineRate == 0 {
		c.LineRate = p.RateBits
		if p.Pace > 0 {
			c.LineRate = p.Pace
		}
	}
	if c.Overhead == 0 {
		c.Overhead = Overhead
	}
	if c.Burst == 0 {
		c.Burst = paceBurst(p) * (MSS + Overhead)
	}
	return c
}

// ParseAddrs checks host:port addresses.
func ParseAddrs(list []string) error {
	for _, a := range list {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("destination %q: %w", a, err)
		}
	}
	return nil
}
