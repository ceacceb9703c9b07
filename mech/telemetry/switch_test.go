package telemetry_test

import (
	"strings"
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/mech"
	_ "github.com/gswitch/gswitch/mech/all"
	"github.com/gswitch/gswitch/mech/bfc"
	"github.com/gswitch/gswitch/mech/telemetry"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/wire/gsperf"
)

// TestRunsLastOnEgress: on a port it shares with any mechanism of the
// switch, int's hooks come last, whatever the order of the config; a
// mechanism added to gswitch fails this until int's Spec.After names it.
func TestRunsLastOnEgress(t *testing.T) {
	for _, n := range mech.Names() {
		if n == telemetry.Name || strings.HasPrefix(n, "test-") {
			continue
		}
		got, err := mech.Order([]string{telemetry.Name, n})
		if err != nil || got[1] != telemetry.Name {
			t.Errorf("int with %s: order %v, %v; want int last (add %s to int's Spec.After)", n, got, err, n)
		}
	}
}

// TestConfig: `int: {}` is the whole config; a key is refused, named with
// its port.
func TestConfig(t *testing.T) {
	c, err := config.Parse([]byte("ports: [{interface: mem0, name: a, mechanisms: {int: {}}}, {interface: mem1, name: b, mechanisms: {int: }}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range c.Ports {
		if len(p.Mechanisms) != 1 || p.Mechanisms[0].Name != telemetry.Name {
			t.Errorf("ports[%d]: %v", i, p.Mechanisms)
		}
	}
	_, err = config.Parse([]byte("ports: [{interface: mem0, mechanisms: {int: {slots: 4}}}]\n"))
	if err == nil || !strings.Contains(err.Error(), `unknown key "slots" in ports[0].mechanisms.int`) {
		t.Errorf("a key int does not have: %v", err)
	}
}

var ipB = [4]byte{10, 0, 0, 3}

// line is two switches in memory: host A on sw1's port h, sw1's port c
// (1 Gbit/s) to sw2's port a, sw2's port r (100 Mbit/s) to host B; int on
// the two ports toward B, with BFC on every port if withBFC (which tags
// the frames between the switches: sw1's port c runs BFC's Egress, then
// int's).
func line(t *testing.T, withBFC bool) (f *dptest.Fabric, sw1, sw2 *dptest.Harness) {
	m := func(withINT bool) config.Mechanisms {
		var ms config.Mechanisms
		if withINT { // listed first: the order is what int declares
			ms = append(ms, config.Mechanism{Name: telemetry.Name, Config: &telemetry.Config{}})
		}
		if withBFC {
			ms = append(ms, config.Mechanism{Name: "bfc", Config: &bfc.Config{}})
		}
		return ms
	}
	f = dptest.NewFabric()
	sw1 = f.Add(t, dataplane.Config{Config: config.Config{Workers: 1, SwitchID: 1, Ports: []config.Port{
		{Name: "h", Scheduler: "drr", Queues: 16, Mechanisms: m(false)},
		{Name: "c", Role: mech.RoleFabric, Scheduler: "drr", Queues: 16, Rate: 1e9, Burst: 1538, Buffer: 4 << 20, Mechanisms: m(true)},
	}}}, 4096)
	sw2 = f.Add(t, dataplane.Config{Config: config.Config{Workers: 1, SwitchID: 2, Ports: []config.Port{
		{Name: "a", Role: mech.RoleFabric, Scheduler: "drr", Queues: 16, Mechanisms: m(false)},
		{Name: "r", Scheduler: "drr", Queues: 16, Rate: 100e6, Burst: 1538, Buffer: 4 << 20, Mechanisms: m(true)},
	}}}, 4096)
	f.Connect(sw1, 1, sw2, 0)
	sw2.Links[1].Record = true
	sw2.Links[1].Inject(pkttest.ARP(pkttest.MAC(3), ipB, ip1)) // both switches learn B
	f.Settle()
	sw2.Links[1].Sent = nil
	return f, sw1, sw2
}

// TestThroughTwoSwitches: twenty segments with two slots each, sent at
// once from A to B, arrive with hop 0 from sw1's 1 Gbit/s port and hop 1
// from sw2's 100 Mbit/s port, their checksums right. At each hop the
// records of consecutive segments say the port's rate (the line is busy
// with them), the tx bytes grow by each frame's wire bytes as that port
// sent it (with BFC's 4-byte tag on sw1's port: int ran after BFC's
// Egress), and the queue the 100 Mbit/s port holds behind each segment is
// the frames that leave after it. An ack with an option is left alone.
func TestThroughTwoSwitches(t *testing.T) {
	for _, withBFC := range []bool{false, true} {
		f, sw1, sw2 := line(t, withBFC)
		if got := sw1.SW.Ports()[1].Mechanisms(); withBFC && (len(got) != 2 || got[1] != telemetry.Name) {
			t.Fatalf("hook order %v, want int last", got)
		}
		const n = 20
		var sent [][]byte
		for i := 0; i < n; i++ {
			s := seg(gsperf.TypeData, 2, 0, 1000)
			gsperf.Header(s).SetSeq(uint64(1000 * i))
			fr := pkttest.UDP4(pkttest.MAC(3), mac1, ip1, ipB, 4000, 5000, s)
			setUDPSum(fr)
			sent = append(sent, fr)
			sw1.Links[0].Inject(fr)
		}
		ack := pkttest.UDP4(pkttest.MAC(3), mac1, ip1, ipB, 4000, 5000, seg(gsperf.TypeAck, 2, 0, 0))
		setUDPSum(ack)
		sw1.Links[0].Inject(ack)
		f.Advance(5e6, 10e3)
		got := sw2.Links[1].Sent
		if len(got) != n+1 {
			t.Fatalf("BFC %v: B got %d frames, want %d", withBFC, len(got), n+1)
		}
		tag := 0
		if withBFC {
			tag = 4
		}
		var prev [2]gsperf.INTHop
		for i, fr := range got[:n] {
			if gsperf.Header(fr[42:]).Seq() != uint64(1000*i) || len(fr) != len(sent[i]) {
				t.Fatalf("frame %d is not segment %d", i, i)
			}
			o := optionOf(fr)
			if o.Hops() != 2 || udpSum(fr) != 0 {
				t.Fatalf("segment %d: %d hops, checksum %#x", i, o.Hops(), udpCk(fr))
			}
			h := [2]gsperf.INTHop{o.Hop(0), o.Hop(1)}
			if h[0].RateKbps != 1e6 || h[1].RateKbps != 1e5 || h[1].TS < h[0].TS {
				t.Fatalf("segment %d: %+v", i, h)
			}
			if i > 0 {
				for k, w := range []uint64{wire(len(fr) + tag), wire(len(fr))} {
					if h[k].TxBytes-prev[k].TxBytes != w {
						t.Errorf("segment %d, hop %d: tx grew by %d, want %d", i, k, h[k].TxBytes-prev[k].TxBytes, w)
					}
				}
				// The ports are busy with the segments: consecutive records
				// give each port's rate (sw1's only without BFC, whose
				// pauses idle it).
				for k, want := range []float64{1e9, 100e6} {
					rate := float64(h[k].TxBytes-prev[k].TxBytes) * 8e9 / float64(h[k].TS-prev[k].TS)
					if (k == 1 || !withBFC) && (rate < 0.99*want || rate > 1.01*want) {
						t.Errorf("segment %d: hop %d says %.0f bit/s, want %.0f", i, k, rate, want)
					}
				}
			}
			// Without BFC, every segment has reached sw2 by the time the
			// fifth leaves it: from then on each leaves behind exactly
			// the segments after it and the ack. (BFC holds the queue near
			// its threshold, pausing sw1.)
			if behind := uint64(n-1-i)*wire(len(fr)) + wire(len(ack)); !withBFC && i >= 4 && uint64(h[1].QLen) != behind {
				t.Errorf("segment %d: hop 1's queue %d, want %d", i, h[1].QLen, behind)
			}
			prev = h
		}
		if h := optionOf(got[n]); h.Hops() != 0 || udpSum(got[n]) != 0 {
			t.Errorf("the ack got %d hops", h.Hops())
		}
		if last := optionOf(got[n-1]).Hop(1); last.QLen != uint32(wire(len(ack))) {
			t.Errorf("the last segment left %d B behind, want the ack's %d", last.QLen, wire(len(ack)))
		}
		in1, in2 := sw1.SW.Mechanisms()[telemetry.Name].(*telemetry.INT), sw2.SW.Mechanisms()[telemetry.Name].(*telemetry.INT)
		if in1.HopsWritten(1) != n || in2.HopsWritten(1) != n || in1.HopsWritten(0) != 0 {
			t.Errorf("hops written: %d and %d, want %d each", in1.HopsWritten(1), in2.HopsWritten(1), n)
		}
		sw1.CheckFrames(t)
		sw2.CheckFrames(t)
	}
}
