package pfabric

import (
	"fmt"
	"sync/atomic"

	"github.com/gswitch/gswitch/internal/keyhash"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/wire/gsperf"
	"github.com/prometheus/client_golang/prometheus"
)

func init() {
	mech.Register(mech.Spec{
		Name:       "pfabric",
		Summary:    "pFabric's ranks: the remaining flow size from the gsperf header, or least attained service estimated in the switch",
		Config:     func() any { return &Config{Rank: RankGsperf} },
		Schedulers: []string{"pfabric"},
		SetsRank:   true,
		New:        New,
	})
}

// Rank sources.
const (
	RankGsperf = "gsperf"
	RankLAS    = "las"
)

// Config is one port's pfabric config.
type Config struct {
	Rank string `yaml:"rank"` // gsperf or las
}

// Validate implements mech.Validator.
func (c *Config) Validate(mech.PortInfo) error {
	switch c.Rank {
	case RankGsperf, RankLAS:
		return nil
	}
	return fmt.Errorf("rank: %q (use gsperf or las)", c.Rank)
}

const (
	lasRows  = 2
	lasCols  = 4096
	lasDecay = 64 << 20 // halve every counter after this many bytes, so old flows fade
)

// Where a packet's rank came from (the source label of
// gswitch_pfabric_ranked_bytes_total).
const (
	srcGsperf   = iota // the priority of the gsperf header
	srcUnmarked        // no gsperf header: rank 0, the best
	srcLAS             // least attained service
	numSources
)

var sourceNames = [numSources]string{"gsperf", "unmarked", "las"}

// port is the state on one port (egress worker only, but for the
// counters, which any goroutine reads).
type port struct {
	name    string
	ranked  [numSources]atomic.Uint64 // bytes ranked, by source
	las     bool
	sketch  []uint32    // las: bytes seen per flow (rows x cols)
	key     keyhash.Key // las: the sketch's hash key
	lasSeen uint64      // bytes since the last decay
}

// PFabric is the mechanism's instance.
type PFabric struct {
	ports []*port
	mem   []byte
}

// New builds the mechanism for a switch.
func New(sw mech.Switch, ports []mech.Port) (mech.Instance, error) {
	f := &PFabric{ports: make([]*port, len(ports)), mem: sw.Mem()}
	for i, p := range ports {
		if p.Config == nil {
			continue
		}
		c := p.Config.(*Config)
		if err := c.Validate(p.Info()); err != nil {
			return nil, fmt.Errorf("port %s: %w", p.Name, err)
		}
		s := &port{name: p.Name, las: c.Rank == RankLAS}
		if s.las {
			s.sketch, s.key = make([]uint32, lasRows*lasCols), keyhash.New()
		}
		f.ports[i] = s
	}
	return f, nil
}

// Admit sets the packet's rank.
func (f *PFabric) Admit(v *mech.PortView, p *pkt.Packet, now int64) {
	s := f.ports[v.Index()]
	if s.las {
		s.rankLAS(s.key.Flow(f.mem, p), p)
		s.ranked[srcLAS].Add(uint64(p.Len))
		return
	}
	h := gsperf.InUDP(f.mem[p.Addr:p.Addr+uint64(p.Len)], p.Proto, p.L4Off)
	if !h.HasMagic() {
		p.Rank = 0
		s.ranked[srcUnmarked].Add(uint64(p.Len))
		return
	}
	p.Rank = h.Priority()
	s.ranked[srcGsperf].Add(uint64(p.Len))
}

// GsperfRank reads the priority of a gsperf segment (package wire/gsperf):
// magic "GS" at the start of the UDP payload, the priority 40 bytes in.
// Other packets, and segments cut before the priority, rank 0.
func GsperfRank(mem []byte, p *pkt.Packet) uint32 {
	h := gsperf.InUDP(mem[p.Addr:p.Addr+uint64(p.Len)], p.Proto, p.L4Off)
	if !h.HasMagic() {
		return 0
	}
	return h.Priority()
}

// rankLAS ranks a packet by the bytes its flow has sent before it (a
// count-min estimate), so new and short flows go first. flow is the
// flow's keyed hash (keyhash.Key.Flow under the port's key), so no host
// can compute flows that share another host's flow's cells and push its
// rank down; rows are its double hashes.
func (s *port) rankLAS(flow uint64, p *pkt.Packet) {
	est := ^uint32(0)
	for r := uint64(0); r < lasRows; r++ {
		c := &s.sketch[r*lasCols+(uint64(uint32(flow))+r*(flow>>32|1))%lasCols]
		est = min(est, *c)
		*c = uint32(min(uint64(*c)+uint64(p.Len), 1<<32-1))
	}
	p.Rank = est
	if s.lasSeen += uint64(p.Len); s.lasSeen >= lasDecay {
		s.lasSeen = 0
		for i := range s.sketch {
			s.sketch[i] >>= 1
		}
	}
}

var dRanked = prometheus.NewDesc("gswitch_pfabric_ranked_bytes_total",
	"Bytes the port's pfabric stage ranked, by where the rank came from: gsperf (the priority a host wrote in the gsperf header), unmarked (no gsperf header: rank 0, the best), las (least attained service, estimated here).",
	[]string{"port", "source"}, nil)

// Describe implements prometheus.Collector.
func (f *PFabric) Describe(ch chan<- *prometheus.Desc) { ch <- dRanked }

// Collect implements prometheus.Collector (any goroutine).
func (f *PFabric) Collect(ch chan<- prometheus.Metric) {
	for _, s := range f.ports {
		if s == nil {
			continue
		}
		for src := range s.ranked {
			if src == srcLAS && !s.las || src != srcLAS && s.las {
				continue
			}
			ch <- prometheus.MustNewConstMetric(dRanked, prometheus.CounterValue, float64(s.ranked[src].Load()), s.name, sourceNames[src])
		}
	}
}

// Ranked is the bytes port i ranked from gsperf headers, without one
// (rank 0), and by least attained service (any goroutine).
func (f *PFabric) Ranked(i int) (gsperf, unmarked, las uint64) {
	if i < 0 || i >= len(f.ports) || f.ports[i] == nil {
		return 0, 0, 0
	}
	s := f.ports[i]
	return s.ranked[srcGsperf].Load(), s.ranked[srcUnmarked].Load(), s.ranked[srcLAS].Load()
}

var (
	_ mech.AdmitHook       = (*PFabric)(nil)
	_ prometheus.Collector = (*PFabric)(nil)
)
