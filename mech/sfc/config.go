package sfc

import (
	"fmt"
	"math"
	"net/netip"
	"time"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/units"
)

// Mode selects where SFC triggers a BTS on a port (the paper's variants,
// section 2.3): off, egress, ingress, ingress_cache.
type Mode uint8

// Modes.
const (
	// ModeOff: no BTS is triggered on the port; BTS frames still ride its
	// control lane and the port's queue is still measured (peak, histogram).
	ModeOff Mode = iota
	// ModeEgress: "Egress BTS": the trigger runs when a packet leaves the
	// queue (Dequeued), at most one signal per dequeued packet, with the
	// depth the packet leaves behind.
	ModeEgress
	// ModeIngress: "Ingress BTS": the trigger runs when a packet arrives at
	// the queue (Admit), with the queue's exact depth.
	ModeIngress
	// ModeIngressCache: "Ingress BTS + Cache" (SFC): ModeIngress, and the
	// switch's near-source pause cache answers packets of local senders.
	ModeIngressCache
)

var modeNames = [...]string{"off", "egress", "ingress", "ingress_cache"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("mode%d", m)
}

// ParseMode reads a mode name.
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if s == n {
			return Mode(i), nil
		}
	}
	return ModeOff, fmt.Errorf("%q is not a mode (use off, egress, ingress or ingress_cache)", s)
}

// Defaults of the config (the paper's, and the spec's for the namespace
// testbed).
const (
	DefaultRTT          = 450 * time.Microsecond
	DefaultMaxPauseRTTs = 256 // max_pause 0 = this many rtt
	DefaultBloomBits    = 4096
	DefaultBloomHashes  = 3
	DefaultCacheEntries = 32768
	DefaultDSCP         = 48
)

// Config is SFC's config on one port (the keys under mechanisms: sfc:).
type Config struct {
	// Mode is off, egress, ingress or ingress_cache (the default).
	Mode string `yaml:"mode"`
	// RTT is the feedback loop delay T_F: BDP = rtt x the port's rate.
	RTT units.Duration `yaml:"rtt"`
	// QTh is the trigger threshold Q_Th (0: 2 BDP).
	QTh units.Size `yaml:"q_th"`
	// QTg is the target depth Q_Tg the pause drains the queue to (0: 1 BDP).
	QTg units.Size `yaml:"q_tg"`
	// BloomReset is the suppression period (0: rtt/2).
	BloomReset units.Duration `yaml:"bloom_reset"`
	// BloomBits is the size of each queue's filter in bits (a power of two).
	BloomBits int `yaml:"bloom_bits"`
	// BloomHashes is the number of hash functions of the filter.
	BloomHashes int `yaml:"bloom_hashes"`
	// DSCP is the DiffServ code point of the BTS frames the port triggers.
	DSCP int `yaml:"dscp"`
	// CacheEntries sizes the switch's pause cache (switch-wide: the largest
	// value of the ports is used).
	CacheEntries int `yaml:"cache_entries"`
	// Estimator turns on the incast estimator (section 3.4) for packets of
	// local senders leaving by this port.
	Estimator bool `yaml:"estimator"`
	// EstimatorDsts are the potential incast destinations the estimator
	// keeps an entry for (IPv4 addresses).
	EstimatorDsts []string `yaml:"estimator_destinations"`
	// EstimatorRate is the rate of the destinations' links (0: this port's rate).
	EstimatorRate units.Rate `yaml:"estimator_rate"`
	// MaxPause is the longest pause the port puts in a BTS it sends, and
	// the longest a BTS arriving on the port may set in the switch's
	// pause cache (0: DefaultMaxPauseRTTs x rtt; see MaxPauseFor).
	MaxPause units.Duration `yaml:"max_pause"`
}

// MaxPauseFor is the default max_pause for a feedback loop of rtt: 256
// rtt. The longest pause SFC itself asks for is the drain time of the
// queue an incast builds before its senders are paused, N x T_F for N
// senders that each send one feedback loop's worth (seed 003, section
// 5.2's testbed: the queue is "exactly feedback_loop_delay x
// number_of_hosts x" the rate; Appendix C, B_incast = N R T_F); the paper
// evaluates incasts of up to 256 senders (Fig. 13), so 256 rtt cuts no
// pause of its evaluation. A pause cut short costs little: the sender
// resumes, its next packet finds the queue still above q_th and brings a
// fresh BTS (the Bloom filter resets every rtt/2, "keeping their pause
// times up to date", section 3.2), so each cut sender adds about one
// window per max_pause. A pause of "a few rtt" would cut the pauses of
// every incast of more than a few senders.
func MaxPauseFor(rtt time.Duration) time.Duration { return DefaultMaxPauseRTTs * rtt }

// maxPauseLimit is the longest pause a BTS can carry: 2^32 - 1 us.
const maxPauseLimit = time.Duration(math.MaxUint32) * time.Microsecond

// NewConfig returns a config with the defaults.
func NewConfig() *Config {
	return &Config{Mode: "ingress_cache", RTT: units.Duration(DefaultRTT), BloomBits: DefaultBloomBits,
		BloomHashes: DefaultBloomHashes, DSCP: DefaultDSCP, CacheEntries: DefaultCacheEntries}
}

// Validate implements mech.Validator: errors name the key.
func (c *Config) Validate(p mech.PortInfo) error {
	_, err := c.resolve(p.RateBits)
	return err
}

// params are a port's config resolved against its rate.
type params struct {
	mode       Mode
	rtt        int64
	qth, qtg   uint64 // 0, 0 on a port without a rate: no trigger
	bloomReset int64
	bloomBits  int
	hashes     int
	dscp       uint8
	cache      int
	estimator  bool
	estDsts    []netip.Addr
	estRate    uint64
	maxPause   int64 // ns
}

// bdp is the bytes a link of rateBits carries in rtt ns.
func bdp(rtt int64, rateBits uint64) uint64 {
	return uint64(float64(rtt) * float64(rateBits) / 8e9)
}

func (c *Config) resolve(rateBits uint64) (params, error) {
	var r params
	var err error
	if r.mode, err = ParseMode(c.Mode); err != nil {
		return r, fmt.Errorf("mode: %w", err)
	}
	r.rtt = int64(c.RTT)
	if r.rtt < int64(time.Microsecond) || r.rtt > int64(time.Second) {
		return r, fmt.Errorf("rtt: %v out of range (1us to 1s: the feedback loop delay, from the sender to the congested queue and of the BTS back)", time.Duration(c.RTT))
	}
	if rateBits == 0 {
		if c.QTh != 0 || c.QTg != 0 {
			return r, fmt.Errorf("q_th: the port has no rate, so its queue never builds and T_P = (qd - q_tg)/rate has no rate (set rate: on the port, or drop q_th and q_tg)")
		}
	} else {
		b := bdp(r.rtt, rateBits)
		r.qth, r.qtg = uint64(c.QTh), uint64(c.QTg)
		if r.qth == 0 {
			r.qth = max(2*b, 2)
		}
		if r.qtg == 0 {
			r.qtg = min(max(b, 1), r.qth-1)
		}
		if r.qtg >= r.qth {
			return r, fmt.Errorf("q_tg: %d B is not below q_th (%d B): the pause drains the queue to q_tg, and only a queue above q_th triggers one", r.qtg, r.qth)
		}
	}
	r.maxPause = int64(c.MaxPause)
	if r.maxPause == 0 {
		r.maxPause = int64(MaxPauseFor(time.Duration(r.rtt)))
	}
	if r.maxPause < int64(time.Microsecond) || r.maxPause > int64(maxPauseLimit) {
		return r, fmt.Errorf("max_pause: %v out of range (1us to %v, the longest pause a BTS carries; default %d x rtt)",
			time.Duration(c.MaxPause), maxPauseLimit, DefaultMaxPauseRTTs)
	}
	r.bloomReset = int64(c.BloomReset)
	if r.bloomReset == 0 {
		r.bloomReset = r.rtt / 2
	}
	if r.bloomReset < int64(time.Microsecond) || r.bloomReset > int64(10*time.Second) {
		return r, fmt.Errorf("bloom_reset: %v out of range (1us to 10s; default rtt/2)", time.Duration(c.BloomReset))
	}
	if c.BloomBits < 64 || c.BloomBits > 1<<20 || c.BloomBits&(c.BloomBits-1) != 0 {
		return r, fmt.Errorf("bloom_bits: %d (a power of two from 64 to 1048576; the paper's filter: 4096)", c.BloomBits)
	}
	r.bloomBits = c.BloomBits
	if c.BloomHashes < 1 || c.BloomHashes > 8 {
		return r, fmt.Errorf("bloom_hashes: %d out of range (1 to 8; the paper's filter: 3)", c.BloomHashes)
	}
	r.hashes = c.BloomHashes
	if c.DSCP < 0 || c.DSCP > 63 {
		return r, fmt.Errorf("dscp: %d out of range (0 to 63; default 48, CS6)", c.DSCP)
	}
	r.dscp = uint8(c.DSCP)
	if c.CacheEntries < 4 || c.CacheEntries > 1<<22 || c.CacheEntries&(c.CacheEntries-1) != 0 {
		return r, fmt.Errorf("cache_entries: %d (a power of two from 4 to 4194304; the paper's table: 32768)", c.CacheEntries)
	}
	r.cache = c.CacheEntries
	r.estimator = c.Estimator
	if c.Estimator {
		if r.mode != ModeIngress && r.mode != ModeIngressCache {
			return r, fmt.Errorf("estimator: the estimator's pause is max-ed into the ingress trigger: use mode ingress or ingress_cache, not %s", r.mode)
		}
		if len(c.EstimatorDsts) == 0 {
			return r, fmt.Errorf("estimator_destinations: list the potential incast destinations (IPv4 addresses) the estimator keeps an entry for")
		}
		if len(c.EstimatorDsts) > 4096 {
			return r, fmt.Errorf("estimator_destinations: %d entries (at most 4096)", len(c.EstimatorDsts))
		}
		r.estRate = uint64(c.EstimatorRate)
		if r.estRate == 0 {
			r.estRate = rateBits
		}
		if r.estRate == 0 {
			return r, fmt.Errorf("estimator_rate: the port has no rate; give the rate of the destinations' links (e.g. 100Mbit)")
		}
	} else if len(c.EstimatorDsts) > 0 || c.EstimatorRate != 0 {
		return r, fmt.Errorf("estimator_destinations: set, but estimator is false (set estimator: true, or remove the estimator keys)")
	}
	for i, s := range c.EstimatorDsts {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() {
			return r, fmt.Errorf("estimator_destinations[%d]: %q is not an IPv4 address", i, s)
		}
		r.estDsts = append(r.estDsts, a)
	}
	return r, nil
}
