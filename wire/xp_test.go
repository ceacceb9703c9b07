package wire

import (
	"bytes"
	"testing"
)

func TestXPRoundTrip(t *testing.T) {
	flow := FiveTuple{Src: ip1, Dst: ip2, SrcPort: 1, DstPort: 65535, Proto: ProtoUDP}
	b := make([]byte, 80)
	for _, c := range []Credit{{}, {Seq: 0xffffffff, SentTime: 0xffffffff}, {Seq: 1, SentTime: 2, Flags: 0x8001}} {
		n, err := BuildCredit(b, MACs{Dst: macA, Src: macB}, 46, flow, c)
		if err != nil || n != CreditFrameLen {
			t.Fatalf("BuildCredit: %d, %v", n, err)
		}
		f, payload, err := ParseIPv4UDP(b[:n])
		if err != nil {
			t.Fatal(err)
		}
		if f.Src != ip2 || f.Dst != ip1 || f.SrcPort != 65535 || f.DstPort != 1 || f.DSCP() != 46 {
			t.Fatalf("credit framing %+v", f)
		}
		got, err := ParseCredit(payload)
		if err != nil || got != c {
			t.Fatalf("credit %+v, %v; want %+v", got, err, c)
		}
	}
	for _, r := range []XPRequest{{FlowID: 0xffffffffffffffff, Size: 1}, {Flags: 3}} {
		n, err := BuildXPRequest(b, MACs{}, flow, r)
		if err != nil || n != 66 {
			t.Fatalf("BuildXPRequest: %d, %v", n, err)
		}
		f, payload, err := ParseIPv4UDP(b[:n])
		if err != nil || f.Src != ip1 || f.SrcPort != 1 || f.DstPort != 65535 || f.TOS != 0 {
			t.Fatalf("request framing %+v, %v", f, err)
		}
		if got, err := ParseXPRequest(payload); err != nil || got != r {
			t.Fatalf("request %+v, %v", got, err)
		}
	}
	n, err := BuildXPStop(b, MACs{}, flow, XPStop{FlowID: 42})
	if err != nil || n != 60 {
		t.Fatalf("BuildXPStop: %d, %v", n, err)
	}
	_, payload, err := ParseIPv4UDP(b[:n])
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ParseXPStop(payload); err != nil || got.FlowID != 42 {
		t.Fatalf("stop %+v, %v", got, err)
	}
}

func TestXPRejects(t *testing.T) {
	cases := []struct {
		name  string
		parse func([]byte) error
		msg   string
		want  Error
	}{
		{"credit short", parseCredit, "4743 01 20 0008 00", ErrShort},
		{"credit bad magic", parseCredit, "0000 01 20 0008 0000 00000001 00000002", ErrMagic},
		{"credit version 2", parseCredit, "4743 02 20 0008 0000 00000001 00000002", ErrVersion},
		{"credit unknown type", parseCredit, "4743 01 24 0008 0000 00000001 00000002", ErrType},
		{"credit given a stop", parseCredit, "4743 01 22 0008 0000 00000001 00000002", ErrWrongType},
		{"credit length 7", parseCredit, "4743 01 20 0007 0000 00000001 00000002", ErrLength},
		{"credit length lies", parseCredit, "4743 01 20 0009 0000 00000001 00000002", ErrTruncated},
		{"credit body cut", parseCredit, "4743 01 20 0008 0000 00000001 000000", ErrTruncated},
		{"request length 8", parseRequest, "4743 01 21 0008 0000 0000000000000001", ErrLength},
		{"request given a credit", parseRequest, "4743 01 20 0008 0000 0000000000000001", ErrWrongType},
		{"request body cut", parseRequest, "4743 01 21 0010 0000 0000000000000001 00", ErrTruncated},
		{"stop length 7", parseStop, "4743 01 22 0007 0000 0000000000000001", ErrLength},
		{"stop given a request", parseStop, "4743 01 21 0010 0000 0000000000000001 0000000000000001", ErrWrongType},
	}
	for _, c := range cases {
		if err := c.parse(hexBytes(t, c.msg)); err != c.want {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	// A longer body (a later version's fields) and padding are accepted.
	if c, err := ParseCredit(hexBytes(t, "4743 01 20 000c 0000 00000001 00000002 ffffffff 0000")); err != nil || c.Seq != 1 || c.SentTime != 2 {
		t.Errorf("extended credit: %+v, %v", c, err)
	}

	b := bytes.Repeat([]byte{0xee}, 80)
	if _, err := BuildCredit(b, MACs{}, 64, FiveTuple{}, Credit{}); err != ErrDSCP {
		t.Errorf("credit DSCP 64: %v", err)
	}
	if _, err := BuildCredit(b[:59], MACs{}, 10, FiveTuple{}, Credit{}); err != ErrBuffer {
		t.Errorf("credit in 59 bytes: %v", err)
	}
	if _, err := BuildXPRequest(b[:65], MACs{}, FiveTuple{}, XPRequest{}); err != ErrBuffer {
		t.Errorf("request in 65 bytes: %v", err)
	}
	if _, err := BuildXPStop(b[:59], MACs{}, FiveTuple{}, XPStop{}); err != ErrBuffer {
		t.Errorf("stop in 59 bytes: %v", err)
	}
	if !bytes.Equal(b, bytes.Repeat([]byte{0xee}, 80)) {
		t.Error("a refused builder wrote into the buffer")
	}
	if _, err := PutCredit(b[:15], Credit{}); err != ErrBuffer {
		t.Errorf("PutCredit in 15 bytes: %v", err)
	}
	if _, err := PutXPRequest(b[:23], XPRequest{}); err != ErrBuffer {
		t.Errorf("PutXPRequest in 23 bytes: %v", err)
	}
	if _, err := PutXPStop(b[:15], XPStop{}); err != ErrBuffer {
		t.Errorf("PutXPStop in 15 bytes: %v", err)
	}
}

func parseCredit(b []byte) error  { _, err := ParseCredit(b); return err }
func parseRequest(b []byte) error { _, err := ParseXPRequest(b); return err }
func parseStop(b []byte) error    { _, err := ParseXPStop(b); return err }

func TestMech(t *testing.T) {
	for _, q := range []uint16{0, 1, 0xabc, MaxQueues - 1} {
		m, err := MechBFC(q)
		if err != nil || MechBFCQueue(m) != q || uint16(m>>48)&0xf000 != 0 || m&(1<<48-1) != 0 {
			t.Errorf("MechBFC(%d) = %#x, %v", q, m, err)
		}
	}
	if _, err := MechBFC(MaxQueues); err != ErrQueue {
		t.Errorf("MechBFC(4096): %v", err)
	}
	if q := MechBFCQueue(0xf123_0000_0000_0000); q != 0x123 {
		t.Errorf("flag bits not ignored: %#x", q)
	}
	s, st := MechXPCredit(MechXP(0xffffffff, 7))
	if s != 0xffffffff || st != 7 {
		t.Errorf("MechXP round trip: %#x %d", s, st)
	}
}
