package dataplane

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gswitch/gswitch/dataplane/afxdp"
	"github.com/gswitch/gswitch/dataplane/l2"
	"github.com/gswitch/gswitch/dataplane/pkt"
	"github.com/gswitch/gswitch/dataplane/ring"
	"github.com/gswitch/gswitch/dataplane/shaper"
	"github.com/gswitch/gswitch/queues"
	"github.com/gswitch/gswitch/sched"
	"golang.org/x/sys/unix"
)

// BatchSize is the most frames a worker takes from one ring at a time.
const BatchSize = 64

// DefaultWorkers is half the CPUs, at least one. The hosts that send and
// receive through a namespace switch run on the same CPUs as the switch;
// docs/results.md shows what one worker per core does on a 2-core machine
// (a worker starved by the iperf3 processes lets its egress queue overflow:
// 23,000 TCP retransmits in 3 s against none with one worker).
func DefaultWorkers() int { return max(1, runtime.NumCPU()/2) }

// Clock gives the time in nanoseconds. Tests use a fake one.
type Clock interface{ Now() int64 }

type monoClock struct{ base time.Time }

func (c monoClock) Now() int64 { return int64(time.Since(c.base)) }

// PortConfig configures one switch port.
type PortConfig struct {
	Name        string
	RateBits    uint64 // egress line rate in bit/s; 0 = unlimited
	BurstBytes  int64  // shaper burst; 0 = default
	BufferBytes uint64 // the port's egress buffer limit in bytes
	MaxPackets  int    // the port's egress packet limit; 0 = min(BufferBytes/128, 8192)
	Scheduler   string // registered scheduler name; "" = fifo
	Queues      int    // egress queues (0 = 32; fifo uses one)
	QueueBytes  uint64 // static per-queue limit (0 = BufferBytes)
	Quantum     int    // DRR/SFQ quantum (0 = 1514)
	Classify    sched.Classifier
	AFQ         AFQConfig
	Rank        string // pfabric: sched.RankGsperf, RankLAS or RankPacket ("" = packet)
}

// AFQConfig configures the afq scheduler of a port.
type AFQConfig struct {
	BytesPerRound int // BpR (0 = 1514)
	SketchRows    int // count-min rows (0 = 4)
	SketchCols    int // count-min columns (0 = 16384)
	ECNRounds     int // mark CE this many rounds ahead (0 = off)
}

// Config configures a Switch.
type Config struct {
	Ports        []PortConfig
	Workers      int           // 0 = DefaultWorkers()
	MACTableSize int           // 0 = 4096
	MACAging     time.Duration // 0 = 300 s
	HandoffSize  int           // slots of each worker-to-port handoff ring; 0 = 1024
	FillTarget   int           // frames to keep on each fill ring; 0 = automatic
	BusyPoll     bool          // never sleep
	SpinTime     time.Duration // how long an idle worker polls before sleeping; 0 = 50 µs
	SharedBuffer uint64        // bytes of the buffer all egress queues share; 0 = half the UMEM
	Alpha        float64       // dynamic threshold: a queue may take Alpha x the free buffer; 0 = off (gswitchd's config defaults to 1)
	Clock        Clock         // nil = monotonic time
}

// DropReason says why the switch dropped a frame.
type DropReason uint8

// Drop reasons, each a label value of gswitch_drops_total.
const (
	DropMalformed     DropReason = iota // the parser refused the frame (see gswitch_malformed_total)
	DropBufferFull                      // the switch's shared buffer was full
	DropPortLimit                       // the egress port's byte or packet limit
	DropQueueLimit                      // the egress queue's limit or dynamic threshold
	DropEvicted                         // pushed out by a better packet (pFabric)
	DropRoundOverflow                   // too many rounds ahead (AFQ/RSP)
	DropHandoffFull                     // the ring to the egress port's worker was full
	DropNoFrames                        // no free frame for a flooded copy
	DropSamePort                        // destination learnt on the ingress port (filtered)
	DropBadDesc                         // the device returned a descriptor outside the UMEM
	NumDropReasons
)

var dropNames = [...]string{"malformed", "buffer_full", "port_limit", "queue_limit", "evicted", "round_overflow", "handoff_full", "no_frames", "same_port", "bad_descriptor"}

// fromQueues maps a traffic-manager drop to its reason.
var fromQueues = [queues.NumDrops]DropReason{
	queues.BufferFull: DropBufferFull, queues.PortLimit: DropPortLimit, queues.QueueLimit: DropQueueLimit,
	queues.Evicted: DropEvicted, queues.RoundOverflow: DropRoundOverflow,
}

func (r DropReason) String() string { return dropNames[r] }

// Port is one switch port: its sockets (one per rx queue) and its egress.
type Port struct {
	Index int
	Name  string

	links  []Link
	txLink Link
	owner  []int // worker of each link
	egress int   // worker that owns the egress (the owner of links[0])

	sched   sched.Scheduler
	evictor sched.Evictor // the scheduler, when one arrival can evict several packets (nil otherwise)
	ctrl    *queues.FIFO  // frames the switch emits: served first, never paused
	shaper  *shaper.Bucket
	in      []*ring.SPSC[pkt.Packet] // in[w]: packets handed over by worker w (nil for the egress worker)

	txOutstanding atomic.Int64 // frames on the tx ring not yet completed
	txDescs       []afxdp.Desc
}

// Scheduler returns the port's egress scheduler (for metrics: Depth only).
func (p *Port) Scheduler() sched.Scheduler { return p.sched }

// PauseQueue stops egress queue q of the port (any goroutine); its packets stay.
func (p *Port) PauseQueue(q int) { p.sched.Pause(q) }

// ResumeQueue serves egress queue q again (any goroutine).
func (p *Port) ResumeQueue(q int) { p.sched.Resume(q) }

// ControlDepth is the depth of the port's control queue (any goroutine).
func (p *Port) ControlDepth() (uint64, uint32) { return p.ctrl.Depth() }

// RateBits returns the port's shaper rate in bit/s (0 = unlimited).
func (p *Port) RateBits() uint64 { return p.shaper.RateBits() }

// Links returns the port's per-queue links.
func (p *Port) Links() []Link { return p.links }

// Switch is the forwarding engine.
type Switch struct {
	cfg        Config
	mem        []byte
	frameSize  uint64
	numFrames  uint32
	perWorker  uint32
	ports      []*Port
	workers    []*worker
	mac        *l2.Table
	buffer     *queues.Buffer
	clock      Clock
	stopping   atomic.Bool
	wg         sync.WaitGroup
	started    bool
	runErrOnce sync.Once
	runErr     error
}

// New builds a switch over mem (the UMEM, a whole number of frameSize
// frames) and links[i], the per-queue links of port i.
func New(cfg Config, mem []byte, frameSize uint32, links [][]Link) (*Switch, error) {
	if len(cfg.Ports) == 0 || len(cfg.Ports) != len(links) {
		return nil, fmt.Errorf("need one link list per port (%d ports, %d link lists)", len(cfg.Ports), len(links))
	}
	if len(cfg.Ports) > 1<<15 {
		return nil, fmt.Errorf("too many ports (%d)", len(cfg.Ports))
	}
	if frameSize == 0 || frameSize&(frameSize-1) != 0 || len(mem)%int(frameSize) != 0 {
		return nil, fmt.Errorf("UMEM of %d bytes is not a whole number of %d-byte frames", len(mem), frameSize)
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers()
	}
	nlinks := 0
	for i, l := range links {
		if len(l) == 0 {
			return nil, fmt.Errorf("port %q has no queues", cfg.Ports[i].Name)
		}
		nlinks += len(l)
	}
	cfg.Workers = min(cfg.Workers, nlinks)
	if cfg.MACTableSize == 0 {
		cfg.MACTableSize = 4096
	}
	if cfg.MACAging == 0 {
		cfg.MACAging = 300 * time.Second
	}
	if cfg.HandoffSize == 0 {
		cfg.HandoffSize = 1024
	}
	if cfg.SpinTime == 0 {
		cfg.SpinTime = 50 * time.Microsecond
	}
	if cfg.Clock == nil {
		cfg.Clock = monoClock{time.Now()}
	}
	s := &Switch{cfg: cfg, mem: mem, frameSize: uint64(frameSize), numFrames: uint32(len(mem) / int(frameSize)), clock: cfg.Clock}
	if cfg.SharedBuffer == 0 {
		cfg.SharedBuffer = uint64(len(mem)) / 2
	}
	s.buffer = queues.NewBuffer(cfg.SharedBuffer)
	s.perWorker = s.numFrames / uint32(cfg.Workers)
	if s.perWorker < 4*BatchSize {
		return nil, fmt.Errorf("%d frames are too few for %d workers (need %d each)", s.numFrames, cfg.Workers, 4*BatchSize)
	}
	var err error
	if s.mac, err = l2.New(cfg.MACTableSize, int64(cfg.MACAging)); err != nil {
		return nil, err
	}
	now := s.clock.Now()
	for i, pc := range cfg.Ports {
		p := &Port{Index: i, Name: pc.Name, links: links[i], txLink: links[i][0], txDescs: make([]afxdp.Desc, BatchSize)}
		if pc.BufferBytes == 0 {
			pc.BufferBytes = 1 << 20
		}
		if pc.MaxPackets == 0 {
			pc.MaxPackets = int(min(pc.BufferBytes/128, 8192))
		}
		if pc.Scheduler == "" {
			pc.Scheduler = "fifo"
		}
		if p.sched, err = sched.New(pc.Scheduler, sched.Params{Queues: pc.Queues, PortBytes: pc.BufferBytes, PortPackets: pc.MaxPackets,
			QueueBytes: pc.QueueBytes, Alpha: cfg.Alpha, Buffer: s.buffer, Quantum: pc.Quantum, Classify: pc.Classify,
			BytesPerRound: pc.AFQ.BytesPerRound, SketchRows: pc.AFQ.SketchRows, SketchCols: pc.AFQ.SketchCols, ECNRounds: pc.AFQ.ECNRounds,
			Rank: pc.Rank, Mem: mem}); err != nil {
			return nil, fmt.Errorf("port %q: %w", pc.Name, err)
		}
		p.evictor, _ = p.sched.(sched.Evictor)
		if p.ctrl, err = queues.NewFIFO(64<<10, 256); err != nil {
			return nil, err
		}
		if p.shaper, err = shaper.New(pc.RateBits, pc.BurstBytes, now); err != nil {
			return nil, fmt.Errorf("port %q: %w", pc.Name, err)
		}
		s.ports = append(s.ports, p)
	}
	for w := 0; w < cfg.Workers; w++ {
		wk, err := newWorker(s, w)
		if err != nil {
			s.closeWorkers()
			return nil, err
		}
		s.workers = append(s.workers, wk)
	}
	// Sockets go to workers round-robin; a port's egress goes with its first socket.
	k := 0
	for _, p := range s.ports {
		p.owner = make([]int, len(p.links))
		for q, l := range p.links {
			w := s.workers[k%cfg.Workers]
			p.owner[q] = w.id
			w.rx = append(w.rx, &rxQueue{link: l, port: p.Index, queue: q})
			k++
		}
		p.egress = p.owner[0]
		s.workers[p.egress].egress = append(s.workers[p.egress].egress, p)
		p.in = make([]*ring.SPSC[pkt.Packet], cfg.Workers)
		for w := range s.workers {
			if w != p.egress {
				if p.in[w], err = ring.New[pkt.Packet](nextPow2(cfg.HandoffSize)); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, w := range s.workers {
		w.prime()
	}
	return s, nil
}

func nextPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// Ports returns the switch's ports.
func (s *Switch) Ports() []*Port { return s.ports }

// Workers is the number of workers.
func (s *Switch) Workers() int { return len(s.workers) }

// MACTable is the learning table.
func (s *Switch) MACTable() *l2.Table { return s.mac }

// Buffer is the shared buffer of all egress queues.
func (s *Switch) Buffer() *queues.Buffer { return s.buffer }

// Now is the switch clock.
func (s *Switch) Now() int64 { return s.clock.Now() }

// owner returns the worker whose range holds the frame at addr.
func (s *Switch) owner(addr uint64) int {
	w := int(uint32(addr/s.frameSize) / s.perWorker)
	if w >= len(s.workers) {
		w = len(s.workers) - 1
	}
	return w
}

// Step runs one pass of worker w's loop and reports whether it did any
// work. Tests use it to drive the switch deterministically; do not mix it
// with Start.
func (s *Switch) Step(w int) bool { return s.workers[w].pass(s.clock.Now()) }

// Start runs every worker on its own goroutine, locked to an OS thread.
func (s *Switch) Start() {
	s.started = true
	for _, w := range s.workers {
		s.wg.Add(1)
		go func(w *worker) {
			defer s.wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			w.run()
		}(w)
	}
}

// Stop stops the workers and waits for them. Frames still queued stay
// where they are; Close releases the sockets.
func (s *Switch) Stop() {
	s.stopping.Store(true)
	for _, w := range s.workers {
		w.wake()
	}
	s.wg.Wait()
}

// Close releases the workers' eventfds. Call after Stop.
func (s *Switch) Close() error {
	s.closeWorkers()
	return nil
}

func (s *Switch) closeWorkers() {
	for _, w := range s.workers {
		if w.efd >= 0 {
			unix.Close(w.efd)
			w.efd = -1
		}
	}
}

// FrameCounts says where the UMEM's frames are.
type FrameCounts struct {
	Total     uint64 // frames in the UMEM
	Free      uint64 // on a worker's free list
	Fill      uint64 // given to the kernel to receive into
	Handoff   uint64 // on a ring between workers, as packets
	Queued    uint64 // in an egress scheduler
	Tx        uint64 // on a tx ring, not yet completed
	Returning uint64 // on the way back to the worker that owns them
}

// InPool is the number of frames ready for reception (free or on a fill ring).
func (c FrameCounts) InPool() uint64 { return c.Free + c.Fill }

// Sum adds up every state; it equals Total when no frame is lost (exactly
// so while the switch is quiescent).
func (c FrameCounts) Sum() uint64 {
	return c.Free + c.Fill + c.Handoff + c.Queued + c.Tx + c.Returning
}

// Frames counts frames by state. It may be called from any goroutine;
// while traffic flows, a frame moving between states may be counted twice
// or not at all.
func (s *Switch) Frames() FrameCounts {
	c := FrameCounts{Total: uint64(s.numFrames)}
	for _, w := range s.workers {
		c.Free += uint64(w.freeLen.Load())
		c.Fill += uint64(w.inFill.Load())
		for _, r := range w.ret {
			if r != nil {
				c.Returning += uint64(r.Len())
			}
		}
		c.Returning += uint64(w.staged.Load())
	}
	for _, p := range s.ports {
		for q := 0; q < p.sched.NumQueues(); q++ {
			_, n := p.sched.Depth(q)
			c.Queued += uint64(n)
		}
		_, n := p.ctrl.Depth()
		c.Queued += uint64(n)
		for _, r := range p.in {
			if r != nil {
				c.Handoff += uint64(r.Len())
			}
		}
		c.Tx += uint64(p.txOutstanding.Load())
	}
	return c
}

// PortCounters are one port's cumulative counters.
type PortCounters struct {
	RxPackets, RxBytes, TxPackets, TxBytes uint64
	Flooded                                uint64 // frames received on this port that were flooded
	Drops                                  [NumDropReasons]uint64
	Malformed                              [pkt.NumErrs]uint64
}

// Counters sums port i's counters over all workers (any goroutine).
func (s *Switch) Counters(i int) PortCounters {
	var c PortCounters
	for _, w := range s.workers {
		k := &w.ctr[i]
		c.RxPackets += k.rxPackets.Load()
		c.RxBytes += k.rxBytes.Load()
		c.TxPackets += k.txPackets.Load()
		c.TxBytes += k.txBytes.Load()
		c.Flooded += k.flooded.Load()
		for r := range c.Drops {
			c.Drops[r] += k.drops[r].Load()
		}
		for e := range c.Malformed {
			c.Malformed[e] += k.malformed[e].Load()
		}
	}
	return c
}

// WorkerStats are a worker's loop counters.
type WorkerStats struct {
	Passes, Sleeps, Wakeups uint64
}

// WorkerStats returns worker w's counters (any goroutine).
func (s *Switch) WorkerStats(w int) WorkerStats {
	wk := s.workers[w]
	return WorkerStats{Passes: wk.passes.Load(), Sleeps: wk.sleeps.Load(), Wakeups: wk.wakeups.Load()}
}

var errStopped = errors.New("switch stopped")
