package sfc_test

import (
	"encoding/binary"
	"testing"

	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/mech/sfc"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/wire"
)

// FuzzBTSFromTheFabric feeds sw1 (mode ingress_cache, a cache of 16 slots)
// UDP datagrams to the BTS port from its fabric port, whatever their
// payload, and data packets from its hosts with the addresses, DSCP and
// ports the input picks: nothing panics, the cache never holds more than its
// slots, a payload that does not parse as a BTS is dropped, and every frame
// comes back.
func FuzzBTSFromTheFabric(f *testing.F) {
	orig := fromH1(4000, 77)
	b := make([]byte, wire.MaxBTSFrameLen)
	n, _ := wire.BuildBTS(b, wire.MACs{}, 48, orig, 14, 34, wire.BTS{Flags: wire.BTSCacheable, Pause: 1000})
	f.Add(b[wire.UDPFrameLen:n], uint32(0x0a010201), uint8(0), uint16(1))
	f.Add([]byte("GC\x01\x10\x00\x24\x00\x01"), uint32(0xffffffff), uint8(63), uint16(0))
	f.Add(b[wire.UDPFrameLen:wire.UDPFrameLen+30], uint32(0), uint8(255), uint16(65535))
	c := conf("ingress_cache")
	c.CacheEntries = 16
	h := dptest.New(f, sw1Config(c), 4096)
	s := h.SW.Mechanisms()["sfc"].(*sfc.SFC)
	f.Fuzz(func(t *testing.T, payload []byte, dst uint32, tos uint8, sport uint16) {
		if len(payload) > 1400 {
			payload = payload[:1400]
		}
		var d [4]byte
		binary.BigEndian.PutUint32(d[:], dst)
		// A "BTS" from the fabric, to h1, of whatever bytes.
		fr := pkttest.UDP4(mac6(portMAC(sw1, pUp)), mac6(portMAC(sw2, pDown)), d, h1, wire.BTSPort, wire.BTSPort, payload)
		bad0 := h.SW.Counters(pUp).Drops[sfc.ReasonBadBTS]
		h.Links[pUp].Inject(fr)
		// Data from h2 toward the address, with the TOS and port the input gave.
		data := gsperfFrame(mac6(portMAC(sw1, pH2)), macH2, h2, d, sport, uint64(dst), tos)
		h.Links[pH2].Inject(data)
		h.Advance(1e5, 1e5)
		if n := s.CacheEntries(); n > 16 {
			t.Fatalf("%d live entries in a cache of 16", n)
		}
		// Classified by its first four bytes (pkt): magic, version, type.
		isBTS := len(payload) >= 4 && payload[0] == 'G' && payload[1] == 'C' && payload[2] == wire.Version && payload[3] == byte(wire.TypeSFCBTS)
		_, err := wire.ParseBTS(payload)
		if bad := h.SW.Counters(pUp).Drops[sfc.ReasonBadBTS] - bad0; bad != map[bool]uint64{true: 1, false: 0}[isBTS && err != nil] {
			t.Fatalf("bad_bts drops %d for a payload that is a BTS: %v, parses: %v", bad, isBTS, err)
		}
		h.CheckFrames(t)
	})
}
