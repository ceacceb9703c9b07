package expresspass_test

import (
	"math"
	"net/netip"
	"strings"
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/mech/expresspass"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/units"
	"github.com/gswitch/gswitch/wire"
)

var (
	ipR, ipS   = [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2} // data receiver (sends credits), data sender
	macR, macS = pkttest.MAC(1), pkttest.MAC(2)
)

func defaults() *expresspass.Config {
	return mech.Spec(mustLookup()).Config().(*expresspass.Config)
}

func mustLookup() mech.Spec {
	s, ok := mech.Lookup(expresspass.Name)
	if !ok {
		panic("expresspass not registered")
	}
	return s
}

// l2Switch: port 0 ("r") faces the data receiver, port 1 ("s") the data
// sender; both run ExpressPass at rate. Both hosts are learnt.
func l2Switch(t testing.TB, rate uint64, c *expresspass.Config) *dptest.Harness {
	t.Helper()
	mc := config.Mechanisms{{Name: expresspass.Name, Config: c}}
	cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{
		{Name: "r", Rate: units.Rate(rate), Mechanisms: mc}, {Name: "s", Rate: units.Rate(rate), Mechanisms: mc}}}}
	h := dptest.New(t, cfg, 4096)
	h.Links[0].Inject(pkttest.ARP(macR, ipR, ipS))
	h.Links[1].Inject(pkttest.ARP(macS, ipS, ipR))
	h.Settle()
	h.Links[0].SentCount, h.Links[1].SentCount = 0, 0
	return h
}

// flow is a data flow from S (port 2000) to R (port 5500).
func flow(sport uint16) wire.FiveTuple {
	return wire.FiveTuple{Src: ipS, Dst: ipR, SrcPort: sport, DstPort: 5500, Proto: wire.ProtoUDP}
}

// credit builds the credit R sends for flow f.
func credit(t testing.TB, dscp uint8, f wire.FiveTuple, seq uint32) []byte {
	t.Helper()
	b := make([]byte, 128)
	n, err := wire.BuildCredit(b, wire.MACs{Dst: macS, Src: macR}, dscp, f, wire.Credit{Seq: seq, SentTime: seq})
	if err != nil || n != 60 {
		t.Fatalf("BuildCredit: %d, %v", n, err)
	}
	return b[:n]
}

func xp(h *dptest.Harness) *expresspass.XP {
	return h.SW.Mechanisms()[expresspass.Name].(*expresspass.XP)
}

// TestLimiterPassesExactlyTheCreditRate (spec section 4): credits offered
// at twice the credit rate of a 100 Mbit/s port for one second leave at
// exactly 100 Mbit/s x 84/1622 (plus the two credits of the full bucket at
// the start), never more than two at once, the bucket never above two
// credits; the rest are dropped by the full credit queue and counted.
func TestLimiterPassesExactlyTheCreditRate(t *testing.T) {
	const rate = 100e6
	h := l2Switch(t, rate, defaults())
	perSec := float64(expresspass.CreditRateBits(rate)) / 8 / 84 // credits per second
	if math.Abs(perSec-rate/8/1622) > 0.01 {
		t.Fatalf("credit rate %.3f credits/s, want %.3f", perSec, rate/8/1622.0)
	}
	gap := int64(1e9 / (2 * perSec)) // offered at twice the rate
	c := credit(t, 10, flow(40000), 1)
	offered := 0
	start := h.Clock.T
	maxTokens := int64(0)
	for h.Clock.T < start+1e9 {
		before := h.Links[1].SentCount
		h.Links[0].Inject(c)
		offered++
		h.Settle()
		if n := h.Links[1].SentCount - before; n > 2 {
			t.Fatalf("%d credits left at once", n)
		}
		st := xp(h).Stats(1)
		if st.TokenBytes > 2*84 {
			t.Fatalf("the credit bucket holds %d B, more than 2 credits", st.TokenBytes)
		}
		maxTokens = max(maxTokens, st.TokenBytes)
		h.Clock.T += gap
	}
	st := xp(h).Stats(1)
	want := 2 + perSec*float64(h.Clock.T-start)/1e9
	t.Logf("offered %d, forwarded %d (want %.1f), dropped %d, queued %d", offered, st.CreditsForwarded, want, st.CreditsDropped,
		uint64(offered)-st.CreditsForwarded-st.CreditsDropped)
	if math.Abs(float64(st.CreditsForwarded)-want) > 1 {
		t.Fatalf("%d credits forwarded in 1 s, want %.1f +- 1", st.CreditsForwarded, want)
	}
	if st.CreditsForwarded != uint64(h.Links[1].SentCount) {
		t.Fatalf("forwarded %d, the link sent %d", st.CreditsForwarded, h.Links[1].SentCount)
	}
	queued := uint64(offered) - st.CreditsForwarded - st.CreditsDropped
	if st.CreditsDropped == 0 || queued > 8 || st.CreditsDropped != h.SW.Counters(1).Drops[pkt.ReasonLaneFull] {
		t.Fatalf("dropped %d (lane_full %d), %d left queued", st.CreditsDropped, h.SW.Counters(1).Drops[pkt.ReasonLaneFull], queued)
	}
	if got := xp(h).Stats(0).CreditsIn; got != uint64(offered) {
		t.Fatalf("%d credits classified on port r, %d offered", got, offered)
	}
	// The queue drains at the credit rate; idle, the bucket fills to 2 credits, not more.
	for end := h.Clock.T + 2e9; h.Clock.T < end; h.Clock.T += 10e3 {
		h.Settle()
		st := xp(h).Stats(1)
		if st.TokenBytes > 2*84 {
			t.Fatalf("the credit bucket holds %d B, more than 2 credits", st.TokenBytes)
		}
		maxTokens = max(maxTokens, st.TokenBytes)
	}
	if st := xp(h).Stats(1); st.TokenBytes != 2*84 || maxTokens != 2*84 || st.CreditsForwarded+st.CreditsDropped != uint64(offered) {
		t.Fatalf("bucket after idle: %d B (most seen %d), want 168; %+v", st.TokenBytes, maxTokens, st)
	}
	h.CheckFrames(t)
}

// TestCreditsGoFirstDataFillsTheRest: a backlog of data and credits
// offered at twice their rate on one 100 Mbit/s port: the credits get
// their 84/1622 of the line (on the wire), data the rest, and the data
// frames went through the data queue (the histogram counts them).
func TestCreditsGoFirstDataFillsTheRest(t *testing.T) {
	const rate = 100e6
	h := l2Switch(t, rate, defaults())
	perSec := float64(expresspass.CreditRateBits(rate)) / 8 / 84
	gap := int64(1e9 / (2 * perSec))
	c := credit(t, 10, flow(40000), 1)
	data := pkttest.UDP4(macS, macR, ipR, ipS, 1, 2, make([]byte, 1472)) // 1514-byte frames, 1538 on the wire
	start := h.Clock.T
	var dataSent int
	for h.Clock.T < start+1e9 {
		h.Links[0].Inject(c)
		for i := 0; i < 2; i++ { // ~16k frames/s offered: twice what the port can take
			h.Links[0].Inject(data)
		}
		h.Settle()
		h.Clock.T += gap
	}
	st := xp(h).Stats(1)
	dataSent = h.Links[1].SentCount - int(st.CreditsForwarded)
	wire := float64(st.CreditsForwarded)*84 + float64(dataSent)*1538
	t.Logf("credits %d, data %d, line use %.4f", st.CreditsForwarded, dataSent, wire*8/rate)
	if math.Abs(float64(st.CreditsForwarded)-(2+perSec)) > 2 {
		t.Fatalf("credits %d with data competing, want %.0f", st.CreditsForwarded, 2+perSec)
	}
	if u := wire * 8 / rate; u < 0.99 || u > 1.01 {
		t.Fatalf("the port carried %.3f of its rate", u)
	}
	if st.DataPackets == 0 || st.DataDrops == 0 {
		t.Fatalf("data admitted %d, dropped %d: the overload should show in the data queue", st.DataPackets, st.DataDrops)
	}
}

// TestNotCreditsStayData: a credit of another DSCP, an XP_REQUEST and an
// XP_STOP are data (no credit lane), a malformed credit is dropped, and all
// are counted; nothing changes the credit lane.
func TestNotCreditsStayData(t *testing.T) {
	h := l2Switch(t, 100e6, defaults())
	h.Links[1].Record = true
	wrong := credit(t, 0, flow(1), 1)
	bad := credit(t, 10, flow(2), 1)
	bad[24] ^= 0xff // IPv4 checksum
	short := credit(t, 10, flow(3), 1)
	short[42+5] = 2 // GC length below a credit's body: refused by wire.ParseCredit
	var req, stop [128]byte
	nr, _ := wire.BuildXPRequest(req[:], wire.MACs{Dst: macS, Src: macR}, wire.FiveTuple{Src: ipR, Dst: ipS, SrcPort: 7, DstPort: 8}, wire.XPRequest{FlowID: 1, Size: 1})
	ns, _ := wire.BuildXPStop(stop[:], wire.MACs{Dst: macS, Src: macR}, wire.FiveTuple{Src: ipR, Dst: ipS, SrcPort: 7, DstPort: 8}, wire.XPStop{FlowID: 1})
	before := xp(h).Stats(1).DataPackets
	for _, f := range [][]byte{wrong, bad, short, req[:nr], stop[:ns]} {
		h.Links[0].Inject(f)
	}
	h.Settle()
	st := xp(h).Stats(0)
	if st.CreditsIn != 0 || st.Refused != [3]uint64{2, 1, 0} {
		t.Fatalf("port r: %d credits, refused %v (want malformed 2, not_credit_class 1)", st.CreditsIn, st.Refused)
	}
	if d := h.SW.Counters(0).Drops[expresspass.ReasonMalformed]; d != 2 {
		t.Fatalf("credit_malformed drops %d", d)
	}
	out := xp(h).Stats(1)
	if len(h.Links[1].Sent) != 3 || out.CreditsForwarded != 0 || out.DataPackets-before != 3 {
		t.Fatalf("sent %d frames, %d by the credit lane, %d data admitted: want 3 data", len(h.Links[1].Sent), out.CreditsForwarded, out.DataPackets-before)
	}
	h.CheckFrames(t)
}

// TestCreditFromAHostPortIsACredit: credits come from hosts, so a host
// port takes them (wire.Type.FromHost), while an SFC BTS from a host is
// forged. Port roles are the dataplane's; this checks that ExpressPass
// ports and host roles fit together.
func TestCreditFromAHostPortIsACredit(t *testing.T) {
	h := l2Switch(t, 100e6, defaults())
	h.Links[0].Inject(credit(t, 10, flow(40000), 7))
	h.Settle()
	if st := xp(h).Stats(1); st.CreditsForwarded != 1 {
		t.Fatalf("credit from a host port: %+v", st)
	}
	if h.SW.Counters(0).ControlRx[wire.TypeXPCredit] != 1 || h.SW.Counters(0).Drops[pkt.ReasonForged] != 0 {
		t.Fatal("credit counted wrong or taken for forged")
	}
}

// TestCreditLaneHoldsItsQueueLength: a lane of 10 credits holds 10, not
// the 16 its ring rounds up to.
func TestCreditLaneHoldsItsQueueLength(t *testing.T) {
	c := defaults()
	c.CreditQueue = 10
	h := l2Switch(t, 100e6, c)
	for i := uint32(0); i < 20; i++ {
		h.Links[0].Inject(credit(t, 10, flow(40000), i))
	}
	h.Settle()
	st, _ := h.SW.CreditLane(1)
	// The pass takes all 20 in before it sends: 10 queued, 10 dropped, then 2 leave.
	if st.Sent != 2 || st.Queued != 8 || st.Dropped != 10 {
		t.Fatalf("20 credits at once into a lane of 10 with a bucket of 2: %+v", st)
	}
}

// TestConfigErrors: bad keys are named; a port without a rate is refused
// with the fix; two ports with different credit classes are refused.
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		c    expresspass.Config
		info mech.PortInfo
		want string
	}{
		{expresspass.Config{CreditDSCP: 64, CreditQueue: 8, CreditBurst: 2}, mech.PortInfo{Name: "p", RateBits: 1e9}, "credit_dscp"},
		{expresspass.Config{CreditDSCP: 10, CreditQueue: 0, CreditBurst: 2}, mech.PortInfo{Name: "p", RateBits: 1e9}, "credit_queue"},
		{expresspass.Config{CreditDSCP: 10, CreditQueue: 8, CreditBurst: 0}, mech.PortInfo{Name: "p", RateBits: 1e9}, "credit_burst"},
		{expresspass.Config{CreditDSCP: 10, CreditQueue: 8, CreditBurst: 2}, mech.PortInfo{Name: "p"}, "rate"},
		{expresspass.Config{CreditDSCP: 10, CreditQueue: 8, CreditBurst: 2, CreditDrop: "red"}, mech.PortInfo{Name: "p", RateBits: 1e9}, "credit_drop"},
	} {
		err := tc.c.Validate(tc.info)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", tc.c, err, tc.want)
		}
	}
	if err := defaults().Validate(mech.PortInfo{Name: "p", RateBits: 1e9}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"tail", "random"} {
		c := defaults()
		c.CreditDrop = d
		if err := c.Validate(mech.PortInfo{Name: "p", RateBits: 1e9}); err != nil {
			t.Fatalf("credit_drop %s: %v", d, err)
		}
	}
	other := defaults()
	other.CreditDSCP = 12
	cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{
		{Name: "a", Rate: 1e9, Mechanisms: config.Mechanisms{{Name: expresspass.Name, Config: defaults()}}},
		{Name: "b", Rate: 1e9, Mechanisms: config.Mechanisms{{Name: expresspass.Name, Config: other}}}}}}
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	mem := make([]byte, 4096*dptest.FrameSize)
	links := [][]dataplane.Link{{dataplane.NewMemLink(mem, dptest.FrameSize, 64)}, {dataplane.NewMemLink(mem, dptest.FrameSize, 64)}}
	if s, err := dataplane.New(cfg, mem, dptest.FrameSize, links); err == nil || !strings.Contains(err.Error(), "credit_dscp") {
		if s != nil {
			s.Close()
		}
		t.Fatalf("two credit classes: %v", err)
	}
}

// TestHooksDoNotAllocate: Control and Admit run per packet on the workers.
func TestHooksDoNotAllocate(t *testing.T) {
	h := l2Switch(t, 100e6, defaults())
	c := credit(t, 10, flow(40000), 1)
	data := pkttest.UDP4(macS, macR, ipR, ipS, 1, 2, make([]byte, 500))
	h.Links[0].Inject(c)
	h.Links[0].Inject(data)
	h.Settle()
	allocs := testing.AllocsPerRun(200, func() {
		h.Clock.T += 1e6
		h.Links[0].Inject(c)
		h.Links[0].Inject(data)
		h.Settle()
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per credit and data frame", allocs)
	}
}

// leafSpine builds two leaves and two spines in memory, all L3, with
// ExpressPass on every port: h1 (10.1.1.1) on leaf1, h2 (10.1.2.1) on
// leaf2, each leaf reaching the other over both spines (ECMP, next hops
// ordered spine1, spine2 on both leaves, as the topology tool orders them).
func leafSpine(t *testing.T) (f *dptest.Fabric, leaf1, leaf2, spine1, spine2 *dptest.Harness) {
	f = dptest.NewFabric()
	p := netip.MustParsePrefix
	a := netip.MustParseAddr
	mac := func(sw, port byte) [6]byte { return [6]byte{2, 0x77, 0, 0, sw, port} }
	xpc := config.Mechanisms{{Name: expresspass.Name, Config: defaults()}}
	port := func(name string, sw, i byte, addr string, role mech.Role) config.Port {
		m := mac(sw, i)
		return config.Port{Name: name, MAC: m[:], Rate: 1e9, Role: role, Addrs: []netip.Prefix{p(addr)}, Mechanisms: xpc}
	}
	nb := func(ip string, m [6]byte) config.Neighbor { return config.Neighbor{IP: a(ip), MAC: m[:]} }
	leaf := func(id byte, host, up1, up2, peer1, peer2, other string, hostMAC [6]byte, hostIP string) dataplane.Config {
		return dataplane.Config{Config: config.Config{Workers: 1, SwitchID: int(id), Ports: []config.Port{
			port("h", id, 0, host, mech.RoleHost), port("spine1", id, 1, up1, mech.RoleFabric), port("spine2", id, 2, up2, mech.RoleFabric)},
			Routes:    []config.Route{{Prefix: p(other), Via: []netip.Addr{a(peer1), a(peer2)}}},
			Neighbors: []config.Neighbor{nb(hostIP, hostMAC), nb(peer1, mac(3, id-1)), nb(peer2, mac(4, id-1))}}}
	}
	spine := func(id byte, d1, d2 string, peer1, peer2 string) dataplane.Config {
		return dataplane.Config{Config: config.Config{Workers: 1, SwitchID: int(id), Ports: []config.Port{
			port("leaf1", id, 0, d1, mech.RoleFabric), port("leaf2", id, 1, d2, mech.RoleFabric)},
			Routes: []config.Route{{Prefix: p("10.1.1.0/24"), Via: []netip.Addr{a(peer1)}},
				{Prefix: p("10.1.2.0/24"), Via: []netip.Addr{a(peer2)}}},
			Neighbors: []config.Neighbor{nb(peer1, mac(1, byte(id-2))), nb(peer2, mac(2, byte(id-2)))}}}
	}
	// /31s: leaf1-spine1 .0/.1, leaf1-spine2 .2/.3, leaf2-spine1 .4/.5, leaf2-spine2 .6/.7.
	leaf1 = f.Add(t, leaf(1, "10.1.1.254/24", "10.255.0.0/31", "10.255.0.2/31", "10.255.0.1", "10.255.0.3", "10.1.2.0/24", macS, "10.1.1.1"), 4096)
	leaf2 = f.Add(t, leaf(2, "10.1.2.254/24", "10.255.0.4/31", "10.255.0.6/31", "10.255.0.5", "10.255.0.7", "10.1.1.0/24", macR, "10.1.2.1"), 4096)
	spine1 = f.Add(t, spine(3, "10.255.0.1/31", "10.255.0.5/31", "10.255.0.0", "10.255.0.4"), 4096)
	spine2 = f.Add(t, spine(4, "10.255.0.3/31", "10.255.0.7/31", "10.255.0.2", "10.255.0.6"), 4096)
	f.Connect(leaf1, 1, spine1, 0)
	f.Connect(leaf1, 2, spine2, 0)
	f.Connect(leaf2, 1, spine1, 1)
	f.Connect(leaf2, 2, spine2, 1)
	return
}

// TestCreditsAndDataCrossTheSameSpine: on a leaf-spine with two equal-cost
// paths, the credit of every flow (its 5-tuple reversed) crosses the spine
// its data crosses, in the other direction, and takes the credit lanes on
// the way; the flows spread over both spines.
func TestCreditsAndDataCrossTheSameSpine(t *testing.T) {
	f, leaf1, leaf2, spine1, spine2 := leafSpine(t)
	h1, h2 := [4]byte{10, 1, 1, 1}, [4]byte{10, 1, 2, 1}
	leaf1.Links[0].Record, leaf2.Links[0].Record = true, true
	tx := func(sw *dptest.Harness, port int) uint64 { return sw.SW.Counters(port).TxPackets }
	used := [2]int{}
	for sport := uint16(40000); sport < 40064; sport++ {
		// Data from h1 (sender, on leaf1) to h2 (receiver, on leaf2): spine port 1 faces leaf2.
		d1, d2 := tx(spine1, 1), tx(spine2, 1)
		m1 := leaf1.SW.Ports()[0].MAC
		leaf1.Links[0].Inject(pkttest.UDP4([6]byte(m1), macS, h1, h2, sport, 5500, make([]byte, 1000)))
		f.Settle()
		viaData := -1
		switch {
		case tx(spine1, 1) == d1+1 && tx(spine2, 1) == d2:
			viaData = 0
		case tx(spine2, 1) == d2+1 && tx(spine1, 1) == d1:
			viaData = 1
		default:
			t.Fatalf("flow %d: data did not cross exactly one spine", sport)
		}
		// Its credit from h2 to h1: spine port 0 faces leaf1.
		c1, c2 := tx(spine1, 0), tx(spine2, 0)
		m2 := leaf2.SW.Ports()[0].MAC
		b := make([]byte, 64)
		n, _ := wire.BuildCredit(b, wire.MACs{Dst: [6]byte(m2), Src: macR}, 10,
			wire.FiveTuple{Src: h1, Dst: h2, SrcPort: sport, DstPort: 5500}, wire.Credit{Seq: 1})
		leaf2.Links[0].Inject(b[:n])
		f.Advance(1e6, 1e5) // credits wait for their meters' tokens
		viaCredit := -1
		switch {
		case tx(spine1, 0) == c1+1 && tx(spine2, 0) == c2:
			viaCredit = 0
		case tx(spine2, 0) == c2+1 && tx(spine1, 0) == c1:
			viaCredit = 1
		default:
			t.Fatalf("flow %d: the credit did not cross exactly one spine", sport)
		}
		if viaData != viaCredit {
			t.Fatalf("flow %d: data via spine%d, its credit via spine%d", sport, viaData+1, viaCredit+1)
		}
		used[viaData]++
	}
	if used[0] == 0 || used[1] == 0 {
		t.Fatalf("flows per spine %v: ECMP did not spread them", used)
	}
	if n := len(leaf1.Links[0].Sent); n != 64 {
		t.Fatalf("h1 got %d credits, want 64", n)
	}
	if n := len(leaf2.Links[0].Sent); n != 64 {
		t.Fatalf("h2 got %d data frames, want 64", n)
	}
	var viaLanes uint64
	for _, sw := range []*dptest.Harness{spine1, spine2} {
		viaLanes += xp(sw).Stats(0).CreditsForwarded
	}
	if viaLanes != 64 || xp(leaf1).Stats(0).CreditsForwarded != 64 {
		t.Fatalf("credits through the spines' credit lanes %d, leaf1's host port %d, want 64", viaLanes, xp(leaf1).Stats(0).CreditsForwarded)
	}
	for _, sw := range []*dptest.Harness{leaf1, leaf2, spine1, spine2} {
		sw.CheckFrames(t)
	}
	t.Logf("flows via spine1 %d, spine2 %d", used[0], used[1])
}

// FuzzControl feeds any frame to an ExpressPass switch port, after a valid
// credit's first bytes or on its own: nothing panics, every frame comes
// back, and what is neither dropped nor a credit is counted.
func FuzzControl(f *testing.F) {
	b := make([]byte, 128)
	n, _ := wire.BuildCredit(b, wire.MACs{Dst: macS, Src: macR}, 10, flow(1), wire.Credit{Seq: 1})
	f.Add(b[:n])
	f.Add(b[:50])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) > 1500 {
			frame = frame[:1500]
		}
		h := l2Switch(t, 100e6, defaults())
		if len(frame) >= 12 {
			copy(frame[0:6], macS[:]) // reach the sender's port
			copy(frame[6:12], macR[:])
		}
		h.Links[0].Inject(frame)
		h.Advance(1e6, 1e5)
		h.CheckFrames(t)
	})
}
