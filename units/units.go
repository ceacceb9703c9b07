// Package units reads the sizes, rates and durations of gswitch's config
// files, with bounds that keep them from overflowing the arithmetic they feed
// (bytes x 1e9 in the shaper, rates x time in thresholds).
//
// The YAML types (Size, Rate, Duration) decode straight from a YAML scalar:
// a config struct takes "64KB", "1Gbit" or "50us" in a field of that type.
// They refuse a list or a mapping (never a silent 0), leave the field as it
// was for an empty string (the field's default, set before decoding), and
// fail with an *Error that carries the value's line; the config loader
// adds the key's path (At), so that an operator reads
//
//	ports[1].mechanisms.bfc.hrtt: line 14: "5 us" is not a duration (write e.g. 50us, 2ms, 300s)
//
// The package sits below every other package of gswitch: it imports
// nothing of the project.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Bounds of what the config accepts.
const (
	MaxSize     = 1 << 40 // 1 TiB: more than any buffer (code that scales a size, such as the shaper x 1e9, bounds it further)
	MaxRateBits = 1e12    // 1 Tbit/s
	MaxDuration = time.Hour
)

// ParseRate reads a bit rate such as 100Mbit, 1.5Gbit, 10gbps or 500kbit.
// A bare number is bit/s. Empty, "0" and "unlimited" mean unlimited (0).
func ParseRate(s string) (uint64, error) {
	if s == "" || s == "0" || s == "unlimited" {
		return 0, nil
	}
	num, unit := splitUnit(s)
	v, err := strconv.ParseFloat(num, 64)
	mult := map[string]float64{"": 1, "bit": 1, "bps": 1, "kbit": 1e3, "kbps": 1e3, "mbit": 1e6, "mbps": 1e6, "gbit": 1e9, "gbps": 1e9, "tbit": 1e12, "tbps": 1e12}
	m, ok := mult[strings.ToLower(unit)]
	if err != nil || !ok || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%q is not a rate (write e.g. 100Mbit, 1.5Gbit or 10Gbit; units are bits per second)", s)
	}
	if v*m > MaxRateBits {
		return 0, fmt.Errorf("%q is more than 1Tbit", s)
	}
	return uint64(v * m), nil
}

// ParseSize reads a size in bytes such as 1500, 64KB, 1MiB or 2MB (KB =
// 1000, KiB = 1024), at most 1 TiB.
func ParseSize(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	num, unit := splitUnit(s)
	v, err := strconv.ParseFloat(num, 64)
	mult := map[string]float64{"": 1, "b": 1, "kb": 1e3, "kib": 1 << 10, "mb": 1e6, "mib": 1 << 20, "gb": 1e9, "gib": 1 << 30, "tb": 1e12, "tib": 1 << 40}
	m, ok := mult[strings.ToLower(unit)]
	if err != nil || !ok || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%q is not a size (write e.g. 1500, 64KB, 1MiB)", s)
	}
	if v*m > MaxSize {
		return 0, fmt.Errorf("%q is more than 1TiB", s)
	}
	return uint64(v * m), nil
}

// ParseDuration reads a duration such as 50us, 2ms or 300s (not negative,
// at most an hour). Empty gives def.
func ParseDuration(s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration (write e.g. 50us, 2ms, 300s)", s)
	}
	if d > MaxDuration {
		return 0, fmt.Errorf("%q is longer than an hour", s)
	}
	return d, nil
}

func splitUnit(s string) (num, unit string) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool {
		return (r < '0' || r > '9') && r != '.' && r != 'e' && r != 'E' && r != '+' && r != '-'
	})
	if i < 0 {
		return s, ""
	}
	// An exponent's 'e' followed by a letter is part of the unit, not the number.
	return s[:i], strings.TrimSpace(s[i:])
}

// Size is a byte count in YAML: 1500, 64KB, 1MiB.
type Size uint64

// UnmarshalYAML implements yaml.Unmarshaler.
func (z *Size) UnmarshalYAML(n *yaml.Node) error {
	s, err := Scalar(n, "a size", "1500, 64KB, 1MiB")
	if err != nil || s == "" {
		return err
	}
	v, err := ParseSize(s)
	if err != nil {
		return Errorf(n, "%v", err)
	}
	*z = Size(v)
	return nil
}

// String writes the size in the largest unit that divides it (64KB, 1MiB,
// 1500B): what an operator would write.
func (z Size) String() string {
	v := uint64(z)
	if v == 0 {
		return "0B"
	}
	for _, u := range []struct {
		d uint64
		n string
	}{{1 << 40, "TiB"}, {1e12, "TB"}, {1 << 30, "GiB"}, {1e9, "GB"}, {1 << 20, "MiB"}, {1e6, "MB"}, {1 << 10, "KiB"}, {1e3, "KB"}} {
		if v%u.d == 0 {
			return strconv.FormatUint(v/u.d, 10) + u.n
		}
	}
	return strconv.FormatUint(v, 10) + "B"
}

// Rate is a bit rate in YAML: 100Mbit, 1Gbit; 0 is unlimited.
type Rate uint64

// UnmarshalYAML implements yaml.Unmarshaler.
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	s, err := Scalar(n, "a rate", "100Mbit, 1.5Gbit or 10Gbit")
	if err != nil || s == "" {
		return err
	}
	v, err := ParseRate(s)
	if err != nil {
		return Errorf(n, "%v", err)
	}
	*r = Rate(v)
	return nil
}

// String writes the rate as 100Mbit or 1.5Gbit ("unlimited" for 0).
func (r Rate) String() string {
	bits := uint64(r)
	if bits == 0 {
		return "unlimited"
	}
	for _, u := range []struct {
		d uint64
		n string
	}{{1e12, "Tbit"}, {1e9, "Gbit"}, {1e6, "Mbit"}, {1e3, "kbit"}} {
		if bits >= u.d {
			return strconv.FormatFloat(float64(bits)/float64(u.d), 'f', -1, 64) + u.n
		}
	}
	return strconv.FormatUint(bits, 10) + "bit"
}

// Duration is a duration in YAML: 50us, 2ms.
type Duration time.Duration

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	s, err := Scalar(n, "a duration", "50us, 2ms, 300s")
	if err != nil || s == "" {
		return err
	}
	v, err := ParseDuration(s, 0)
	if err != nil {
		return Errorf(n, "%v", err)
	}
	*d = Duration(v)
	return nil
}

// String writes the duration as time.Duration does (50µs, 2ms).
func (d Duration) String() string { return time.Duration(d).String() }

// D is the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }
