package bfc

import (
	"fmt"
	"time"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/units"
)

// Queue assignment strategies (config key assign).
const (
	AssignDynamic    = "dynamic"    // BFC: a new flow takes an empty queue (the paper's default)
	AssignStochastic = "stochastic" // flows hashed onto the queues, as SFQ does (the paper's "stochastic")
	AssignSingle     = "single"     // every flow in queue 0: a per-port pause, as PFC (the paper's "single")
)

// What a port faces (config key peer).
const (
	PeerBFC  = "bfc"  // another BFC switch: tags on data both ways, pauses both ways
	PeerHost = "host" // hosts whose gsperf (-mode bfc) names its queue in the gsperf header and honours pauses
	PeerNone = "none" // anything else: no tags, no pauses toward it, pauses from it refused
)

// Defaults of the constants the paper leaves to the implementation. On a switch with a
// timescale K, DefaultBudget is wall-clock time (gswitchd's own traversal
// of this machine: it does not scale), while the bitmap period's clamp
// [MinPeriod, MaxPeriod] is fabric time (how often a port may refresh its
// neighbour, against the link's rate and the HRTT): it is multiplied by K.
const (
	DefaultBudget  = 25 * time.Microsecond // one switch (or host) traversal, for the default HRTT
	DefaultThFloor = 2 * 1514              // Th is never below two full frames
	MinPeriod      = 100 * time.Microsecond
	MaxPeriod      = time.Millisecond
)

// Config is one port's BFC config (under ports[i].mechanisms.bfc).
type Config struct {
	// Assign is the queue assignment of packets leaving the port:
	// dynamic (default), stochastic or single.
	Assign string `yaml:"assign"`
	// Peer is what the port faces: bfc (default on fabric ports), host
	// (default on host ports) or none.
	Peer string `yaml:"peer"`
	// HRTT is the one-hop round trip of the port's link, from a packet
	// leaving the neighbour to the neighbour acting on a pause about it.
	// 0: 2 x the port's delay + 2 x Budget.
	HRTT units.Duration `yaml:"hrtt"`
	// Budget is one traversal of a switch or host, for the default HRTT:
	// this machine's time (wall clock), which a timescale does not scale.
	Budget units.Duration `yaml:"budget" timescale:"wall"`
	// Th is a fixed pause threshold in bytes for the port's queues. 0
	// (default): HRTT x rate / N_active, HRTT the largest of the switch's
	// BFC ports, N_active the queues with data that are not paused. On a
	// port with no rate (unlimited) and no th, queues never pause their
	// upstream: the port is not a bottleneck BFC can size Th for.
	Th units.Size `yaml:"th"`
	// ThFloor is the least threshold (default two full frames, 3028 B).
	ThFloor units.Size `yaml:"th_floor"`
	// Sticky keeps a flow's queue while its packets left less than this
	// long ago (0: 2 x HRTT).
	Sticky units.Duration `yaml:"sticky"`
	// BitmapPeriod is how often the port sends its neighbour the bitmap of
	// queues that must be paused, while any is and a little after
	// (0: 4 x HRTT, clamped to [100us, 1ms]).
	BitmapPeriod units.Duration `yaml:"bitmap_period"`
	// Watchdog resumes the queues a neighbour paused if no bitmap refreshed
	// them this long (0: 3 x BitmapPeriod, at least MinWatchdog).
	Watchdog units.Duration `yaml:"watchdog"`
	// FlowTable is the number of flow-table entries of the port
	// (0: 100 x its queues).
	FlowTable int `yaml:"flow_table"`
	// Uplink marks a port toward a higher tier (leaf to spine). Packets
	// that come in on an uplink and leave through an uplink never pause
	// their upstream (up-down routing: no cyclic buffer dependency).
	// Unset (nil): the port's own uplink key (mech.PortInfo.Uplink).
	Uplink *bool `yaml:"uplink"`
	// PauseFrom, when set, lists the ingress ports whose upstream may be
	// paused for packets queued at this port, replacing the uplink rule.
	PauseFrom []string `yaml:"pause_from"`
}

func defaultConfig() any {
	return &Config{Assign: AssignDynamic, Budget: units.Duration(DefaultBudget), ThFloor: DefaultThFloor}
}

// Validate implements mech.Validator.
func (c *Config) Validate(p mech.PortInfo) error {
	switch c.Assign {
	case AssignDynamic, AssignStochastic, AssignSingle:
	case "":
		c.Assign = AssignDynamic
	default:
		return fmt.Errorf("assign: %q (use dynamic, stochastic or single)", c.Assign)
	}
	switch c.Peer {
	case "":
		c.Peer = PeerHost
		if p.Role == mech.RoleFabric {
			c.Peer = PeerBFC
		}
	case PeerBFC:
		if p.Role != mech.RoleFabric {
			return fmt.Errorf("peer: bfc needs role: fabric (a host port drops pause frames as forged; use peer: host for gsperf hosts)")
		}
	case PeerHost:
		if p.Role == mech.RoleFabric {
			return fmt.Errorf("peer: host on a fabric port (hosts are on role: host ports; use peer: bfc or none)")
		}
	case PeerNone:
	default:
		return fmt.Errorf("peer: %q (use bfc, host or none)", c.Peer)
	}
	if c.Uplink == nil {
		up := p.Uplink
		c.Uplink = &up
	}
	if c.Budget == 0 {
		c.Budget = units.Duration(DefaultBudget)
	}
	for _, d := range []struct {
		key string
		v   units.Duration
		max time.Duration
	}{{"hrtt", c.HRTT, time.Second}, {"budget", c.Budget, time.Second}, {"sticky", c.Sticky, time.Second},
		{"bitmap_period", c.BitmapPeriod, time.Second}, {"watchdog", c.Watchdog, time.Minute}} {
		if time.Duration(d.v) > d.max {
			return fmt.Errorf("%s: %v is longer than %v", d.key, time.Duration(d.v), d.max)
		}
	}
	if c.BitmapPeriod != 0 && time.Duration(c.BitmapPeriod) < 10*time.Microsecond {
		clamp := "[100us, 1ms]"
		if !p.Timescale.One() {
			clamp = fmt.Sprintf("[%v, %v] at timescale %s", p.Timescale.Wall(MinPeriod), p.Timescale.Wall(MaxPeriod), p.Timescale)
		}
		return fmt.Errorf("bitmap_period: %v is below 10us (the default is 4 x hrtt within %s)", time.Duration(c.BitmapPeriod), clamp)
	}
	if c.Watchdog != 0 && c.BitmapPeriod != 0 && c.Watchdog <= c.BitmapPeriod {
		return fmt.Errorf("watchdog: %v is not longer than bitmap_period %v (the neighbour refreshes once per period; default 3 periods)",
			time.Duration(c.Watchdog), time.Duration(c.BitmapPeriod))
	}
	if c.Th > 64<<20 {
		return fmt.Errorf("th: %d B is more than 64MiB", c.Th)
	}
	if c.ThFloor == 0 {
		c.ThFloor = DefaultThFloor
	}
	if c.ThFloor > 64<<20 {
		return fmt.Errorf("th_floor: %d B is more than 64MiB", c.ThFloor)
	}
	if c.FlowTable < 0 || c.FlowTable > 1<<22 {
		return fmt.Errorf("flow_table: %d out of range (0 = 100 x queues, up to 4194304)", c.FlowTable)
	}
	if p.Queues > 64 {
		return fmt.Errorf("the port has %d queues; BFC pauses queues through a 64-bit mask (at most 64)", p.Queues)
	}
	return nil
}

// hrtt is the port's HRTT in ns, given its link's one-way delay.
func (c *Config) hrtt(delayNs int64) int64 {
	if c.HRTT != 0 {
		return int64(c.HRTT)
	}
	return 2*delayNs + 2*int64(c.Budget)
}

// period is the bitmap period for a port of HRTT h on a switch at
// timescale k (the clamp is fabric time).
func (c *Config) period(h int64, k units.Timescale) int64 {
	if c.BitmapPeriod != 0 {
		return int64(c.BitmapPeriod)
	}
	return min(max(4*h, int64(k.Wall(MinPeriod))), int64(k.Wall(MaxPeriod)))
}

// MinWatchdog is the least default watchdog bound: a software switch's
// worker can lose its CPU for milliseconds on a loaded host, and a watchdog
// that fires then resumes queues whose pause is still needed. It is wall
// time (it guards against this machine's lateness): a timescale does not
// scale it.
const MinWatchdog = 200 * time.Millisecond

// watchdog is the watchdog bound for a port with bitmap period per.
func (c *Config) watchdog(per int64) int64 {
	if c.Watchdog != 0 {
		return int64(c.Watchdog)
	}
	return max(3*per, int64(MinWatchdog))
}
