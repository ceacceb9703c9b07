package wire

import "testing"

// Every builder and parser, on success and on refusal, allocates nothing.
func TestNoAllocations(t *testing.T) {
	o := btsOriginal(t)
	buf := make([]byte, MaxBFCFrameLen)
	bm := make([]byte, MaxBitmapLen)
	flow := FiveTuple{Src: ip1, Dst: ip2, SrcPort: 1, DstPort: 2}

	bfcFrame := make([]byte, MaxBFCFrameLen)
	n, _ := BuildBFC(bfcFrame, macA, BFC{Type: TypeBFCBitmap, NQueues: MaxQueues, Bitmap: bm})
	bfcFrame = bfcFrame[:n]
	btsFrame := make([]byte, MaxBTSFrameLen)
	n, _ = BuildBTS(btsFrame, MACs{}, 48, o, 14, 34, BTS{})
	btsFrame = btsFrame[:n]
	btsMsg := btsFrame[UDPFrameLen:]
	credit := make([]byte, 60)
	BuildCredit(credit, MACs{}, 10, flow, Credit{})
	req := make([]byte, 66)
	BuildXPRequest(req, MACs{}, flow, XPRequest{})
	stop := make([]byte, 60)
	BuildXPStop(stop, MACs{}, flow, XPStop{})
	tagged := make([]byte, 64+TagLen)
	bad := []byte("GC\x01\x20\x00\x08\x00")

	var sink error
	cases := map[string]func(){
		"PutHeader":        func() { _, sink = PutHeader(buf, Header{Type: TypeXPCredit, Length: 8}) },
		"ParseHeader":      func() { _, sink = ParseHeader(credit[UDPFrameLen:]) },
		"ParseHeader/err":  func() { _, sink = ParseHeader(bad) },
		"BuildBFC":         func() { _, sink = BuildBFC(buf, macA, BFC{Type: TypeBFCBitmap, NQueues: MaxQueues, Bitmap: bm}) },
		"BuildBFC/err":     func() { _, sink = BuildBFC(buf, macA, BFC{Type: TypeBFCPause, Queue: 5000}) },
		"PutBFC":           func() { _, sink = PutBFC(buf, BFC{Type: TypeBFCPause, Queue: 1}) },
		"ParseBFCFrame":    func() { _, sink = ParseBFCFrame(bfcFrame) },
		"ParseBFC/err":     func() { _, sink = ParseBFC(bad) },
		"BuildBTS":         func() { _, sink = BuildBTS(buf, MACs{}, 48, o, 14, 34, BTS{Pause: 1}) },
		"BuildBTS/err":     func() { _, sink = BuildBTS(buf, MACs{}, 48, o, 14, 33, BTS{}) },
		"PutBTS":           func() { _, sink = PutBTS(buf, BTS{Quote: o[14:58]}) },
		"ParseIPv4UDP":     func() { _, _, sink = ParseIPv4UDP(btsFrame) },
		"ParseIPv4UDP/err": func() { _, _, sink = ParseIPv4UDP(bfcFrame) },
		"ParseBTS":         func() { _, sink = ParseBTS(btsMsg) },
		"ParseBTS/err":     func() { _, sink = ParseBTS(credit[UDPFrameLen:]) },
		"BuildCredit":      func() { _, sink = BuildCredit(buf, MACs{}, 10, flow, Credit{Seq: 1}) },
		"PutCredit":        func() { _, sink = PutCredit(buf, Credit{Seq: 1}) },
		"ParseCredit":      func() { _, sink = ParseCredit(credit[UDPFrameLen:]) },
		"BuildXPRequest":   func() { _, sink = BuildXPRequest(buf, MACs{}, flow, XPRequest{}) },
		"PutXPRequest":     func() { _, sink = PutXPRequest(buf, XPRequest{}) },
		"ParseXPRequest":   func() { _, sink = ParseXPRequest(req[UDPFrameLen:]) },
		"BuildXPStop":      func() { _, sink = BuildXPStop(buf, MACs{}, flow, XPStop{}) },
		"PutXPStop":        func() { _, sink = PutXPStop(buf, XPStop{}) },
		"ParseXPStop":      func() { _, sink = ParseXPStop(stop[UDPFrameLen:]) },
		"InsertRemoveTag": func() {
			if _, sink = InsertTag(tagged, 7); sink == nil {
				_, sink = RemoveTag(tagged)
			}
		},
		"ReadTag":  func() { ReadTag(tagged) },
		"Checksum": func() { VerifyIPv4Checksum(btsFrame[14:34]); IPv4Checksum(btsFrame[14:34]) },
		"Bitmap":   func() { BitmapSet(bm, 100, true); BitmapGet(bm, 100) },
	}
	for name, f := range cases {
		if a := testing.AllocsPerRun(100, f); a != 0 {
			t.Errorf("%s: %.1f allocations per call", name, a)
		}
	}
	_ = sink
}

func BenchmarkBuildCredit(b *testing.B) {
	buf := make([]byte, 64)
	flow := FiveTuple{Src: ip1, Dst: ip2, SrcPort: 1, DstPort: 2}
	for i := 0; b.Loop(); i++ {
		BuildCredit(buf, MACs{}, 10, flow, Credit{Seq: uint32(i)})
	}
}

func BenchmarkParseCreditFrame(b *testing.B) {
	frame := make([]byte, 64)
	n, _ := BuildCredit(frame, MACs{}, 10, FiveTuple{Src: ip1, Dst: ip2, SrcPort: 1, DstPort: 2}, Credit{Seq: 1})
	for b.Loop() {
		_, p, err := ParseIPv4UDP(frame[:n])
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ParseCredit(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuildBTS(b *testing.B) {
	o := btsOriginal(b)
	buf := make([]byte, MaxBTSFrameLen)
	for b.Loop() {
		BuildBTS(buf, MACs{}, 48, o, 14, 34, BTS{Pause: 1})
	}
}

func BenchmarkParseBTSFrame(b *testing.B) {
	buf := make([]byte, MaxBTSFrameLen)
	n, _ := BuildBTS(buf, MACs{}, 48, btsOriginal(b), 14, 34, BTS{Pause: 1})
	for b.Loop() {
		_, p, err := ParseIPv4UDP(buf[:n])
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ParseBTS(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuildBFCPause(b *testing.B) {
	buf := make([]byte, 64)
	for i := 0; b.Loop(); i++ {
		BuildBFC(buf, macA, BFC{Type: TypeBFCPause, Seq: uint32(i), Queue: 3})
	}
}

func BenchmarkTagInsertRemove(b *testing.B) {
	buf := make([]byte, 1500+TagLen)
	for b.Loop() {
		InsertTag(buf, 7)
		RemoveTag(buf)
	}
}
