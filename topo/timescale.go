package topo

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/gswitch/gswitch/lateness"
	"github.com/gswitch/gswitch/units"
	"gopkg.in/yaml.v3"
)

// The timescale of a topology (docs/topology.md, "Timescale"): the file's
// rates and delays are the fabric's, and every switch runs them K times
// slower. topo writes `timescale: K` into each switch's gswitchd config
// and leaves the values as the file gives them; gswitchd scales them (and
// its mechanisms' keys). With `timescale: auto`, Up measures how late a
// thread of this machine wakes and picks K (package lateness).

// Bounds of the probe's duration (timescale_probe).
const (
	minProbe = 100 * time.Millisecond
	maxProbe = time.Minute
)

// Bounds of a host's rto_min on this machine: the kernel keeps it in whole
// milliseconds and never waits longer than TCP_RTO_MAX.
const (
	minRtoMin = time.Millisecond
	maxRtoMin = 120 * time.Second
)

// decodeTimescale reads the top-level keys timescale (a number K >= 1, or
// auto) and timescale_probe (auto's measurement, default 3s).
func (t *Topology) decodeTimescale(k, probe *yaml.Node) error {
	t.Timescale = 1
	if k != nil {
		s, err := str(k, "timescale")
		if err != nil {
			return err
		}
		if s == "auto" {
			t.TimescaleAuto = true
		} else if t.Timescale, err = units.ParseTimescale(s); err != nil {
			return fmt.Errorf("timescale: %v (or auto: measure this machine at up)", err)
		}
	}
	if probe != nil {
		s, err := str(probe, "timescale_probe")
		if err != nil {
			return err
		}
		if !t.TimescaleAuto {
			return fmt.Errorf("timescale_probe: %s is how long timescale: auto measures this machine (set timescale: auto, or drop timescale_probe)", s)
		}
		d, err := units.ParseDuration(s, 0)
		if err != nil || d < minProbe || d > maxProbe {
			return fmt.Errorf("timescale_probe: %q is not a duration from %v to %v (default %v)", s, minProbe, maxProbe, lateness.DefaultDuration)
		}
		t.TimescaleProbe = d
	}
	return nil
}

// decodeHostTimers reads a host's rto_min and quickack keys.
func decodeHostTimers(h *Host, f map[string]*yaml.Node, path string) error {
	if v := f["rto_min"]; v != nil {
		s, err := str(v, path+".rto_min")
		if err != nil {
			return err
		}
		if h.RtoMin, err = units.ParseDuration(s, 0); err != nil || h.RtoMin == 0 {
			return fmt.Errorf("%s.rto_min: %q is not a duration above 0 (write e.g. 10ms: the least retransmission timeout of the host's TCP, in the fabric's time)", path, s)
		}
	}
	if v := f["quickack"]; v != nil {
		s, err := str(v, path+".quickack")
		if err != nil {
			return err
		}
		if h.QuickAck, err = strconv.ParseBool(s); err != nil {
			return fmt.Errorf("%s.quickack: %q is not true or false", path, s)
		}
	}
	return nil
}

// checkTimescale checks what this machine would run at timescale k: every
// link's delay x k within what a switch holds, every rate / k within what
// a shaper takes, every host's rto_min x k within what the kernel takes.
// Errors name the key and show both clocks.
func (t *Topology) checkTimescale(k units.Timescale) error {
	bound := func(key, fabric, wall, limit, fix string) error {
		if k.One() {
			return fmt.Errorf("%s: %s is %s (%s)", key, fabric, limit, fix)
		}
		return fmt.Errorf("%s: %s at timescale %s is %s on this machine, %s (%s)", key, fabric, k, wall, limit, fix)
	}
	type link struct {
		key       string
		rateText  string
		rateBits  uint64
		delayText string
		delay     time.Duration
	}
	d := t.Defaults.Link
	defRate, _ := units.ParseRate(d.Rate)
	defDelay, _ := units.ParseDuration(d.Delay, 0)
	links := []link{{"defaults.link", d.Rate, defRate, d.Delay, defDelay}}
	for _, l := range t.Links {
		links = append(links, link{fmt.Sprintf("links[%d]", l.Index), l.Rate, l.RateBits, l.DelayText, l.Delay})
	}
	for _, l := range links {
		if w := k.Wall(l.delay); w > maxDelay {
			return bound(l.key+".delay", l.delayText, durText(w), fmt.Sprintf("more than the %s a switch holds a frame", maxDelay), "lower timescale or delay")
		}
		if w := k.WallBits(l.rateBits); l.rateBits != 0 && w < 8000 {
			return bound(l.key+".rate", l.rateText, units.Rate(w).String(), "less than the 8kbit a port's shaper takes", "lower timescale or raise rate")
		}
	}
	for _, h := range t.Hosts {
		if h.RtoMin == 0 {
			continue
		}
		key := "hosts." + h.Name + ".rto_min"
		switch w := k.Wall(h.RtoMin); {
		case w < minRtoMin:
			return bound(key, durText(h.RtoMin), durText(w), "less than the 1ms the kernel takes (it keeps rto_min in whole milliseconds)", "raise rto_min or timescale")
		case w > maxRtoMin:
			return bound(key, durText(h.RtoMin), durText(w), fmt.Sprintf("more than the %s TCP ever waits", maxRtoMin), "lower timescale or rto_min")
		}
	}
	return nil
}

// hostRtoMin is host h's rto_min on this machine at the topology's
// timescale, rounded up to whole milliseconds as the kernel keeps it (0:
// the kernel's own).
func (t *Topology) hostRtoMin(h *Host) time.Duration {
	if h.RtoMin == 0 {
		return 0
	}
	w := t.Timescale.Wall(h.RtoMin)
	return (w + time.Millisecond - 1).Truncate(time.Millisecond)
}

// FastestBits is the fabric rate of the topology's fastest link in bit/s
// (0: no link has a rate).
func (t *Topology) FastestBits() uint64 {
	var f uint64
	for _, l := range t.Links {
		f = max(f, l.RateBits)
	}
	return f
}

// MaxTimescale is the largest timescale the topology's bounds allow (a
// delay x K within a second, a rate / K at least 8kbit, a host's rto_min x
// K within 120s), and the key that sets it ("" if none does: then
// units.MaxTimescale).
func (t *Topology) MaxTimescale() (units.Timescale, string) {
	k, key := float64(units.MaxTimescale), ""
	lower := func(v float64, by string) {
		if v < k {
			k, key = v, by
		}
	}
	for _, l := range t.Links {
		if l.Delay > 0 {
			lower(float64(maxDelay)/float64(l.Delay), fmt.Sprintf("links[%d].delay", l.Index))
		}
		if l.RateBits > 0 {
			lower(float64(l.RateBits)/8000, fmt.Sprintf("links[%d].rate", l.Index))
		}
	}
	for _, h := range t.Hosts {
		if h.RtoMin > 0 {
			lower(float64(maxRtoMin)/float64(h.RtoMin), "hosts."+h.Name+".rto_min")
		}
	}
	return units.Timescale(max(1, math.Floor(k))), key
}

// WithTimescale returns a copy of the topology at timescale k (a topology
// with timescale: auto, once K is chosen), after checking its bounds at k.
func (t *Topology) WithTimescale(k units.Timescale) (*Topology, error) {
	if err := t.checkTimescale(k); err != nil {
		return nil, err
	}
	c := *t
	c.Timescale, c.TimescaleAuto = k, false
	return &c, nil
}

// workerSched is the nice value, slice and realtime priority the
// switches' workers run at, for the probe: the largest (least favoured) of
// the switches' nice keys (0 where none is given), the longest of their
// slice keys if every switch gives one (else 0, the kernel's default), and
// the lowest of their realtime keys (0, ordinary threads, unless every
// switch gives one).
func (t *Topology) workerSched() (nice int, slice time.Duration, realtime int) {
	nice = math.MinInt
	realtime = math.MaxInt
	all := true
	for _, s := range t.Switches {
		keys := t.switchKeys(s)
		rt := 0
		if v := lookup(keys, "realtime"); v != nil {
			rt, _ = strconv.Atoi(v.Value) // gswitchd refuses what is not a number
		}
		realtime = min(realtime, rt)
		n := 0
		if v := lookup(keys, "nice"); v != nil {
			n, _ = strconv.Atoi(v.Value) // gswitchd refuses what is not a number
		}
		nice = max(nice, n)
		var d time.Duration
		if v := lookup(keys, "slice"); v != nil {
			d, _ = units.ParseDuration(v.Value, 0)
		}
		all = all && d != 0
		slice = max(slice, d)
	}
	if !all {
		slice = 0
	}
	if realtime == math.MaxInt {
		realtime = 0
	}
	return nice, slice, realtime
}

// ChooseTimescale measures this machine (timescale: auto; for
// timescale_probe, lateness.DefaultDuration if not given) at the switches'
// nice value and slice and returns the topology at the smallest K of the ladder that
// puts the lateness's 99th percentile under a frame time of the fastest
// link at its rate / K, with the choice and its reasons. A K the
// topology's bounds do not allow is an error that says which key bounds it.
func (t *Topology) ChooseTimescale(ctx context.Context) (*Topology, *lateness.Choice, error) {
	nice, slice, realtime := t.workerSched()
	r, err := lateness.Measure(ctx, lateness.Options{Duration: t.TimescaleProbe, Nice: nice, Slice: slice, Realtime: realtime})
	if err != nil {
		return nil, nil, fmt.Errorf("timescale: auto: measuring this machine: %w", err)
	}
	c := lateness.Decide(r, t.FastestBits())
	if !c.Enough {
		return nil, &c, fmt.Errorf("%s (give timescale: K, or run on a quieter machine)", c)
	}
	nt, err := t.WithTimescale(c.K)
	if err != nil {
		max, key := t.MaxTimescale()
		return nil, &c, fmt.Errorf("%s; but %v: %s allows at most K = %s (give timescale: K, or change %s)", c, err, key, max, key)
	}
	return nt, &c, nil
}
