package wire

import (
	"bytes"
	"testing"
)

func TestBFCRoundTrip(t *testing.T) {
	bm := make([]byte, BitmapLen(MaxQueues))
	for q := 0; q < MaxQueues; q += 7 {
		BitmapSet(bm, q, true)
	}
	msgs := []BFC{
		{Type: TypeBFCPause, Seq: 0, Switch: 0xffff, Port: 0xffff, Queue: MaxQueues - 1},
		{Type: TypeBFCResume, Seq: 0xffffffff, Switch: 1, Port: 2, Queue: 0},
		{Type: TypeBFCBitmap, Seq: 77, NQueues: 1, Bitmap: []byte{1}},
		{Type: TypeBFCBitmap, Seq: 78, NQueues: 9, Bitmap: []byte{0xff, 0x01}},
		{Type: TypeBFCBitmap, Seq: 79, NQueues: 64, Bitmap: bm[:8]},
		{Type: TypeBFCBitmap, Seq: 80, NQueues: MaxQueues, Bitmap: bm},
	}
	frame := make([]byte, MaxBFCFrameLen)
	msg := make([]byte, MaxBFCFrameLen)
	for _, m := range msgs {
		n, err := BuildBFC(frame, macA, m)
		if err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
		if want := max(MinFrameLen, 14+8+m.BodyLen()); n != want {
			t.Fatalf("%v: frame %d bytes, want %d", m.Type, n, want)
		}
		got, err := ParseBFCFrame(frame[:n])
		if err != nil {
			t.Fatalf("%+v: parse: %v", m, err)
		}
		if !sameBFC(got, m) {
			t.Fatalf("round trip\n got  %+v\n want %+v", got, m)
		}
		if [6]byte(frame[6:12]) != macA {
			t.Fatalf("source MAC %x", frame[6:12])
		}
		k, err := PutBFC(msg, m)
		if err != nil || !bytes.Equal(msg[:k], frame[14:14+k]) {
			t.Fatalf("PutBFC: %d, %v: %x", k, err, msg[:k])
		}
	}
}

func sameBFC(a, b BFC) bool {
	n := BitmapLen(int(b.NQueues))
	if b.Type != TypeBFCBitmap {
		n = 0
	}
	return a.Type == b.Type && a.Flags == b.Flags && a.Seq == b.Seq && a.Switch == b.Switch &&
		a.Port == b.Port && a.Queue == b.Queue && a.NQueues == b.NQueues &&
		len(a.Bitmap) == n && bytes.Equal(a.Bitmap, b.Bitmap[:n])
}

func TestParseBFCRejects(t *testing.T) {
	eth := "0180c200000e 020000000001 88b6 "
	cases := []struct {
		name  string
		frame string
		want  Error
	}{
		{"13 bytes", "0180c200000e 020000000001 88", ErrShort},
		{"no message", eth, ErrShort},
		{"unicast destination", "020000000009 020000000001 88b6 4743 01 01 000c 0000" + zeros(12), ErrEthernet},
		{"other nearest-bridge address", "0180c2000000 020000000001 88b6 4743 01 01 000c 0000" + zeros(12), ErrEthernet},
		{"EtherType 0x88b5", "0180c200000e 020000000001 88b5 4743 01 01 000c 0000" + zeros(12), ErrEthernet},
		{"VLAN tag", "0180c200000e 020000000001 8100 0005 88b6 4743 01 01 000c 0000" + zeros(12), ErrEthernet},
		{"bad magic", eth + "4744 01 01 000c 0000" + zeros(12), ErrMagic},
		{"bad version", eth + "4743 02 01 000c 0000" + zeros(12), ErrVersion},
		{"unknown type", eth + "4743 01 07 000c 0000" + zeros(12), ErrType},
		{"credit in a link-local frame", eth + "4743 01 20 0008 0000" + zeros(8), ErrWrongType},
		{"length 11", eth + "4743 01 01 000b 0000" + zeros(12), ErrLength},
		{"length lies", eth + "4743 01 01 0030 0000" + zeros(38), ErrTruncated},
		{"pause queue 4096", eth + "4743 01 01 000c 0000 00000001 0001 0001 1000 0000", ErrQueue},
		{"pause queue 65535", eth + "4743 01 01 000c 0000 00000001 0001 0001 ffff 0000", ErrQueue},
		{"resume queue 4096", eth + "4743 01 02 000c 0000 00000001 0001 0001 1000 0000", ErrQueue},
		{"pause nqueues 1", eth + "4743 01 01 000c 0000 00000001 0001 0001 0005 0001", ErrNQueues},
		{"bitmap queue 1", eth + "4743 01 03 000d 0000 00000001 0001 0001 0001 0008 ff", ErrQueue},
		{"bitmap nqueues 0", eth + "4743 01 03 000d 0000 00000001 0001 0001 0000 0000 ff", ErrNQueues},
		{"bitmap nqueues 4097", eth + "4743 01 03 020d 0000 00000001 0001 0001 0000 1001" + zeros(513), ErrNQueues},
		{"bitmap nqueues 65535", eth + "4743 01 03 000d 0000 00000001 0001 0001 0000 ffff ff", ErrNQueues},
		{"bitmap shorter than nqueues", eth + "4743 01 03 000d 0000 00000001 0001 0001 0000 0010 ff" + zeros(20), ErrLength},
		{"bitmap bit beyond nqueues", eth + "4743 01 03 000d 0000 00000001 0001 0001 0000 0007 80" + zeros(20), ErrBitmap},
		{"bitmap last-byte bit beyond nqueues", eth + "4743 01 03 000e 0000 00000001 0001 0001 0000 000a ff 04" + zeros(20), ErrBitmap},
	}
	for _, c := range cases {
		frame := hexBytes(t, c.frame)
		if _, err := ParseBFCFrame(frame); err != c.want {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	// Accepted: a bit at nqueues-1, padding after the message, a longer body
	// (a later version's fields), reserved flags.
	for _, ok := range []string{
		eth + "4743 01 03 000e 0000 00000001 0001 0001 0000 000a ff 02" + zeros(20),
		eth + "4743 01 01 0010 ffff 00000001 0001 0001 0fff 0000 01020304" + zeros(20),
	} {
		if _, err := ParseBFCFrame(hexBytes(t, ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

func TestBuildBFCRejects(t *testing.T) {
	b := make([]byte, 600)
	for _, c := range []struct {
		name string
		m    BFC
		buf  int
		want Error
	}{
		{"type 0", BFC{}, 100, ErrType},
		{"type 4", BFC{Type: 4}, 100, ErrType},
		{"credit type", BFC{Type: TypeXPCredit}, 100, ErrWrongType},
		{"pause queue 4096", BFC{Type: TypeBFCPause, Queue: 4096}, 100, ErrQueue},
		{"resume queue 65535", BFC{Type: TypeBFCResume, Queue: 0xffff}, 100, ErrQueue},
		{"pause with nqueues", BFC{Type: TypeBFCPause, NQueues: 3}, 100, ErrNQueues},
		{"bitmap queue 2", BFC{Type: TypeBFCBitmap, Queue: 2, NQueues: 8, Bitmap: []byte{0}}, 100, ErrQueue},
		{"bitmap nqueues 0", BFC{Type: TypeBFCBitmap}, 100, ErrNQueues},
		{"bitmap nqueues 4097", BFC{Type: TypeBFCBitmap, NQueues: 4097, Bitmap: make([]byte, 513)}, 600, ErrNQueues},
		{"bitmap too short", BFC{Type: TypeBFCBitmap, NQueues: 9, Bitmap: []byte{0}}, 100, ErrLength},
		{"bit beyond nqueues", BFC{Type: TypeBFCBitmap, NQueues: 3, Bitmap: []byte{0x08}}, 100, ErrBitmap},
		{"buffer below 60", BFC{Type: TypeBFCPause}, 59, ErrBuffer},
		{"buffer below the bitmap", BFC{Type: TypeBFCBitmap, NQueues: 4096, Bitmap: make([]byte, 512)}, 545, ErrBuffer},
	} {
		for i := range b {
			b[i] = 0xee
		}
		if _, err := BuildBFC(b[:c.buf], macA, c.m); err != c.want {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
		if !bytes.Equal(b, bytes.Repeat([]byte{0xee}, len(b))) {
			t.Errorf("%s: wrote into the buffer on error", c.name)
		}
		if _, err := PutBFC(b, c.m); err != c.want && c.want != ErrBuffer {
			t.Errorf("PutBFC %s: got %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := PutBFC(make([]byte, 19), BFC{Type: TypeBFCPause}); err != ErrBuffer {
		t.Errorf("PutBFC in 19 bytes: %v", err)
	}
}

func TestBitmapHelpers(t *testing.T) {
	for n, want := range map[int]int{-1: 0, 0: 0, 1: 1, 8: 1, 9: 2, 4095: 512, 4096: 512} {
		if got := BitmapLen(n); got != want {
			t.Errorf("BitmapLen(%d) = %d, want %d", n, got, want)
		}
	}
	bm := make([]byte, 512)
	for _, q := range []int{0, 1, 7, 8, 63, 64, 4095} {
		if !BitmapSet(bm, q, true) || !BitmapGet(bm, q) {
			t.Errorf("queue %d not set", q)
		}
	}
	if bm[0] != 0x83 || bm[1] != 0x01 || bm[7] != 0x80 || bm[8] != 0x01 || bm[511] != 0x80 {
		t.Errorf("bit layout: % x ... %x", bm[:9], bm[511])
	}
	if BitmapGet(bm, 2) || BitmapGet(bm, 4094) {
		t.Error("unset queue reads as set")
	}
	BitmapSet(bm, 7, false)
	if BitmapGet(bm, 7) || bm[0] != 0x03 {
		t.Errorf("clear: %x", bm[0])
	}
	for _, q := range []int{-1, 4096, 1 << 30} {
		if BitmapSet(bm, q, true) || BitmapGet(bm, q) {
			t.Errorf("queue %d outside the bitmap accepted", q)
		}
	}
	if BitmapGet(nil, 0) || BitmapSet(nil, 0, true) {
		t.Error("nil bitmap")
	}
}

// A parsed bitmap aliases the frame but cannot be appended into it.
func TestParsedBitmapCapacity(t *testing.T) {
	frame := make([]byte, 100)
	n, _ := BuildBFC(frame, macA, BFC{Type: TypeBFCBitmap, NQueues: 16, Bitmap: []byte{1, 2}})
	m, err := ParseBFCFrame(frame[:n])
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Bitmap) != 2 || cap(m.Bitmap) != 2 {
		t.Fatalf("bitmap len %d cap %d", len(m.Bitmap), cap(m.Bitmap))
	}
}
