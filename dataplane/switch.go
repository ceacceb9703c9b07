package dataplane

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gswitch/gswitch/dataplane/afxdp"
	"github.com/gswitch/gswitch/dataplane/l2"
	"github.com/gswitch/gswitch/dataplane/ring"
	"github.com/gswitch/gswitch/dataplane/shaper"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
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
	Role        mech.Role
	MAC         net.HardwareAddr // the port's own MAC (source of frames the switch emits); nil = derived from the switch id and the port index
	RateBits    uint64           // egress line rate in bit/s; 0 = unlimited
	BurstBytes  int64            // shaper burst; 0 = default
	BufferBytes uint64           // the port's egress buffer limit in bytes
	MaxPackets  int              // the port's egress packet limit; 0 = min(BufferBytes/128, 8192)
	Scheduler   string           // registered scheduler name; "" = fifo
	Queues      int              // egress queues (0 = 32; single-queue schedulers use one)
	QueueBytes  uint64           // static per-queue limit (0 = BufferBytes)
	Quantum     int              // DRR/SFQ quantum (0 = 1514)
	Classify    sched.Classifier
	Mechanisms  []MechConfig   // mechanisms enabled on the port, in the order their hooks run
	DelayNs     int64          // one-way propagation delay of the port's link: frames are held after the shaper (0 = none)
	RxDelayNs   int64          // delay of the link toward the switch: received frames are held before the pipeline (0 = none)
	Addrs       []netip.Prefix // the switch's addresses on the port: an L3 (routed) port; none = an L2 port
	// MaxFrame is the longest frame the port's link takes (its MTU plus
	// the Ethernet header and a VLAN tag): longer data frames bound for the
	// port are dropped as too_long, as a switch port drops giants, instead
	// of being handed to a device that would drop them unseen. 0 = no limit.
	MaxFrame int
}

// MechConfig enables a registered mechanism on a port with its config (the
// value its Spec.Config returned, decoded).
type MechConfig struct {
	Name   string
	Config any
}

// Config configures a Switch.
type Config struct {
	Ports        []PortConfig
	SwitchID     uint16        // carried in frames the switch emits (0 = 1)
	Workers      int           // 0 = DefaultWorkers()
	MACTableSize int           // 0 = 4096
	MACAging     time.Duration // 0 = 300 s
	MACPortLimit int           // most MACs learnt on one port; 0 = half the table, < 0 = no limit
	MACMoveHold  time.Duration // a MAC that moved may not move again this soon (0: moves are free)
	HandoffSize  int           // slots of each worker-to-port handoff ring; 0 = 1024
	FillTarget   int           // frames to keep on each fill ring; 0 = automatic
	BusyPoll     bool          // never sleep
	SpinTime     time.Duration // how long an idle worker polls before sleeping; 0 = 50 µs, negative = it sleeps at once
	CPUs         []int         // worker i runs on CPUs[i mod len]; empty: anywhere
	Nice         int           // the workers' nice value (0 = default)
	CatchUp      time.Duration // line time a shaped port may make up after its worker ran late (shaper.Bucket.SetCatchUp); 0 = none
	Slice        time.Duration // the workers' scheduler slice (sched_setattr's runtime for SCHED_OTHER, Linux 6.12+); 0 = the kernel's
	SharedBuffer uint64        // bytes of the buffer all egress queues share; 0 = half the UMEM
	Alpha        float64       // dynamic threshold: a queue may take Alpha x the free buffer; 0 = off (gswitchd's config defaults to 1)
	QueueFrames  float64       // fraction of each worker's UMEM frames the queues may hold (0 = 0.5)
	// MaxFrame is the longest frame (Ethernet header to payload end, no FCS)
	// the ports must carry; 0 = what one UMEM frame holds. Longer than that,
	// the switch receives and sends frames as AF_XDP multi-buffer chains
	// (the links must be bound with XDP_USE_SG) and keeps each whole in a
	// jumbo slot: JumboSlots runs of contiguous UMEM frames, taken from the
	// top of each worker's range (jumbo.go; docs/architecture.md, "Jumbo frames").
	MaxFrame   int
	JumboSlots int   // 0 = a quarter of the UMEM's memory
	Clock      Clock // nil = monotonic time
	L3         L3    // routes and neighbours of the L3 ports
}

// Port is one switch port: its sockets (one per rx queue) and its egress.
type Port struct {
	Index int
	Name  string
	Role  mech.Role
	MAC   net.HardwareAddr

	links  atomic.Pointer[[]Link] // the port's links; replaced when its interface comes back
	txLink Link                   // egress worker: links[0], which transmits
	owner  []int                  // worker of each link
	egress int                    // worker that owns the egress (the owner of links[0])
	egw    *worker                // that worker

	sched   sched.Scheduler
	evictor sched.Evictor // the scheduler, when one arrival can evict several packets (nil otherwise)
	ctrl    *queues.FIFO  // control lane: frames the switch emits, served first, never paused
	credit  *creditLane   // credit lane (nil until a mechanism sets it up)
	shaper  *shaper.Bucket
	in      []*ring.SPSC[pkt.Packet] // in[w]: data packets handed over by worker w (nil for the egress worker)
	emitIn  []*ring.SPSC[pkt.Packet] // emitIn[w]: frames worker w emits on this port (nil for the egress worker)

	admit    []mech.AdmitHook   // mechanisms' hooks, in config order
	observe  []mech.ObserveHook //
	egressH  []mech.EgressHook  //
	ingressH []mech.IngressHook // run on the receiving worker after forwarding
	mechs    []string           // names of the mechanisms enabled on the port

	frames        int64                   // egress owner: frames in the port's data queues
	idle          bool                    // egress owner: the last pass found nothing eligible (queues empty or paused)
	maxFrame      uint32                  // PortConfig.MaxFrame (no limit: the largest uint32)
	down          atomic.Bool             // the interface is down or gone
	detachReq     atomic.Bool             // the interface is gone: workers reclaim and stop using its links
	detachAcks    atomic.Int32            // links reclaimed since the last detach request
	attachAcks    atomic.Int32            // links taken up since the last AttachPort
	newLinks      atomic.Pointer[[]Link]  // links to take up after a detach (AttachPort)
	txDetached    bool                    // egress worker: links[0] was reclaimed, do not touch txLink
	lost          atomic.Int64            // frames the kernel kept when the interface went away
	capture       atomic.Pointer[Capture] // a capture mirroring the port, or nil
	flushed       bool                    // egress owner: the queues were flushed since it went down
	txOutstanding atomic.Int64            // frames on the tx ring not yet completed
	delayNs       int64                   // the link's delay
	addrs         []netip.Prefix          // the switch's addresses on an L3 port (none: an L2 port)
	rxDelayNs     int64                   // the link's delay toward the switch
	dline         *delayLine              // frames on the wire (nil when delayNs is 0)
	txDescs       []afxdp.Desc

	pending  atomic.Pointer[portSettings] // run-time changes for the egress worker to apply (settings.go)
	rateBits atomic.Uint64                // the shaper's rate, for any goroutine
	quantum  atomic.Int64                 // the DRR/SFQ quantum, for any goroutine (0: the scheduler has none)
}

// creditLane is a port's lane for credits: a small FIFO under its own
// token bucket, served before data when the bucket allows. The egress
// worker owns it; the counters are read by any goroutine.
//
// A full lane drops, but not simply at the tail. The worker admits a
// pass's credits in the order it reads its sockets, one port after
// another, where a switch's credit queue sees them interleaved in time;
// tail drop would then favour the ports read first. So the credits that
// arrive between two sends compete alike for the room the last send left:
// when the k-th of them finds the lane full, it replaces one of the up to
// fairWindow admitted before it since that send with probability (that
// number)/k, else it is dropped (reservoir sampling; the queue's order is
// kept). With mech.CreditDropRandom an arriving credit may also be dropped
// before the lane is full (random early detection: see early).
type creditLane struct {
	q           *queues.FIFO
	limit       uint32 // credits the lane holds (credit_queue)
	bucket      *shaper.Bucket
	random      bool          // mech.CreditDropRandom
	avg         int64         // the queue's average length at arrivals, in 1/256 credits (random only)
	lastArrival int64         // when the last credit arrived (random only)
	gap         int64         // ns per credit at the bucket's rate (random only: the average's decay)
	arrived     uint32        // credits offered since the lane last sent
	admits      uint32        // of those, still queued at the tail (at most fairWindow count)
	rng         uint64        // xorshift state for the drop choices
	sent        atomic.Uint64 // credits that left the lane (written by the egress worker only)
	dropped     atomic.Uint64 // credits the lane refused (lane_full)
	earlyDrops  atomic.Uint64 // of those, dropped early (random only)
	tokens      atomic.Int64  // the bucket's bytes at the egress worker's last pass
}

// fairWindow bounds how many of a pass's admitted credits a later one may
// replace (each replacement moves that many): beyond it, tail drop.
const fairWindow = 64

// Scheduler returns the port's egress scheduler (for metrics: Depth only).
func (p *Port) Scheduler() sched.Scheduler { return p.sched }

// PauseQueue stops egress queue q of the port (any goroutine); its packets stay.
func (p *Port) PauseQueue(q int) { p.sched.Pause(q) }

// ResumeQueue serves egress queue q again and wakes the port's egress
// worker (any goroutine). A worker whose ports hold only paused frames
// sleeps until something wakes it, so a resume must go through here (or
// Switch.ResumeQueue), not straight to the scheduler.
func (p *Port) ResumeQueue(q int) {
	p.sched.Resume(q)
	if w := p.egw; w != nil {
		w.resumed.Store(true)
		w.wakeIfSleeping()
	}
}

// ResumeQueue is Port.ResumeQueue for port (any goroutine); a port
// index out of range is ignored, as TickSoon ignores a worker's.
func (s *Switch) ResumeQueue(port, q int) {
	if port < 0 || port >= len(s.ports) {
		return
	}
	s.ports[port].ResumeQueue(q)
}

// ControlDepth is the depth of the port's control lane (any goroutine).
func (p *Port) ControlDepth() (uint64, uint32) { return p.ctrl.Depth() }

// CreditDepth is the depth of the port's credit lane, and whether it has one (any goroutine).
func (p *Port) CreditDepth() (uint64, uint32, bool) {
	if p.credit == nil {
		return 0, 0, false
	}
	b, n := p.credit.q.Depth()
	return b, n, true
}

// CreditLane returns the counters of the port's credit lane, and whether
// it has one (any goroutine).
func (p *Port) CreditLane() (mech.CreditLaneStats, bool) {
	c := p.credit
	if c == nil {
		return mech.CreditLaneStats{}, false
	}
	_, n := c.q.Depth()
	return mech.CreditLaneStats{Sent: c.sent.Load(), Dropped: c.dropped.Load(), Early: c.earlyDrops.Load(), Queued: n,
		TokenBytes: c.tokens.Load(), DepthBytes: c.bucket.Depth(), RateBits: c.bucket.RateBits()}, true
}

// RateBits returns the port's shaper rate in bit/s (0 = unlimited; any goroutine).
func (p *Port) RateBits() uint64 { return p.rateBits.Load() }

// Links returns the port's per-queue links (any goroutine).
func (p *Port) Links() []Link { return *p.links.Load() }

// Lost counts frames the kernel kept when the port's interface went away.
func (p *Port) Lost() int64 { return p.lost.Load() }

// Down reports whether the port is down (any goroutine).
func (p *Port) Down() bool { return p.down.Load() }

// L3 reports whether the port routes (has addresses) rather than switches.
func (p *Port) L3() bool { return len(p.addrs) > 0 }

// Mechanisms lists the mechanisms enabled on the port.
func (p *Port) Mechanisms() []string { return p.mechs }

// Switch is the forwarding engine.
type Switch struct {
	cfg          Config
	mem          []byte
	frameSize    uint64
	numFrames    uint32
	perWorker    uint32
	ports        []*Port
	workers      []*worker
	mac          *l2.Table
	buffer       *queues.Buffer
	clock        Clock
	mechs        []mechInstance
	router       *router               // nil on an L2 switch
	control      [256]mech.ControlHook // handler of each GC type, if a mechanism of this switch claims it
	stateGen     atomic.Uint64         // bumped when a port goes down or up
	frameLimit   int64                 // frames all data queues together may hold (the workers' queueLimits)
	sg           bool                  // frames longer than a UMEM frame arrive and leave as multi-buffer chains (Config.MaxFrame)
	slotChunks   uint64                // UMEM frames per jumbo slot (sg only)
	slotBytes    uint64                // slotChunks x frameSize
	slotsPer     uint64                // jumbo slots per worker
	queuedFrames atomic.Int64          // frames in all data queues
	stopping     atomic.Bool
	wg           sync.WaitGroup
	started      bool
}

type mechInstance struct {
	name string
	inst mech.Instance
}

// New builds a switch over mem (the UMEM, a whole number of frameSize
// frames) and links[i], the per-queue links of port i.
func New(cfg Config, mem []byte, frameSize uint32, links [][]Link) (*Switch, error) {
	if len(cfg.Ports) == 0 || len(cfg.Ports) != len(links) {
		return nil, fmt.Errorf("need one link list per port (%d ports, %d link lists)", len(cfg.Ports), len(links))
	}
	if len(cfg.Ports) > 4096 {
		return nil, fmt.Errorf("too many ports (%d, at most 4096)", len(cfg.Ports))
	}
	if frameSize == 0 || frameSize&(frameSize-1) != 0 || len(mem)%int(frameSize) != 0 || frameSize < 2*pkt.Headroom {
		return nil, fmt.Errorf("UMEM of %d bytes is not a whole number of %d-byte frames (at least %d B each)", len(mem), frameSize, 2*pkt.Headroom)
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
	if len(cfg.CPUs) > 0 {
		var allowed unix.CPUSet
		if err := unix.SchedGetaffinity(0, &allowed); err != nil {
			return nil, fmt.Errorf("cpus: reading the CPUs this process may use: %w", err)
		}
		for i, c := range cfg.CPUs {
			if c < 0 || c >= 1024 || !allowed.IsSet(c) {
				return nil, fmt.Errorf("cpus[%d]: CPU %d is not one this process may run on (it may use %s); list CPUs from that set", i, c, cpuList(&allowed))
			}
		}
	}
	if cfg.SwitchID == 0 {
		cfg.SwitchID = 1
	}
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
	if cfg.QueueFrames == 0 {
		cfg.QueueFrames = 0.5
	}
	if cfg.QueueFrames < 0.05 || cfg.QueueFrames > 0.9 {
		return nil, fmt.Errorf("queue frames fraction %v out of range [0.05, 0.9]", cfg.QueueFrames)
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
	if s.perWorker < 8*BatchSize {
		return nil, fmt.Errorf("%d frames are too few for %d workers (need %d each)", s.numFrames, cfg.Workers, 8*BatchSize)
	}
	if err := s.sizeJumbo(); err != nil {
		return nil, err
	}
	var err error
	if cfg.MACPortLimit == 0 {
		cfg.MACPortLimit = max(cfg.MACTableSize/2, 16)
	}
	if cfg.MACPortLimit < 0 {
		cfg.MACPortLimit = 0 // no limit
	}
	if s.mac, err = l2.New(l2.Config{Size: cfg.MACTableSize, Aging: int64(cfg.MACAging), Ports: len(cfg.Ports),
		PortLimit: cfg.MACPortLimit, MoveHold: int64(cfg.MACMoveHold)}); err != nil {
		return nil, err
	}
	now := s.clock.Now()
	for i, pc := range cfg.Ports {
		p := &Port{Index: i, Name: pc.Name, Role: pc.Role, MAC: pc.MAC, txLink: links[i][0], txDescs: make([]afxdp.Desc, 2*BatchSize), maxFrame: ^uint32(0)}
		if pc.MaxFrame > 0 {
			p.maxFrame = uint32(pc.MaxFrame)
		}
		l := links[i]
		p.links.Store(&l)
		if len(p.MAC) != 6 {
			p.MAC = net.HardwareAddr{0x02, 0x67, 0x73, byte(cfg.SwitchID >> 8), byte(cfg.SwitchID), byte(i)}
		}
		if pc.BufferBytes == 0 {
			pc.BufferBytes = 1 << 20
		}
		if pc.MaxPackets == 0 {
			pc.MaxPackets = int(min(pc.BufferBytes/128, 8192))
		}
		if pc.Scheduler == "" {
			pc.Scheduler = "fifo"
		}
		var mnames []string
		for _, m := range pc.Mechanisms {
			mnames = append(mnames, m.Name)
		}
		if mech.SetsQueue(mnames) {
			pc.Classify = sched.Classifier{By: "queue"} // a mechanism assigns the queues
		}
		if p.sched, err = sched.New(pc.Scheduler, sched.Params{Queues: pc.Queues, PortBytes: pc.BufferBytes, PortPackets: pc.MaxPackets,
			QueueBytes: pc.QueueBytes, Alpha: cfg.Alpha, Buffer: s.buffer, Quantum: pc.Quantum, Classify: pc.Classify}); err != nil {
			return nil, fmt.Errorf("port %q: %w", pc.Name, err)
		}
		p.evictor, _ = p.sched.(sched.Evictor)
		if p.ctrl, err = queues.NewFIFO(256<<10, 256); err != nil {
			return nil, err
		}
		if p.shaper, err = s.newShaper(pc.RateBits, pc.BurstBytes, now); err != nil {
			return nil, fmt.Errorf("port %q: %w", pc.Name, err)
		}
		p.rateBits.Store(p.shaper.RateBits())
		if q, ok := p.sched.(quantumSetter); ok {
			p.quantum.Store(int64(q.Quantum()))
		}
		p.addrs = pc.Addrs
		if pc.RxDelayNs < 0 || pc.RxDelayNs > 1e9 {
			return nil, fmt.Errorf("port %q: rx delay %d ns out of range [0, 1 s]", pc.Name, pc.RxDelayNs)
		}
		p.rxDelayNs = pc.RxDelayNs
		if pc.DelayNs < 0 || pc.DelayNs > 1e9 {
			return nil, fmt.Errorf("port %q: delay %d ns out of range [0, 1 s]", pc.Name, pc.DelayNs)
		}
		if p.delayNs = pc.DelayNs; p.delayNs > 0 {
			// Room for the delay at the line rate in minimum frames (10 Gbit/s if unlimited), bounded.
			rate := int64(pc.RateBits)
			if rate == 0 {
				rate = 10e9
			}
			p.dline = newDelayLine(int(min(p.delayNs*(rate/8)/84/1e9+4*BatchSize, 1<<16)))
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
		s.frameLimit += wk.queueLimit
	}
	// Sockets go to workers round-robin; a port's egress goes with its first socket.
	k := 0
	for _, p := range s.ports {
		p.owner = make([]int, len(p.Links()))
		for q, l := range p.Links() {
			w := s.workers[k%cfg.Workers]
			p.owner[q] = w.id
			rq := &rxQueue{link: l, port: p.Index, queue: q}
			if p.rxDelayNs > 0 {
				rq.dly = newDelayLine(int(min(p.rxDelayNs*(10e9/8)/84/1e9+4*BatchSize, 1<<16)))
			}
			w.rx = append(w.rx, rq)
			k++
		}
		p.egress = p.owner[0]
		p.egw = s.workers[p.egress]
		s.workers[p.egress].egress = append(s.workers[p.egress].egress, p)
		p.in = make([]*ring.SPSC[pkt.Packet], cfg.Workers)
		p.emitIn = make([]*ring.SPSC[pkt.Packet], cfg.Workers)
		for w := range s.workers {
			if w != p.egress {
				if p.in[w], err = ring.New[pkt.Packet](nextPow2(cfg.HandoffSize)); err != nil {
					return nil, err
				}
				if p.emitIn[w], err = ring.New[pkt.Packet](256); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := s.buildRouter(cfg.Ports, cfg.L3); err != nil {
		s.closeWorkers()
		return nil, err
	}
	if err := s.buildMechanisms(cfg.Ports); err != nil {
		s.closeWorkers()
		return nil, err
	}
	for _, w := range s.workers {
		w.prime()
	}
	return s, nil
}

// buildMechanisms creates one instance of every mechanism enabled on some
// port and wires its hooks into the ports' lists.
func (s *Switch) buildMechanisms(pcs []PortConfig) error {
	var names []string
	seen := map[string]bool{}
	for i, pc := range pcs {
		var on []string
		for _, m := range pc.Mechanisms {
			on = append(on, m.Name)
			if !seen[m.Name] {
				seen[m.Name] = true
				names = append(names, m.Name)
			}
		}
		if err := mech.Check(on, s.ports[i].schedName(pc)); err != nil {
			return fmt.Errorf("port %q: %w", pc.Name, err)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		spec, _ := mech.Lookup(name)
		ports := make([]mech.Port, len(s.ports))
		for i, p := range s.ports {
			ports[i] = mech.Port{Index: i, Name: p.Name, Role: p.Role, MAC: p.MAC, RateBits: p.shaper.RateBits(),
				Queues: p.sched.NumQueues(), Scheduler: s.ports[i].schedName(pcs[i]), DelayNs: p.delayNs}
			for _, m := range pcs[i].Mechanisms {
				if m.Name == name {
					ports[i].Config = m.Config
				}
			}
		}
		inst, err := spec.New(s, ports)
		if err != nil {
			return fmt.Errorf("mechanism %s: %w", name, err)
		}
		s.mechs = append(s.mechs, mechInstance{name: name, inst: inst})
		if h, ok := inst.(mech.ControlHook); ok {
			for _, t := range spec.Controls {
				s.control[t] = h
			}
		}
		for _, w := range s.workers {
			if h, ok := inst.(mech.TickHook); ok {
				w.tickers = append(w.tickers, ticker{h: h})
			}
		}
	}
	// Per-port hook lists, in the order the port's config lists its mechanisms.
	for i, pc := range pcs {
		p := s.ports[i]
		for _, m := range pc.Mechanisms {
			inst := s.instance(m.Name)
			p.mechs = append(p.mechs, m.Name)
			if h, ok := inst.(mech.AdmitHook); ok {
				p.admit = append(p.admit, h)
			}
			if h, ok := inst.(mech.ObserveHook); ok {
				p.observe = append(p.observe, h)
			}
			if h, ok := inst.(mech.EgressHook); ok {
				p.egressH = append(p.egressH, h)
			}
			if h, ok := inst.(mech.IngressHook); ok {
				p.ingressH = append(p.ingressH, h)
			}
		}
	}
	return nil
}

func (p *Port) schedName(pc PortConfig) string {
	if pc.Scheduler == "" {
		return "fifo"
	}
	return pc.Scheduler
}

func (s *Switch) instance(name string) mech.Instance {
	for _, m := range s.mechs {
		if m.name == name {
			return m.inst
		}
	}
	return nil
}

// Mechanisms returns the running mechanism instances, by name (for metrics:
// an instance that is a prometheus.Collector is registered by gswitchd).
func (s *Switch) Mechanisms() map[string]mech.Instance {
	m := map[string]mech.Instance{}
	for _, x := range s.mechs {
		m[x.name] = x.inst
	}
	return m
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

// SetClock replaces the switch's clock (tests that run several switches on
// one fake clock; before any traffic).
func (s *Switch) SetClock(c Clock) { s.clock = c; s.cfg.Clock = c }

// Now is the switch clock.
func (s *Switch) Now() int64 { return s.clock.Now() }

// Mem is the UMEM.
func (s *Switch) Mem() []byte { return s.mem }

// ID is the switch id.
func (s *Switch) ID() uint16 { return s.cfg.SwitchID }

// NumPorts is the number of ports.
func (s *Switch) NumPorts() int { return len(s.ports) }

// EgressWorker is the worker that owns port's egress.
func (s *Switch) EgressWorker(port int) int { return s.ports[port].egress }

// Emitter returns worker w's emitter.
func (s *Switch) Emitter(w int) mech.Emitter { return &s.workers[w].em }

// Scheduler returns port's scheduler.
func (s *Switch) Scheduler(port int) sched.Scheduler { return s.ports[port].sched }

// TickSoon asks worker w to run h's Tick at its next pass (any goroutine).
func (s *Switch) TickSoon(w int, h mech.TickHook) {
	if w < 0 || w >= len(s.workers) {
		return
	}
	wk := s.workers[w]
	for i := range wk.tickers {
		if wk.tickers[i].h == h {
			wk.tickers[i].soon.Store(true)
			wk.wakeIfSleeping()
			return
		}
	}
}

// PortDown reports whether port is down.
func (s *Switch) PortDown(port int) bool { return s.ports[port].down.Load() }

// SetCreditLane gives port a credit lane metered to rateBits with a bucket
// of burst bytes and a queue of queueLen frames. Call before Start (from a
// mechanism's New). The head credit leaves only when the bucket holds its
// whole cost on the wire (max(len, 60) + 24 bytes), never on debt, so at
// most burst bytes of credits leave back to back, unless the worker ran
// late: then the bucket makes up the time, up to the switch's catchup, as
// the port's shaper does. A credit the lane cannot take is dropped as drop
// says (lane_full, and counted in CreditLane; see creditLane).
func (s *Switch) SetCreditLane(port int, rateBits uint64, burst, queueLen int, drop mech.CreditDrop) error {
	if s.started {
		return errors.New("credit lanes are set up before the switch starts")
	}
	if port < 0 || port >= len(s.ports) {
		return fmt.Errorf("no port %d", port)
	}
	if queueLen < 1 || queueLen > 4096 {
		return fmt.Errorf("credit queue of %d frames out of range [1, 4096]", queueLen)
	}
	b, err := shaper.NewBucket(rateBits, int64(burst), s.clock.Now())
	if err != nil {
		return err
	}
	// A meter whose worker runs late while credits wait makes up the time,
	// as the port's shaper does (shaper, Late service).
	if err := b.SetCatchUp(int64(s.cfg.CatchUp)); err != nil {
		return fmt.Errorf("catchup: %w", err)
	}
	q, err := queues.NewFIFO(uint64(queueLen)*s.frameSize, queueLen)
	if err != nil {
		return err
	}
	s.ports[port].credit = &creditLane{q: q, limit: uint32(queueLen), bucket: b, random: drop == mech.CreditDropRandom, gap: max(int64((shaper.MinFrame+shaper.Overhead)*8*1e9/rateBits), 1), rng: 0x9e3779b97f4a7c15 ^ uint64(port+1)*0xbf58476d1ce4e5b9}
	s.ports[port].credit.tokens.Store(b.Depth())
	return nil
}

// CreditLane returns the counters of port's credit lane, and whether it
// has one (any goroutine).
func (s *Switch) CreditLane(port int) (mech.CreditLaneStats, bool) { return s.ports[port].CreditLane() }

// SetPortDown marks port down (the interface went down or away) or up
// again (any goroutine). While a port is down, its queues are flushed
// (each frame counted as a port_down drop), frames for it are dropped, and
// no frame is emitted on it.
func (s *Switch) SetPortDown(port int, down bool) {
	if s.ports[port].down.Swap(down) != down {
		if down {
			s.mac.Flush(uint16(port)) // hosts behind it are gone or will be learnt again
		}
		s.stateGen.Add(1)
		for _, w := range s.workers {
			w.wake()
		}
	}
}

// Housekeep does the switch's slow work: it retires MAC table entries that
// aged out. gswitchd calls it about once a second from a goroutine of its
// own; tests call it when they like.
func (s *Switch) Housekeep() { s.mac.Sweep(s.clock.Now()) }

// DetachPort takes port's links away from the workers because its
// interface is gone: the port goes down, and each worker that owns one of
// its links reclaims the frames on the link's rings (they come back to the
// free lists; frames the kernel kept are counted as lost) and never touches
// the link again. Detached reports when all of them have; then the links'
// sockets may be closed. Any goroutine.
func (s *Switch) DetachPort(port int) {
	p := s.ports[port]
	p.detachAcks.Store(0)
	p.newLinks.Store(nil)
	p.detachReq.Store(true)
	p.down.Store(true)
	s.stateGen.Add(1)
	for _, w := range s.workers {
		w.wake()
	}
}

// Detached reports whether every link of port has been reclaimed since the
// last DetachPort.
func (s *Switch) Detached(port int) bool {
	p := s.ports[port]
	return p.detachReq.Load() && int(p.detachAcks.Load()) == len(p.Links())
}

// AttachPort gives a detached port new links (one per rx queue, as many as
// it had) and brings it up: the workers that owned the old links take the
// new ones. Any goroutine, after Detached(port).
func (s *Switch) AttachPort(port int, links []Link) error {
	p := s.ports[port]
	if !s.Detached(port) {
		return fmt.Errorf("port %s is not detached", p.Name)
	}
	if len(links) != len(p.Links()) {
		return fmt.Errorf("port %s had %d queues, not %d", p.Name, len(p.Links()), len(links))
	}
	l := append([]Link(nil), links...)
	p.attachAcks.Store(0)
	p.newLinks.Store(&l)
	s.stateGen.Add(1)
	for _, w := range s.workers {
		w.wake()
	}
	return nil
}

// sizeJumbo sets up jumbo slots when Config.MaxFrame exceeds what one
// UMEM frame holds after its headroom.
func (s *Switch) sizeJumbo() error {
	mf := s.cfg.MaxFrame
	if mf < 0 || mf > MaxJumboFrame {
		return fmt.Errorf("max frame %d B out of range [0, %d]", mf, MaxJumboFrame)
	}
	if uint64(mf) <= s.frameSize-pkt.Headroom {
		return nil
	}
	s.sg = true
	s.slotChunks = (uint64(mf) + pkt.Headroom + s.frameSize - 1) / s.frameSize
	s.slotBytes = s.slotChunks * s.frameSize
	if s.cfg.JumboSlots > 0 {
		s.slotsPer = uint64(s.cfg.JumboSlots) / uint64(s.cfg.Workers)
	} else {
		s.slotsPer = uint64(s.perWorker) / 4 / s.slotChunks
	}
	if s.slotsPer < BatchSize {
		return fmt.Errorf("%d jumbo slots of %d B per worker are too few (need %d): raise frames", s.slotsPer, s.slotBytes, BatchSize)
	}
	if used := s.slotsPer * s.slotChunks; used+8*BatchSize > uint64(s.perWorker) {
		return fmt.Errorf("%d jumbo slots of %d frames per worker leave too few of its %d frames for the rest (need %d): raise frames or lower jumbo slots", s.slotsPer, s.slotChunks, s.perWorker, 8*BatchSize)
	}
	return nil
}

// MaxJumboFrame is the longest frame the switch carries (Ethernet header
// to payload end, no FCS): 9216 B, the usual limit of data-centre
// switches, an MTU of 9198 with a VLAN tag. It keeps a chain within the
// kernel's limit on buffers per frame (MAX_SKB_FRAGS, 17) for 2 KB frames.
const MaxJumboFrame = 9216

// slotBase returns the jumbo slot that holds addr, if addr is in one.
// Any goroutine (the workers' ranges are fixed in New).
func (s *Switch) slotBase(addr uint64) (uint64, bool) {
	if !s.sg {
		return 0, false
	}
	w := s.workers[s.owner(addr)]
	if addr < w.jlo || addr >= w.hi {
		return 0, false
	}
	return w.slotAt(addr), true
}

// frameEnd is the end of the UMEM memory the frame at addr may use: its
// UMEM frame's, or its jumbo slot's.
func (s *Switch) frameEnd(addr uint64) uint64 {
	if s.sg {
		return s.slotEnd(addr)
	}
	return (addr | (s.frameSize - 1)) + 1 // kept small enough to inline
}

func (s *Switch) slotEnd(addr uint64) uint64 {
	if b, ok := s.slotBase(addr); ok {
		return b + s.slotBytes
	}
	return (addr | (s.frameSize - 1)) + 1
}

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

// Start runs every worker on its own goroutine, locked to an OS thread
// (pinned to its CPU when Config.CPUs says so). An error (a worker could
// not be pinned) leaves the other workers running: Stop them.
func (s *Switch) Start() error {
	s.started = true
	pinned := make(chan error, len(s.workers))
	for _, w := range s.workers {
		s.wg.Add(1)
		go func(w *worker) {
			defer s.wg.Done()
			// Locked for good: the thread's timer slack, CPU set, nice value
			// and slice are the worker's, and a goroutine that exits locked
			// takes its thread with it instead of handing those to others.
			runtime.LockOSThread()
			// Wake from ppoll when asked, not up to 50 us later (the kernel's
			// default timer slack): link delays and shaped frames are timed by it.
			unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
			if cpus := s.cfg.CPUs; len(cpus) > 0 {
				cpu := cpus[w.id%len(cpus)]
				var set unix.CPUSet
				set.Set(cpu)
				if err := unix.SchedSetaffinity(0, &set); err != nil {
					pinned <- fmt.Errorf("cpus: pinning worker %d to CPU %d: %w", w.id, cpu, err)
					return
				}
			}
			if err := s.setSched(); err != nil {
				pinned <- fmt.Errorf("worker %d: %w", w.id, err)
				return
			}
			pinned <- nil
			w.run()
		}(w)
	}
	var err error
	for range s.workers {
		err = cmp.Or(err, <-pinned)
	}
	return err
}

// setSched gives the calling thread (a worker's) the configured nice value
// and slice. Nice and slice are per thread in Linux; sched_setattr sets
// both at once and keeps SCHED_OTHER.
func (s *Switch) setSched() error {
	if s.cfg.Nice == 0 && s.cfg.Slice == 0 {
		return nil
	}
	a := unix.SchedAttr{Policy: 0 /* SCHED_OTHER */, Nice: int32(s.cfg.Nice), Runtime: uint64(s.cfg.Slice)}
	err := unix.SchedSetAttr(0, &a, 0)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("nice: %d needs root or CAP_SYS_NICE (run gswitchd as root or set nice: 0): %w", s.cfg.Nice, err)
	case errors.Is(err, unix.EINVAL) && s.cfg.Slice != 0:
		return fmt.Errorf("slice: %v refused by the kernel (a slice for ordinary threads needs Linux 6.12; remove slice:): %w", s.cfg.Slice, err)
	}
	return fmt.Errorf("nice %d, slice %v: sched_setattr: %w", s.cfg.Nice, s.cfg.Slice, err)
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
	Queued    uint64 // in an egress scheduler or lane
	Tx        uint64 // on a tx ring, not yet completed
	Delayed   uint64 // on the wire of a port with a delay, not yet due
	Returning uint64 // on the way back to the worker that owns them
	// Assembling counts jumbo slots holding the first buffers of a
	// multi-buffer frame whose last buffer has not arrived yet.
	Assembling uint64
}

// InPool is the number of frames ready for reception (free or on a fill ring).
func (c FrameCounts) InPool() uint64 { return c.Free + c.Fill }

// Sum adds up every state; it equals Total when no frame is lost (exactly
// so while the switch is quiescent). A jumbo slot counts as one frame in
// Total and in every state.
func (c FrameCounts) Sum() uint64 {
	return c.Free + c.Fill + c.Handoff + c.Queued + c.Tx + c.Delayed + c.Returning + c.Assembling
}

// Frames counts frames by state. It may be called from any goroutine;
// while traffic flows, a frame moving between states may be counted twice
// or not at all.
func (s *Switch) Frames() FrameCounts {
	c := FrameCounts{Total: uint64(s.numFrames) - uint64(len(s.workers))*s.slotsPer*(s.slotChunks-1)}
	if !s.sg {
		c.Total = uint64(s.numFrames)
	}
	for _, w := range s.workers {
		c.Free += uint64(w.freeLen.Load())
		c.Assembling += uint64(w.assembling.Load())
		c.Fill += uint64(w.inFill.Load())
		for _, r := range w.ret {
			if r != nil {
				c.Returning += uint64(r.Len())
			}
		}
		c.Returning += uint64(w.staged.Load())
		for _, q := range w.rx {
			if q.dly != nil {
				c.Delayed += uint64(q.dly.pub.Load())
			}
		}
	}
	for _, p := range s.ports {
		for q := 0; q < p.sched.NumQueues(); q++ {
			_, n := p.sched.Depth(q)
			c.Queued += uint64(n)
		}
		_, n := p.ctrl.Depth()
		c.Queued += uint64(n)
		if p.credit != nil {
			_, n := p.credit.q.Depth()
			c.Queued += uint64(n)
		}
		for _, r := range p.in {
			if r != nil {
				c.Handoff += uint64(r.Len())
			}
		}
		for _, r := range p.emitIn {
			if r != nil {
				c.Handoff += uint64(r.Len())
			}
		}
		c.Tx += uint64(p.txOutstanding.Load())
		if p.dline != nil {
			c.Delayed += uint64(p.dline.pub.Load())
		}
	}
	return c
}

// QueueFrameLimit is the most frames of worker w's range the queues may hold.
func (s *Switch) QueueFrameLimit(w int) int64 { return s.workers[w].queueLimit }

// PortCounters are one port's cumulative counters.
type PortCounters struct {
	RxPackets, RxBytes, TxPackets, TxBytes uint64
	Flooded                                uint64 // frames received on this port that were flooded
	TxLateNs                               uint64 // line time (ns) the shaped port lost while frames waited, its worker running later than the shaper's catch-up allows
	Drops                                  [pkt.MaxReasons]uint64
	Malformed                              [pkt.NumErrs]uint64
	ControlRx                              [256]uint64 // control messages received, by GC type
	Forged                                 [256]uint64 // of those, the ones dropped as forged (a switch-only type from a host port), by GC type
	Emitted                                [256]uint64 // frames the switch emitted on the port, by GC type
	EmitFailed                             [256]uint64 // emissions that failed, by GC type
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
		c.TxLateNs += k.txLateNs.Load()
		for r := range k.drops {
			c.Drops[r] += k.drops[r].Load()
		}
		for e := range c.Malformed {
			c.Malformed[e] += k.malformed[e].Load()
		}
		for t := range c.ControlRx {
			c.ControlRx[t] += k.controlRx[t].Load()
			c.Forged[t] += k.forged[t].Load()
			c.Emitted[t] += k.emitted[t].Load()
			c.EmitFailed[t] += k.emitFailed[t].Load()
		}
	}
	return c
}

// Unrouted counts, by kind, frames the switch built to be routed that found
// no way out (any goroutine).
func (s *Switch) Unrouted() (c [256]uint64) {
	for _, w := range s.workers {
		for k := range c {
			c[k] += w.unrouted[k].Load()
		}
	}
	return c
}

// WorkerStats are a worker's loop counters.
type WorkerStats struct {
	Passes, Sleeps, Wakeups uint64
	Spinning                bool // at its last sleep, the worker was spinning before sleeping (spin.go)
}

// WorkerStats returns worker w's counters (any goroutine).
func (s *Switch) WorkerStats(w int) WorkerStats {
	wk := s.workers[w]
	return WorkerStats{Passes: wk.passes.Load(), Sleeps: wk.sleeps.Load(), Wakeups: wk.wakeups.Load(), Spinning: wk.spinning.Load()}
}

var _ mech.Switch = (*Switch)(nil)

// cpuList writes a CPU set as a list such as "0-3,6".
func cpuList(set *unix.CPUSet) string {
	var b []byte
	for c := 0; c < 1024; c++ {
		if !set.IsSet(c) {
			continue
		}
		e := c
		for e+1 < 1024 && set.IsSet(e+1) {
			e++
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "%d", c)
		if e > c {
			b = fmt.Appendf(b, "-%d", e)
		}
		c = e
	}
	return string(b)
}
