package units

import (
	"errors"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestRatesAndSizes(t *testing.T) {
	rates := map[string]uint64{"100Mbit": 100e6, "1.5Gbit": 1.5e9, "10gbps": 10e9, "500kbit": 500e3, "64000": 64000, "": 0, "0": 0, "unlimited": 0}
	for s, want := range rates {
		if got, err := ParseRate(s); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %d, %v", s, got, err)
		}
	}
	sizes := map[string]uint64{"1500": 1500, "64KB": 64000, "1MiB": 1 << 20, "2 MB": 2e6, "": 0}
	for s, want := range sizes {
		if got, err := ParseSize(s); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v", s, got, err)
		}
	}
	for _, s := range []string{"1GB", "fast", "-1Gbit", "1 Gbit/s", "2Tbit", "NaN"} {
		if _, err := ParseRate(s); err == nil {
			t.Errorf("ParseRate(%q) accepted", s)
		}
	}
	for _, s := range []string{"1Gbit", "-1", "2TiB", "lots"} {
		if _, err := ParseSize(s); err == nil {
			t.Errorf("ParseSize(%q) accepted", s)
		}
	}
	if d, err := ParseDuration("", 7); d != 7 || err != nil {
		t.Errorf("ParseDuration(\"\", 7) = %v, %v", d, err)
	}
	for _, s := range []string{"5 us", "-1ms", "2h", "50"} {
		if _, err := ParseDuration(s, 0); err == nil {
			t.Errorf("ParseDuration(%q) accepted", s)
		}
	}
}

func TestStrings(t *testing.T) {
	for v, want := range map[Size]string{0: "0B", 1500: "1500B", 64000: "64KB", 1 << 20: "1MiB", 10e9: "10GB", 512 << 10: "512KiB"} {
		if got := v.String(); got != want {
			t.Errorf("Size(%d) = %q, want %q", uint64(v), got, want)
		}
	}
	for v, want := range map[Rate]string{0: "unlimited", 100e6: "100Mbit", 1.5e9: "1.5Gbit", 500: "500bit"} {
		if got := v.String(); got != want {
			t.Errorf("Rate(%d) = %q, want %q", uint64(v), got, want)
		}
	}
	if got := Duration(50 * time.Microsecond).String(); got != "50µs" {
		t.Errorf("Duration = %q", got)
	}
}

// doc has one field of each type at the top level and one in a nested
// mapping, as a config and a mechanism's keys do.
type doc struct {
	Size     Size     `yaml:"size"`
	Rate     Rate     `yaml:"rate"`
	Duration Duration `yaml:"duration"`
	Inner    struct {
		Size     Size     `yaml:"size"`
		Rate     Rate     `yaml:"rate"`
		Duration Duration `yaml:"duration"`
	} `yaml:"inner"`
}

func TestYAMLValues(t *testing.T) {
	var d doc
	src := "size: 64KB\nrate: 1Gbit\nduration: 50us\ninner: {size: 1MiB, rate: 100Mbit, duration: 2ms}\n"
	if err := yaml.Unmarshal([]byte(src), &d); err != nil {
		t.Fatal(err)
	}
	if d.Size != 64000 || d.Rate != 1e9 || d.Duration.D() != 50*time.Microsecond ||
		d.Inner.Size != 1<<20 || d.Inner.Rate != 100e6 || d.Inner.Duration.D() != 2*time.Millisecond {
		t.Fatalf("decoded %+v", d)
	}
}

// TestYAMLKeepsDefaults: an empty value (or null) leaves the field as it
// was before decoding: its default.
func TestYAMLKeepsDefaults(t *testing.T) {
	d := doc{Size: 1, Rate: 2, Duration: 3}
	if err := yaml.Unmarshal([]byte("size: \"\"\nrate: ''\nduration:\n"), &d); err != nil {
		t.Fatal(err)
	}
	if d.Size != 1 || d.Rate != 2 || d.Duration != 3 {
		t.Fatalf("defaults lost: %+v", d)
	}
	if err := yaml.Unmarshal([]byte("size: 0\nrate: 0\nduration: 0\n"), &d); err != nil {
		t.Fatal(err)
	}
	if d.Size != 0 || d.Rate != 0 || d.Duration != 0 {
		t.Fatalf("0 did not set 0: %+v", d)
	}
}

// TestYAMLErrors: every type refuses a bad scalar, a list and a mapping
// with an *Error that carries the value's line, at the top level and in a
// nested mapping.
func TestYAMLErrors(t *testing.T) {
	cases := []struct{ src, want string }{
		{"size: lots", `line 1: "lots" is not a size`},
		{"size: [1]", "line 1: a list is not a size"},
		{"rate: fast", `line 1: "fast" is not a rate`},
		{"rate: {a: 1}", "line 1: a mapping is not a rate"},
		{"duration: 5 us", `line 1: "5 us" is not a duration (write e.g. 50us, 2ms, 300s)`},
		{"duration: [5us]", "line 1: a list is not a duration"},
		{"inner:\n  size: 1e30", `line 2: "1e30" is more than 1TiB`},
		{"inner:\n  rate: [1Gbit]", "line 2: a list is not a rate"},
		{"inner:\n  duration: 2h", `line 2: "2h" is longer than an hour`},
	}
	for _, c := range cases {
		var d doc
		err := yaml.Unmarshal([]byte(c.src), &d)
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v (%T), want an *Error containing %q", c.src, err, err, c.want)
		}
	}
}

func TestAt(t *testing.T) {
	err := At("ports[1]", At("mechanisms.bfc", &Error{Path: "hrtt", Line: 14, Msg: `"5 us" is not a duration`}))
	if got, want := err.Error(), `ports[1].mechanisms.bfc.hrtt: line 14: "5 us" is not a duration`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := At("addr", &Error{Path: "[2]", Line: 3, Msg: "x"}).Error(); got != "addr[2]: line 3: x" {
		t.Errorf("list element: %q", got)
	}
	if got := At("rate", errors.New("plain")).Error(); got != "rate: plain" {
		t.Errorf("plain error: %q", got)
	}
}
