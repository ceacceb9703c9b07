package wire

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

// hexBytes decodes hex written by hand: whitespace and '|' separate fields,
// '#' starts a comment that runs to the end of the line. t may be nil (for
// package-level values): bad hex then panics.
func hexBytes(t testing.TB, s string) []byte {
	if t != nil {
		t.Helper()
	}
	var clean strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		for _, r := range line {
			if r != ' ' && r != '\t' && r != '|' {
				clean.WriteRune(r)
			}
		}
	}
	b, err := hex.DecodeString(clean.String())
	if err != nil {
		if t == nil {
			panic(err)
		}
		t.Fatalf("bad hex in test: %v", err)
	}
	return b
}

func zeros(n int) string { return strings.Repeat("00", n) }

var (
	macA = [6]byte{0x02, 0, 0, 0, 0, 0x01}
	macB = [6]byte{0x02, 0, 0, 0, 0, 0x02}
	macC = [6]byte{0x02, 0, 0, 0, 0, 0x03}
	ip1  = [4]byte{10, 0, 0, 1}
	ip2  = [4]byte{10, 0, 0, 2}
	ip3  = [4]byte{10, 0, 0, 3}
)

func checkGolden(t *testing.T, name string, got []byte, n int, err error, want []byte) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if n != len(want) || !bytes.Equal(got[:n], want) {
		t.Fatalf("%s: wrote %d bytes\n got  %x\n want %x", name, n, got[:n], want)
	}
}

func TestGoldenHeader(t *testing.T) {
	b := make([]byte, 16)
	n, err := PutHeader(b, Header{Type: TypeXPCredit, Length: 8, Flags: 0x0102})
	if err != nil || n != HeaderLen {
		t.Fatalf("PutHeader: %d, %v", n, err)
	}
	checkGolden(t, "header", b, n, nil, hexBytes(t, "4743 01 20 0008 0102"))
}

func TestGoldenBFCPause(t *testing.T) {
	want := hexBytes(t, `
		0180c200000e | 020000000001 | 88b6      # Ethernet: nearest-bridge group, sender port, 0x88B6
		4743 | 01 | 01 | 000c | 0000            # GC: magic, version 1, type 1 (PAUSE), length 12, flags 0
		01020304 | 0007 | 0003 | 0005 | 0000    # seq, switch 7, port 3, queue 5, nqueues 0
	`+zeros(60-34))
	b := make([]byte, 128)
	n, err := BuildBFC(b, macA, BFC{Type: TypeBFCPause, Seq: 0x01020304, Switch: 7, Port: 3, Queue: 5})
	checkGolden(t, "pause", b, n, err, want)

	want[17] = 2 // RESUME
	n, err = BuildBFC(b, macA, BFC{Type: TypeBFCResume, Seq: 0x01020304, Switch: 7, Port: 3, Queue: 5})
	checkGolden(t, "resume", b, n, err, want)
}

func TestGoldenBFCBitmap(t *testing.T) {
	// 10 queues, 0, 3 and 9 paused: byte 0 = bits 0 and 3, byte 1 = bit 1.
	want := hexBytes(t, `
		0180c200000e | 020000000001 | 88b6
		4743 | 01 | 03 | 000e | 0000            # type 3 (BITMAP), length 12 + 2
		fffffffe | 0102 | 0010 | 0000 | 000a    # seq, switch 0x102, port 16, queue 0, nqueues 10
		09 02                                   # the bitmap
	`+zeros(60-36))
	bm := make([]byte, 2)
	for _, q := range []int{0, 3, 9} {
		if !BitmapSet(bm, q, true) {
			t.Fatalf("BitmapSet(%d) refused", q)
		}
	}
	b := make([]byte, MaxBFCFrameLen)
	n, err := BuildBFC(b, macA, BFC{Type: TypeBFCBitmap, Seq: 0xfffffffe, Switch: 0x102, Port: 16, NQueues: 10, Bitmap: bm})
	checkGolden(t, "bitmap", b, n, err, want)

	// All 4096 queues: 512 bytes of bitmap, no padding needed.
	full := bytes.Repeat([]byte{0xff}, MaxBitmapLen)
	want = hexBytes(t, `
		0180c200000e | 020000000001 | 88b6
		4743 | 01 | 03 | 020c | 0000            # length 12 + 512
		00000001 | 0001 | 0002 | 0000 | 1000    # nqueues 4096
	`+strings.Repeat("ff", 512))
	n, err = BuildBFC(b, macA, BFC{Type: TypeBFCBitmap, Seq: 1, Switch: 1, Port: 2, NQueues: 4096, Bitmap: full})
	checkGolden(t, "bitmap 4096", b, n, err, want)
	if n != MaxBFCFrameLen {
		t.Fatalf("MaxBFCFrameLen %d, full bitmap frame %d", MaxBFCFrameLen, n)
	}
}

func TestGoldenTag(t *testing.T) {
	frame := hexBytes(t, "020000000002 020000000001 0800 45000014")
	b := append(make([]byte, TagLen), frame...)
	delta, err := InsertTag(b, 0x123)
	if err != nil || delta != -TagLen {
		t.Fatalf("InsertTag: %d, %v", delta, err)
	}
	want := hexBytes(t, "020000000002 020000000001 | 88b5 0123 | 0800 45000014")
	if !bytes.Equal(b, want) {
		t.Fatalf("tagged\n got  %x\n want %x", b, want)
	}
}

// The original frame the BTS tests quote: a gsperf data segment from
// 10.0.0.1:5000 to 10.0.0.3:5500 (IPv4 total length 128) whose first 16
// header bytes carry flow id 0xabcdef.
func btsOriginal(t testing.TB) []byte {
	return hexBytes(t, `
		020000000003 020000000001 0800
		4500 0080 1234 4000 4011 beef 0a000001 0a000003   # IPv4 (checksum is not the quoter's business)
		1388 157c 006c 0000                               # UDP 5000 -> 5500, length 108
		4753 01 01 0000 0040 0000000000abcdef             # gsperf: magic, version, data, flags, hdrlen 64, flow id
	`+strings.Repeat("5a", 48+36))
}

func TestGoldenBTS(t *testing.T) {
	orig := btsOriginal(t)
	want := hexBytes(t, `
		020000000002 020000000003 0800                    # to the next hop toward 10.0.0.1, from the emitting port
		45 c0 0060 0000 4000 40 11 25ca 0a000003 0a000001 # DSCP 48, total 96, DF, TTL 64, UDP, checksum, 10.0.0.3 -> 10.0.0.1
		4a4c 4a4c 004c 0000                               # UDP 19020 -> 19020, length 76, no checksum
		4743 01 10 003c 0001                              # GC: type 16, length 16 + 44, flags cacheable
		000003e8 0001 0002 0003 0000 00010000             # pause 1000 us, switch 1, port 2, queue 3, reserved, depth 65536
		4500 0080 1234 4000 4011 beef 0a000001 0a000003   # quote: the IPv4 header,
		1388 157c 006c 0000                               # the UDP header,
		4753 01 01 0000 0040 0000000000abcdef             # 16 bytes of payload
	`)
	b := make([]byte, MaxBTSFrameLen)
	m := BTS{Flags: BTSCacheable, Pause: 1000, Switch: 1, Port: 2, Queue: 3, Depth: 65536}
	n, err := BuildBTS(b, MACs{Dst: macB, Src: macC}, DefaultBTSDSCP, orig, 14, 34, m)
	checkGolden(t, "bts", b, n, err, want)

	got, err := ParseBTS(b[UDPFrameLen:n])
	if err != nil {
		t.Fatal(err)
	}
	wantFlow := FiveTuple{Src: ip1, Dst: ip3, SrcPort: 5000, DstPort: 5500, Proto: ProtoUDP}
	if got.Flow != wantFlow || !got.HasPorts || !got.HasFlowID || got.FlowID != 0xabcdef {
		t.Fatalf("parsed quote: %+v", got)
	}
	if got.Pause != 1000 || got.Switch != 1 || got.Port != 2 || got.Queue != 3 || got.Depth != 65536 || got.Flags != BTSCacheable {
		t.Fatalf("parsed fields: %+v", got)
	}
}

func TestGoldenCredit(t *testing.T) {
	want := hexBytes(t, `
		020000000002 020000000003 0800
		45 28 002c 0000 4000 40 11 2697 0a000002 0a000001 # DSCP 10, total 44; from the data receiver to the sender
		1770 1388 0018 0000                               # UDP 6000 -> 5000 (the flow's ports reversed), length 24
		4743 01 20 0008 0000                              # GC: type 32, length 8
		deadbeef 00012345                                 # credit_seq, sent_time
		0000                                              # padding to 60
	`)
	flow := FiveTuple{Src: ip1, Dst: ip2, SrcPort: 5000, DstPort: 6000, Proto: ProtoUDP}
	b := make([]byte, 64)
	n, err := BuildCredit(b, MACs{Dst: macB, Src: macC}, DefaultCreditDSCP, flow, Credit{Seq: 0xdeadbeef, SentTime: 0x12345})
	checkGolden(t, "credit", b, n, err, want)
}

func TestGoldenXPRequestStop(t *testing.T) {
	flow := FiveTuple{Src: ip1, Dst: ip2, SrcPort: 5000, DstPort: 6000, Proto: ProtoUDP}
	want := hexBytes(t, `
		020000000002 020000000003 0800
		45 00 0034 0000 4000 40 11 26b7 0a000001 0a000002 # DSCP 0, total 52, sender -> receiver
		1388 1770 0020 0000                               # UDP 5000 -> 6000, length 32
		4743 01 21 0010 0000                              # GC: type 33, length 16
		0102030405060708 0000000000100000                 # flow id, size 1 MiB
	`)
	b := make([]byte, 128)
	n, err := BuildXPRequest(b, MACs{Dst: macB, Src: macC}, flow, XPRequest{FlowID: 0x0102030405060708, Size: 1 << 20})
	checkGolden(t, "request", b, n, err, want)

	want = hexBytes(t, `
		020000000002 020000000003 0800
		45 00 002c 0000 4000 40 11 26bf 0a000001 0a000002 # total 44
		1388 1770 0018 0000                               # length 24
		4743 01 22 0008 0000                              # GC: type 34, length 8
		0102030405060708                                  # flow id
		0000                                              # padding to 60
	`)
	n, err = BuildXPStop(b, MACs{Dst: macB, Src: macC}, flow, XPStop{FlowID: 0x0102030405060708})
	checkGolden(t, "stop", b, n, err, want)
}

func TestGoldenMech(t *testing.T) {
	var field [8]byte
	m, err := MechBFC(0xabc)
	if err != nil {
		t.Fatal(err)
	}
	putU64(field[:], m)
	if want := hexBytes(t, "0abc 000000000000"); !bytes.Equal(field[:], want) {
		t.Fatalf("BFC mech %x, want %x", field, want)
	}
	putU64(field[:], MechXP(0x01020304, 0xa0b0c0d0))
	if want := hexBytes(t, "01020304 a0b0c0d0"); !bytes.Equal(field[:], want) {
		t.Fatalf("XP mech %x, want %x", field, want)
	}
}

func putU64(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (56 - 8*i))
	}
}
