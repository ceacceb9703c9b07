package metrics

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestCollectorReportsTraffic(t *testing.T) {
	const fs = 2048
	mem := make([]byte, 2048*fs)
	a, b := dataplane.NewMemLink(mem, fs, 128), dataplane.NewMemLink(mem, fs, 128)
	cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{{Name: "a"}, {Name: "b", Rate: 10e6}}}}
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	sw, err := dataplane.New(cfg, mem, fs, [][]dataplane.Link{{a}, {b}})
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	sw.Step(0)
	f := pkttest.UDP4(pkttest.MAC(2), pkttest.MAC(1), [4]byte{1}, [4]byte{2}, 1, 2, make([]byte, 100))
	for i := 0; i < 5; i++ {
		a.Inject(f)
	}
	a.Inject([]byte{1, 2})
	sw.Step(0)
	sw.Step(0)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(New(sw, []PortInfo{{Interface: "veth-a", XDPMode: "native"}, {Interface: "veth-b", XDPMode: "native"}}))
	want := `
# HELP gswitch_port_rx_packets_total Frames received on the port.
# TYPE gswitch_port_rx_packets_total counter
gswitch_port_rx_packets_total{port="a"} 6
gswitch_port_rx_packets_total{port="b"} 0
# HELP gswitch_port_tx_packets_total Frames sent on the port.
# TYPE gswitch_port_tx_packets_total counter
gswitch_port_tx_packets_total{port="a"} 0
gswitch_port_tx_packets_total{port="b"} 5
# HELP gswitch_port_rate_bytes_per_second Egress line rate of the port in bytes per second (bit/s / 8; 0 = unlimited); changes with gswitchctl set.
# TYPE gswitch_port_rate_bytes_per_second gauge
gswitch_port_rate_bytes_per_second{port="a"} 0
gswitch_port_rate_bytes_per_second{port="b"} 1.25e+06
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "gswitch_port_rx_packets_total", "gswitch_port_tx_packets_total", "gswitch_port_rate_bytes_per_second"); err != nil {
		t.Fatal(err)
	}
	if v := testutil.ToFloat64(onlyMetric(t, reg, "gswitch_drops_total", `reason="malformed"`, `port="a"`)); v != 1 {
		t.Fatalf("malformed drops %v", v)
	}
	if n, err := testutil.GatherAndCount(reg, "gswitch_queue_depth_bytes", "gswitch_umem_frames", "gswitch_port_info"); err != nil || n != 2+8+2 { // queues, frame states (free, fill, handoff, queued, tx, delayed, returning, assembling), ports
		t.Fatalf("count %d %v", n, err)
	}
}

// onlyMetric returns a collector yielding the one sample of name whose labels contain all of match.
func onlyMetric(t *testing.T, reg *prometheus.Registry, name string, match ...string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.Metric {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = `"` + l.GetValue() + `"`
			}
			for _, x := range match {
				k, v, _ := strings.Cut(x, "=")
				if labels[k] != v {
					continue next
				}
			}
			return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "x"}, func() float64 {
				if m.Counter != nil {
					return m.Counter.GetValue()
				}
				return m.Gauge.GetValue()
			})
		}
	}
	t.Fatalf("no %s with %v", name, match)
	return nil
}

// TestARPCounters: the neighbour table's counters are exported as
// gswitch_arp_total by result: a gratuitous ARP for an unbound address
// (unsolicited), a request for the gateway (learnt), then the same
// address from another MAC (move_refused).
func TestARPCounters(t *testing.T) {
	const fs = 2048
	mem := make([]byte, 2048*fs)
	a, b := dataplane.NewMemLink(mem, fs, 128), dataplane.NewMemLink(mem, fs, 128)
	cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{
		{Name: "a", Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.0.254/24")}},
		{Name: "b", Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.1.254/24")}}}}}
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	sw, err := dataplane.New(cfg, mem, fs, [][]dataplane.Link{{a}, {b}})
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	sw.Step(0)
	host, gw := [4]byte{10, 0, 0, 5}, [4]byte{10, 0, 0, 254}
	a.Inject(pkttest.ARP(pkttest.MAC(1), host, host))
	a.Inject(pkttest.ARP(pkttest.MAC(1), host, gw))
	a.Inject(pkttest.ARP(pkttest.MAC(2), host, gw))
	for i := 0; i < 4; i++ {
		sw.Step(0)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(New(sw, nil))
	want := `
# HELP gswitch_arp_total What the neighbour (ARP) table of an L3 switch did with ARP that could bind an address: learnt (an unbound address bound), move_refused (ARP that would move a bound or static address to another MAC or port, ignored), unsolicited (a reply the switch did not ask for, or gratuitous ARP, for an unbound address: ignored), rate_limited (the port's budget of new bindings was spent), full (no free slot on the address's two paths).
# TYPE gswitch_arp_total counter
gswitch_arp_total{result="full"} 0
gswitch_arp_total{result="learnt"} 1
gswitch_arp_total{result="move_refused"} 1
gswitch_arp_total{result="rate_limited"} 0
gswitch_arp_total{result="unsolicited"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "gswitch_arp_total"); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.GatherAndLint(reg, "gswitch_arp_total")
	if err != nil || len(problems) != 0 {
		t.Fatalf("promlint: %v %v", problems, err)
	}
}
