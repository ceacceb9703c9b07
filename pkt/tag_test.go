package pkt_test

import (
	"bytes"
	"testing"

	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/wire"
)

// inUMEM puts frame at pkt.Headroom in a 2 KB chunk, as the switch holds
// frames, and parses it.
func inUMEM(t testing.TB, frame []byte) ([]byte, pkt.Packet) {
	t.Helper()
	mem := make([]byte, 2048)
	copy(mem[pkt.Headroom:], frame)
	p := pkt.Packet{Addr: pkt.Headroom, Len: uint32(len(frame)), InPort: 3, OutPort: 5, Queue: 7, Rank: 11}
	if e := pkt.Parse(frame, &p); e != pkt.OK {
		t.Fatalf("Parse: %v", e)
	}
	return mem, p
}

func frameOf(mem []byte, p *pkt.Packet) []byte { return mem[p.Addr : p.Addr+uint64(p.Len)] }

// tagged returns frame with a BFC tag of queue upq, as a BFC neighbour sends it.
func tagged(t testing.TB, frame []byte, upq uint16) []byte {
	t.Helper()
	b := append(make([]byte, wire.TagLen), frame...)
	if _, err := wire.InsertTag(b, upq); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPushPopTagOffsets(t *testing.T) {
	var s6, d6 [16]byte
	s6[15], d6[15] = 1, 2
	vlanTCP := pkttest.Eth(m2, m1, 0x0800, 42, 5)
	l4 := pkttest.TCP(1, 2, 0x10, nil)
	vlanTCP = append(append(vlanTCP, pkttest.IPv4(ip1, ip2, 6, 0, len(l4))...), l4...)
	for _, c := range []struct {
		name       string
		frame      []byte
		l3, l4     uint8 // offsets once tagged
		wantTagged bool  // the frame already has an 802.1Q tag
	}{
		{"udp4", pkttest.UDP4(m2, m1, ip1, ip2, 1000, 2000, make([]byte, 64)), 18, 38, false},
		{"vlan tcp4", vlanTCP, 22, 42, true},
		{"udp6", pkttest.UDP6(m2, m1, s6, d6, 5, 6, []byte("x")), 18, 58, false},
		{"arp", pkttest.ARP(m1, ip1, ip2), 18, 0, false},
		{"unknown ethertype", append(pkttest.Eth(m2, m1, 0x1234, 0, 0), 1, 2, 3, 4), 0, 0, false},
	} {
		mem, p := inUMEM(t, c.frame)
		orig := p
		if err := pkt.PopTag(mem, &p); err != wire.ErrNoTag || p != orig {
			t.Fatalf("%s: PopTag of an untagged frame: %v, %+v", c.name, err, p)
		}
		if err := pkt.PushTag(mem, &p, 0x123); err != nil {
			t.Fatalf("%s: PushTag: %v", c.name, err)
		}
		if p.Addr != pkt.Headroom-4 || p.Len != orig.Len+4 || p.TagOff != 12 || p.L3Off != c.l3 || p.L4Off != c.l4 {
			t.Fatalf("%s: after push %+v", c.name, p)
		}
		if !bytes.Equal(frameOf(mem, &p), tagged(t, c.frame, 0x123)) {
			t.Fatalf("%s: tagged frame %x", c.name, frameOf(mem, &p))
		}
		// What the next switch parses agrees with the metadata pushed.
		var q pkt.Packet
		if e := pkt.Parse(frameOf(mem, &p), &q); e != pkt.OK || q.L3Off != p.L3Off || q.L4Off != p.L4Off || q.TagOff != p.TagOff ||
			q.UpQ != 0x123 || q.Flags != p.Flags|pkt.FlagUpQ || q.Hash != p.Hash || (q.Flags&pkt.FlagTagged != 0) != c.wantTagged {
			t.Fatalf("%s: parsed %v %+v, pushed %+v", c.name, e, q, p)
		}
		if err := pkt.PushTag(mem, &p, 1); err != wire.ErrTagged {
			t.Fatalf("%s: second push: %v", c.name, err)
		}
		if err := pkt.PopTag(mem, &p); err != nil || p != orig || !bytes.Equal(frameOf(mem, &p), c.frame) {
			t.Fatalf("%s: pop: %v %+v %x", c.name, err, p, frameOf(mem, &p))
		}
	}
}

// A frame that arrived tagged: PopTag takes the tag off and keeps what it
// said (UpQ, FlagUpQ); the offsets are those of the untagged frame.
func TestPopArrivedTag(t *testing.T) {
	frame := pkttest.UDP4(m2, m1, ip1, ip2, 1000, 2000, make([]byte, 20))
	_, plain := inUMEM(t, frame)
	mem, p := inUMEM(t, tagged(t, frame, 9))
	if p.TagOff != 12 || p.UpQ != 9 || p.L3Off != 18 {
		t.Fatalf("parsed %+v", p)
	}
	if err := pkt.PopTag(mem, &p); err != nil {
		t.Fatal(err)
	}
	if p.Addr != pkt.Headroom+4 || p.Len != plain.Len || p.TagOff != 0 || p.L3Off != plain.L3Off || p.L4Off != plain.L4Off ||
		p.UpQ != 9 || p.Flags != plain.Flags|pkt.FlagUpQ || !bytes.Equal(frameOf(mem, &p), frame) {
		t.Fatalf("popped %+v %x", p, frameOf(mem, &p))
	}
}

func TestTagRefusals(t *testing.T) {
	frame := pkttest.UDP4(m2, m1, ip1, ip2, 1000, 2000, nil)
	mem, p := inUMEM(t, frame)
	keep := bytes.Clone(mem)
	short := p
	short.Len = 13
	noRoom := p
	noRoom.Addr = 2
	past := p
	past.Len = 4000
	deep := p
	deep.L4Off = 252
	inEth := p
	inEth.L3Off = 13
	for _, c := range []struct {
		name string
		p    pkt.Packet
		upq  uint16
		want error
	}{
		{"queue 4096", p, 4096, wire.ErrQueue},
		{"13 bytes", short, 1, wire.ErrShort},
		{"no headroom", noRoom, 1, wire.ErrShort},
		{"past the UMEM", past, 1, wire.ErrShort},
		{"L4 at 252", deep, 1, wire.ErrOffset},
		{"L3 inside the Ethernet header", inEth, 1, wire.ErrOffset},
	} {
		q := c.p
		if err := pkt.PushTag(mem, &q, c.upq); err != c.want || q != c.p || !bytes.Equal(mem, keep) {
			t.Errorf("%s: PushTag %v (want %v), changed %v", c.name, err, c.want, q != c.p || !bytes.Equal(mem, keep))
		}
	}
	// TagOff says 12 but the bytes hold no tag.
	q := p
	q.TagOff = 12
	if err := pkt.PopTag(mem, &q); err != wire.ErrNoTag || !bytes.Equal(mem, keep) {
		t.Errorf("PopTag of a frame without a tag: %v", err)
	}
	mem, p = inUMEM(t, tagged(t, frame, 1))
	p.L4Off = 17
	if err := pkt.PopTag(mem, &p); err != wire.ErrOffset {
		t.Errorf("PopTag with L4 inside the tagged Ethernet header: %v", err)
	}
}

func TestTagDoesNotAllocate(t *testing.T) {
	mem, p := inUMEM(t, pkttest.UDP4(m2, m1, ip1, ip2, 1000, 2000, nil))
	var sink error
	n := testing.AllocsPerRun(1000, func() {
		if sink = pkt.PushTag(mem, &p, 5); sink == nil {
			sink = pkt.PopTag(mem, &p)
		}
		if sink == nil {
			sink = pkt.PopTag(mem, &p) // refused
		}
	})
	if n != 0 || sink != wire.ErrNoTag {
		t.Fatalf("%v allocations (%v)", n, sink)
	}
}

// FuzzPushPopTag: on any frame that parses, PopTag of an untagged frame
// refuses and changes nothing; PushTag either refuses and changes nothing,
// or tags it so that the next switch parses the offsets pushed, and PopTag
// then gives back the same frame and the same metadata. A frame that
// arrived tagged pops and pushes back to itself.
func FuzzPushPopTag(f *testing.F) {
	f.Add(pkttest.UDP4(m2, m1, ip1, ip2, 1, 2, []byte("hi")), uint16(7))
	f.Add(pkttest.TCP4(m2, m1, ip1, ip2, 1, 2, 0, nil), uint16(4095))
	f.Add(append(pkttest.Eth(m2, m1, 0x8100, 3, 1), 0x86, 0xdd, 0x60), uint16(0))
	f.Add(tagged(f, pkttest.UDP4(m2, m1, ip1, ip2, 1, 2, nil), 33), uint16(4096))
	f.Fuzz(func(t *testing.T, frame []byte, upq uint16) {
		if len(frame) > 2048-pkt.Headroom {
			return
		}
		mem := make([]byte, 2048)
		copy(mem[pkt.Headroom:], frame)
		p := pkt.Packet{Addr: pkt.Headroom, Len: uint32(len(frame)), Queue: 3}
		if pkt.Parse(frame, &p) != pkt.OK {
			return
		}
		orig, keep := p, bytes.Clone(mem)
		if p.TagOff != 0 {
			if err := pkt.PopTag(mem, &p); err != nil {
				t.Fatalf("PopTag of a parsed tag: %v", err)
			}
			if p.TagOff != 0 || p.Len != orig.Len-4 || !bytes.Equal(frameOf(mem, &p), append(bytes.Clone(frame[:12]), frame[16:]...)) {
				t.Fatalf("popped %+v %x", p, frameOf(mem, &p))
			}
			if err := pkt.PushTag(mem, &p, p.UpQ); err != nil {
				t.Fatalf("PushTag after PopTag: %v", err)
			}
			want := bytes.Clone(frame)
			want[14] &= 0x0f // the reserved flag bits are not kept
			if p != orig || !bytes.Equal(frameOf(mem, &p), want) {
				t.Fatalf("pop then push: %+v %x, want %+v %x", p, frameOf(mem, &p), orig, want)
			}
			return
		}
		if err := pkt.PopTag(mem, &p); err != wire.ErrNoTag || p != orig || !bytes.Equal(mem, keep) {
			t.Fatalf("PopTag of an untagged frame: %v", err)
		}
		err := pkt.PushTag(mem, &p, upq)
		if err != nil {
			if p != orig || !bytes.Equal(mem, keep) {
				t.Fatalf("refused PushTag (%v) changed something", err)
			}
			if upq < wire.MaxQueues && err != wire.ErrOffset {
				t.Fatalf("PushTag of a parsed frame refused: %v", err)
			}
			return
		}
		var q pkt.Packet
		switch e := pkt.Parse(frameOf(mem, &p), &q); e {
		case pkt.OK:
			if q.L3Off != p.L3Off || q.L4Off != p.L4Off || q.TagOff != p.TagOff || q.UpQ != upq || q.Flags != p.Flags|pkt.FlagUpQ || q.Hash != p.Hash {
				t.Fatalf("parsed %+v, pushed %+v", q, p)
			}
		case pkt.ErrTooDeep: // the headers now end past byte 255
		default:
			t.Fatalf("tagged frame does not parse: %v", e)
		}
		if err := pkt.PopTag(mem, &p); err != nil || p != orig || !bytes.Equal(mem[pkt.Headroom:], keep[pkt.Headroom:]) {
			t.Fatalf("push then pop: %v %+v, want %+v", err, p, orig)
		}
	})
}

func BenchmarkPushPopTag(b *testing.B) {
	mem, p := inUMEM(b, pkttest.UDP4(m2, m1, ip1, ip2, 1000, 2000, make([]byte, 1000)))
	for i := 0; i < b.N; i++ {
		if pkt.PushTag(mem, &p, 5) != nil || pkt.PopTag(mem, &p) != nil {
			b.Fatal("refused")
		}
	}
}
