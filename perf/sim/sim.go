// Package sim runs gsperf's transport through one of gswitchd's egress
// schedulers in a discrete-event simulation: hosts with a paced NIC, one
// bottleneck port with its scheduler and buffer, fixed propagation delays,
// and an uncongested path for the acks. The sender, receiver and
// scheduler are the very code that runs over UDP and in gswitchd; only the
// clock, the links and the port's shaper are simulated.
//
// It answers "what does the protocol itself achieve" without the noise of
// a 2-core machine running the switch and every host: an experiment's gap
// to the ideal that the simulation also shows lies in the mechanism, a gap
// it does not show lies in the environment. The simulation is
// deterministic: the same Config gives the same Result.
//
// A simulation is used by one goroutine.
package sim

import (
	"container/heap"
	"fmt"

	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/queues"
	"github.com/gswitch/gswitch/sched"
)

// Frame overhead of a gsperf segment beyond its UDP payload: Ethernet 14,
// IPv4 20, UDP 8. WireExtra is what the shaper adds per frame (preamble,
// FCS, gap), as gswitchd's shaper does.
const (
	FrameExtra = 14 + 20 + 8
	WireExtra  = 24
)

// Flow is one transfer from its own host to the bottleneck's host.
type Flow struct {
	Size  uint64
	Start int64 // ns
}

// Config describes a run.
type Config struct {
	Flows      []Flow
	Transport  transport.Config
	RateBits   float64 // the bottleneck port's rate, bit/s
	HostBits   float64 // each sending host's line rate (0: unpaced)
	PaceBurst  int     // bytes a host may send back to back (0: 4 full frames)
	Scheduler  string  // a sched name, e.g. "pfabric" or "fifo"
	BufferB    uint64  // the port's buffer in bytes
	OneWay     int64   // propagation delay host to switch and switch to host, ns (the base RTT is 4 x OneWay plus the frame times)
	MaxTime    int64   // stop here (ns); flows not done by then are reported incomplete
	RankIsPrio bool    // give the scheduler the gsperf priority as p.Rank (pfabric)
}

// Result of a run.
type Result struct {
	FCT      []int64 // per flow, ns (0: did not complete)
	End      []int64 // per flow, absolute ns
	Makespan int64   // last completion, ns since 0
	Ideal    int64   // the time all the flows' frames need at RateBits, ns
	Drops    map[string]int
	BusyNs   int64 // time the port spent sending
	Sent     uint64
	Retx     []uint64
	Timeouts []uint64
}

type evKind uint8

const (
	evSenderWake   evKind = iota // poll a sender (its timer or pacer)
	evArriveSwitch               // a data frame reaches the port
	evPortFree                   // the port finished a frame
	evArriveHost                 // a data frame reaches the receiver
	evAck                        // an ack reaches a sender
)

type event struct {
	at   int64
	seq  uint64
	kind evKind
	flow int
	buf  int // index into the frame store (-1: none)
}

type eventQ []event

func (q eventQ) Len() int { return len(q) }
func (q eventQ) Less(i, j int) bool {
	return q[i].at < q[j].at || q[i].at == q[j].at && q[i].seq < q[j].seq
}
func (q eventQ) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQ) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQ) Pop() any {
	o := *q
	x := o[len(o)-1]
	*q = o[:len(o)-1]
	return x
}

type run struct {
	cfg     Config
	now     int64
	seq     uint64
	q       eventQ
	frames  [][]byte // frame store: datagram payloads by index
	freeBuf []int
	snd     []*transport.Sender
	rcv     []*transport.Receiver
	wake    []int64 // the sender's pending wake-up (0: none)
	sch     sched.Scheduler
	busy    bool
	res     Result
}

// Run simulates cfg.
func Run(cfg Config) (Result, error) {
	if cfg.RateBits <= 0 || cfg.BufferB == 0 || len(cfg.Flows) == 0 {
		return Result{}, fmt.Errorf("sim: need a rate, a buffer and flows")
	}
	if cfg.MaxTime == 0 {
		cfg.MaxTime = 60e9
	}
	// The simulated hosts stamp each segment's rank themselves (as pFabric's
	// gsperf mode does in the header the switch reads).
	s, err := sched.New(cfg.Scheduler, sched.Params{PortBytes: cfg.BufferB})
	if err != nil {
		return Result{}, err
	}
	r := &run{cfg: cfg, sch: s, res: Result{Drops: map[string]int{}}}
	n := len(cfg.Flows)
	r.snd, r.rcv, r.wake = make([]*transport.Sender, n), make([]*transport.Receiver, n), make([]int64, n)
	r.res.FCT, r.res.End, r.res.Retx, r.res.Timeouts = make([]int64, n), make([]int64, n), make([]uint64, n), make([]uint64, n)
	mss := cfg.Transport.MSS
	if mss == 0 {
		mss = 1400
	}
	var wire float64
	for i, f := range cfg.Flows {
		segs := (f.Size + uint64(mss) - 1) / uint64(mss)
		wire += float64(f.Size) + float64(segs)*float64(proto.HeaderLen+FrameExtra+WireExtra)
		r.rcv[i] = transport.NewReceiver(uint64(i + 1))
		r.schedule(f.Start, evSenderWake, i, -1)
	}
	r.res.Ideal = int64(wire * 8e9 / cfg.RateBits)
	for r.q.Len() > 0 {
		e := heap.Pop(&r.q).(event)
		if e.at > cfg.MaxTime {
			break
		}
		r.now = e.at
		r.handle(e)
	}
	for i, s := range r.snd {
		if s != nil {
			r.res.Retx[i], r.res.Timeouts[i] = s.Retransmits, s.Timeouts
			if s.Done() {
				r.res.FCT[i], r.res.End[i] = s.End-s.Start, s.End
				r.res.Makespan = max(r.res.Makespan, s.End)
			}
		}
	}
	return r.res, nil
}

func (r *run) schedule(at int64, k evKind, flow, buf int) {
	r.seq++
	heap.Push(&r.q, event{at: at, seq: r.seq, kind: k, flow: flow, buf: buf})
}

func (r *run) store(b []byte) int {
	if n := len(r.freeBuf); n > 0 {
		i := r.freeBuf[n-1]
		r.freeBuf = r.freeBuf[:n-1]
		r.frames[i] = append(r.frames[i][:0], b...)
		return i
	}
	r.frames = append(r.frames, append([]byte(nil), b...))
	return len(r.frames) - 1
}

func (r *run) release(i int) { r.freeBuf = append(r.freeBuf, i) }

func (r *run) sender(i int) *transport.Sender {
	if r.snd[i] == nil {
		f := r.cfg.Flows[i]
		s := transport.NewSender(r.cfg.Transport, uint64(i+1), f.Size, r.now)
		if r.cfg.HostBits > 0 {
			burst := r.cfg.PaceBurst
			if burst == 0 {
				burst = 4 * 1538
			}
			s.Gate(transport.NewPacer(r.cfg.HostBits, proto.HeaderLen+FrameExtra+WireExtra, burst))
		}
		r.snd[i] = s
	}
	return r.snd[i]
}

// poll lets sender i send what it may now and books its next wake-up.
func (r *run) poll(i int) {
	s := r.sender(i)
	next := s.Poll(r.now, func(b []byte) {
		r.schedule(r.now+r.cfg.OneWay, evArriveSwitch, i, r.store(b))
	})
	if next != 0 && (r.wake[i] == 0 || next < r.wake[i]) {
		r.wake[i] = next
		r.schedule(next, evSenderWake, i, -1)
	}
}

func (r *run) handle(e event) {
	switch e.kind {
	case evSenderWake:
		if e.at == r.wake[e.flow] {
			r.wake[e.flow] = 0
		}
		r.poll(e.flow)
	case evArriveSwitch:
		b := r.frames[e.buf]
		h, _, err := proto.Decode(b)
		if err != nil {
			panic(err)
		}
		p := pkt.Packet{Addr: uint64(e.buf), Len: uint32(len(b) + FrameExtra), Hash: uint32(e.flow + 1), OutPort: 0}
		if r.cfg.RankIsPrio {
			p.Rank = h.Priority
		}
		if d := r.sch.Enqueue(&p); d != queues.Accepted {
			r.res.Drops[d.String()]++
			r.release(int(p.Addr))
			if ev, ok := r.sch.(sched.Evictor); ok && d == queues.Evicted {
				for ev.MoreEvicted(&p) {
					r.res.Drops[d.String()]++
					r.release(int(p.Addr))
				}
			}
		}
		r.kick()
	case evPortFree:
		r.busy = false
		r.schedule(r.now+r.cfg.OneWay, evArriveHost, e.flow, e.buf)
		r.kick()
	case evArriveHost:
		b := r.frames[e.buf]
		h, payload, err := proto.Decode(b)
		if err != nil {
			panic(err)
		}
		r.rcv[e.flow].OnPacket(h, payload, r.now, func(ack []byte) {
			r.schedule(r.now+2*r.cfg.OneWay, evAck, e.flow, r.store(ack))
		})
		r.release(e.buf)
	case evAck:
		h, _, err := proto.Decode(r.frames[e.buf])
		r.release(e.buf)
		if err != nil {
			panic(err)
		}
		r.snd[e.flow].OnAck(h, r.now)
		r.poll(e.flow)
	}
}

// kick starts the next frame on the port if it is idle.
func (r *run) kick() {
	if r.busy {
		return
	}
	var p pkt.Packet
	if !r.sch.Dequeue(&p) {
		return
	}
	r.busy = true
	t := int64(float64(p.Len+WireExtra) * 8e9 / r.cfg.RateBits)
	r.res.BusyNs += t
	r.res.Sent++
	r.schedule(r.now+t, evPortFree, int(p.Hash)-1, int(p.Addr))
}
