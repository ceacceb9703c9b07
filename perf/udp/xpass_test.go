package udp

import (
	"encoding/binary"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/perf/results"
	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/perf/xpass"
	"github.com/gswitch/gswitch/wire"
)

// TestXPassOverLoopback runs an xpass server and two xpass flows over the
// loopback: both complete with their bytes intact (the server checks the
// pattern), the data rate stays within what the credits allow (the host's
// NIC meters them to 84/1622 of -xp-link), and the server stops every
// flow's credits.
func TestXPassOverLoopback(t *testing.T) {
	conn, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	srv := NewServer(ServerConfig{})
	p := xpass.DefaultParams(200e6)
	p.MSS = MSS
	stop := make(chan struct{})
	done := make(chan XPassStats)
	go func() {
		st, err := ServeXPass(conn, srv, XPassConfig{Params: p, AckEvery: 4, Spin: 20 * time.Microsecond, Seed: 1}, stop, nil, 0)
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	const size = 4 << 20
	plan := Plan{Src: "c", Dsts: []string{conn.LocalAddr().String()}, FixedSize: size, Flows: 2, RateBits: 200e6, Arrivals: "burst",
		Mode: transport.XPass, Timeout: 20 * time.Second, Timeline: 10 * time.Millisecond}
	start := time.Now()
	recs, err := Run(plan)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	time.Sleep(50 * time.Millisecond)
	close(stop)
	st := <-done
	ss := srv.Stats()
	t.Logf("%v in %v; server: %v\n%v", summary(recs), took, ss, st)
	for _, r := range recs {
		if !r.Complete {
			t.Fatalf("flow %d incomplete", r.ID)
		}
	}
	if ss.Complete != 2 || ss.Corrupt != 0 || ss.Bytes != 2*size {
		t.Fatalf("server: %v", ss)
	}
	// At most 200 Mbit/s x 84/1622 of credits: 2 x 4 MiB of 1408-byte segments take at least 0.37 s.
	minTime := float64(2*size/MSS) / (float64(xpass.MaxCreditRate(200e6)) / 84)
	if took.Seconds() < minTime*0.95 {
		t.Fatalf("%v for %d segments: faster than the credits allow (%.3f s)", took, 2*size/MSS, minTime)
	}
	if st.Host.Active != 0 || st.Host.Stops < 2 {
		t.Fatalf("credits not stopped: %+v", st.Host)
	}
}

func summary(recs []results.Flow) string {
	s := ""
	for _, r := range recs {
		s += " " + time.Duration(r.FCTNs).String()
		if r.Mech != nil {
			s += " " + fmtMech(r.Mech)
		}
	}
	return s
}

func fmtMech(m map[string]uint64) string {
	return "credits " + itoa(m["credits"]) + " wasted " + itoa(m["wasted"]) + " requests " + itoa(m["requests"]) + " first credit after " + time.Duration(m["first_credit_ns"]).String()
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }

// FuzzXPassServer feeds any datagrams from any senders to an ExpressPass
// server's handler, with the credit sender running between them: nothing
// panics, the flows it keeps stay within its cap, and every ack it sends
// is a gsperf ack.
func FuzzXPassServer(f *testing.F) {
	var req, stop [64]byte
	nr, _ := wire.PutXPRequest(req[:], wire.XPRequest{FlowID: 7, Size: 1 << 20})
	ns, _ := wire.PutXPStop(stop[:], wire.XPStop{FlowID: 7})
	seg := segment(7, 0, 1<<20, 1000)
	(&proto.Header{Type: proto.TypeData, Flow: 7, Seq: 0, Size: 1 << 20, Mech: wire.MechXP(1, 0)}).Encode(seg)
	f.Add(req[:nr], seg, stop[:ns], uint16(1), uint16(2))
	f.Add([]byte("GC"), []byte("GS"), []byte{}, uint16(0), uint16(65535))
	f.Fuzz(func(t *testing.T, a, b, c []byte, pa, pb uint16) {
		srv := NewServer(ServerConfig{MaxFlows: 8})
		p := xpass.DefaultParams(1e9)
		p.MaxFlows = 8
		host, err := xpass.NewHost(p, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		st := &XPassStats{}
		x := &xpHandler{host: host, srv: srv, st: st, ackEvery: 4, sendAck: func(ack []byte, _ netip.AddrPort) bool {
			if h, _, err := proto.Decode(ack); err != nil || h.Type != proto.TypeAck && h.Type != proto.TypeProbeAck {
				t.Fatalf("sent a datagram that is not an ack: % x", ack)
			}
			return true
		}}
		froms := []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:1"), netip.AddrPortFrom(netip.MustParseAddr("10.0.0.2"), pa),
			netip.AddrPortFrom(netip.MustParseAddr("10.0.0.3"), pb)}
		now := int64(1)
		for i := 0; i < 30; i++ {
			for j, d := range [][]byte{a, b, c} {
				x.handle(d, froms[(i+j)%3], now)
				now += 7_000
				host.Poll(now, func(xpass.Key, wire.Credit) {})
			}
		}
		if hs := host.Stats(); hs.Remember > 8 {
			t.Fatalf("%d flows kept, cap 8", hs.Remember)
		}
	})
}

// TestXPassServerRefuses: a stop from anyone but the flow's sender stops
// nothing and is counted; GC messages a server is never sent are counted;
// the sender's own stop stops its flow, and a repeated one is no refusal.
func TestXPassServerRefuses(t *testing.T) {
	srv := NewServer(ServerConfig{MaxFlows: 8})
	host, _ := xpass.NewHost(xpass.DefaultParams(1e9), 1, 1)
	st := &XPassStats{}
	x := &xpHandler{host: host, srv: srv, st: st, ackEvery: 4, sendAck: func([]byte, netip.AddrPort) bool { return true }}
	p, q := netip.MustParseAddrPort("10.0.0.1:4000"), netip.MustParseAddrPort("10.0.0.9:4000")
	var req, stop, credit [64]byte
	nr, _ := wire.PutXPRequest(req[:], wire.XPRequest{FlowID: 7, Size: 1 << 20})
	ns, _ := wire.PutXPStop(stop[:], wire.XPStop{FlowID: 7})
	nc, _ := wire.PutCredit(credit[:], wire.Credit{Seq: 1})
	x.handle(req[:nr], p, 1)
	x.handle(stop[:ns], q, 2)                                        // another host names p's flow
	x.handle(stop[:ns], netip.AddrPortFrom(p.Addr(), p.Port()+1), 3) // p's address, another port: another sender
	x.handle(credit[:nc], p, 4)                                      // a credit: receivers send them, not senders
	if f := host.Flow(xpass.Key{From: p, Flow: 7}); f == nil || !f.Sending() {
		t.Fatal("a stop from another sender stopped the flow")
	}
	x.handle(stop[:ns], p, 5)
	x.handle(stop[:ns], p, 6)
	if f := host.Flow(xpass.Key{From: p, Flow: 7}); f.Sending() {
		t.Fatal("the sender's stop did not stop its flow")
	}
	want := XPassStats{Requests: 1, Stops: 2, Unmatched: 2, WrongKind: 1}
	if got := *st; got != want {
		t.Fatalf("stats %+v, want %+v", got, want)
	}
}

// FuzzXPassPeers: a flow of one sender, then any datagrams from other
// senders: the flow is never stopped by them, and every GC message is
// counted once, as taken or refused.
func FuzzXPassPeers(f *testing.F) {
	var stop, credit [64]byte
	ns, _ := wire.PutXPStop(stop[:], wire.XPStop{FlowID: 7})
	nc, _ := wire.PutCredit(credit[:], wire.Credit{Seq: 1})
	f.Add(stop[:ns], uint8(9), uint16(4000))
	f.Add(credit[:nc], uint8(1), uint16(4001))
	f.Add([]byte("GC\x01\x21"), uint8(1), uint16(4000))
	f.Add(segment(7, 0, 1<<20, 1000), uint8(1), uint16(4001))
	f.Fuzz(func(t *testing.T, b []byte, host8 uint8, port uint16) {
		srv := NewServer(ServerConfig{MaxFlows: 8})
		h, _ := xpass.NewHost(xpass.DefaultParams(1e9), 1, 1)
		st := &XPassStats{}
		x := &xpHandler{host: h, srv: srv, st: st, ackEvery: 4, sendAck: func([]byte, netip.AddrPort) bool { return true }}
		p := netip.MustParseAddrPort("10.0.0.1:4000")
		var req [64]byte
		nr, _ := wire.PutXPRequest(req[:], wire.XPRequest{FlowID: 7, Size: 1 << 20})
		x.handle(req[:nr], p, 1)
		from := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, host8}), port)
		if from == p {
			return
		}
		before := *st
		x.handle(b, from, 2)
		if fl := h.Flow(xpass.Key{From: p, Flow: 7}); fl == nil || !fl.Sending() {
			t.Fatalf("a datagram from %v stopped %v's flow: % x", from, p, b)
		}
		gc := st.Requests + st.Stops + st.Bad + st.WrongKind + st.Unmatched - (before.Requests + before.Stops + before.Bad + before.WrongKind + before.Unmatched)
		if want := map[bool]uint64{true: 1, false: 0}[xpass.IsCredit(b)]; gc != want {
			t.Fatalf("a datagram counted %d times as a GC message, want %d: % x", gc, want, b)
		}
		if c, ok := creditOf(b); ok {
			if _, err := wire.ParseCredit(b); err != nil || c.Seq != binary.BigEndian.Uint32(b[wire.HeaderLen:]) {
				t.Fatalf("creditOf took what is not a credit: % x", b)
			}
		}
	})
}
