package fidelity

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// FrameWire is the bytes a full frame takes on the wire: 1514 of frame,
// 4 of FCS, 8 of preamble and 12 of gap. Its time at the fastest port's
// rate is the unit the bounds are in.
const FrameWire = 1538

// Bounds is what a run must stay within to be VALID.
type Bounds struct {
	LatenessFrames   float64 `json:"lateness_p99_frames"`    // lateness p99 in frame times of the fastest link
	LostLinePercent  float64 `json:"line_time_lost_percent"` // line time any port lost, percent of the window
	DelayErrorFrames float64 `json:"delay_error_p99_frames"` // delay lines' lateness p99 in frame times
}

// DefaultBounds are the bounds an experiment gets unless it declares
// others: a frame time of lateness at the 99th percentile, 1% of line time
// lost, a frame time of delay error at the 99th percentile.
func DefaultBounds() Bounds {
	return Bounds{LatenessFrames: 1, LostLinePercent: 1, DelayErrorFrames: 1}
}

// ParseBounds reads bounds written as "lateness=1,lost=1%,delay=1" (frame
// times, percent, frame times); keys left out keep the defaults.
func ParseBounds(s string) (Bounds, error) {
	b := DefaultBounds()
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		var dst *float64
		switch strings.TrimSpace(k) {
		case "lateness":
			dst = &b.LatenessFrames
		case "lost":
			dst = &b.LostLinePercent
			v = strings.TrimSuffix(strings.TrimSpace(v), "%")
		case "delay":
			dst = &b.DelayErrorFrames
		default:
			return Bounds{}, fmt.Errorf("%q: unknown bound %q (write lateness=FRAMES,lost=PERCENT%%,delay=FRAMES, e.g. lateness=1,lost=1%%,delay=1)", s, k)
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || !(f > 0) || math.IsInf(f, 0) {
			return Bounds{}, fmt.Errorf("%q: %s=%s is not a positive number", s, k, v)
		}
		*dst = f
	}
	return b, nil
}

func (b Bounds) String() string {
	return fmt.Sprintf("%s frame, %s%%, %s frame", num(b.LatenessFrames), num(b.LostLinePercent), num(b.DelayErrorFrames))
}

// Verdict is the judgement of one window. Times are wall-clock seconds
// (the fields say so); frame times are of the fastest link.
type Verdict struct {
	Valid   bool     `json:"valid"`
	Reasons []string `json:"reasons,omitempty"` // why INVALID

	Switches  []string `json:"switches"`
	Window    float64  `json:"window_wall_s"` // the longest switch's window
	Timescale float64  `json:"timescale"`     // K of the switches

	WakeLateP99     float64 `json:"wake_late_p99_wall_s"`
	WakeLateCount   uint64  `json:"wake_late_count"`
	PassGapP99      float64 `json:"pass_gap_p99_wall_s"`
	PassGapCount    uint64  `json:"pass_gap_count"`
	LatenessP99     float64 `json:"lateness_p99_wall_s"` // the larger of the two
	LatenessFrom    string  `json:"lateness_from,omitempty"`
	LatenessBeyond  bool    `json:"lateness_beyond_buckets,omitempty"` // the p99 is past the last bucket: at least this
	LatenessMissing bool    `json:"lateness_missing,omitempty"`        // no switch exports the lateness histograms

	FastestPort       string  `json:"fastest_port,omitempty"` // switch/port
	FastestWallBits   float64 `json:"fastest_rate_wall_bits,omitempty"`
	FastestFabricBits float64 `json:"fastest_rate_fabric_bits,omitempty"`
	FrameTime         float64 `json:"frame_time_wall_s,omitempty"` // 0: no port has a rate
	LatenessFrames    float64 `json:"lateness_p99_frames,omitempty"`

	LostLinePercent float64 `json:"line_time_lost_percent"`
	LostLinePort    string  `json:"line_time_lost_port,omitempty"`

	DelayErrorP99    float64 `json:"delay_error_p99_wall_s"`
	DelayErrorCount  uint64  `json:"delay_error_count"`
	DelayErrorFrames float64 `json:"delay_error_p99_frames,omitempty"`

	Reset  []string `json:"reset,omitempty"` // series that went backwards in the window (switch/series/label)
	Bounds Bounds   `json:"bounds"`
}

// Evaluate judges a window against b.
func Evaluate(w Window, b Bounds) Verdict {
	v := Verdict{Valid: true, Bounds: b, Timescale: 1}
	fail := func(f string, a ...any) {
		v.Valid = false
		v.Reasons = append(v.Reasons, fmt.Sprintf(f, a...))
	}
	if len(w.Switches) == 0 {
		fail("no switch in the window")
		return v
	}
	var wake, gap, delay []Histogram
	haveLateness := false
	ks := map[float64]bool{}
	for _, sw := range w.Switches {
		v.Switches = append(v.Switches, sw.Name)
		v.Window = max(v.Window, sw.Duration.Seconds())
		ks[sw.K()] = true
		v.Timescale = sw.K()
		for _, r := range sw.Reset {
			v.Reset = append(v.Reset, sw.Name+"/"+r)
		}
		haveLateness = haveLateness || sw.WakeLate != nil || sw.PassGap != nil
		for _, h := range sortedHists(sw.WakeLate) {
			wake = append(wake, h)
		}
		for _, h := range sortedHists(sw.PassGap) {
			gap = append(gap, h)
		}
		for _, h := range sortedHists(sw.DelayError) {
			delay = append(delay, h)
		}
		for _, port := range sortedKeys(sw.Rate) {
			r := sw.Rate[port]
			if r > 0 && !math.IsInf(r, 0) && r*8 > v.FastestWallBits {
				v.FastestWallBits = r * 8
				v.FastestFabricBits = r * 8 * sw.K()
				v.FastestPort = sw.Name + "/" + port
			}
		}
		if d := sw.Duration.Seconds(); d > 0 {
			ports := map[string]bool{}
			for p := range sw.TxLate {
				ports[p] = true
			}
			for p := range sw.CreditLate {
				ports[p] = true
			}
			for _, p := range sortedKeys(ports) {
				lost := 100 * (max(sw.TxLate[p], 0) + max(sw.CreditLate[p], 0)) / d
				if lost > v.LostLinePercent {
					v.LostLinePercent, v.LostLinePort = lost, sw.Name+"/"+p
				}
			}
		}
	}
	if len(ks) > 1 {
		var list []string
		for _, sw := range w.Switches {
			list = append(list, fmt.Sprintf("%s %s", sw.Name, num(sw.K())))
		}
		fail("the switches run at different timescales (%s)", strings.Join(list, ", "))
	}
	sort.Strings(v.Reset)
	if len(v.Reset) > 0 {
		fail("counters went backwards during the window (a switch restarted?): %s", strings.Join(v.Reset, ", "))
	}

	wh, gh := Merge(wake...), Merge(gap...)
	v.WakeLateCount, v.PassGapCount = wh.Count, gh.Count
	wp, wOver, _ := wh.Quantile(0.99)
	gp, gOver, _ := gh.Quantile(0.99)
	v.WakeLateP99, v.PassGapP99 = wp, gp
	v.LatenessP99, v.LatenessFrom, v.LatenessBeyond = wp, "wake_late", wOver
	if gp > wp {
		v.LatenessP99, v.LatenessFrom, v.LatenessBeyond = gp, "pass_gap", gOver
	}
	if wh.Count == 0 && gh.Count == 0 {
		v.LatenessFrom = ""
	}
	if !haveLateness {
		v.LatenessMissing = true
		fail("no switch exports %s or %s: nothing to judge lateness by", MetricWakeLate, MetricPassGap)
	}

	dh := Merge(delay...)
	v.DelayErrorCount = dh.Count
	v.DelayErrorP99, _, _ = dh.Quantile(0.99)

	if v.FastestWallBits > 0 {
		v.FrameTime = FrameWire * 8 / v.FastestWallBits
		v.LatenessFrames = v.LatenessP99 / v.FrameTime
		v.DelayErrorFrames = v.DelayErrorP99 / v.FrameTime
		if haveLateness && v.LatenessFrames > b.LatenessFrames {
			fail("lateness p99 %s frame times > %s (%s wall, from %s)", num(v.LatenessFrames), num(b.LatenessFrames), dur(v.LatenessP99), v.LatenessFrom)
		}
		if v.DelayErrorFrames > b.DelayErrorFrames {
			fail("delay error p99 %s frame times > %s (%s wall)", num(v.DelayErrorFrames), num(b.DelayErrorFrames), dur(v.DelayErrorP99))
		}
	} else {
		fail("no port has a rate (%s is 0 or missing everywhere): no frame time to judge lateness by", MetricPortRate)
	}
	if v.LostLinePercent > b.LostLinePercent {
		fail("line time lost %s%% at %s > %s%%", num(v.LostLinePercent), v.LostLinePort, num(b.LostLinePercent))
	}
	return v
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func sortedHists(m map[string]Histogram) []Histogram {
	var out []Histogram
	for _, k := range sortedKeys(m) {
		out = append(out, m[k])
	}
	return out
}

// String is the verdict in one line:
//
//	fidelity: VALID  lateness p99 0.31 frame times (0.38 ms wall; fastest link 10 Mbit/s wall = 10 Gbit/s fabric at timescale 1000)  line time lost 0.02% (sw2/r1)  delay error p99 0.1 frame times  [bounds: 1 frame, 1%, 1 frame]
func (v Verdict) String() string {
	var s strings.Builder
	s.WriteString("fidelity: ")
	if v.Valid {
		s.WriteString("VALID")
	} else {
		s.WriteString("INVALID")
	}
	if len(v.Switches) == 0 { // nothing was measured: only the reasons
		fmt.Fprintf(&s, "  because: %s", strings.Join(v.Reasons, "; "))
		return s.String()
	}
	at := ""
	if v.LatenessBeyond {
		at = "at least "
	}
	switch {
	case v.LatenessMissing:
		s.WriteString("  lateness unknown (not exported)")
	case v.FrameTime > 0:
		fmt.Fprintf(&s, "  lateness p99 %s%s frame times (%s wall; fastest link %s wall = %s fabric at timescale %s)",
			at, num(v.LatenessFrames), dur(v.LatenessP99), rate(v.FastestWallBits), rate(v.FastestFabricBits), num(v.Timescale))
	default:
		fmt.Fprintf(&s, "  lateness p99 %s%s wall (no port has a rate: no frame time; timescale %s)", at, dur(v.LatenessP99), num(v.Timescale))
	}
	if v.LostLinePort != "" {
		fmt.Fprintf(&s, "  line time lost %s%% (%s)", num(v.LostLinePercent), v.LostLinePort)
	} else {
		s.WriteString("  line time lost 0%")
	}
	switch {
	case v.DelayErrorCount == 0:
		s.WriteString("  delay error: none measured")
	case v.FrameTime > 0:
		fmt.Fprintf(&s, "  delay error p99 %s frame times", num(v.DelayErrorFrames))
	default:
		fmt.Fprintf(&s, "  delay error p99 %s wall", dur(v.DelayErrorP99))
	}
	fmt.Fprintf(&s, "  [bounds: %v]", v.Bounds)
	if !v.Valid {
		fmt.Fprintf(&s, "  because: %s", strings.Join(v.Reasons, "; "))
	}
	return s.String()
}

// num prints a number with up to three significant digits, no exponent
// for everyday magnitudes: 0.31, 1000, 0.02.
func num(x float64) string {
	if x != 0 && (math.Abs(x) >= 1e6 || math.Abs(x) < 1e-3) {
		return strconv.FormatFloat(x, 'g', 3, 64)
	}
	if math.Abs(x) >= 1000 {
		return strconv.FormatFloat(math.Round(x), 'f', -1, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// dur prints seconds with a unit that keeps the number readable.
func dur(sec float64) string {
	switch {
	case sec >= 1:
		return num(sec) + " s"
	case sec >= 1e-3:
		return num(sec*1e3) + " ms"
	default:
		return num(sec*1e6) + " µs"
	}
}

// rate prints bit/s with an SI prefix: 10 Mbit/s, 10 Gbit/s.
func rate(bits float64) string {
	for _, u := range []struct {
		div  float64
		name string
	}{{1e12, "Tbit/s"}, {1e9, "Gbit/s"}, {1e6, "Mbit/s"}, {1e3, "kbit/s"}} {
		if bits >= u.div {
			return num(bits/u.div) + " " + u.name
		}
	}
	return num(bits) + " bit/s"
}
