package pfc

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/units"
	"github.com/gswitch/gswitch/wire"
)

// Where a packet's priority comes from (config key priority_from).
const (
	FromDSCP = "dscp" // the IP header's DSCP, through dscp_map (default DSCP >> 3): RoCEv2 fabrics trust DSCP
	FromPCP  = "pcp"  // the 802.1Q tag's PCP (untagged frames: priority 0)
)

// What the watchdog does to a priority whose pauses it ignores (config key
// watchdog_action).
const (
	ActionDrop    = "drop"    // drop the priority's packets at the port until it restores (SONiC's default)
	ActionForward = "forward" // send them as if no pause had come
)

// Defaults and bounds.
const (
	// MTU is the largest frame the headroom rule counts (bytes, no FCS):
	// the standard frame. Set headroom where jumbo frames run.
	MTU = 1514
	// DefaultResponse is how long after the crossing of XOFF the upstream
	// stops sending: this switch's pass to emit the frame and the
	// neighbour's to act on it. It is this machine's time (wall clock):
	// one traversal of a software switch, as BFC's budget.
	DefaultResponse = 25 * time.Microsecond
	// DefaultWatchdog and DefaultRestore are the detection and restoration
	// times of the PFC watchdog: SONiC's pfcwd defaults (200 ms each,
	// action drop); Junos documents the same 200 ms (two polls of 100 ms)
	// and a 200 ms recovery. Fabric time: a timescale scales them.
	DefaultWatchdog = 200 * time.Millisecond
	DefaultRestore  = 200 * time.Millisecond
	// MaxPause bounds one pause (a received frame's quanta at the port's
	// rate): at very low rates 65535 quanta last minutes.
	MaxPause = time.Minute
	// MaxSize bounds xoff, xon and headroom.
	MaxSize = 64 << 20
)

// Config is one port's PFC config (under ports[i].mechanisms.pfc).
type Config struct {
	// PriorityFrom is where the priority of a packet that came in on this
	// port is read: dscp (default) or pcp.
	PriorityFrom string `yaml:"priority_from"`
	// DSCPMap overrides the priority of DSCP values (default DSCP >> 3,
	// the class selector).
	DSCPMap map[int]int `yaml:"dscp_map"`
	// QueueMap gives the egress queue of each priority on this port
	// (default priority p -> queue p mod the port's queues).
	QueueMap map[int]int `yaml:"queue_map"`
	// Priorities lists the lossless priorities: those counted toward XOFF
	// on this ingress and honoured in frames received here (default all
	// eight).
	Priorities []int `yaml:"priorities"`
	// XOFF is the bytes of one priority from this port's upstream held in
	// the switch above which the port pauses that priority upstream
	// (0: headroom).
	XOFF units.Size `yaml:"xoff"`
	// XON is the bytes at or below which a paused priority is resumed
	// (0: xoff - 2 x MTU).
	XON units.Size `yaml:"xon"`
	// Headroom is what may still arrive after XOFF is crossed: 0 is
	// 2 x (link delay x rate) + 2 x MTU + response x rate.
	Headroom units.Size `yaml:"headroom"`
	// PauseQuanta is the pause time the port sends, in quanta of 512 bit
	// times at its rate (1..65535; default 65535). The port refreshes a
	// pause at half that time while above XON.
	PauseQuanta int `yaml:"pause_quanta"`
	// Response is this machine's time for a pause to take effect, for the
	// default headroom (wall clock: a timescale does not scale it).
	Response units.Duration `yaml:"response" timescale:"wall"`
	// Watchdog ignores a priority's pauses once it has been paused this
	// long without a break while its queue holds packets (0: off).
	Watchdog units.Duration `yaml:"watchdog"`
	// WatchdogRestore honours the priority's pauses again once none came
	// for this long.
	WatchdogRestore units.Duration `yaml:"watchdog_restore"`
	// WatchdogAction is drop (default) or forward.
	WatchdogAction string `yaml:"watchdog_action"`
}

func defaultConfig() any {
	return &Config{PriorityFrom: FromDSCP, PauseQuanta: wire.MaxQuanta, Response: units.Duration(DefaultResponse),
		Watchdog: units.Duration(DefaultWatchdog), WatchdogRestore: units.Duration(DefaultRestore), WatchdogAction: ActionDrop}
}

// Validate implements mech.Validator. It fills in priority_from and
// watchdog_action when empty; the thresholds derived from the port are
// computed by New (they follow a change of the port's rate).
func (c *Config) Validate(p mech.PortInfo) error {
	switch c.PriorityFrom {
	case FromDSCP, FromPCP:
	case "":
		c.PriorityFrom = FromDSCP
	default:
		return fmt.Errorf("priority_from: %q (use dscp or pcp)", c.PriorityFrom)
	}
	for _, d := range sortedKeys(c.DSCPMap) {
		if d < 0 || d > 63 {
			return fmt.Errorf("dscp_map: DSCP %d is not a DSCP (0..63)", d)
		}
		if v := c.DSCPMap[d]; v < 0 || v > 7 {
			return fmt.Errorf("dscp_map: DSCP %d -> priority %d, not a priority (0..7)", d, v)
		}
	}
	nq := 64 // queues a PFC port may pause (a 64-bit mask)
	if p.Queues > 0 {
		nq = min(p.Queues, 64)
	}
	for _, pr := range sortedKeys(c.QueueMap) {
		if pr < 0 || pr > 7 {
			return fmt.Errorf("queue_map: %d is not a priority (0..7)", pr)
		}
		if q := c.QueueMap[pr]; q < 0 || q >= nq {
			return fmt.Errorf("queue_map: priority %d -> queue %d, but the port has %d queues PFC can pause (use 0..%d, or raise the port's queues)", pr, q, nq, nq-1)
		}
	}
	if c.Priorities != nil && len(c.Priorities) == 0 {
		return fmt.Errorf("priorities: [] makes no priority lossless (list some of 0..7, or leave the key out for all eight)")
	}
	for _, pr := range c.Priorities {
		if pr < 0 || pr > 7 {
			return fmt.Errorf("priorities: %d is not a priority (0..7)", pr)
		}
	}
	if c.PauseQuanta < 1 || c.PauseQuanta > wire.MaxQuanta {
		return fmt.Errorf("pause_quanta: %d out of range (1..65535 quanta of 512 bit times; default 65535)", c.PauseQuanta)
	}
	for _, s := range []struct {
		key string
		v   units.Size
	}{{"xoff", c.XOFF}, {"xon", c.XON}, {"headroom", c.Headroom}} {
		if s.v > MaxSize {
			return fmt.Errorf("%s: %s is more than 64MiB", s.key, s.v)
		}
	}
	if c.Response < 0 || c.Response.D() > time.Second {
		return fmt.Errorf("response: %s out of range (0..1s; default 25us)", c.Response)
	}
	// The watchdog's times are the fabric's, already on this machine's
	// clock here (x K): their bound is a minute of the fabric's time.
	maxWD := p.Timescale.Wall(time.Minute)
	if c.Watchdog < 0 || c.Watchdog.D() > maxWD {
		return fmt.Errorf("watchdog: %s out of range (0 = off, up to 1m of the fabric's time; default 200ms)", p.Timescale.Fabric(c.Watchdog.D()))
	}
	if c.Watchdog != 0 && (c.WatchdogRestore <= 0 || c.WatchdogRestore.D() > maxWD) {
		return fmt.Errorf("watchdog_restore: %s out of range (above 0, up to 1m of the fabric's time; default 200ms)", p.Timescale.Fabric(c.WatchdogRestore.D()))
	}
	switch c.WatchdogAction {
	case ActionDrop, ActionForward:
	case "":
		c.WatchdogAction = ActionDrop
	default:
		return fmt.Errorf("watchdog_action: %q (use drop or forward)", c.WatchdogAction)
	}
	if p.Name != "" && p.RateBits == 0 {
		return fmt.Errorf("pause_quanta: a quantum is 512 bit times at the port's rate, and the port has no rate (unlimited): set the port's rate")
	}
	if p.RateBits == 0 {
		return nil // a tool checking the defaults: nothing to derive from
	}
	if err := c.checkPause(p.RateBits, p.DelayNs); err != nil {
		return err
	}
	t := c.thresholds(p.RateBits, p.DelayNs)
	if c.XON != 0 && t.xon > t.xoff {
		return fmt.Errorf("xon: %s is above xoff (%s): the upstream is resumed once the bytes held fall back to xon, below xoff (lower xon, or raise xoff)", c.XON, units.Size(t.xoff))
	}
	if p.BufferBytes != 0 && t.xoff+t.headroom > p.BufferBytes {
		return fmt.Errorf("xoff: %s + headroom %s is more than the port's buffer (%s): one upstream's priority could fill it before its pause takes effect (lower xoff or headroom, or raise the port's buffer)",
			units.Size(t.xoff), units.Size(t.headroom), units.Size(p.BufferBytes))
	}
	return nil
}

// pauseMargin is how many times the lag of a refresh a pause must last:
// the port refreshes at half the pause time, so the refresh has twice the
// time it needs to act, room for a late pass or a retry.
const pauseMargin = 4

// refreshLag is how long after a port decides to send a PFC frame it acts
// at the neighbour over a link of one-way delay delayNs at rateBits: the
// frame on the wire before it (MTU), the link's delay, and the response of
// the two switches (ns).
func (c *Config) refreshLag(rateBits uint64, delayNs int64) int64 {
	return int64(c.Response) + max(delayNs, 0) + int64(math.Ceil(MTU*8*1e9/float64(rateBits)))
}

// checkPause refuses a pause_quanta whose pause, at rateBits over a link
// of one-way delay delayNs, lasts less than pauseMargin x refreshLag: the
// port refreshes a pause at half its time, and a refresh that acts after
// the pause ran out lets the neighbour send between them.
func (c *Config) checkPause(rateBits uint64, delayNs int64) error {
	if rateBits == 0 {
		return nil
	}
	lag := c.refreshLag(rateBits, delayNs)
	if wire.PauseNs(uint16(c.PauseQuanta), rateBits) >= pauseMargin*lag {
		return nil
	}
	// The fewest quanta that last pauseMargin x lag at the rate.
	need := math.Ceil(float64(pauseMargin*lag) * float64(rateBits) / (wire.QuantumBits * 1e9))
	fix := fmt.Sprintf("raise pause_quanta to at least %.0f", need)
	if need > wire.MaxQuanta {
		fix = "no pause_quanta lasts long enough at this rate: lower response or the link's delay, or the port's rate"
	}
	return fmt.Errorf("pause_quanta: %d quanta last %s at the port's rate (%s), less than %d x the %s a refresh takes to act (response %s + link delay %s + one %d-byte frame): the pause would run out before its refresh, sent at half the pause, stops the neighbour again (%s)",
		c.PauseQuanta, units.FormatDuration(time.Duration(wire.PauseNs(uint16(c.PauseQuanta), rateBits))), units.FormatRate(rateBits),
		pauseMargin, units.FormatDuration(time.Duration(lag)), units.FormatDuration(c.Response.D()),
		units.FormatDuration(time.Duration(max(delayNs, 0))), MTU, fix)
}

// thresholds are a port's XOFF, XON and headroom in bytes.
type thresholds struct{ xoff, xon, headroom uint64 }

// thresholds computes the port's thresholds at rateBits over a link of
// one-way delay delayNs: the config's, or the defaults.
//
// The default headroom is the standard's rule (IEEE 802.1Qbb's informative
// annex on the buffer PFC needs): what arrives after the crossing of XOFF
// is the data in flight on the link while the pause travels up and the
// traffic it stops travels down (2 x delay x rate), the frame the upstream
// is sending when the pause arrives and the one this port is sending when
// it decides (2 x MTU: neither can be cut), and what the upstream sends
// while the two switches respond (response x rate). XOFF defaults to the
// headroom: then XON (2 MTU lower) holds about one round trip of the link,
// so the egress keeps sending while a resume travels up and the upstream's
// data comes back. Admission caps one priority of one upstream at
// xoff + headroom (2 x headroom by default): an upstream that honours its
// pauses stays under it, and what one that ignores them sends past it is
// dropped (pfc_headroom).
func (c *Config) thresholds(rateBits uint64, delayNs int64) thresholds {
	var t thresholds
	bytesPerNs := float64(rateBits) / 8e9
	t.headroom = uint64(c.Headroom)
	if t.headroom == 0 {
		h := 2*float64(max(delayNs, 0))*bytesPerNs + 2*MTU + float64(c.Response)*bytesPerNs
		t.headroom = uint64(math.Min(h, MaxSize))
	}
	t.xoff = uint64(c.XOFF)
	if t.xoff == 0 {
		t.xoff = t.headroom
	}
	t.xon = uint64(c.XON)
	if t.xon == 0 {
		t.xon = t.xoff - min(t.xoff, 2*MTU)
	}
	return t
}

// derived reports whether any threshold follows the port's rate.
func (c *Config) derived() bool { return c.Headroom == 0 || c.XOFF == 0 || c.XON == 0 }

// sortedKeys returns m's keys in order, so errors name the same key every
// time.
func sortedKeys(m map[int]int) []int {
	k := make([]int, 0, len(m))
	for x := range m {
		k = append(k, x)
	}
	sort.Ints(k)
	return k
}
