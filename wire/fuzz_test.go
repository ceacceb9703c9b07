package wire

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// asError fails unless err is one of the package's Error values.
func asError(t *testing.T, err error) Error {
	t.Helper()
	e, ok := err.(Error)
	if !ok || e == 0 || int(e) >= NumErrors {
		t.Fatalf("error %v (%T) is not a wire.Error", err, err)
	}
	return e
}

// sameMessage checks that out (a re-encoded message, canonical length) equals
// orig up to padding: byte for byte, except that a GC length larger than the
// canonical one (a body with fields of a later version) is written as the
// canonical one.
func sameMessage(t *testing.T, orig, out []byte) {
	t.Helper()
	if len(orig) < len(out) {
		t.Fatalf("re-encoding %d bytes is longer than the %d parsed", len(out), len(orig))
	}
	want := bytes.Clone(orig[:len(out)])
	if binary.BigEndian.Uint16(want[4:]) > uint16(len(out)-HeaderLen) {
		binary.BigEndian.PutUint16(want[4:], uint16(len(out)-HeaderLen))
	}
	if !bytes.Equal(out, want) {
		t.Fatalf("re-encoding differs\n orig %x\n out  %x", want, out)
	}
}

func FuzzGCHeader(f *testing.F) {
	f.Add([]byte("GC\x01\x01\x00\x0c\x00\x00"+string(make([]byte, 12))), uint8(1), uint16(12), uint16(0))
	f.Add([]byte("GC\x01\x10\x00\x24\x00\x01"+string(make([]byte, 40))), uint8(16), uint16(36), uint16(7))
	f.Add([]byte("GC\x01\x20\x00\x08\xff\xff\x00\x00\x00\x01\x00\x00\x00\x02"), uint8(32), uint16(8), uint16(0xffff))
	f.Add([]byte("GC\x02\x21"), uint8(0), uint16(0xffff), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, typ uint8, length, flags uint16) {
		h, err := ParseHeader(data)
		if err != nil {
			asError(t, err)
		} else {
			if !h.Type.Known() || int(h.Length) < h.Type.MinBody() || HeaderLen+int(h.Length) > len(data) {
				t.Fatalf("accepted %+v from %d bytes", h, len(data))
			}
			out := make([]byte, HeaderLen+int(h.Length))
			n, err := PutHeader(out, h)
			if err != nil || n != HeaderLen || !bytes.Equal(out[:HeaderLen], data[:HeaderLen]) {
				t.Fatalf("re-encoding %+v: %v: %x vs %x", h, err, out[:HeaderLen], data[:HeaderLen])
			}
		}

		// Build from fields: accepted exactly when the type is known and the
		// length at least its minimum; what is built parses back.
		h = Header{Type: Type(typ), Length: length, Flags: flags}
		out := make([]byte, HeaderLen+int(length))
		_, err = PutHeader(out, h)
		if valid := h.Type.Known() && int(length) >= h.Type.MinBody(); valid != (err == nil) {
			t.Fatalf("PutHeader(%+v): %v", h, err)
		}
		if err == nil {
			if got, err := ParseHeader(out); err != nil || got != h {
				t.Fatalf("parse back %+v: %+v, %v", h, got, err)
			}
		}
	})
}

func FuzzBFC(f *testing.F) {
	pause := make([]byte, 60)
	BuildBFC(pause, macA, BFC{Type: TypeBFCPause, Seq: 0xffffffff, Queue: 4095})
	bitmap := make([]byte, MaxBFCFrameLen)
	n, _ := BuildBFC(bitmap, macA, BFC{Type: TypeBFCBitmap, NQueues: 13, Bitmap: []byte{0xff, 0x1f}})
	f.Add(pause, uint8(1), uint32(0), uint16(0), uint16(0), uint16(0), uint16(0), uint16(0), []byte{})
	f.Add(bitmap[:n], uint8(3), uint32(0xffffffff), uint16(0xffff), uint16(0xffff), uint16(0), uint16(4096), uint16(0), bytes.Repeat([]byte{0xff}, 512))
	f.Add([]byte{}, uint8(3), uint32(0x7fffffff), uint16(1), uint16(2), uint16(0), uint16(10), uint16(0), []byte{0xff, 0x07})
	f.Add(pause[:20], uint8(2), uint32(1), uint16(1), uint16(2), uint16(0xffff), uint16(0), uint16(1), []byte{})
	f.Add(pause, uint8(3), uint32(1), uint16(1), uint16(2), uint16(0), uint16(0xffff), uint16(1), []byte{0xff})
	f.Fuzz(func(t *testing.T, raw []byte, typ uint8, seq uint32, sw, port, queue, nq, flags uint16, bm []byte) {
		// Parse: never panics; what it accepts re-encodes to the same bytes.
		m, err := ParseBFCFrame(raw)
		if err != nil {
			asError(t, err)
		} else {
			out := make([]byte, MaxBFCFrameLen)
			n, err := BuildBFC(out, [6]byte(raw[6:12]), m)
			if err != nil {
				t.Fatalf("re-encoding %+v: %v", m, err)
			}
			end := EthHeaderLen + HeaderLen + m.BodyLen()
			if n != max(end, MinFrameLen) || !bytes.Equal(out[:EthHeaderLen], raw[:EthHeaderLen]) {
				t.Fatalf("frame %d bytes, message end %d", n, end)
			}
			sameMessage(t, raw[EthHeaderLen:], out[EthHeaderLen:end])
			if !bytes.Equal(out[end:n], make([]byte, n-end)) {
				t.Fatal("padding is not zero")
			}
		}

		// Build from fields over the full range of every field.
		m = BFC{Type: Type(typ), Flags: flags, Seq: seq, Switch: sw, Port: port, Queue: queue, NQueues: nq, Bitmap: bm}
		var want error
		switch m.Type {
		case TypeBFCPause, TypeBFCResume:
			if queue >= 4096 {
				want = ErrQueue
			} else if nq != 0 {
				want = ErrNQueues
			}
		case TypeBFCBitmap:
			bytesNeeded := (int(nq) + 7) / 8
			switch {
			case queue != 0:
				want = ErrQueue
			case nq == 0 || nq > 4096:
				want = ErrNQueues
			case len(bm) < bytesNeeded:
				want = ErrLength
			default:
				for q := int(nq); q < 8*bytesNeeded; q++ {
					if bm[q/8]&(1<<(q%8)) != 0 {
						want = ErrBitmap
					}
				}
			}
		case TypeSFCBTS, TypeXPCredit, TypeXPRequest, TypeXPStop:
			want = ErrWrongType
		default:
			want = ErrType
		}
		out := make([]byte, MaxBFCFrameLen)
		n, err := BuildBFC(out, macB, m)
		if err != want {
			t.Fatalf("BuildBFC(%+v) = %v, want %v", m, err, want)
		}
		if err != nil {
			return
		}
		got, err := ParseBFCFrame(out[:n])
		if err != nil || !sameBFC(got, m) {
			t.Fatalf("parse back: %+v, %v\nwant %+v", got, err, m)
		}
		for q := 0; q < int(got.NQueues); q++ {
			if BitmapGet(got.Bitmap, q) != (bm[q/8]>>(q%8)&1 == 1) {
				t.Fatalf("queue %d bit differs", q)
			}
		}
		if !SeqAfter(seq+1, seq) || SeqAfter(seq, seq+1) || SeqDiff(seq+uint32(sw), seq) != int32(sw) {
			t.Fatalf("serial arithmetic around %#x", seq)
		}
	})
}

// quoteLen is the quote rule written out independently of the package: how
// many bytes of the IPv4 packet at ip (the rest of the frame) a BTS quotes,
// or -1 if it cannot be quoted.
func quoteLen(ip []byte) int {
	if len(ip) < 20 || ip[0]>>4 != 4 {
		return -1
	}
	ihl := int(ip[0]&15) * 4
	tot := int(ip[2])<<8 | int(ip[3])
	if ihl < 20 || len(ip) < ihl || tot < ihl {
		return -1
	}
	l4 := 0
	if (int(ip[6])<<8|int(ip[7]))&0x1fff == 0 {
		if ip[9] == 17 {
			l4 = 8
		} else if ip[9] == 6 {
			l4 = 20
		}
	}
	return min(len(ip), tot, ihl+l4+16)
}

func FuzzBTS(f *testing.F) {
	o := btsOriginal(f)
	frame := make([]byte, MaxBTSFrameLen)
	n, _ := BuildBTS(frame, MACs{Dst: macB, Src: macC}, 48, o, 14, 34, BTS{Flags: 7, Pause: 1000, Depth: 1 << 31})
	f.Add(frame[:n], o, 14, 34, uint8(48), uint32(1000), uint16(1), uint16(2), uint16(3), uint32(0xffffffff), uint16(1))
	tcp := orig(true, 24, 6, 0, 300, cat(tcpHdr, filler))
	n2, _ := BuildBTS(frame, MACs{}, 63, tcp, 18, 42, BTS{})
	f.Add(bytes.Clone(frame[:n2]), tcp, 18, 42, uint8(63), uint32(0), uint16(0xffff), uint16(0xffff), uint16(0xffff), uint32(0), uint16(0xffff))
	f.Add(udpFrame(f), []byte{}, 0, 0, uint8(64), uint32(0), uint16(0), uint16(0), uint16(0), uint32(0), uint16(0))
	f.Fuzz(func(t *testing.T, raw, origFrame []byte, l3, l4 int, dscp uint8, pause uint32, sw, port, queue uint16, depth uint32, flags uint16) {
		// Parse: the framing and the message each re-encode exactly.
		fr, payload, err := ParseIPv4UDP(raw)
		if err != nil {
			asError(t, err)
		} else {
			out := make([]byte, UDPFrameLen+len(payload))
			copy(out[UDPFrameLen:], payload)
			putIPv4UDP(out, &fr, len(payload))
			if fr.UDPChecksum != 0 {
				setUDPSum(out)
			}
			if !bytes.Equal(out, raw[:len(out)]) {
				t.Fatalf("framing re-encodes differently\n raw %x\n out %x", raw[:len(out)], out)
			}
			m, err := ParseBTS(payload)
			if err != nil {
				asError(t, err)
			} else {
				msg := make([]byte, 200)
				k, err := PutBTS(msg, m)
				if err != nil {
					t.Fatalf("PutBTS of a parsed BTS: %v", err)
				}
				sameMessage(t, payload, msg[:k])
				// The quote is what BuildBTS would quote of that packet.
				fake := append(make([]byte, EthHeaderLen), m.Quote...)
				if quoteLen(fake[EthHeaderLen:]) != len(m.Quote) {
					t.Fatalf("accepted a %d-byte quote; the rule gives %d", len(m.Quote), quoteLen(fake[EthHeaderLen:]))
				}
				fb := make([]byte, MaxBTSFrameLen)
				kb, err := BuildBTS(fb, MACs{Dst: fr.DstMAC, Src: fr.SrcMAC}, fr.DSCP(), fake, EthHeaderLen, 0, m)
				if err != nil {
					t.Fatalf("BuildBTS from the quote: %v", err)
				}
				sameMessage(t, payload, fb[UDPFrameLen:UDPFrameLen+k])
				if kb != max(MinFrameLen, UDPFrameLen+k) || [4]byte(fb[26:30]) != m.Flow.Dst || [4]byte(fb[30:34]) != m.Flow.Src {
					t.Fatalf("BuildBTS framing: %d bytes, %x", kb, fb[:UDPFrameLen])
				}
			}
		}

		// Build from an arbitrary original frame and offsets.
		m := BTS{Flags: flags, Pause: pause, Switch: sw, Port: port, Queue: queue, Depth: depth}
		out := make([]byte, MaxBTSFrameLen)
		n, err := BuildBTS(out, MACs{Dst: macB, Src: macC}, dscp, origFrame, l3, l4, m)
		ql := -1
		if l3 >= 0 && l3 <= len(origFrame) {
			ql = quoteLen(origFrame[l3:])
		}
		switch {
		case l3 < 0 || l3 > len(origFrame):
			if err != ErrOffset {
				t.Fatalf("L3 offset %d of %d: %v", l3, len(origFrame), err)
			}
			return
		case ql < 0:
			if err != ErrQuote {
				t.Fatalf("unquotable packet %x: %v", origFrame[l3:], err)
			}
			return
		case l4 != 0 && l4 != l3+int(origFrame[l3]&15)*4:
			if err != ErrOffset {
				t.Fatalf("L4 offset %d (L3 %d): %v", l4, l3, err)
			}
			return
		case dscp > 63:
			if err != ErrDSCP {
				t.Fatalf("DSCP %d: %v", dscp, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("BuildBTS refused a valid original: %v", err)
		}
		fr, payload, err = ParseIPv4UDP(out[:n])
		if err != nil {
			t.Fatalf("built frame does not parse: %v", err)
		}
		ip := origFrame[l3:]
		if fr.Src != [4]byte(ip[16:20]) || fr.Dst != [4]byte(ip[12:16]) || fr.DSCP() != dscp || fr.TTL != 64 || !fr.DF {
			t.Fatalf("framing %+v", fr)
		}
		got, err := ParseBTS(payload)
		if err != nil {
			t.Fatalf("built BTS does not parse: %v", err)
		}
		if !bytes.Equal(got.Quote, ip[:ql]) {
			t.Fatalf("quote %x, want %x", got.Quote, ip[:ql])
		}
		if got.Flags != flags || got.Pause != pause || got.Switch != sw || got.Port != port ||
			got.Queue != queue || got.Depth != depth || got.Reserved != 0 {
			t.Fatalf("fields %+v", got)
		}
	})
}

func FuzzCredit(f *testing.F) {
	flow := FiveTuple{Src: ip1, Dst: ip2, SrcPort: 5000, DstPort: 6000}
	cr := make([]byte, 60)
	BuildCredit(cr, MACs{}, 10, flow, Credit{Seq: 0xffffffff, SentTime: 0xfffffffe})
	req := make([]byte, 66)
	BuildXPRequest(req, MACs{}, flow, XPRequest{FlowID: 1, Size: 2})
	stop := make([]byte, 60)
	BuildXPStop(stop, MACs{}, flow, XPStop{FlowID: 3})
	withSum := udpFrame(f)
	setUDPSum(withSum)
	for _, raw := range [][]byte{cr, req, stop, withSum} {
		f.Add(raw, uint32(0xffffffff), uint32(0), uint16(0), uint16(0xffff), uint16(1), uint8(10), uint64(1<<63), uint64(0xffffffffffffffff))
	}
	f.Add([]byte{}, uint32(0), uint32(0xffffffff), uint16(0xffff), uint16(0), uint16(0), uint8(64), uint64(0), uint64(0))
	f.Fuzz(func(t *testing.T, raw []byte, seq, sent uint32, flags, sport, dport uint16, dscp uint8, flowID, size uint64) {
		// Parse: the framing re-encodes exactly (FuzzBTS checks that too) and
		// each ExpressPass message it accepts re-encodes to the same bytes.
		_, payload, err := ParseIPv4UDP(raw)
		if err != nil {
			asError(t, err)
		} else {
			out := make([]byte, 24)
			if c, err := ParseCredit(payload); err != nil {
				asError(t, err)
			} else if k, err := PutCredit(out, c); err != nil {
				t.Fatal(err)
			} else {
				sameMessage(t, payload, out[:k])
			}
			if r, err := ParseXPRequest(payload); err != nil {
				asError(t, err)
			} else if k, err := PutXPRequest(out, r); err != nil {
				t.Fatal(err)
			} else {
				sameMessage(t, payload, out[:k])
			}
			if s, err := ParseXPStop(payload); err != nil {
				asError(t, err)
			} else if k, err := PutXPStop(out, s); err != nil {
				t.Fatal(err)
			} else {
				sameMessage(t, payload, out[:k])
			}
		}

		// Build from fields over their full range and parse back.
		fl := FiveTuple{Src: [4]byte{byte(seq), 1, 2, 3}, Dst: [4]byte{4, 5, 6, byte(sent)}, SrcPort: sport, DstPort: dport}
		frame := make([]byte, 66)
		n, err := BuildCredit(frame, MACs{Dst: macA, Src: macB}, dscp, fl, Credit{Flags: flags, Seq: seq, SentTime: sent})
		if dscp > 63 {
			if err != ErrDSCP {
				t.Fatalf("DSCP %d: %v", dscp, err)
			}
		} else {
			if err != nil || n != 60 {
				t.Fatalf("BuildCredit: %d, %v", n, err)
			}
			fr, p, err := ParseIPv4UDP(frame[:n])
			if err != nil || fr.Src != fl.Dst || fr.Dst != fl.Src || fr.SrcPort != dport || fr.DstPort != sport || fr.DSCP() != dscp {
				t.Fatalf("credit framing %+v, %v", fr, err)
			}
			c, err := ParseCredit(p)
			if err != nil || c != (Credit{Flags: flags, Seq: seq, SentTime: sent}) {
				t.Fatalf("credit %+v, %v", c, err)
			}
			if s, st := MechXPCredit(MechXP(c.Seq, c.SentTime)); s != seq || st != sent {
				t.Fatalf("mechanism field echo %#x %#x", s, st)
			}
		}
		n, err = BuildXPRequest(frame, MACs{}, fl, XPRequest{Flags: flags, FlowID: flowID, Size: size})
		if err != nil {
			t.Fatal(err)
		}
		fr, p, err := ParseIPv4UDP(frame[:n])
		if err != nil || fr.Src != fl.Src || fr.SrcPort != sport || fr.DstPort != dport || fr.TOS != 0 {
			t.Fatalf("request framing %+v, %v", fr, err)
		}
		if r, err := ParseXPRequest(p); err != nil || r != (XPRequest{Flags: flags, FlowID: flowID, Size: size}) {
			t.Fatalf("request %+v, %v", r, err)
		}
		n, err = BuildXPStop(frame, MACs{}, fl, XPStop{Flags: flags, FlowID: flowID})
		if err != nil {
			t.Fatal(err)
		}
		if _, p, err = ParseIPv4UDP(frame[:n]); err != nil {
			t.Fatal(err)
		}
		if s, err := ParseXPStop(p); err != nil || s != (XPStop{Flags: flags, FlowID: flowID}) {
			t.Fatalf("stop %+v, %v", s, err)
		}
	})
}

func FuzzTag(f *testing.F) {
	f.Add(hexBytes(f, "020000000002 020000000001 0800 4500"), uint16(7))
	f.Add(hexBytes(f, "020000000002 020000000001 88b5 f123 0800"), uint16(4095))
	f.Add(hexBytes(f, "020000000002 020000000001 88b5 0001 88b5 0002 0800"), uint16(4096))
	f.Add(hexBytes(f, "020000000002 020000000001 88"), uint16(0xffff))
	f.Fuzz(func(t *testing.T, frame []byte, upq uint16) {
		// Insert into a copy with headroom, read, remove: the frame comes back.
		b := append(make([]byte, TagLen), frame...)
		var want error
		switch {
		case len(frame) < 14:
			want = ErrShort
		case upq >= 4096:
			want = ErrQueue
		case len(frame) >= 18 && frame[12] == 0x88 && frame[13] == 0xb5:
			want = ErrTagged
		}
		d, err := InsertTag(b, upq)
		if err != want {
			t.Fatalf("InsertTag(%x, %d) = %v, want %v", frame, upq, err, want)
		}
		if err != nil {
			if !bytes.Equal(b[TagLen:], frame) {
				t.Fatal("refused InsertTag changed the frame")
			}
		} else {
			if d != -TagLen || !bytes.Equal(b[:12], frame[:12]) || !bytes.Equal(b[16:], frame[12:]) {
				t.Fatalf("tagged frame %x from %x", b, frame)
			}
			if q, ok := ReadTag(b); !ok || q != upq {
				t.Fatalf("ReadTag: %d, %v", q, ok)
			}
			if d, err := RemoveTag(b); err != nil || d != TagLen || !bytes.Equal(b[TagLen:], frame) {
				t.Fatalf("RemoveTag: %d, %v: %x", d, err, b[TagLen:])
			}
		}

		// Remove from the frame as given, then put the tag back.
		c := bytes.Clone(frame)
		q, ok := ReadTag(c)
		d, err = RemoveTag(c)
		if ok != (err == nil) || (!ok && err != ErrNoTag) {
			t.Fatalf("ReadTag %v, RemoveTag %v", ok, err)
		}
		if !ok {
			if !bytes.Equal(c, frame) {
				t.Fatal("refused RemoveTag changed the frame")
			}
			return
		}
		if d != TagLen || !bytes.Equal(c[TagLen:TagLen+12], frame[:12]) || !bytes.Equal(c[16:], frame[16:]) {
			t.Fatalf("untagged %x from %x", c[TagLen:], frame)
		}
		if _, err := InsertTag(c, q); err != nil {
			if err == ErrTagged && frame[16] == 0x88 && frame[17] == 0xb5 {
				return // the frame had two tags
			}
			t.Fatalf("re-inserting: %v", err)
		}
		want2 := bytes.Clone(frame)
		want2[14] &= 0x0f // the reserved flag bits are not kept
		if !bytes.Equal(c, want2) {
			t.Fatalf("re-tagged %x, want %x", c, want2)
		}
	})
}
