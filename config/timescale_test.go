package config

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/mech/bfc"
	"github.com/gswitch/gswitch/mech/sfc"
	"github.com/gswitch/gswitch/units"
)

func TestTimescaleKey(t *testing.T) {
	c, err := Parse([]byte("ports: [{interface: a}]"))
	if err != nil || c.Timescale != 1 {
		t.Fatalf("default timescale %v, %v", c.Timescale, err)
	}
	c, err = Parse([]byte("ports: [{interface: a}]\ntimescale: 1e3"))
	if err != nil || c.Timescale != 1000 || c.Timescale.String() != "1000" {
		t.Fatalf("timescale 1e3: %v, %v", c.Timescale, err)
	}
	for in, want := range map[string]string{
		"0":      `timescale: line 2: 0 is below 1`,
		"0.5":    `timescale: line 2: 0.5 is below 1`,
		"-3":     `timescale: line 2: -3 is below 1`,
		".nan":   `timescale: line 2: ".nan" is not a number`,
		"NaN":    `timescale: line 2: NaN is not a number from 1 to 1e+06`,
		"2e6":    `timescale: line 2: 2e+06 is more than 1e+06`,
		"auto":   `timescale: line 2: "auto" is not a number`,
		"[10]":   `timescale: line 2: a list is not a timescale`,
		"10Gbit": `timescale: line 2: "10Gbit" is not a number`,
	} {
		_, err := Parse([]byte("ports: [{interface: a}]\ntimescale: " + in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("timescale: %s: error %v, want %q", in, err, want)
		}
	}
}

// everything sets every Duration and Rate key gswitchd has, on a switch
// port with BFC and one with SFC (the other mechanisms have none).
const everything = `
spin: 20us
slice: 200us
catchup: 3ms
mac_table: {aging: 60s, move_hold: 2s}
ports:
  - interface: a
    rate: 10Gbit
    rtt: 10us
    delay: 4us
    rx_delay: 3us
    scheduler: drr
    mechanisms: {bfc: {hrtt: 12us, budget: 30us, sticky: 20us, bitmap_period: 40us, watchdog: 300us}}
  - interface: b
    rate: 100Gbit
    delay: 1us
    mechanisms: {sfc: {rtt: 10us, bloom_reset: 4us, estimator: true, estimator_destinations: [10.0.0.1], estimator_rate: 40Gbit, max_pause: 2ms}}
  - interface: c
    rate: 25Gbit
    mechanisms: {sfc: {}, expresspass: {}}
`

// TestTimescaleScalesEveryFabricKey: at K = 1000 every fabric key (and the
// fabric defaults the file left: a port's rtt, SFC's rtt) is put on this
// machine's clock, and every wall key keeps the file's value.
func TestTimescaleScalesEveryFabricKey(t *testing.T) {
	c, err := Parse([]byte(everything + "timescale: 1000\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, b, cc := &c.Ports[0], &c.Ports[1], &c.Ports[2]
	bf := a.Mechanisms[0].Config.(*bfc.Config)
	sf := b.Mechanisms[0].Config.(*sfc.Config)
	sfDefault := cc.Mechanisms[0].Config.(*sfc.Config)
	us, ms := time.Microsecond, time.Millisecond
	for _, d := range []struct {
		key       string
		got, want time.Duration
	}{
		// fabric: x 1000
		{"ports[0].rtt", a.RTT.D(), 10 * ms},
		{"ports[0].delay", a.Delay.D(), 4 * ms},
		{"ports[0].rx_delay", a.RxDelay.D(), 3 * ms},
		{"ports[1].rtt (default 200us)", b.RTT.D(), 200 * ms},
		{"bfc.hrtt", bf.HRTT.D(), 12 * ms},
		{"bfc.sticky", bf.Sticky.D(), 20 * ms},
		{"bfc.bitmap_period", bf.BitmapPeriod.D(), 40 * ms},
		{"bfc.watchdog", bf.Watchdog.D(), 300 * ms},
		{"sfc.rtt", sf.RTT.D(), 10 * ms},
		{"sfc.bloom_reset", sf.BloomReset.D(), 4 * ms},
		{"sfc.max_pause", sf.MaxPause.D(), 2 * time.Second},
		{"sfc.rtt (default 450us)", sfDefault.RTT.D(), 450 * ms},
		// wall: as written
		{"spin", c.Spin.D(), 20 * us},
		{"slice", c.Slice.D(), 200 * us},
		{"catchup", c.CatchUp.D(), 3 * ms},
		{"mac_table.aging", c.MACTable.Aging.D(), 60 * time.Second},
		{"mac_table.move_hold", c.MACTable.MoveHold.D(), 2 * time.Second},
		{"bfc.budget", bf.Budget.D(), 30 * us},
	} {
		if d.got != d.want {
			t.Errorf("%s: %v, want %v", d.key, d.got, d.want)
		}
	}
	for _, r := range []struct {
		key       string
		got, want units.Rate
	}{
		{"ports[0].rate", a.Rate, 10e6},
		{"ports[1].rate", b.Rate, 100e6},
		{"sfc.estimator_rate", sf.EstimatorRate, 40e6},
	} {
		if r.got != r.want {
			t.Errorf("%s: %v, want %v", r.key, r.got, r.want)
		}
	}
	// Bytes do not change: a port's default burst and pfabric's buffer
	// come from rate x time, the same on both clocks.
	if a.Burst != 0 || a.Buffer != DefaultBuffer {
		t.Errorf("ports[0] burst %v buffer %v", a.Burst, a.Buffer)
	}
}

// TestTimescaleFieldsAreDecided lists every Duration and Rate key of the
// config and of each mechanism, each decided fabric (scaled) or wall (not):
// a new key fails here until its author decides (a wall one gets the tag
// `timescale:"wall"`) and adds it to the list and to docs/topology.md.
func TestTimescaleFieldsAreDecided(t *testing.T) {
	fabric, wall := timescaleFields(reflect.TypeOf(Config{}), "")
	wantFabric := []string{"ports[].rate", "ports[].rtt", "ports[].delay", "ports[].rx_delay"}
	wantWall := []string{"spin", "slice", "catchup", "mac_table.aging", "mac_table.move_hold"}
	if !slices.Equal(fabric, wantFabric) || !slices.Equal(wall, wantWall) {
		t.Errorf("switch and port keys: fabric %v, wall %v; want %v, %v", fabric, wall, wantFabric, wantWall)
	}
	mechFabric := map[string][]string{
		"bfc":         {"hrtt", "sticky", "bitmap_period", "watchdog"},
		"sfc":         {"rtt", "bloom_reset", "estimator_rate", "max_pause"},
		"afq":         nil,
		"pfabric":     nil,
		"expresspass": nil,
		"ecn":         {"rtt"},
		"pfc":         {"watchdog", "watchdog_restore"},
		"int":         nil,
	}
	mechWall := map[string][]string{"bfc": {"budget"}, "pfc": {"response"}}
	for _, name := range mech.Names() {
		spec, _ := mech.Lookup(name)
		want, ok := mechFabric[name]
		if !ok {
			t.Errorf("mechanism %s: add its fabric and wall keys to this test (and to docs/topology.md, Timescale)", name)
			continue
		}
		fabric, wall := timescaleFields(reflect.TypeOf(spec.Config()), "")
		if !slices.Equal(fabric, want) || !slices.Equal(wall, mechWall[name]) {
			t.Errorf("%s: fabric %v, wall %v; want %v, %v", name, fabric, wall, want, mechWall[name])
		}
	}
}

// TestTimescaleTagsAreWellFormed: the tag's only value is wall, and only on
// a Duration or Rate field (elsewhere it would mean nothing).
func TestTimescaleTagsAreWellFormed(t *testing.T) {
	types := []reflect.Type{reflect.TypeOf(Config{})}
	for _, name := range mech.Names() {
		spec, _ := mech.Lookup(name)
		types = append(types, reflect.TypeOf(spec.Config()))
	}
	var check func(reflect.Type, string)
	check = func(ty reflect.Type, path string) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Map {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct {
			return
		}
		for i := 0; i < ty.NumField(); i++ {
			f := ty.Field(i)
			tag, ok := f.Tag.Lookup(units.TimescaleTag)
			if ok && (tag != units.WallClock || (f.Type != durationType && f.Type != rateType)) {
				t.Errorf("%s.%s: tag %s:%q (only %q, on a units.Duration or units.Rate)", path, f.Name, units.TimescaleTag, tag, units.WallClock)
			}
			check(f.Type, path+"."+f.Name)
		}
	}
	for _, ty := range types {
		check(ty, ty.String())
	}
}

// TestTimescaleOneChangesNothing: timescale 1 (written or not) leaves every
// value as the file gives it, for every shipped example and the config
// with every timed key; so does scaling by 1.
func TestTimescaleOneChangesNothing(t *testing.T) {
	files, _ := filepath.Glob("../configs/*.yaml")
	texts := map[string]string{"everything": everything}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts[f] = string(b)
	}
	key := regexp.MustCompile(`(?m)^timescale:.*$`)
	for name, text := range texts {
		text = key.ReplaceAllString(text, "")
		plain, err := Parse([]byte(text))
		if err != nil {
			t.Fatal(name, err)
		}
		one, err := Parse([]byte(text + "\ntimescale: 1\n"))
		if err != nil {
			t.Fatal(name, err)
		}
		if !reflect.DeepEqual(plain, one) {
			t.Errorf("%s: timescale 1 changed the config", name)
		}
		scaleFabric(reflect.ValueOf(one).Elem(), 1)
		if !reflect.DeepEqual(plain, one) {
			t.Errorf("%s: scaling by 1 changed the config", name)
		}
	}
}

// TestTimescaleBoundsShowBothClocks: a value the file may hold but this
// machine cannot run at the timescale is refused, naming the key, the
// file's value, the machine's and the fix.
func TestTimescaleBoundsShowBothClocks(t *testing.T) {
	for in, want := range map[string]string{
		"ports: [{interface: a}, {interface: b}, {interface: c, delay: 4ms}]\ntimescale: 1000":          "ports[2].delay: 4ms at timescale 1000 is 4s on this machine, more than the 1s a delay line holds (lower timescale or delay)",
		"ports: [{interface: a, rx_delay: 2ms}]\ntimescale: 1000":                                       "ports[0].rx_delay: 2ms at timescale 1000 is 2s on this machine, more than the 1s a delay line holds (lower timescale or rx_delay)",
		"ports: [{interface: a, rate: 1Mbit}]\ntimescale: 1000":                                         "ports[0].rate: 1Mbit at timescale 1000 is 1kbit on this machine, less than the 8kbit a port's shaper takes (lower timescale or raise rate)",
		"ports: [{interface: a, rate: 1Gbit, mechanisms: {sfc: {rtt: 2ms}}}]\ntimescale: 1000":          "ports[0].mechanisms.sfc.rtt: 2s out of range (1us to 1s: the feedback loop delay, from the sender to the congested queue and of the BTS back) (at timescale 1000 the file's rtt: 2ms is 2s on this machine; lower timescale or rtt)",
		"ports: [{interface: a, scheduler: drr, mechanisms: {bfc: {hrtt: 5ms}}}]\ntimescale: 500":       "ports[0].mechanisms.bfc.hrtt: 2.5s is longer than 1s (at timescale 500 the file's hrtt: 5ms is 2.5s on this machine; lower timescale or hrtt)",
		"ports: [{interface: a, rate: 1Gbit, mechanisms: {sfc: {bloom_reset: 20ms}}}]\ntimescale: 1000": "ports[0].mechanisms.sfc.bloom_reset: 20s out of range (1us to 10s; default rtt/2) (at timescale 1000 the file's bloom_reset: 20ms is 20s on this machine; lower timescale or bloom_reset)",
		"ports: [{interface: a, rate: 100Mbit, mechanisms: {expresspass: {}}}]\ntimescale: 1000":        "ports[0].mechanisms.expresspass.the port's rate 100000 bit/s is too low for a credit meter (at least 155kbit) (at timescale 1000: this machine runs the file's times x 1000 and its rates / 1000)",
	} {
		_, err := Parse([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q:\n error %v\n want  %s", in, err, want)
		}
	}
	// A wall key is checked as the file gives it.
	if _, err := Parse([]byte("ports: [{interface: a, scheduler: drr, mechanisms: {bfc: {budget: 2s}}}]\ntimescale: 10")); err == nil ||
		err.Error() != "ports[0].mechanisms.bfc.budget: 2s is longer than 1s" {
		t.Errorf("wall key: %v", err)
	}
	// The same files at K = 1 (or a small K) are fine, and at K = 1 the
	// errors are the plain ones.
	if _, err := Parse([]byte("ports: [{interface: a, delay: 4ms, rate: 2Mbit}]\ntimescale: 200")); err != nil {
		t.Errorf("4ms at 200: %v", err)
	}
	if _, err := Parse([]byte("ports: [{interface: a, delay: 2s}]")); err == nil || err.Error() != "ports[0].delay: 2s is longer than 1s" {
		t.Errorf("plain delay error: %v", err)
	}
}

// TestTimescaleReachesMechanisms: Validate sees K in mech.PortInfo; BFC's
// message about its bitmap-period clamp gives the clamp on this machine.
func TestTimescaleReachesMechanisms(t *testing.T) {
	_, err := Parse([]byte("ports: [{interface: a, scheduler: drr, mechanisms: {bfc: {bitmap_period: 1ns}}}]\ntimescale: 10"))
	if err == nil || !strings.Contains(err.Error(), "within [1ms, 10ms] at timescale 10") {
		t.Fatalf("err = %v", err)
	}
	var got mech.PortInfo
	probe := validatorFunc(func(p mech.PortInfo) error { got = p; return nil })
	p := Port{Name: "x", Mechanisms: Mechanisms{{Name: "probe", Config: probe}}}
	p.validateMechanisms("ports[0]", 20) // mech.Check then refuses the unregistered name
	if got.Name != "x" || got.Timescale != 20 {
		t.Fatalf("PortInfo %+v", got)
	}
}

type validatorFunc func(mech.PortInfo) error

func (f validatorFunc) Validate(p mech.PortInfo) error { return f(p) }

// TestTimescaleChangesAreRestarts: a reload refuses a new timescale (every
// value would move), and compares the others as the machine runs them
// (the default rtt, 200us of the fabric, is 200ms at 1000).
func TestTimescaleChangesAreRestarts(t *testing.T) {
	a, err := Parse([]byte("ports: [{interface: a, rate: 10Gbit}]\ntimescale: 1000"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse([]byte("ports: [{interface: a, rate: 10Mbit, rtt: 200ms}]"))
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Changes(b); strings.Join(got, ",") != "timescale" {
		t.Errorf("changes %v, want [timescale]", got)
	}
	if got := a.Ports[0].Changes(&b.Ports[0]); len(got) != 0 {
		t.Errorf("10Gbit at 1000 and 10Mbit at 1 differ in %v", got)
	}
}
