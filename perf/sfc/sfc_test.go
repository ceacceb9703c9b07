package sfc

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/wire"
)

// quote is the IPv4 + UDP header and first 16 bytes of a gsperf segment of
// flow id from src:sport to dst:dport, as a switch quotes it.
func quote(src, dst [4]byte, sport, dport uint16, id uint64, gsperf bool) []byte {
	payload := make([]byte, 100)
	if gsperf {
		h := proto.Header{Type: proto.TypeData, Flow: id}
		h.Encode(payload)
	}
	f := pkttest.UDP4([6]byte{}, [6]byte{}, src, dst, sport, dport, payload)
	return f[14 : 14+20+8+16]
}

func bts(t *testing.T, q []byte, pause uint32, flags uint16) []byte {
	b := make([]byte, 200)
	n, err := wire.PutBTS(b, wire.BTS{Flags: flags, Pause: pause, Quote: q})
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

// peer is the address the tests' flow sends to: its BTS come from there.
var peer = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, 2, 1}), wire.BTSPort)

// TestListenerPausesTheNamedFlow: BTS frames pause the flow they name (by
// gsperf flow id and 5-tuple, or by 5-tuple alone), the newest pause
// wins, and frames naming another flow, a wrong 5-tuple or nothing at all
// are counted and change nothing.
func TestListenerPausesTheNamedFlow(t *testing.T) {
	l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var now int64 = 1000
	clock := func() int64 { return now }
	local := &net.UDPAddr{IP: net.IPv4(10, 1, 1, 1), Port: 40000}
	remote := &net.UDPAddr{IP: net.IPv4(10, 1, 2, 1), Port: 5500}
	g, forget, err := l.Register(7, local, remote, clock)
	if err != nil {
		t.Fatal(err)
	}
	src, dst := [4]byte{10, 1, 1, 1}, [4]byte{10, 1, 2, 1}
	send := func(b []byte, want Stats) {
		t.Helper()
		l.Handle(b, peer)
		if l.Stats() != want {
			t.Fatalf("stats %+v, want %+v", l.Stats(), want)
		}
	}
	send(bts(t, quote(src, dst, 40000, 5500, 7, true), 500, wire.BTSCacheable), Stats{Received: 1, Paused: 1})
	if ok, wake := g.Allow(now, 1); ok || wake != now+500e3 {
		t.Fatalf("flow not paused for 500 us: %v %d", ok, wake)
	}
	send(bts(t, quote(src, dst, 40000, 5500, 7, true), 100, wire.BTSFromCache), Stats{Received: 2, Paused: 2, FromCache: 1})
	if _, wake := g.Allow(now, 1); wake != now+100e3 {
		t.Fatalf("the newer, shorter pause did not replace the old: wake %d", wake)
	}
	// The right id with another port, another id: not ours.
	send(bts(t, quote(src, dst, 40001, 5500, 7, true), 9000, 0), Stats{Received: 3, Paused: 2, FromCache: 1, Unmatched: 1})
	send(bts(t, quote(src, dst, 40000, 5500, 8, true), 9000, 0), Stats{Received: 4, Paused: 2, FromCache: 1, Unmatched: 2})
	// No gsperf header in the quote: found by its 5-tuple.
	now = 5000
	send(bts(t, quote(src, dst, 40000, 5500, 0, false), 2000, 0), Stats{Received: 5, Paused: 3, FromCache: 1, Unmatched: 2})
	if _, wake := g.Allow(now, 1); wake != 5000+2000e3 {
		t.Fatalf("pause by 5-tuple: wake %d", wake)
	}
	send([]byte("GC\x01\x10junk"), Stats{Received: 6, Paused: 3, FromCache: 1, Unmatched: 2, Malformed: 1})
	forget()
	send(bts(t, quote(src, dst, 40000, 5500, 7, true), 500, 0), Stats{Received: 7, Paused: 3, FromCache: 1, Unmatched: 3, Malformed: 1})
	if _, err := Listen(l.conn.LocalAddr().String()); err == nil {
		t.Fatal("a second listener on the port")
	}
}

// TestListenerRefuses: what does not come from port 19020, or from the
// named flow's destination, or names no flow by its 5-tuple, is refused
// and counted by why; a pause longer than MaxPause is cut to it.
func TestListenerRefuses(t *testing.T) {
	l := newListener(MaxPause(3 * time.Millisecond))
	var now int64 = 1000
	g, _, err := l.Register(7, &net.UDPAddr{IP: net.IPv4(10, 1, 1, 1), Port: 40000}, &net.UDPAddr{IP: net.IPv4(10, 1, 2, 1), Port: 5500},
		func() int64 { return now })
	if err != nil {
		t.Fatal(err)
	}
	src, dst := [4]byte{10, 1, 1, 1}, [4]byte{10, 1, 2, 1}
	good := bts(t, quote(src, dst, 40000, 5500, 7, true), 500, 0)
	other := netip.AddrFrom4([4]byte{10, 1, 9, 9})
	l.Handle(good, netip.AddrPortFrom(peer.Addr(), 19021))          // another source port
	l.Handle(good, netip.AddrPortFrom(other, wire.BTSPort))         // another host, even from port 19020
	l.Handle(good, netip.AddrPortFrom(netip.AddrFrom4(src), 19020)) // the flow's own address
	short := quote(src, dst, 40000, 5500, 7, true)[:20]             // an IPv4 header alone: no ports to find the flow by
	short[9] = wire.ProtoUDP
	l.Handle(bts(t, short, 500, 0), peer)
	want := Stats{Received: 4, WrongPort: 1, WrongSource: 2, Unmatched: 1}
	if st := l.Stats(); st != want || st.Refused() != 4 {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
	if ok, _ := g.Allow(now, 1); !ok {
		t.Fatal("a refused BTS paused the flow")
	}
	l.Handle(bts(t, quote(src, dst, 40000, 5500, 7, true), 3600e6, 0), peer)
	if _, wake := g.Allow(now, 1); wake != now+3e6 {
		t.Fatalf("a pause of an hour holds the flow until %d, want %d (MaxPause)", wake, now+3e6)
	}
	if st := l.Stats(); st.Paused != 1 || st.Capped != 1 || !strings.Contains(st.String(), "1 cut to the longest pause") {
		t.Fatalf("stats %v", st)
	}
}

// btsSender is a socket on 127.0.0.1 port 19020, where switches send BTS
// from; the test is skipped if something else holds the port.
func btsSender(t *testing.T, to *net.UDPAddr) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: wire.BTSPort}, to)
	if err != nil {
		t.Skipf("port %d on 127.0.0.1 is taken: %v", wire.BTSPort, err)
	}
	return c
}

// TestListenerCapsAnHour: over a real socket, a BTS from the flow's
// destination and port 19020 asking for a pause of an hour holds the flow
// for DefaultMaxPause at most. Before the cap it held it for the hour.
func TestListenerCapsAnHour(t *testing.T) {
	l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var now int64 = 1000
	g, _, err := l.Register(7, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5500},
		func() int64 { return now })
	if err != nil {
		t.Fatal(err)
	}
	s := btsSender(t, l.conn.LocalAddr().(*net.UDPAddr))
	defer s.Close()
	lo := [4]byte{127, 0, 0, 1}
	s.Write(bts(t, quote(lo, lo, 40000, 5500, 7, true), 3600e6, wire.BTSCacheable))
	for deadline := time.Now().Add(2 * time.Second); l.Stats().Paused == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the BTS was not applied: %+v", l.Stats())
		}
	}
	if _, wake := g.Allow(now, 1); wake-now > int64(256*200*time.Microsecond) {
		t.Fatalf("a BTS of an hour holds the flow for %v", time.Duration(wake-now))
	}
}
