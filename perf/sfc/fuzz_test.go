package sfc

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/gswitch/gswitch/wire"
)

// FuzzListener feeds the BTS listener any datagram from any source
// address and port. It never panics, and a pause is applied only when the
// datagram passes every rule (from port 19020 and the flow's destination,
// a BTS whose quote names the registered flow by its 5-tuple and, if it
// has one, its flow id), for at most MaxPause.
func FuzzListener(f *testing.F) {
	src, dst := [4]byte{10, 1, 1, 1}, [4]byte{10, 1, 2, 1}
	seed := func(q []byte, pause uint32) []byte {
		b := make([]byte, 200)
		n, _ := wire.PutBTS(b, wire.BTS{Pause: pause, Quote: q})
		return b[:n]
	}
	f.Add(seed(quote(src, dst, 40000, 5500, 7, true), 500), dst[:], uint16(wire.BTSPort))
	f.Add(seed(quote(src, dst, 40000, 5500, 0, false), 3600e6), dst[:], uint16(wire.BTSPort))
	f.Add(seed(quote(src, dst, 40000, 5500, 7, true), 500), []byte{10, 1, 9, 9}, uint16(wire.BTSPort))
	f.Add(seed(quote(src, dst, 40000, 5500, 8, true), 500), dst[:], uint16(wire.BTSPort))
	f.Add(seed(quote(src, dst, 40000, 5500, 7, true), 500), dst[:], uint16(5500))
	f.Add([]byte("GC\x01\x10junk"), dst[:], uint16(wire.BTSPort))
	const most = 3 * time.Millisecond
	f.Fuzz(func(t *testing.T, msg, addr []byte, port uint16) {
		l := newListener(MaxPause(most))
		const now = 1000
		g, _, err := l.Register(7, &net.UDPAddr{IP: net.IP(src[:]), Port: 40000}, &net.UDPAddr{IP: net.IP(dst[:]), Port: 5500},
			func() int64 { return now })
		if err != nil {
			t.Fatal(err)
		}
		from, ok := netip.AddrFromSlice(addr)
		if !ok {
			from = netip.IPv6Unspecified()
		}
		l.Handle(msg, netip.AddrPortFrom(from, port))
		st := l.Stats()
		if st.Received != 1 || st.Paused+st.Refused() != 1 {
			t.Fatalf("one datagram counted as %+v", st)
		}
		open, wake := g.Allow(now, 1)
		if st.Paused == 0 {
			if !open {
				t.Fatalf("a refused datagram paused the flow (%+v)", st)
			}
			return
		}
		m, err := wire.ParseBTS(msg)
		if err != nil || port != wire.BTSPort || from.Unmap() != netip.AddrFrom4(dst) || !m.HasPorts ||
			m.Flow != (wire.FiveTuple{Src: src, Dst: dst, SrcPort: 40000, DstPort: 5500, Proto: wire.ProtoUDP}) || m.HasFlowID && m.FlowID != 7 {
			t.Fatalf("accepted what the rules refuse: from %v, %+v, %v", netip.AddrPortFrom(from, port), m, err)
		}
		if want := min(int64(m.Pause)*1000, int64(most)); want > 0 && (open || wake-now != want) || want == 0 && !open {
			t.Fatalf("paused until %d for a pause of %d us (at most %v)", wake, m.Pause, most)
		}
	})
}
