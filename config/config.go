// Package config reads and validates gswitchd's YAML configuration.
//
// Every error names the field it is about, as a path like ports[1].rate,
// and says what would be accepted. Load checks the file on its own; Check
// adds the checks that need the host (do the interfaces exist).
package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is the whole file.
type Config struct {
	// Ports are the switch ports, in the order of their indices.
	Ports []Port `yaml:"ports"`
	// Workers is the number of forwarding goroutines (0 = half the CPUs, at least 1).
	Workers int `yaml:"workers"`
	// Frames is the number of UMEM frames shared by all ports.
	Frames int `yaml:"frames"`
	// FrameSize is 2048 (MTU up to 1500+) or 4096 (jumbo frames up to ~3.5 KB on veth).
	FrameSize int `yaml:"frame_size"`
	// XDPMode is auto (native, falling back to generic), native or generic.
	XDPMode string `yaml:"xdp_mode"`
	// BindMode is auto (zero-copy where the driver can), copy or zerocopy.
	BindMode string `yaml:"bind_mode"`
	// BusyPoll keeps workers polling when idle instead of sleeping in poll().
	BusyPoll bool `yaml:"busy_poll"`
	// Spin is how long an idle worker polls before it sleeps, e.g. 50us.
	Spin string `yaml:"spin"`
	// Buffer is the packet buffer all egress queues share, e.g. 16MB (default: half the UMEM).
	Buffer string `yaml:"buffer"`
	// Alpha is the dynamic threshold factor: a queue may hold Alpha x the free buffer (default 1; 0 turns it off).
	Alpha *float64 `yaml:"alpha"`
	// MACTable configures L2 learning.
	MACTable MACTable `yaml:"mac_table"`
	// Metrics is the Prometheus listen address; "off" disables it.
	Metrics string `yaml:"metrics"`

	SpinDur     time.Duration `yaml:"-"`
	BufferBytes uint64        `yaml:"-"`
	AlphaValue  float64       `yaml:"-"`
}

// MACTable configures the learning table.
type MACTable struct {
	Size     int           `yaml:"size"`
	Aging    string        `yaml:"aging"`
	AgingDur time.Duration `yaml:"-"`
}

// Port is one switch port.
type Port struct {
	// Name labels the port in metrics and logs (default: the interface name).
	Name string `yaml:"name"`
	// Interface is the Linux network interface.
	Interface string `yaml:"interface"`
	// Rate is the egress line rate, e.g. 100Mbit or 10Gbit; empty = unlimited.
	Rate string `yaml:"rate"`
	// Burst is the shaper's bucket depth, e.g. 16KB; empty = max(2 frames, 1 ms of rate).
	Burst string `yaml:"burst"`
	// Buffer is the egress buffer in bytes, e.g. 1MB.
	Buffer string `yaml:"buffer"`
	// Scheduler is the egress scheduler: fifo, prio, drr, sfq, rsp or pfabric.
	Scheduler string `yaml:"scheduler"`
	// Queues is the number of egress queues (default 32; fifo and pfabric use one).
	Queues int `yaml:"queues"`
	// QueueBuffer is each egress queue's static limit, e.g. 256KB (default: the port's buffer).
	QueueBuffer string `yaml:"queue_buffer"`
	// Quantum is the DRR/SFQ quantum in bytes (default 1514).
	Quantum int `yaml:"quantum"`
	// Classify picks prio's and drr's queue: dscp (default) or pcp.
	Classify string `yaml:"classify"`
	// DSCPMap overrides the queue of individual DSCP values (default: queue 7 - DSCP>>3).
	DSCPMap map[int]int `yaml:"dscp_map"`
	// PCPMap gives the queue of each 802.1p priority when classify is pcp (default: queue 7 - PCP).
	PCPMap map[int]int `yaml:"pcp_map"`
	// RxQueues is the number of rx queues to bind (0 or absent = all of the interface's).
	RxQueues int `yaml:"rx_queues"`
	// BytesPerRound is AFQ's BpR, e.g. 1514 (default one full frame).
	BytesPerRound string `yaml:"bytes_per_round"`
	// Sketch is AFQ's count-min sketch size (default 4 x 16384, the paper's prototype).
	Sketch struct {
		Rows int `yaml:"rows"`
		Cols int `yaml:"cols"`
	} `yaml:"sketch"`
	// ECNRounds makes AFQ mark ECN-capable packets this many rounds ahead CE (0 = off).
	ECNRounds int    `yaml:"ecn_rounds"`
	BPRBytes  uint64 `yaml:"-"`
	// Rank is where pfabric takes a packet's priority from: gsperf (the gsperf
	// header's priority field; the default), las (bytes the flow has sent so
	// far, estimated in the switch) or packet (set by an earlier stage).
	Rank string `yaml:"rank"`
	// RTT is the port's base round-trip time, for pfabric's default buffer of two BDPs (default 200us).
	RTT    string        `yaml:"rtt"`
	RTTDur time.Duration `yaml:"-"`

	RateBits         uint64 `yaml:"-"`
	BurstBytes       int64  `yaml:"-"`
	BufferBytes      uint64 `yaml:"-"`
	QueueBufferBytes uint64 `yaml:"-"`
}

// Defaults.
const (
	DefaultFrames    = 32768
	DefaultFrameSize = 2048
	DefaultMetrics   = "127.0.0.1:9100"
	DefaultBuffer    = 1 << 20
)

// Load reads and validates a config file.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse decodes and validates YAML.
func Parse(b []byte) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	if len(root.Content) == 0 {
		return nil, errors.New("empty config: it needs at least a ports: list")
	}
	if err := checkKeys(root.Content[0], reflect.TypeOf(Config{}), ""); err != nil {
		return nil, err
	}
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// checkKeys reports the first mapping key that the struct type t does not have.
func checkKeys(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		fields := map[string]reflect.Type{}
		var names []string
		for i := 0; i < t.NumField(); i++ {
			tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
			if tag != "" && tag != "-" {
				fields[tag] = t.Field(i).Type
				names = append(names, tag)
			}
		}
		sort.Strings(names)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			ft, ok := fields[k]
			if !ok {
				where := "at the top level"
				if path != "" {
					where = "in " + path
				}
				return fmt.Errorf("line %d: unknown key %q %s (known keys: %s)", n.Content[i].Line, k, where, strings.Join(names, ", "))
			}
			if err := checkKeys(n.Content[i+1], ft, join(path, k)); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, e := range n.Content {
			if err := checkKeys(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

func (c *Config) validate() error {
	if len(c.Ports) == 0 {
		return errors.New("ports: no ports configured (add at least one entry with an interface:)")
	}
	if len(c.Ports) > 4096 {
		return fmt.Errorf("ports: %d ports, at most 4096", len(c.Ports))
	}
	if c.Workers < 0 || c.Workers > 256 {
		return fmt.Errorf("workers: %d out of range (0 = half the CPUs, up to 256)", c.Workers)
	}
	if c.FrameSize == 0 {
		c.FrameSize = DefaultFrameSize
	}
	if c.FrameSize != 2048 && c.FrameSize != 4096 {
		return fmt.Errorf("frame_size: %d (use 2048, or 4096 for jumbo frames)", c.FrameSize)
	}
	if c.Frames == 0 {
		c.Frames = DefaultFrames
	}
	if c.Frames < 1024 || c.Frames > 1<<22 {
		return fmt.Errorf("frames: %d out of range [1024, %d]", c.Frames, 1<<22)
	}
	switch c.XDPMode {
	case "":
		c.XDPMode = "auto"
	case "auto", "native", "generic":
	default:
		return fmt.Errorf("xdp_mode: %q (use auto, native or generic)", c.XDPMode)
	}
	switch c.BindMode {
	case "":
		c.BindMode = "auto"
	case "auto", "copy", "zerocopy":
	default:
		return fmt.Errorf("bind_mode: %q (use auto, copy or zerocopy)", c.BindMode)
	}
	if c.Metrics == "" {
		c.Metrics = DefaultMetrics
	}
	var err error
	if c.SpinDur, err = duration("spin", c.Spin, 50*time.Microsecond); err != nil {
		return err
	}
	if c.BufferBytes, err = ParseSize(c.Buffer); err != nil {
		return fmt.Errorf("buffer: %w", err)
	}
	c.AlphaValue = 1
	if c.Alpha != nil {
		c.AlphaValue = *c.Alpha
	}
	if c.AlphaValue < 0 || c.AlphaValue > 64 {
		return fmt.Errorf("alpha: %v out of range [0, 64] (0 turns the dynamic threshold off)", c.AlphaValue)
	}
	if c.MACTable.Size == 0 {
		c.MACTable.Size = 4096
	}
	if c.MACTable.Size < 16 || c.MACTable.Size > 1<<24 {
		return fmt.Errorf("mac_table.size: %d out of range [16, %d]", c.MACTable.Size, 1<<24)
	}
	if c.MACTable.AgingDur, err = duration("mac_table.aging", c.MACTable.Aging, 300*time.Second); err != nil {
		return err
	}
	if c.MACTable.AgingDur < time.Second {
		return fmt.Errorf("mac_table.aging: %s is shorter than 1s", c.MACTable.AgingDur)
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
		if p.RateBits, err = ParseRate(p.Rate); err != nil {
			return fmt.Errorf("%s.rate: %w", f, err)
		}
		if p.RateBits != 0 && (p.RateBits < 8000 || p.RateBits > 1e12) {
			return fmt.Errorf("%s.rate: %s out of range (8kbit to 1Tbit)", f, p.Rate)
		}
		var b uint64
		if b, err = ParseSize(p.Burst); err != nil {
			return fmt.Errorf("%s.burst: %w", f, err)
		}
		p.BurstBytes = int64(b)
		if p.BurstBytes != 0 && p.BurstBytes < 1538 {
			return fmt.Errorf("%s.burst: %s is less than one full-size frame on the wire (1538 B)", f, p.Burst)
		}
		if p.BufferBytes, err = ParseSize(p.Buffer); err != nil {
			return fmt.Errorf("%s.buffer: %w", f, err)
		}
		if p.BufferBytes == 0 {
			p.BufferBytes = DefaultBuffer
		}
		if p.BufferBytes < 1514 {
			return fmt.Errorf("%s.buffer: %s cannot hold one full-size frame (1514 B)", f, p.Buffer)
		}
		if p.Scheduler == "" {
			p.Scheduler = "fifo"
		}
		if !knownScheduler(p.Scheduler) {
			return fmt.Errorf("%s.scheduler: %q (use one of %s)", f, p.Scheduler, strings.Join(Schedulers, ", "))
		}
		if p.Queues < 0 || p.Queues > 64 {
			return fmt.Errorf("%s.queues: %d out of range (0 = 32, up to 64)", f, p.Queues)
		}
		if p.QueueBufferBytes, err = ParseSize(p.QueueBuffer); err != nil {
			return fmt.Errorf("%s.queue_buffer: %w", f, err)
		}
		if p.Quantum != 0 && (p.Quantum < 64 || p.Quantum > 1<<20) {
			return fmt.Errorf("%s.quantum: %d out of range [64, 1048576] bytes", f, p.Quantum)
		}
		switch p.Classify {
		case "", "dscp", "pcp":
		default:
			return fmt.Errorf("%s.classify: %q (use dscp or pcp)", f, p.Classify)
		}
		nq := p.Queues
		if nq == 0 {
			nq = 32
		}
		for k, v := range p.DSCPMap {
			if k < 0 || k > 63 || v < 0 || v >= nq {
				return fmt.Errorf("%s.dscp_map: %d: %d (DSCP 0..63 to a queue 0..%d)", f, k, v, nq-1)
			}
		}
		for k, v := range p.PCPMap {
			if k < 0 || k > 7 || v < 0 || v >= nq {
				return fmt.Errorf("%s.pcp_map: %d: %d (PCP 0..7 to a queue 0..%d)", f, k, v, nq-1)
			}
		}
		if p.BPRBytes, err = ParseSize(p.BytesPerRound); err != nil || p.BPRBytes > 1<<20 || p.BPRBytes != 0 && p.BPRBytes < 64 {
			return fmt.Errorf("%s.bytes_per_round: %q (a size from 64 B to 1 MiB; default one full frame)", f, p.BytesPerRound)
		}
		if p.Sketch.Rows < 0 || p.Sketch.Rows > 8 || p.Sketch.Cols < 0 || p.Sketch.Cols > 1<<22 || p.Sketch.Cols&(p.Sketch.Cols-1) != 0 {
			return fmt.Errorf("%s.sketch: %d x %d (rows up to 8, columns a power of two up to 4194304)", f, p.Sketch.Rows, p.Sketch.Cols)
		}
		if p.RTTDur, err = duration(f+".rtt", p.RTT, 200*time.Microsecond); err != nil {
			return err
		}
		switch p.Rank {
		case "":
			p.Rank = "gsperf"
		case "gsperf", "las", "packet":
		default:
			return fmt.Errorf("%s.rank: %q (use gsperf, las or packet)", f, p.Rank)
		}
		if p.Scheduler == "pfabric" && p.Buffer == "" && p.RateBits > 0 {
			// Two bandwidth-delay products, at least 16 full frames.
			p.BufferBytes = max(uint64(2*float64(p.RateBits)/8*p.RTTDur.Seconds()), 16*1514)
		}
		if p.ECNRounds < 0 || p.ECNRounds > 64 {
			return fmt.Errorf("%s.ecn_rounds: %d out of range [0, 64]", f, p.ECNRounds)
		}
		if p.RxQueues < 0 || p.RxQueues > 64 {
			return fmt.Errorf("%s.rx_queues: %d out of range (0 = all rx queues, up to 64)", f, p.RxQueues)
		}
	}
	return nil
}

// Schedulers are the scheduler names the config accepts.
var Schedulers = []string{"fifo", "prio", "drr", "sfq", "rsp", "afq", "pfabric"}

func knownScheduler(s string) bool {
	for _, k := range Schedulers {
		if k == s {
			return true
		}
	}
	return false
}

// Check runs the checks that need the host: lookup returns an error when an
// interface does not exist.
func (c *Config) Check(lookup func(name string) error) error {
	for i, p := range c.Ports {
		if err := lookup(p.Interface); err != nil {
			return fmt.Errorf("ports[%d].interface: %s: %v (create it first, or fix the name; `ip link` lists interfaces)", i, p.Interface, err)
		}
	}
	return nil
}

func duration(field, s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s: %q is not a duration (write e.g. 50us, 300s, 5m)", field, s)
	}
	return d, nil
}

// ParseRate reads a bit rate such as 100Mbit, 1.5Gbit, 10gbps or 500kbit.
// A bare number is bit/s. Empty means unlimited (0).
func ParseRate(s string) (uint64, error) {
	if s == "" || s == "0" || s == "unlimited" {
		return 0, nil
	}
	num, unit := splitUnit(s)
	v, err := strconv.ParseFloat(num, 64)
	mult := map[string]float64{"": 1, "bit": 1, "bps": 1, "kbit": 1e3, "kbps": 1e3, "mbit": 1e6, "mbps": 1e6, "gbit": 1e9, "gbps": 1e9, "tbit": 1e12, "tbps": 1e12}
	m, ok := mult[strings.ToLower(unit)]
	if err != nil || !ok || v <= 0 {
		return 0, fmt.Errorf("%q is not a rate (write e.g. 100Mbit, 1.5Gbit or 10Gbit; units are bits per second)", s)
	}
	return uint64(v * m), nil
}

// ParseSize reads a size in bytes such as 1500, 64KB, 1MiB or 2MB (KB = 1000, KiB = 1024).
func ParseSize(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	num, unit := splitUnit(s)
	v, err := strconv.ParseFloat(num, 64)
	mult := map[string]float64{"": 1, "b": 1, "kb": 1e3, "kib": 1 << 10, "mb": 1e6, "mib": 1 << 20, "gb": 1e9, "gib": 1 << 30}
	m, ok := mult[strings.ToLower(unit)]
	if err != nil || !ok || v < 0 {
		return 0, fmt.Errorf("%q is not a size (write e.g. 1500, 64KB, 1MiB)", s)
	}
	return uint64(v * m), nil
}

func splitUnit(s string) (num, unit string) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i:])
}
