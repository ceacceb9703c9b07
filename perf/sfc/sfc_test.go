package sfc

import (
	"net"
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

// TestListenerPausesTheNamedFlow: BTS frames over a real UDP socket pause
// the flow they name (by gsperf flow id and 5-tuple, or by 5-tuple alone),
// the newest pause wins, and frames naming another flow, a wrong 5-tuple
// or nothing at all are counted and change nothing.
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
	s, err := net.DialUDP("udp4", nil, l.conn.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	src, dst := [4]byte{10, 1, 1, 1}, [4]byte{10, 1, 2, 1}
	send := func(b []byte, want Stats) {
		t.Helper()
		s.Write(b)
		deadline := time.Now().Add(2 * time.Second)
		for l.Stats() != want {
			if time.Now().After(deadline) {
				t.Fatalf("stats %+v, want %+v", l.Stats(), want)
			}
			time.Sleep(time.Millisecond)
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
