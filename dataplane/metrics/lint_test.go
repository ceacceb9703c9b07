package metrics

import (
	"net/netip"
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/mech/afq"
	_ "github.com/gswitch/gswitch/mech/all"
	"github.com/gswitch/gswitch/sched"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// TestMetricNamesFollowConventions lints everything gswitchd exports (the
// switch's collector and the collector of every mechanism linked into
// gswitchd, each enabled on a port with its defaults) as `promtool check
// metrics` does: base units, _total on counters only, no type suffixes on
// gauges. A mechanism added to mech/all is linted without changing this
// test, as long as its default config builds on one of the port setups
// below.
func TestMetricNamesFollowConventions(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	sw := lintSwitch(t, func(c *dataplane.Config) { // port b routed: the L3 metrics too
		c.Ports[1].Addrs = []netip.Prefix{netip.MustParsePrefix("10.0.0.1/24")}
	})
	reg.MustRegister(New(sw, []PortInfo{{Interface: "veth-a", XDPMode: "native"}, {Interface: "veth-b", XDPMode: "native"}}))
	for _, name := range mech.Names() {
		spec, _ := mech.Lookup(name)
		var built *dataplane.Switch
		var errs []error
		for _, role := range []mech.Role{mech.RoleFabric, mech.RoleHost} {
			s, err := tryLintSwitch(&spec, role)
			if err == nil {
				built = s
				break
			}
			errs = append(errs, err)
		}
		if built == nil {
			t.Errorf("mechanism %s does not build with its defaults on a fabric or host port of 1 Gbit/s with its first scheduler (%v): its metrics are not linted; add the setup it needs to tryLintSwitch", name, errs)
			continue
		}
		defer built.Close()
		c, ok := built.Mechanisms()[name].(prometheus.Collector)
		if !ok {
			continue
		}
		if err := reg.Register(c); err != nil {
			t.Errorf("mechanism %s: %v", name, err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	if len(mfs) < 20 {
		t.Fatalf("only %d metric families gathered", len(mfs))
	}
}

func lintSwitch(t *testing.T, mod func(*dataplane.Config)) *dataplane.Switch {
	const fs = 2048
	mem := make([]byte, 2048*fs)
	cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{{Name: "a", Scheduler: "rsp", Queues: 8,
		Mechanisms: config.Mechanisms{{Name: "afq", Config: &afq.Config{BytesPerRound: 1514, Sketch: afq.Sketch{Rows: 2, Cols: 16}, ECNRounds: 2}}}},
		{Name: "b", Rate: 10e6}}}}
	if mod != nil {
		mod(&cfg)
	}
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	sw, err := dataplane.New(cfg, mem, fs, [][]dataplane.Link{{dataplane.NewMemLink(mem, fs, 64)}, {dataplane.NewMemLink(mem, fs, 64)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sw.Close() })
	return sw
}

// tryLintSwitch builds a two-port switch with the mechanism enabled, with
// its default config, on port "m" (role, 1 Gbit/s, its first scheduler).
func tryLintSwitch(spec *mech.Spec, role mech.Role) (*dataplane.Switch, error) {
	const fs = 2048
	mem := make([]byte, 2048*fs)
	schedName := "fifo"
	if len(spec.Schedulers) > 0 {
		schedName = spec.Schedulers[0]
	} else if spec.SetsQueue {
		schedName = "prio"
	}
	queues := 8
	if s, ok := sched.Lookup(schedName); ok && s.OneQueue {
		queues = 1
	}
	cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{
		{Name: "m", Role: role, Rate: 1e9, Scheduler: schedName, Queues: queues, Mechanisms: config.Mechanisms{{Name: spec.Name, Config: spec.Config()}}},
		{Name: "o", Role: role, Rate: 1e9}}}}
	if err := cfg.Complete(); err != nil { // runs the mechanism's own checks, as for a file
		return nil, err
	}
	return dataplane.New(cfg, mem, fs, [][]dataplane.Link{{dataplane.NewMemLink(mem, fs, 64)}, {dataplane.NewMemLink(mem, fs, 64)}})
}
