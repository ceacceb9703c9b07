package config

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/sched"
	"github.com/gswitch/gswitch/units"
)

// validate checks the decoded config and fills in what depends on other
// keys. Every check of the config runs here, once.
func (c *Config) validate() error {
	c.zeroMeansDefault()
	if err := c.Control.validate(); err != nil {
		return err
	}
	if len(c.Ports) == 0 {
		return errors.New("ports: no ports configured (add at least one entry with an interface:)")
	}
	if len(c.Ports) > 4096 {
		return fmt.Errorf("ports: %d ports, at most 4096", len(c.Ports))
	}
	if c.Workers < 0 || c.Workers > 256 {
		return fmt.Errorf("workers: %d out of range (0 = half the CPUs, up to 256)", c.Workers)
	}
	if len(c.CPUs) > 256 {
		return fmt.Errorf("cpus: %d entries, at most 256 (one per worker)", len(c.CPUs))
	}
	for i, cpu := range c.CPUs {
		if cpu < 0 || cpu >= 8192 {
			return fmt.Errorf("cpus[%d]: %d is not a CPU number (0 up to the machine's last CPU)", i, cpu)
		}
	}
	if c.FrameSize != 2048 && c.FrameSize != 4096 {
		return fmt.Errorf("frame_size: %d (use 2048 or 4096; longer frames travel as multi-buffer chains)", c.FrameSize)
	}
	if c.Frames < 1024 || c.Frames > 1<<22 {
		return fmt.Errorf("frames: %d out of range [1024, %d]", c.Frames, 1<<22)
	}
	if umem := uint64(c.Frames) * uint64(c.FrameSize); umem > MaxUMEM {
		return fmt.Errorf("frames: %d frames of %d B make a %d MiB UMEM, more than %d MiB (lower frames or frame_size)", c.Frames, c.FrameSize, umem>>20, MaxUMEM>>20)
	}
	if c.SwitchID < 1 || c.SwitchID > 65535 {
		return fmt.Errorf("switch_id: %d out of range [1, 65535]", c.SwitchID)
	}
	switch c.XDPMode {
	case "auto", "native", "generic":
	default:
		return fmt.Errorf("xdp_mode: %q (use auto, native or generic)", c.XDPMode)
	}
	switch c.BindMode {
	case "auto", "copy", "zerocopy":
	default:
		return fmt.Errorf("bind_mode: %q (use auto, copy or zerocopy)", c.BindMode)
	}
	if c.Nice < -20 || c.Nice > 19 {
		return fmt.Errorf("nice: %d out of range (-20, the most favoured, to 19; 0 = the default)", c.Nice)
	}
	if c.Realtime < 0 || c.Realtime > 99 {
		return fmt.Errorf("realtime: %d out of range (a SCHED_FIFO priority, 1 to 99; 0 = ordinary threads)", c.Realtime)
	}
	if c.Realtime > 0 && (c.BusyPoll || c.Nice != 0 || c.Slice != 0) {
		return fmt.Errorf("realtime: %d with busy_poll, nice or slice: a realtime worker that never sleeps would hold its CPU, and nice and slice are for ordinary threads (remove them, or realtime:)", c.Realtime)
	}
	if c.Slice != 0 && (c.Slice.D() < 100*time.Microsecond || c.Slice.D() > 100*time.Millisecond) {
		return fmt.Errorf("slice: %v out of range (the kernel takes 100us to 100ms; 0 = its default)", c.Slice)
	}
	if c.CatchUp.D() > time.Second {
		return fmt.Errorf("catchup: %v out of range (0, none, to 1s)", c.CatchUp)
	}
	if c.Alpha < 0 || c.Alpha > 64 {
		return fmt.Errorf("alpha: %v out of range [0, 64] (0 turns the dynamic threshold off)", c.Alpha)
	}
	if c.MACTable.Size < 16 || c.MACTable.Size > 1<<24 {
		return fmt.Errorf("mac_table.size: %d out of range [16, %d]", c.MACTable.Size, 1<<24)
	}
	if c.MACTable.Aging.D() < time.Second {
		return fmt.Errorf("mac_table.aging: %s is shorter than 1s", c.MACTable.Aging)
	}
	if c.MACTable.PortLimit < -1 || c.MACTable.PortLimit > c.MACTable.Size {
		return fmt.Errorf("mac_table.port_limit: %d out of range (0 = half the table, -1 = no limit, up to mac_table.size %d)", c.MACTable.PortLimit, c.MACTable.Size)
	}
	ifaces := map[string]int{}
	names := map[string]int{}
	for i := range c.Ports {
		p := &c.Ports[i]
		f := fmt.Sprintf("ports[%d]", i)
		if p.Interface == "" {
			return fmt.Errorf("%s.interface: missing (name the Linux interface, e.g. interface: veth0)", f)
		}
		if len(p.Interface) >= 16 || strings.ContainsAny(p.Interface, "/ \t") {
			return fmt.Errorf("%s.interface: %q is not a valid interface name", f, p.Interface)
		}
		if j, dup := ifaces[p.Interface]; dup {
			return fmt.Errorf("%s.interface: %s is already ports[%d] (each interface can be one port only)", f, p.Interface, j)
		}
		ifaces[p.Interface] = i
		if p.Name == "" {
			p.Name = p.Interface
		}
		if j, dup := names[p.Name]; dup {
			return fmt.Errorf("%s.name: %q is already the name of ports[%d] (port names must be unique)", f, p.Name, j)
		}
		names[p.Name] = i
		if err := p.validate(f, c.Timescale); err != nil {
			return err
		}
	}
	return c.validateL3()
}

// validate checks port p (named f in errors) of a switch at timescale k
// and fills in its defaults that depend on other keys.
func (p *Port) validate(f string, k units.Timescale) error {
	if p.Rate != 0 && (p.Rate < 8000 || p.Rate > 1e12) {
		return rateBound(k, f, "rate", p.Rate, fmt.Sprintf("%s out of range (8kbit to 1Tbit)", p.Rate), "less than the 8kbit a port's shaper takes")
	}
	if p.Burst > MaxBurst {
		return fmt.Errorf("%s.burst: %s is more than %d B (the shaper counts burst x 1e9 in 64 bits)", f, p.Burst, uint64(MaxBurst))
	}
	if p.Burst != 0 && p.Burst < 1538 {
		return fmt.Errorf("%s.burst: %s is less than one full-size frame on the wire (1538 B)", f, p.Burst)
	}
	orDefault(&p.Scheduler, sched.DefaultScheduler)
	spec, ok := sched.Lookup(p.Scheduler)
	if !ok {
		return fmt.Errorf("%s.scheduler: %q (use one of %s)", f, p.Scheduler, strings.Join(sched.Names(), ", "))
	}
	if p.Buffer == 0 {
		p.Buffer = DefaultBuffer
		if spec.DefaultBuffer != nil && p.Rate > 0 {
			p.Buffer = units.Size(spec.DefaultBuffer(uint64(p.Rate), p.RTT.D()))
		}
	}
	if p.Buffer < 1514 {
		return fmt.Errorf("%s.buffer: %s cannot hold one full-size frame (1514 B)", f, p.Buffer)
	}
	if p.Queues < 0 || p.Queues > 64 {
		return fmt.Errorf("%s.queues: %d out of range (0 = %d, up to 64)", f, p.Queues, sched.DefaultQueues)
	}
	orDefault(&p.Queues, sched.DefaultQueues)
	if spec.OneQueue {
		p.Queues = 1
	}
	if p.Quantum != 0 && (p.Quantum < 64 || p.Quantum > 1<<20) {
		return fmt.Errorf("%s.quantum: %d out of range [64, 1048576] bytes", f, p.Quantum)
	}
	orDefault(&p.Quantum, spec.Quantum)
	for k, v := range p.DSCPMap {
		if k < 0 || k > 63 || v < 0 || v >= p.Queues {
			return fmt.Errorf("%s.dscp_map: %d: %d (DSCP 0..63 to a queue 0..%d)", f, k, v, p.Queues-1)
		}
	}
	for k, v := range p.PCPMap {
		if k < 0 || k > 7 || v < 0 || v >= p.Queues {
			return fmt.Errorf("%s.pcp_map: %d: %d (PCP 0..7 to a queue 0..%d)", f, k, v, p.Queues-1)
		}
	}
	if p.Delay.D() > time.Second {
		return durationBound(k, f, "delay", p.Delay, fmt.Sprintf("%s is longer than 1s", p.Delay), "more than the 1s a delay line holds")
	}
	if p.RxDelay.D() > time.Second {
		return durationBound(k, f, "rx_delay", p.RxDelay, fmt.Sprintf("%s is longer than 1s", p.RxDelay), "more than the 1s a delay line holds")
	}
	if p.RxQueues < 0 || p.RxQueues > 64 {
		return fmt.Errorf("%s.rx_queues: %d out of range (0 = all rx queues, up to 64)", f, p.RxQueues)
	}
	if err := p.validateSourceGuard(f); err != nil {
		return err
	}
	return p.validateMechanisms(f, k)
}

// validateMechanisms runs each mechanism's own checks with what it may
// know of the port, then the checks of the mechanisms together and with
// the port's scheduler, and sets the port's classification to the
// queue a mechanism chooses where one does. On a scaled switch (k) a
// mechanism's error also gives the file's value of the key it names.
func (p *Port) validateMechanisms(f string, k units.Timescale) error {
	info := mech.PortInfo{Name: p.Name, Role: p.Role, RateBits: uint64(p.Rate), Scheduler: p.Scheduler, Queues: p.Queues,
		BufferBytes: uint64(p.Buffer), DelayNs: int64(p.Delay), RTTNs: int64(p.RTT), Uplink: p.Uplink, Timescale: k}
	for _, m := range p.Mechanisms {
		if v, ok := m.Config.(mech.Validator); ok {
			if err := v.Validate(info); err != nil {
				return fmt.Errorf("%s.mechanisms.%s.%w", f, m.Name, mechanismError(k, m.Config, err))
			}
		}
	}
	names := p.Mechanisms.Names()
	if mech.SetsQueue(names) {
		if p.Classify != "" && p.Classify != sched.ByQueue {
			return fmt.Errorf("%s.classify: %s assigns the queues on this port (classify: queue), not %s", f, strings.Join(names, ", "), p.Classify)
		}
		p.Classify = sched.ByQueue
	}
	orDefault(&p.Classify, sched.ByDSCP)
	if err := mech.Check(names, p.Scheduler); err != nil {
		if len(names) == 0 {
			return fmt.Errorf("%s.scheduler: %w", f, err)
		}
		return fmt.Errorf("%s.mechanisms: %w", f, err)
	}
	return nil
}

// validateSourceGuard fills in the port's source guard and checks it
// against the port's role and kind. A routed (L3) host port defaults to
// subnet, which a correctly addressed host never trips and which costs no
// state; an L2 host port defaults to off, since it knows no subnet and a
// binding table learns from the hosts it guards; a fabric port carries
// every host's addresses and guards nothing.
func (p *Port) validateSourceGuard(f string) error {
	l3 := len(p.Addrs) > 0
	if p.SourceGuard == "" {
		p.SourceGuard = GuardOff
		if l3 && p.Role == mech.RoleHost {
			p.SourceGuard = GuardSubnet
		}
		return nil
	}
	switch {
	case p.Role == mech.RoleFabric && p.SourceGuard != GuardOff:
		return fmt.Errorf("%s.source_guard: %s on a fabric port, which carries every host's addresses (set off, or guard the hosts' own ports)", f, p.SourceGuard)
	case p.SourceGuard == GuardSubnet && !l3:
		return fmt.Errorf("%s.source_guard: subnet on an L2 port, which has no subnet of its own (give the port an addr:, or use binding or off)", f)
	}
	return nil
}
