package bfc_test

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/mech/bfc"
	"github.com/gswitch/gswitch/mech/pfabric"
	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/wire"
)

// router: an L3 switch. Port 0 "fab" (10.255.0.1/31) faces a BFC switch,
// port 1 "fab2" (10.255.0.3/31) a switch that is not BFC, port 2 "host"
// (10.2.0.254/24) host 10.2.0.1, port 3 "next" (10.255.0.5/31) a BFC
// switch toward 10.3.0.0/24.
func router(t *testing.T) *dptest.Harness {
	mac := func(i byte) net.HardwareAddr { return net.HardwareAddr{0x02, 0xaa, 0, 0, 0, i} }
	hostMAC := func(i byte) config.MAC { m := pkttest.MAC(i); return m[:] }
	pf := netip.MustParsePrefix
	cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{
		{Name: "fab", Role: mech.RoleFabric, MAC: config.MAC(mac(0)), Addrs: []netip.Prefix{pf("10.255.0.1/31")}, Scheduler: "drr", Queues: 8, Mechanisms: mechs(&bfc.Config{})},
		{Name: "fab2", Role: mech.RoleFabric, MAC: config.MAC(mac(1)), Addrs: []netip.Prefix{pf("10.255.0.3/31")}, Scheduler: "drr", Queues: 8},
		{Name: "host", MAC: config.MAC(mac(2)), Addrs: []netip.Prefix{pf("10.2.0.254/24")}, Scheduler: "drr", Queues: 8, Mechanisms: mechs(&bfc.Config{})},
		{Name: "next", Role: mech.RoleFabric, MAC: config.MAC(mac(3)), Addrs: []netip.Prefix{pf("10.255.0.5/31")}, Scheduler: "drr", Queues: 8, Mechanisms: mechs(&bfc.Config{})},
	},
		Routes: []config.Route{{Prefix: pf("10.3.0.0/24"), Via: []netip.Addr{netip.MustParseAddr("10.255.0.4")}}},
		Neighbors: []config.Neighbor{
			{IP: netip.MustParseAddr("10.2.0.1"), MAC: hostMAC(2)},
			{IP: netip.MustParseAddr("10.255.0.4"), MAC: hostMAC(4)},
		}}}
	h := dptest.New(t, cfg, 4096)
	h.Record()
	return h
}

// TestTaggedFramesAreRouted: tagged frames parse and route through L3
// ports. From a BFC port the tag is removed on the way in; toward a BFC
// neighbour a tag with the frame's own queue is written; toward a host there
// is none, whichever port the frame came from. The routed frame is intact
// (TTL one lower, IPv4 checksum right, payload unchanged).
func TestTaggedFramesAreRouted(t *testing.T) {
	h := router(t)
	b := inst(h)
	payload := []byte("routed through a BFC switch")
	for _, c := range []struct {
		in     int
		dst    [4]byte
		out    int
		tagged bool
	}{
		{0, [4]byte{10, 2, 0, 1}, 2, false},
		{0, [4]byte{10, 3, 0, 9}, 3, true},
		{1, [4]byte{10, 2, 0, 1}, 2, false},
		{1, [4]byte{10, 3, 0, 9}, 3, true},
	} {
		for i := range h.Links {
			h.Links[i].Sent = nil
		}
		inMAC := [6]byte(h.SW.Ports()[c.in].MAC)
		f := pkttest.UDP4(inMAC, pkttest.MAC(9), [4]byte{10, 1, 0, 1}, c.dst, 1234, 5678, payload)
		g := make([]byte, len(f)+4)
		copy(g[4:], f)
		wire.InsertTag(g, 4000)
		h.Links[c.in].Inject(g)
		h.Settle()
		if len(h.Links[c.out].Sent) != 1 {
			t.Fatalf("from port %d to %v: %d frames on port %d; drops %v", c.in, c.dst, len(h.Links[c.out].Sent), c.out, h.SW.Counters(c.in).Drops)
		}
		o := h.Links[c.out].Sent[0]
		q, tagged := wire.ReadTag(o)
		if tagged != c.tagged || (tagged && q >= 8) {
			t.Fatalf("from port %d out of port %d: tagged %v (queue %d), want tagged %v with a queue of the port", c.in, c.out, tagged, q, c.tagged)
		}
		if tagged {
			o = o[4:]
			copy(o, h.Links[c.out].Sent[0][:12])
		}
		var p pkt.Packet
		if e := pkt.Parse(o, &p); e != pkt.OK || p.L3Off != 14 {
			t.Fatalf("routed frame does not parse: %v", e)
		}
		if o[14+8] != 63 || pkttest.Checksum(o[14:34]) != 0 || string(o[42:]) != string(payload) || [4]byte(o[30:34]) != c.dst {
			t.Fatalf("routed frame damaged: % x", o)
		}
	}
	if st := b.Stats(0); st.TagsRemoved != 2 {
		t.Fatalf("%d tags removed on the BFC port, want 2", st.TagsRemoved)
	}
	h.CheckFrames(t)
}

// TestReadersOfTaggedFrames: stages that find headers by the parser's
// offsets (pFabric's rank, ECN marking) read a tagged frame right.
func TestReadersOfTaggedFrames(t *testing.T) {
	payload := make([]byte, 100)
	(&proto.Header{Type: proto.TypeData, Priority: 123456}).Encode(payload)
	f := pkttest.UDP4(pkttest.MAC(1), pkttest.MAC(2), ip1, ip3, 1, 2, payload)
	f[15] = 2 // ECT(0)
	f[24], f[25] = 0, 0
	sum := pkttest.Checksum(f[14:34])
	f[24], f[25] = byte(sum>>8), byte(sum)
	mem := make([]byte, 4096)
	frame := mem[256 : 256+len(f)+4]
	copy(frame[4:], f)
	wire.InsertTag(frame, 7)
	p := pkt.Packet{Addr: 256, Len: uint32(len(frame))}
	if e := pkt.Parse(frame, &p); e != pkt.OK || p.Flags&pkt.FlagUpQ == 0 || p.UpQ != 7 || p.L3Off != 18 || p.L4Off != 38 {
		t.Fatalf("parse %v: %+v", e, p)
	}
	if r := pfabric.GsperfRank(mem, &p); r != 123456 {
		t.Fatalf("pFabric reads rank %d from a tagged frame, want 123456", r)
	}
	if !pkt.MarkCE(frame, &p) || frame[19]&3 != 3 || pkttest.Checksum(frame[18:38]) != 0 {
		t.Fatalf("ECN mark on a tagged frame: TOS %#x, checksum %#x", frame[19], pkttest.Checksum(frame[18:38]))
	}
	if binary.BigEndian.Uint16(frame[16:]) != pkt.EtherTypeIPv4 {
		t.Fatal("marking moved the inner EtherType")
	}
}
