package timescale

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestNewRefusesBelowOneAndNonsense(t *testing.T) {
	for _, k := range []float64{0, 0.5, 0.999, -1, math.NaN(), math.Inf(1), 2e6} {
		if _, err := New(k); err == nil || !strings.Contains(err.Error(), "want a number from 1") {
			t.Errorf("New(%v): %v, want an error saying what K may be", k, err)
		}
	}
	for _, s := range []string{"x", "", "1s"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
	if s, err := Parse("1e3"); err != nil || s.K() != 1000 || s.String() != "1000" {
		t.Errorf("Parse(1e3) = %v, %v", s, err)
	}
}

// K = 1 (and the zero Scale) changes nothing, to the nanosecond and the bit.
func TestOneIsTheIdentity(t *testing.T) {
	for _, s := range []Scale{{}, MustNew(1)} {
		if !s.One() || s.K() != 1 || s.String() != "1" {
			t.Fatalf("%#v: K %v", s, s.K())
		}
		for _, d := range []time.Duration{0, 1, 999, 200 * time.Microsecond, time.Minute, math.MaxInt64, -5} {
			if s.Wall(d) != d || s.Fabric(d) != d {
				t.Errorf("%v: Wall %v Fabric %v", d, s.Wall(d), s.Fabric(d))
			}
		}
		for _, r := range []uint64{0, 1, 8000, 1e9, 1<<63 + 1} {
			if s.WallBits(r) != r {
				t.Errorf("WallBits(%d) = %d", r, s.WallBits(r))
			}
		}
		if s.WallRate(123.456) != 123.456 || s.FabricRate(123.456) != 123.456 {
			t.Error("rates changed at K 1")
		}
	}
}

func TestConversions(t *testing.T) {
	s := MustNew(100)
	if got := s.Wall(4 * time.Microsecond); got != 400*time.Microsecond {
		t.Errorf("4us fabric = %v wall", got)
	}
	if got := s.Fabric(10 * time.Millisecond); got != 100*time.Microsecond {
		t.Errorf("10ms wall = %v fabric", got)
	}
	if got := s.WallBits(10e9); got != 100e6 {
		t.Errorf("10 Gbit/s fabric = %d wall", got)
	}
	if got := s.WallBits(1); got != 1 {
		t.Errorf("a positive rate stays positive: %d", got)
	}
	if got := s.FabricRate(100e6); got != 10e9 {
		t.Errorf("100 Mbit/s wall = %v fabric", got)
	}
	if got := s.Wall(math.MaxInt64 / 10); got != math.MaxInt64 {
		t.Errorf("overflow saturates: %v", got)
	}
	if got := s.Wall(-time.Second); got != -100*time.Second {
		t.Errorf("negative: %v", got)
	}
	f := MustNew(2.5)
	if got := f.Wall(time.Millisecond); got != 2500*time.Microsecond {
		t.Errorf("K 2.5: %v", got)
	}
	if got := f.Fabric(f.Wall(123456789)); got != 123456789 {
		t.Errorf("round trip: %v", got)
	}
	if got := MustNew(MaxK).Wall(math.MaxInt64 / 2); got != math.MaxInt64 {
		t.Errorf("saturation at MaxK: %v", got)
	}
}

func TestFormatRate(t *testing.T) {
	for r, want := range map[float64]string{10e6: "10 Mbit/s", 10e9: "10 Gbit/s", 2.5e9: "2.5 Gbit/s", 840: "840 bit/s", 1e12: "1 Tbit/s", 123456: "123 kbit/s"} {
		if got := FormatRate(r); got != want {
			t.Errorf("FormatRate(%v) = %q, want %q", r, got, want)
		}
	}
}
