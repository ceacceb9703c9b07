// Package units reads the sizes, rates and durations of gswitch's config
// files, with bounds that keep them from overflowing the arithmetic they feed
// (bytes x 1e9 in the shaper, rates x time in thresholds).
//
// The YAML types (Size, Rate, Duration) let a mechanism's config struct take
// "64KB", "1Gbit" or "50us" and get an error that says what is accepted.
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
	v, err := ParseSize(n.Value)
	if err != nil {
		return err
	}
	*z = Size(v)
	return nil
}

// Rate is a bit rate in YAML: 100Mbit, 1Gbit.
type Rate uint64

// UnmarshalYAML implements yaml.Unmarshaler.
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseRate(n.Value)
	if err != nil {
		return err
	}
	*r = Rate(v)
	return nil
}

// Duration is a duration in YAML: 50us, 2ms.
type Duration time.Duration

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseDuration(n.Value, 0)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
