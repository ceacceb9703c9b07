package sfc_test

import (
	"net"
	"testing"
	"time"

	sfcmech "github.com/gswitch/gswitch/mech/sfc"
	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/perf/sfc"
	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/perf/udp"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/wire"
)

// TestFlowStopsForThePause: a real gsperf flow over loopback, paced at 40
// Mbit/s; 100 ms in, a BTS naming it (by flow id and 5-tuple) asks for a
// 200 ms pause. The flow's acknowledged bytes stand still for the pause
// (no more than what was in flight), then the flow goes on and completes.
// The BTS comes from the flow's destination address and port 19020, as a
// switch sends it (the test is skipped if the port is taken).
func TestFlowStopsForThePause(t *testing.T) {
	bc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: wire.BTSPort})
	if err != nil {
		t.Skipf("port %d on 127.0.0.1 is taken: %v", wire.BTSPort, err)
	}
	defer bc.Close()
	srvConn, err := udp.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	srv := udp.NewServer(udp.ServerConfig{})
	go srv.Serve(srvConn, stop, nil, 0)
	defer func() { close(stop); srvConn.Close() }()
	l, err := sfc.Listen("127.0.0.1:0", sfc.MaxPause(time.Second)) // the 200 ms pause is within it
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	local := make(chan *net.UDPAddr, 1)
	p := udp.Plan{Src: "h", Dsts: []string{srvConn.LocalAddr().String()}, FixedSize: 1500000, Flows: 1, RateBits: 40e6,
		Arrivals: "burst", Mode: transport.Plain, BaseRTT: time.Millisecond, InitWindow: 4 << 20, RTO: time.Second,
		FlowIDBase: 42, Timeout: 10 * time.Second, Timeline: 10 * time.Millisecond, Pace: 40e6}
	p.FlowGate = func(id uint64, conn *net.UDPConn, clock func() int64) (transport.Gate, func(), error) {
		local <- conn.LocalAddr().(*net.UDPAddr)
		g, done, err := l.Register(id, conn.LocalAddr().(*net.UDPAddr), conn.RemoteAddr().(*net.UDPAddr), clock)
		return g, done, err
	}
	go func() {
		la := <-local
		time.Sleep(100 * time.Millisecond)
		payload := make([]byte, 64)
		h := proto.Header{Type: proto.TypeData, Flow: 42}
		h.Encode(payload)
		ra := srvConn.LocalAddr().(*net.UDPAddr)
		f := pkttest.UDP4([6]byte{}, [6]byte{}, [4]byte(la.IP.To4()), [4]byte(ra.IP.To4()), uint16(la.Port), uint16(ra.Port), payload)
		b := make([]byte, 200)
		n, _ := wire.PutBTS(b, wire.BTS{Flags: wire.BTSCacheable, Pause: 200000, Quote: f[14 : 14+20+8+16]})
		bc.WriteToUDP(b[:n], l.Addr())
	}()
	recs, err := udp.Run(p)
	if err != nil {
		t.Fatal(err)
	}
	r := recs[0]
	if !r.Complete {
		t.Fatal("the flow did not complete")
	}
	// Find the longest run of timeline steps without progress.
	longest, run := 0, 0
	for i := 1; i < len(r.Timeline); i++ {
		if r.Timeline[i] == r.Timeline[i-1] {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	t.Logf("FCT %v, longest stall %d x 10 ms, BTS: %v", time.Duration(r.FCTNs), longest, l.Stats())
	if st := l.Stats(); st.Paused != 1 {
		t.Fatalf("listener: %v", st)
	}
	// 1.5 MB at 40 Mbit/s takes 300 ms; with the pause at least 500 ms.
	if r.FCTNs < 480e6 || longest < 17 || longest > 25 {
		t.Fatalf("FCT %v, longest stall %d steps of 10 ms: the 200 ms pause did not hold the flow", time.Duration(r.FCTNs), longest)
	}
}

// TestMaxPauseRuleIsTheSwitches: a host's default longest pause follows
// the switches' rule (mech/sfc's max_pause: 256 rtt).
func TestMaxPauseRuleIsTheSwitches(t *testing.T) {
	if sfc.MaxPauseRTTs*time.Millisecond != sfcmech.MaxPauseFor(time.Millisecond) {
		t.Fatalf("gsperf's default max pause is %d base RTTs, the switches' %v per ms of rtt", sfc.MaxPauseRTTs, sfcmech.MaxPauseFor(time.Millisecond))
	}
}
