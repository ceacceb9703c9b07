package afq

import (
	"fmt"
	"sync/atomic"

	"github.com/gswitch/gswitch/internal/keyhash"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/sched"
	"github.com/gswitch/gswitch/units"
	"github.com/prometheus/client_golang/prometheus"
)

func init() {
	mech.Register(mech.Spec{
		Name:       "afq",
		Summary:    "Approximate Fair Queueing: per-flow bid numbers in a count-min sketch, rounds on the rsp calendar",
		Config:     func() any { return &Config{BytesPerRound: 1514, Sketch: Sketch{Rows: 4, Cols: 16384}} },
		Schedulers: []string{"rsp"},
		SetsRank:   true,
		New:        New,
	})
}

// Config is one port's AFQ config.
type Config struct {
	BytesPerRound units.Size `yaml:"bytes_per_round"`
	Sketch        Sketch     `yaml:"sketch"`
	ECNRounds     int        `yaml:"ecn_rounds"`
}

// Sketch is the count-min sketch's shape.
type Sketch struct {
	Rows int `yaml:"rows"`
	Cols int `yaml:"cols"`
}

// Validate implements mech.Validator.
func (c *Config) Validate(p mech.PortInfo) error {
	if c.BytesPerRound < 64 || c.BytesPerRound > 1<<20 {
		return fmt.Errorf("bytes_per_round: %d out of range (64 B to 1 MiB)", c.BytesPerRound)
	}
	if c.Sketch.Rows < 1 || c.Sketch.Rows > 8 || c.Sketch.Cols < 1 || c.Sketch.Cols > 1<<22 || c.Sketch.Cols&(c.Sketch.Cols-1) != 0 {
		return fmt.Errorf("sketch: %d x %d (rows 1 to 8, columns a power of two up to 4194304)", c.Sketch.Rows, c.Sketch.Cols)
	}
	if c.ECNRounds < 0 || c.ECNRounds > 64 {
		return fmt.Errorf("ecn_rounds: %d out of range [0, 64]", c.ECNRounds)
	}
	return nil
}

// port is AFQ's state on one port. Owned by the port's egress worker,
// except marked (any goroutine reads it).
type port struct {
	name   string
	rsp    sched.Rounder // the port's scheduler (sched.RSP)
	n      uint64        // queues: rounds of the calendar
	bpr    uint64
	rows   int
	cols   uint64
	sketch []uint64
	key    keyhash.Key // the sketch's hash key
	ecn    uint64
	bid    uint64 // the bid of the packet last admitted, for Enqueued
	flow   uint64 // the keyed flow hash of that packet, for Enqueued
	marked atomic.Uint64
}

// AFQ is the mechanism's instance: one state per port where it is enabled.
type AFQ struct {
	ports []*port // nil where not enabled
	mem   []byte
}

// New builds AFQ for a switch.
func New(sw mech.Switch, ports []mech.Port) (mech.Instance, error) {
	a := &AFQ{ports: make([]*port, len(ports)), mem: sw.Mem()}
	for i, p := range ports {
		if p.Config == nil {
			continue
		}
		c := p.Config.(*Config)
		if err := c.Validate(p.Info()); err != nil {
			return nil, fmt.Errorf("port %s: %w", p.Name, err)
		}
		r, ok := sw.Scheduler(i).(sched.Rounder)
		if !ok {
			return nil, fmt.Errorf("port %s: afq needs the rsp scheduler, not %s", p.Name, p.Scheduler)
		}
		a.ports[i] = &port{name: p.Name, rsp: r, n: uint64(sw.Scheduler(i).NumQueues()), bpr: uint64(c.BytesPerRound),
			rows: c.Sketch.Rows, cols: uint64(c.Sketch.Cols), sketch: make([]uint64, c.Sketch.Rows*c.Sketch.Cols), ecn: uint64(c.ECNRounds),
			key: keyhash.New()}
	}
	return a, nil
}

// cell is flow f's counter in row r. f is the flow's keyed hash
// (keyhash.Key.Flow under the port's key): rows are its double hashes
// (low half + r x high half), so no host can compute flows that share
// another host's flow's cells and raise its bids.
func (s *port) cell(r int, f uint64) *uint64 {
	h := uint64(uint32(f)) + uint64(r)*(f>>32|1)
	return &s.sketch[uint64(r)*s.cols+h&(s.cols-1)]
}

// Admit computes the packet's bid and round (egress worker).
func (a *AFQ) Admit(v *mech.PortView, p *pkt.Packet, now int64) {
	s := a.ports[v.Index()]
	cur := s.rsp.Round()
	prev := ^uint64(0)
	f := s.key.Flow(a.mem, p)
	for r := 0; r < s.rows; r++ {
		prev = min(prev, *s.cell(r, f))
	}
	bid := max(prev, cur*s.bpr) + uint64(p.Len)
	round := bid / s.bpr
	if round-cur >= s.n {
		p.DropWith(pkt.ReasonRoundOverflow)
		return
	}
	p.Rank = uint32(round) // the scheduler compares the low 32 bits with its 64-bit round
	s.bid, s.flow = bid, f
	if s.ecn > 0 && round-cur >= s.ecn && p.L3Off != 0 {
		if pkt.MarkCE(a.mem[p.Addr:p.Addr+uint64(p.Len)], p) {
			s.marked.Add(1)
		}
	}
}

// Enqueued keeps the admitted packet's bid in the sketch (a packet
// refused after Admit leaves its flow's bid as it was: AFQ has no
// Dropped hook).
func (a *AFQ) Enqueued(v *mech.PortView, p *pkt.Packet, now int64) {
	s := a.ports[v.Index()]
	for r := 0; r < s.rows; r++ {
		if c := s.cell(r, s.flow); *c < s.bid {
			*c = s.bid
		}
	}
}

// Marked is the number of packets port i's AFQ marked CE (any goroutine).
func (a *AFQ) Marked(i int) uint64 {
	if a.ports[i] == nil {
		return 0
	}
	return a.ports[i].marked.Load()
}

var dMarked = prometheus.NewDesc("gswitch_afq_ecn_marked_total", "Packets the port's AFQ stage marked CE.", []string{"port"}, nil)

// Describe implements prometheus.Collector.
func (a *AFQ) Describe(ch chan<- *prometheus.Desc) { ch <- dMarked }

// Collect implements prometheus.Collector.
func (a *AFQ) Collect(ch chan<- prometheus.Metric) {
	for _, s := range a.ports {
		if s != nil {
			ch <- prometheus.MustNewConstMetric(dMarked, prometheus.CounterValue, float64(s.marked.Load()), s.name)
		}
	}
}

var (
	_ mech.AdmitHook    = (*AFQ)(nil)
	_ mech.EnqueuedHook = (*AFQ)(nil)
)
