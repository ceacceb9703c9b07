package telemetry_test

import (
	"bytes"
	"testing"

	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/wire/gsperf"
)

// FuzzEgress runs arbitrary frames through the stage, each described as
// the parse stage describes it (raw false) or with any L4 offset a
// descriptor can hold and protocol UDP (raw true). Nothing panics; no
// byte outside the frame changes; inside it, only the INT option the
// frame's header carries at that offset (one more hop, the earlier ones
// kept) and the UDP checksum may; and a checksum right from scratch
// before the write is right after it.
func FuzzEgress(f *testing.F) {
	for _, s := range [][]byte{
		v4(seg(gsperf.TypeData, 1, 0, 10), true), v6(seg(gsperf.TypeData, 3, 1, 0)),
		v4(seg(gsperf.TypeData, 2, 2, 5), true), v4(seg(gsperf.TypeAck, 1, 0, 0), true),
		v4(seg(gsperf.TypeData, 8, 7, 0), false), v4([]byte("GS\x01\x01"), true),
	} {
		f.Add(s, false, uint8(0))
		f.Add(s, true, uint8(34))
	}
	r := newRig(f, 1e9)
	now := int64(0)
	f.Fuzz(func(t *testing.T, frame []byte, raw bool, l4 uint8) {
		if len(frame) > slotSize-headroom {
			frame = frame[:slotSize-headroom]
		}
		r.t = t
		slot := r.mem[:slotSize]
		for i := range slot {
			slot[i] = 0xa5
		}
		r.load(frame)
		p := &r.pkts[0]
		if raw {
			p.Proto, p.L4Off = 17, l4
		}
		before := bytes.Clone(slot)
		now += 1000
		r.egress(now)
		got := r.frame(0)
		if !bytes.Equal(slot[:headroom], before[:headroom]) || !bytes.Equal(slot[headroom+len(frame):], before[headroom+len(frame):]) {
			t.Fatal("a byte outside the frame changed")
		}
		if bytes.Equal(got, frame) {
			return
		}
		// Something changed: it must be a data segment's option at L4Off.
		h := gsperf.InUDP(frame, p.Proto, p.L4Off)
		o := h.INT()
		if o == nil || h.Type() != gsperf.TypeData {
			t.Fatalf("a frame without an INT data segment at offset %d was changed", p.L4Off)
		}
		at := int(p.L4Off) + gsperf.UDPHeaderLen + gsperf.Len
		for i := range frame {
			inOption := i >= at && i < at+len(o)
			inSum := i == int(p.L4Off)+6 || i == int(p.L4Off)+7
			if !inOption && !inSum && got[i] != frame[i] {
				t.Fatalf("byte %d changed, outside the option [%d, %d) and the checksum", i, at, at+len(o))
			}
		}
		n := gsperf.Header(got[int(p.L4Off)+gsperf.UDPHeaderLen:]).INT()
		if n.Hops() != o.Hops()+1 {
			t.Fatalf("%d hops became %d", o.Hops(), n.Hops())
		}
		for i := 0; i < o.Hops(); i++ {
			if n.Hop(i) != o.Hop(i) {
				t.Fatalf("hop %d changed", i)
			}
		}
		// The checksum, where the frame is one udpSum can read.
		if p.Flags&(pkt.FlagIPv4|pkt.FlagIPv6) != 0 && p.Flags&pkt.FlagTagged == 0 && !raw && udpOff(frame) == int(p.L4Off) && udpCk(frame) != 0 && udpSum(frame) == 0 && udpSum(got) != 0 {
			t.Fatalf("the checksum was right before the write and is wrong after it")
		}
	})
}
