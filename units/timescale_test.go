package units

import (
	"math"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestTimescaleRefusesBelowOneAndNonsense(t *testing.T) {
	for _, s := range []string{"0", "0.5", "-1", "NaN", "Inf", "2e6", "x", "1s", "auto"} {
		if _, err := ParseTimescale(s); err == nil {
			t.Errorf("ParseTimescale(%q) accepted", s)
		}
	}
	for s, want := range map[string]float64{"1": 1, "1e3": 1000, "2.5": 2.5, " 100 ": 100, "1000000": 1e6} {
		if k, err := ParseTimescale(s); err != nil || k.K() != want {
			t.Errorf("ParseTimescale(%q) = %v, %v", s, k, err)
		}
	}
	var k Timescale
	err := yaml.Unmarshal([]byte("0.5"), &k)
	if err == nil || !strings.Contains(err.Error(), "is below 1") || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("0.5: %v", err)
	}
	if err := yaml.Unmarshal([]byte("[1]"), &k); err == nil {
		t.Error("a list accepted as a timescale")
	}
	if err := yaml.Unmarshal([]byte("1000"), &k); err != nil || k != 1000 || k.String() != "1000" {
		t.Errorf("1000: %v %v", k, err)
	}
}

// K = 1 (and the zero value) changes nothing, to the nanosecond and the bit.
func TestTimescaleOneIsTheIdentity(t *testing.T) {
	for _, k := range []Timescale{0, 1} {
		if !k.One() || k.K() != 1 || k.String() != "1" {
			t.Fatalf("%v: K %v", k, k.K())
		}
		for _, d := range []time.Duration{0, 1, 999, 200 * time.Microsecond, time.Hour, math.MaxInt64, -5} {
			if k.Wall(d) != d || k.Fabric(d) != d {
				t.Errorf("%v: Wall %v Fabric %v", d, k.Wall(d), k.Fabric(d))
			}
		}
		for _, r := range []uint64{0, 1, 8000, 1e9, 1e12, math.MaxUint64} {
			if k.WallBits(r) != r || k.FabricBits(r) != r {
				t.Errorf("%d: WallBits %d FabricBits %d", r, k.WallBits(r), k.FabricBits(r))
			}
		}
		if got := k.RateClocks(10e6); got != "10 Mbit/s" {
			t.Errorf("RateClocks at K 1: %q", got)
		}
		if got := k.DurationClocks(4 * time.Millisecond); got != "4 ms" {
			t.Errorf("DurationClocks at K 1: %q", got)
		}
	}
}

func TestTimescaleConversions(t *testing.T) {
	k := Timescale(1000)
	if got := k.Wall(4 * time.Microsecond); got != 4*time.Millisecond {
		t.Errorf("4us fabric = %v wall", got)
	}
	if got := k.Fabric(4 * time.Millisecond); got != 4*time.Microsecond {
		t.Errorf("4ms wall = %v fabric", got)
	}
	if got := k.WallBits(10e9); got != 10e6 {
		t.Errorf("10 Gbit/s fabric = %d wall", got)
	}
	if got := k.WallBits(1); got != 1 {
		t.Errorf("a positive rate stays positive: %d", got)
	}
	if got := k.FabricBits(10e6); got != 10e9 {
		t.Errorf("10 Mbit/s wall = %d fabric", got)
	}
	if got := k.Wall(math.MaxInt64 / 10); got != math.MaxInt64 {
		t.Errorf("overflow saturates: %v", got)
	}
	if got := Timescale(2.5).Wall(4 * time.Microsecond); got != 10*time.Microsecond {
		t.Errorf("K 2.5: 4us = %v", got)
	}
	if got := Timescale(2.5).WallBits(1e9); got != 400e6 {
		t.Errorf("K 2.5: 1 Gbit/s = %d", got)
	}
	if got := k.RateClocks(10e6); got != "10 Mbit/s wall = 10 Gbit/s fabric" {
		t.Errorf("RateClocks: %q", got)
	}
	if got := k.DurationClocks(4 * time.Millisecond); got != "4 ms wall = 4 us fabric" {
		t.Errorf("DurationClocks: %q", got)
	}
}

func TestFormats(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0 ns", 850: "850 ns", 1230 * time.Microsecond: "1.23 ms",
		3 * time.Second: "3 s", time.Hour: "3600 s", 999_960 * time.Microsecond: "1000 ms", -4 * time.Microsecond: "-4 us"} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", time.Duration(d), got, want)
		}
	}
	for r, want := range map[uint64]string{0: "unlimited", 840: "840 bit/s", 2.5e9: "2.5 Gbit/s", 123456789: "123 Mbit/s", 1e12: "1 Tbit/s"} {
		if got := FormatRate(r); got != want {
			t.Errorf("FormatRate(%d) = %q, want %q", r, got, want)
		}
	}
}
