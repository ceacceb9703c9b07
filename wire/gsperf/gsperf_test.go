package gsperf_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/wire/gsperf"
)

func encode(h proto.Header, extra int) []byte {
	b := make([]byte, gsperf.Len+extra)
	h.Encode(b)
	return b
}

func TestFieldsAtTheirOffsets(t *testing.T) {
	b := make([]byte, gsperf.Len)
	h := gsperf.Header(b)
	h.Init(gsperf.TypeProbe)
	h.SetFlags(gsperf.FlagFIN | gsperf.FlagRetx)
	h.SetFlow(0x0102030405060708)
	h.SetSeq(0x1112131415161718)
	h.SetAck(0x2122232425262728)
	h.SetSize(0x3132333435363738)
	h.SetPriority(0x41424344)
	h.SetWindow(0x45464748)
	h.SetTimestamp(0x5152535455565758)
	h.SetMech(0x6162636465666768)
	want := []byte{'G', 'S', 1, 3, 0, 3, 0, 64,
		1, 2, 3, 4, 5, 6, 7, 8,
		0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,
		0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28,
		0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38,
		0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48,
		0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58,
		0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68}
	if !bytes.Equal(b, want) {
		t.Fatalf("got  %x\nwant %x", b, want)
	}
	if !h.Valid() || !h.Known() || !h.HasMagic() || h.Version() != 1 || h.Type() != 3 || h.Flags() != 3 || h.HdrLen() != 64 ||
		h.Flow() != 0x0102030405060708 || h.Seq() != 0x1112131415161718 || h.Ack() != 0x2122232425262728 ||
		h.Size() != 0x3132333435363738 || h.Priority() != 0x41424344 || h.Window() != 0x45464748 ||
		h.Timestamp() != 0x5152535455565758 || h.Mech() != 0x6162636465666768 {
		t.Fatal("accessors disagree with the bytes")
	}
	if len(h.Payload()) != 0 || h.Payload() == nil || len(h.Options()) != 0 {
		t.Fatalf("payload %x options %x", h.Payload(), h.Options())
	}
	// perf/proto's documented offset is the same.
	if proto.PriorityOffset != gsperf.OffPriority || proto.HeaderLen != gsperf.Len {
		t.Fatal("perf/proto and wire/gsperf disagree")
	}
}

func TestShortViewsReadZero(t *testing.T) {
	full := encode(proto.Header{Type: proto.TypeData, Flow: 7, Seq: 8, Priority: 9, Mech: 10}, 0)
	for n := 0; n <= gsperf.Len; n++ {
		h := gsperf.Header(full[:n])
		if h.HasMagic() != (n >= 2) || h.Known() != (n >= 3) || h.Valid() != (n == gsperf.Len) {
			t.Fatalf("%d bytes: magic %v known %v valid %v", n, h.HasMagic(), h.Known(), h.Valid())
		}
		if (h.Flow() == 7) != (n >= 16) || (h.Seq() == 8) != (n >= 24) || (h.Priority() == 9) != (n >= 44) || (h.Mech() == 10) != (n >= 64) {
			t.Fatalf("%d bytes: a field read past the view or not at all", n)
		}
		if n < gsperf.Len && (h.Payload() != nil || h.Options() != nil) {
			t.Fatalf("%d bytes: payload of a short header", n)
		}
	}
}

func TestChecks(t *testing.T) {
	good := encode(proto.Header{Type: proto.TypeAck}, 10)
	mut := func(i int, v byte) gsperf.Header { c := bytes.Clone(good); c[i] = v; return c }
	for _, c := range []struct {
		name                string
		h                   gsperf.Header
		magic, known, valid bool
	}{
		{"good", good, true, true, true},
		{"magic", mut(1, 'C'), false, false, false},
		{"version", mut(2, 2), true, false, false},
		{"type 0", mut(3, 0), true, true, false},
		{"type 5 (cnp)", mut(3, 5), true, true, true},
		{"type 6", mut(3, 6), true, true, false},
		{"hdrlen 63", mut(7, 63), true, true, false},
		{"hdrlen 74", mut(7, 74), true, true, true},
		{"hdrlen 75", mut(7, 75), true, true, false},
	} {
		if c.h.HasMagic() != c.magic || c.h.Known() != c.known || c.h.Valid() != c.valid {
			t.Errorf("%s: magic %v known %v valid %v", c.name, c.h.HasMagic(), c.h.Known(), c.h.Valid())
		}
	}
}

// The header length says where the payload starts: options between byte
// 64 and it are skipped, not read as payload.
func TestOptionsRespectTheHeaderLength(t *testing.T) {
	b := encode(proto.Header{Type: proto.TypeData, Flow: 1}, 16+5)
	binary.BigEndian.PutUint16(b[gsperf.OffHdrLen:], gsperf.Len+16)
	copy(b[gsperf.Len:], "OPTIONS-16-BYTES")
	copy(b[gsperf.Len+16:], "hello")
	h := gsperf.Header(b)
	if !h.Valid() || string(h.Options()) != "OPTIONS-16-BYTES" || string(h.Payload()) != "hello" {
		t.Fatalf("valid %v options %q payload %q", h.Valid(), h.Options(), h.Payload())
	}
	_, pl, err := proto.Decode(b)
	if err != nil || string(pl) != "hello" {
		t.Fatalf("perf/proto: %q %v", pl, err)
	}
}

func TestInUDP(t *testing.T) {
	frame := make([]byte, 14+20+8+gsperf.Len)
	(&proto.Header{Type: proto.TypeData, Priority: 77}).Encode(frame[42:])
	if h := gsperf.InUDP(frame, 17, 34); !h.Valid() || h.Priority() != 77 || len(h) != gsperf.Len {
		t.Fatalf("InUDP: %x", h)
	}
	for _, c := range []struct {
		name         string
		proto, l4Off uint8
		n            int
	}{
		{"tcp", 6, 34, len(frame)},
		{"no l4", 17, 0, len(frame)},
		{"udp header cut", 17, 34, 41},
	} {
		if h := gsperf.InUDP(frame[:c.n], c.proto, c.l4Off); h != nil {
			t.Errorf("%s: %x", c.name, h)
		}
	}
	if h := gsperf.InUDP(frame[:42], 17, 34); h == nil || len(h) != 0 || h.HasMagic() {
		t.Errorf("empty payload: %x", h)
	}
}

func TestTypeName(t *testing.T) {
	for ty, want := range map[uint8]string{0: "", 1: "data", 2: "ack", 3: "probe", 4: "probe-ack", 5: "cnp", 6: ""} {
		if got := gsperf.TypeName(ty); got != want {
			t.Errorf("%d: %q", ty, got)
		}
	}
}

func TestNoAllocations(t *testing.T) {
	frame := make([]byte, 14+20+8+gsperf.Len+100)
	var sink uint64
	n := testing.AllocsPerRun(100, func() {
		h := gsperf.InUDP(frame, 17, 34)
		h.Init(gsperf.TypeData)
		h.SetPriority(5)
		h.SetMech(6)
		if h.Valid() && h.Known() && h.HasMagic() {
			sink += uint64(h.Priority()) + h.Mech() + h.Flow() + uint64(len(h.Payload())) + uint64(len(h.Options()))
		}
	})
	if n != 0 || sink == 0 {
		t.Fatalf("%v allocations", n)
	}
}

// FuzzHeader: no accessor panics or reads past the view, whatever the
// bytes, and the view agrees with perf/proto's decoder: Valid exactly when
// Decode succeeds, with the same fields and payload.
func FuzzHeader(f *testing.F) {
	f.Add(encode(proto.Header{Type: proto.TypeData, Flow: 9, Seq: 1448, Size: 1 << 20, Priority: 7, Mech: 1 << 48}, 16))
	f.Add([]byte("GS"))
	f.Add([]byte("GS\x01\x02\x00\x00\x00\x50"))
	f.Fuzz(func(t *testing.T, in []byte) {
		// A view with no spare capacity, so a read past its end would panic.
		h := gsperf.Header(in[:len(in):len(in)])
		flow, prio, mech := h.Flow(), h.Priority(), h.Mech()
		_, _, _, _ = h.Timestamp(), h.Window(), h.Ack(), h.Size()
		pl, opts := h.Payload(), h.Options()
		if h.Valid() && (!h.Known() || !h.HasMagic()) || h.Known() && !h.HasMagic() {
			t.Fatal("Valid, Known and HasMagic do not nest")
		}
		d, dpl, err := proto.Decode(in)
		if (err == nil) != h.Valid() {
			t.Fatalf("Decode %v, Valid %v", err, h.Valid())
		}
		if err != nil {
			if pl != nil || opts != nil {
				t.Fatal("payload of an invalid header")
			}
			return
		}
		if d.Type != h.Type() || d.Flags != h.Flags() || d.HdrLen != h.HdrLen() || d.Flow != flow || d.Seq != h.Seq() ||
			d.Ack != h.Ack() || d.Size != h.Size() || d.Priority != prio || d.Window != h.Window() ||
			d.Timestamp != h.Timestamp() || d.Mech != mech {
			t.Fatalf("Decode %+v disagrees with the view", d)
		}
		if !bytes.Equal(dpl, pl) || len(opts) != int(h.HdrLen())-gsperf.Len || len(pl)+int(h.HdrLen()) != len(in) {
			t.Fatalf("payload %d options %d of %d", len(pl), len(opts), len(in))
		}
	})
}

// The flags are the bits the wire format names: FIN bit 0, RETX bit 1,
// ECE bit 2, all in the low byte (offset 5), and perf/proto's are the same.
func TestFlagBits(t *testing.T) {
	b := make([]byte, gsperf.Len)
	h := gsperf.Header(b)
	h.Init(gsperf.TypeAck)
	for _, c := range []struct {
		flag  uint16
		proto uint16
		bit   byte
	}{{gsperf.FlagFIN, proto.FlagFIN, 1}, {gsperf.FlagRetx, proto.FlagRetx, 2}, {gsperf.FlagECE, proto.FlagECE, 4}} {
		h.SetFlags(c.flag)
		if b[gsperf.OffFlags] != 0 || b[gsperf.OffFlags+1] != c.bit || c.proto != c.flag || h.Flags() != c.flag {
			t.Fatalf("flag %#x: bytes %x, perf/proto %#x", c.flag, b[gsperf.OffFlags:gsperf.OffFlags+2], c.proto)
		}
	}
	if gsperf.FlagFIN&gsperf.FlagRetx != 0 || (gsperf.FlagFIN|gsperf.FlagRetx)&gsperf.FlagECE != 0 {
		t.Fatal("flags share a bit")
	}
}
