package dataplane

import (
	"fmt"
	"net"
	"sort"
	"sync/atomic"
	"time"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane/l2"
	"github.com/gswitch/gswitch/dataplane/ring"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/queues"
	"github.com/gswitch/gswitch/sched"
	"github.com/gswitch/gswitch/tm"
	"golang.org/x/sys/unix"
)

// New builds a switch over mem (the UMEM, a whole number of frameSize
// frames) and links[i], the per-queue links of port i. cfg.Config must be
// complete (see Config).
func New(cfg Config, mem []byte, frameSize uint32, links [][]Link) (*Switch, error) {
	if len(cfg.Ports) == 0 || len(cfg.Ports) != len(links) {
		return nil, fmt.Errorf("need one link list per port (%d ports, %d link lists)", len(cfg.Ports), len(links))
	}
	if frameSize == 0 || frameSize&(frameSize-1) != 0 || len(mem)%int(frameSize) != 0 || frameSize < 2*pkt.Headroom {
		return nil, fmt.Errorf("UMEM of %d bytes is not a whole number of %d-byte frames (at least %d B each)", len(mem), frameSize, 2*pkt.Headroom)
	}
	cfg, err := forMachine(cfg, links)
	if err != nil {
		return nil, err
	}
	s := &Switch{cfg: cfg, clock: cfg.Clock}
	s.umem = umem{mem: mem, frameSize: uint64(frameSize), numFrames: uint32(len(mem) / int(frameSize)), ranges: cfg.Workers}
	shared := uint64(cfg.Buffer)
	if shared == 0 {
		shared = uint64(len(mem)) / 2
	}
	s.buffer = queues.NewBuffer(shared)
	s.perWorker = s.numFrames / uint32(cfg.Workers)
	if s.perWorker < 8*BatchSize {
		return nil, fmt.Errorf("%d frames are too few for %d workers (need %d each)", s.numFrames, cfg.Workers, 8*BatchSize)
	}
	if err := s.sizeJumbo(&s.cfg); err != nil {
		return nil, err
	}
	portLimit := cfg.MACTable.PortLimit
	if portLimit == 0 {
		portLimit = max(cfg.MACTable.Size/2, 16)
	}
	if portLimit < 0 {
		portLimit = 0 // no limit
	}
	if s.mac, err = l2.New(l2.Config{Size: cfg.MACTable.Size, Aging: int64(cfg.MACTable.Aging), Ports: len(cfg.Ports),
		PortLimit: portLimit, MoveHold: int64(cfg.MACTable.MoveHold)}); err != nil {
		return nil, err
	}
	for _, pc := range cfg.Ports {
		if pc.SourceGuard == config.GuardBinding && len(pc.Addrs) == 0 && s.bind == nil {
			// The L2 source bindings: keyed, sized, aged and shared out
			// between ports like the MAC table, and sticky.
			if s.bind, err = l2.New(l2.Config{Size: cfg.MACTable.Size, Aging: int64(cfg.MACTable.Aging), Ports: len(cfg.Ports),
				PortLimit: portLimit, Sticky: true}); err != nil {
				return nil, err
			}
		}
	}
	s.captures = make([]atomic.Pointer[Capture], len(cfg.Ports))
	now := s.clock.Now()
	for i := range cfg.Ports {
		p, err := s.newPort(i, &cfg.Ports[i], links[i], now)
		if err != nil {
			return nil, err
		}
		s.ports = append(s.ports, p)
	}
	if err := s.buildWorkers(); err != nil {
		s.closeWorkers()
		return nil, err
	}
	if err := s.assign(); err != nil {
		return nil, err
	}
	if s.router, err = newRouter(s.ports, cfg.RouteTable(), cfg.NeighborTable()); err != nil {
		s.closeWorkers()
		return nil, err
	}
	for _, r := range cfg.RouteTable() {
		for _, nh := range r.NextHops {
			s.ports[nh.Port].guard.via = true // sources the route covers may come in through its next hops' ports
		}
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

// forMachine checks what cfg asks of the machine and resolves what the
// config leaves to it: the number of workers, the clock, the longest
// frame, and the defaults of the dataplane's own settings (those no
// config key sets).
func forMachine(cfg Config, links [][]Link) (Config, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers()
	}
	nlinks := 0
	for i, l := range links {
		if len(l) == 0 {
			return cfg, fmt.Errorf("port %q has no queues", cfg.Ports[i].Name)
		}
		nlinks += len(l)
	}
	cfg.Workers = min(cfg.Workers, nlinks)
	if len(cfg.CPUs) > 0 {
		var allowed unix.CPUSet
		if err := unix.SchedGetaffinity(0, &allowed); err != nil {
			return cfg, fmt.Errorf("cpus: reading the CPUs this process may use: %w", err)
		}
		for i, c := range cfg.CPUs {
			if c < 0 || c >= 1024 || !allowed.IsSet(c) {
				return cfg, fmt.Errorf("cpus[%d]: CPU %d is not one this process may run on (it may use %s); list CPUs from that set", i, c, cpuList(&allowed))
			}
		}
	}
	for _, mf := range cfg.PortMaxFrame {
		cfg.MaxFrame = max(cfg.MaxFrame, mf)
	}
	if cfg.HandoffSize == 0 {
		cfg.HandoffSize = 1024
	}
	if cfg.QueueFrames == 0 {
		cfg.QueueFrames = 0.5
	}
	if cfg.QueueFrames < 0.05 || cfg.QueueFrames > 0.9 {
		return cfg, fmt.Errorf("queue frames fraction %v out of range [0.05, 0.9]", cfg.QueueFrames)
	}
	if cfg.Clock == nil {
		cfg.Clock = monoClock{time.Now()}
	}
	return cfg, nil
}

// newPort builds port i from its config pc over its links: its identity
// and its traffic manager (the workers are assigned later).
func (s *Switch) newPort(i int, pc *config.Port, links []Link, now int64) (*Port, error) {
	if pc.Scheduler == "" {
		return nil, fmt.Errorf("port %q: its config is not complete (config.Parse completes a file, Config.Complete a config built in Go)", pc.Name)
	}
	p := &Port{Index: i, Name: pc.Name, Role: pc.Role, MAC: net.HardwareAddr(pc.MAC)}
	p.link.tx = links[0]
	p.link.links.Store(&links)
	if len(p.MAC) != 6 {
		p.MAC = net.HardwareAddr{0x02, 0x67, 0x73, byte(s.cfg.SwitchID >> 8), byte(s.cfg.SwitchID), byte(i)}
	}
	packets := pc.BufferPackets
	if packets == 0 {
		packets = int(min(uint64(pc.Buffer)/128, 8192))
	}
	maxFrame := 0 // no limit
	if i < len(s.cfg.PortMaxFrame) {
		maxFrame = max(s.cfg.PortMaxFrame[i], 0)
	}
	if err := p.tm.Init(tm.Config{Index: i, Scheduler: pc.Scheduler,
		Params: sched.Params{Queues: pc.Queues, PortBytes: uint64(pc.Buffer), PortPackets: packets, QueueBytes: uint64(pc.QueueBuffer),
			Alpha: s.cfg.Alpha, Buffer: s.buffer, Quantum: pc.Quantum, Classify: pc.Classifier()},
		RateBits: uint64(pc.Rate), Burst: int64(pc.Burst), CatchUp: int64(s.cfg.CatchUp), MaxFrame: uint32(maxFrame), Now: now}); err != nil {
		return nil, fmt.Errorf("port %q: %w", pc.Name, err)
	}
	p.run.rateBits.Store(p.tm.Shaper().RateBits())
	if q, ok := p.tm.Scheduler().(quantumSetter); ok {
		p.run.quantum.Store(int64(q.Quantum()))
	}
	p.addrs = pc.Addrs
	if pc.Role == mech.RoleHost {
		p.guard = newGuard(pc.SourceGuard, pc.Addrs)
	}
	p.link.rxDelayNs = int64(pc.RxDelay)
	p.tm.SetDelay(int64(pc.Delay), uint64(pc.Rate))
	return p, nil
}

// buildWorkers builds the workers over their ranges of the UMEM, and the
// frame budget of the traffic manager: the data queues may hold
// Config.QueueFrames of each range's frames.
func (s *Switch) buildWorkers() error {
	limits := make([]int64, s.cfg.Workers)
	for w := range limits {
		lo, hi, jlo := s.rangeOf(w)
		n := (jlo - lo) / s.frameSize // frames outside the jumbo slots
		var slots uint64
		if s.sg {
			slots = (hi - jlo) / s.slotBytes
		}
		limits[w] = int64(float64(n+slots) * s.cfg.QueueFrames)
	}
	s.frames = tm.NewFrames(s.frameSize, s.perWorker, limits)
	pools := make([]*framePool, s.cfg.Workers)
	for w := 0; w < s.cfg.Workers; w++ {
		wk, err := newWorker(s, w)
		if err != nil {
			return err
		}
		s.workers = append(s.workers, wk)
		pools[w] = &wk.pool
	}
	for _, wk := range s.workers {
		wk.pool.peers = pools
	}
	return nil
}

// assign gives the ports' sockets to the workers round-robin; a port's
// egress goes with its first socket.
func (s *Switch) assign() error {
	k := 0
	for _, p := range s.ports {
		p.link.workers = make([]int, len(p.Links()))
		for q, l := range p.Links() {
			w := s.workers[k%s.cfg.Workers]
			p.link.workers[q] = w.id
			rq := &rxQueue{link: l, port: p.Index, queue: q}
			if p.link.rxDelayNs > 0 {
				rq.dly = tm.NewDelayLine(int(min(p.link.rxDelayNs*(10e9/8)/84/1e9+4*BatchSize, 1<<16)))
			}
			w.rx.queues = append(w.rx.queues, rq)
			k++
		}
		eg := s.workers[p.link.workers[0]]
		p.eg.owner, p.eg.wake = eg.id, &eg.nap
		eg.eg.ports = append(eg.eg.ports, p)
		p.tm.Serve(eg.eg.tm)
		p.eg.in = make([]*ring.SPSC[pkt.Packet], s.cfg.Workers)
		p.eg.emitIn = make([]*ring.SPSC[pkt.Packet], s.cfg.Workers)
		for w := range s.workers {
			if w == p.eg.owner {
				continue
			}
			var err error
			if p.eg.in[w], err = ring.New[pkt.Packet](nextPow2(s.cfg.HandoffSize)); err != nil {
				return err
			}
			if p.eg.emitIn[w], err = ring.New[pkt.Packet](256); err != nil {
				return err
			}
		}
	}
	return nil
}

// buildMechanisms creates one instance of every mechanism enabled on some
// port and wires the hooks it implements, and only those, into the lists
// of its ports, in each port's hook order (mech.Order: what the mechanisms
// declare, not the order of the config).
func (s *Switch) buildMechanisms(pcs []config.Port) error {
	var names []string
	seen := map[string]bool{}
	orders := make([][]string, len(pcs))
	for i, pc := range pcs {
		var on []string
		for _, m := range pc.Mechanisms {
			on = append(on, m.Name)
			if !seen[m.Name] {
				seen[m.Name] = true
				names = append(names, m.Name)
			}
		}
		// The config checked the mechanisms together (mech.Check); their
		// hooks run in the order they declare.
		var err error
		if orders[i], err = mech.Order(on); err != nil {
			return fmt.Errorf("port %q: %w", pc.Name, err)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		spec, _ := mech.Lookup(name)
		ports := make([]mech.Port, len(s.ports))
		for i, p := range s.ports {
			ports[i] = mech.Port{Index: i, Name: p.Name, Role: p.Role, MAC: p.MAC, RateBits: p.tm.Shaper().RateBits(),
				Queues: p.tm.Scheduler().NumQueues(), Scheduler: pcs[i].Scheduler, BufferBytes: p.tm.View().BufferBytes(),
				DelayNs: p.tm.DelayNs(), RTTNs: int64(pcs[i].RTT), Uplink: pcs[i].Uplink, Timescale: s.cfg.Timescale, View: p.tm.View()}
			for _, m := range pcs[i].Mechanisms {
				if m.Name == name {
					ports[i].Config = m.Config
				}
			}
		}
		inst, err := spec.New(s, ports)
		if err == nil {
			err = mech.CheckHooks(inst)
		}
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
	// Per-port hook lists, in the port's hook order.
	for i, order := range orders {
		p := s.ports[i]
		for _, name := range order {
			inst := s.instance(name)
			p.mechs = append(p.mechs, name)
			p.tm.Hook(inst)
			if h, ok := inst.(mech.IngressHook); ok {
				p.ingressH = append(p.ingressH, h)
			}
		}
	}
	return nil
}

func (s *Switch) instance(name string) mech.Instance {
	for _, m := range s.mechs {
		if m.name == name {
			return m.inst
		}
	}
	return nil
}

// sizeJumbo sets up jumbo slots when c.MaxFrame exceeds what one UMEM
// frame holds after its headroom.
func (u *umem) sizeJumbo(c *Config) error {
	mf := c.MaxFrame
	if mf < 0 || mf > MaxJumboFrame {
		return fmt.Errorf("max frame %d B out of range [0, %d]", mf, MaxJumboFrame)
	}
	if uint64(mf) <= u.frameSize-pkt.Headroom {
		return nil
	}
	u.sg = true
	u.slotChunks = (uint64(mf) + pkt.Headroom + u.frameSize - 1) / u.frameSize
	u.slotBytes = u.slotChunks * u.frameSize
	if c.JumboSlots > 0 {
		u.slotsPer = uint64(c.JumboSlots) / uint64(c.Workers)
	} else {
		u.slotsPer = uint64(u.perWorker) / 4 / u.slotChunks
	}
	if u.slotsPer < BatchSize {
		return fmt.Errorf("%d jumbo slots of %d B per worker are too few (need %d): raise frames", u.slotsPer, u.slotBytes, BatchSize)
	}
	if used := u.slotsPer * u.slotChunks; used+8*BatchSize > uint64(u.perWorker) {
		return fmt.Errorf("%d jumbo slots of %d frames per worker leave too few of its %d frames for the rest (need %d): raise frames or lower jumbo slots", u.slotsPer, u.slotChunks, u.perWorker, 8*BatchSize)
	}
	return nil
}
