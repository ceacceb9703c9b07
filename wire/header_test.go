package wire

import (
	"errors"
	"testing"
)

func TestTypeTable(t *testing.T) {
	type row struct {
		known    bool
		scope    Scope
		fromHost bool
		name     string
	}
	want := map[Type]row{
		1:  {true, ScopeLinkLocal, false, "BFC_PAUSE"},
		2:  {true, ScopeLinkLocal, false, "BFC_RESUME"},
		3:  {true, ScopeLinkLocal, false, "BFC_BITMAP"},
		16: {true, ScopeRouted, false, "SFC_BTS"},
		32: {true, ScopeRouted, true, "XP_CREDIT"},
		33: {true, ScopeRouted, true, "XP_REQUEST"},
		34: {true, ScopeRouted, true, "XP_STOP"},
		15: {false, ScopeLinkLocal, false, "PFC"}, // the kind of PFC frames, no GC message (pfc.go)
	}
	for i := 0; i < 256; i++ {
		ty := Type(i)
		w, ok := want[ty]
		if !ok {
			switch {
			case i >= 4 && i <= 15:
				w = row{false, ScopeLinkLocal, false, "reserved_link_local"}
			case i >= 17 && i <= 31:
				w = row{false, ScopeRouted, false, "reserved_sfc"}
			case i >= 35 && i <= 47:
				w = row{false, ScopeRouted, false, "reserved_xp"}
			default:
				w = row{false, ScopeNone, false, "unassigned"}
			}
		}
		got := row{ty.Known(), ty.Scope(), ty.FromHost(), ty.Name()}
		if got != w {
			t.Errorf("type %d: got %+v, want %+v", i, got, w)
		}
		if ty.Known() != (ty.MinBody() > 0) {
			t.Errorf("type %d: Known %v but MinBody %d", i, ty.Known(), ty.MinBody())
		}
	}
	for ty, n := range map[Type]int{1: 12, 2: 12, 3: 12, 16: 36, 32: 8, 33: 16, 34: 8} {
		if ty.MinBody() != n {
			t.Errorf("%v: MinBody %d, want %d", ty, ty.MinBody(), n)
		}
	}
}

func TestParseHeader(t *testing.T) {
	valid := hexBytes(t, "4743 01 01 000c 0000"+zeros(12))
	h, err := ParseHeader(valid)
	if err != nil || h != (Header{Type: TypeBFCPause, Length: 12}) {
		t.Fatalf("valid: %+v, %v", h, err)
	}
	// Padding after the message is ignored.
	if _, err := ParseHeader(append(valid, 0xaa, 0xbb)); err != nil {
		t.Fatalf("padded: %v", err)
	}
	cases := []struct {
		name string
		msg  string
		want Error
	}{
		{"empty", "", ErrShort},
		{"7 bytes", "4743 01 01 000c 00", ErrShort},
		{"bad magic", "4753 01 01 000c 0000" + zeros(12), ErrMagic},
		{"bad magic 2", "4843 01 01 000c 0000" + zeros(12), ErrMagic},
		{"version 0", "4743 00 01 000c 0000" + zeros(12), ErrVersion},
		{"version 2", "4743 02 01 000c 0000" + zeros(12), ErrVersion},
		{"type 0", "4743 01 00 000c 0000" + zeros(12), ErrType},
		{"type 4", "4743 01 04 000c 0000" + zeros(12), ErrType},
		{"type 17", "4743 01 11 0030 0000" + zeros(48), ErrType},
		{"type 35", "4743 01 23 0010 0000" + zeros(16), ErrType},
		{"type 255", "4743 01 ff 0010 0000" + zeros(16), ErrType},
		{"pause length 11", "4743 01 01 000b 0000" + zeros(12), ErrLength},
		{"bts length 35", "4743 01 10 0023 0000" + zeros(40), ErrLength},
		{"credit length 7", "4743 01 20 0007 0000" + zeros(8), ErrLength},
		{"request length 15", "4743 01 21 000f 0000" + zeros(16), ErrLength},
		{"length lies by one", "4743 01 01 000c 0000" + zeros(11), ErrTruncated},
		{"length 65535", "4743 01 20 ffff 0000" + zeros(100), ErrTruncated},
	}
	for _, c := range cases {
		_, err := ParseHeader(hexBytes(t, c.msg))
		if err != c.want {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	// The type of an unknown message is still reported.
	h, err = ParseHeader(hexBytes(t, "4743 01 05 0000 0000"))
	if err != ErrType || h.Type != 5 || h.Type.Scope() != ScopeLinkLocal {
		t.Fatalf("reserved link-local type: %+v, %v", h, err)
	}
}

func TestPutHeaderRejects(t *testing.T) {
	b := make([]byte, 64)
	for _, c := range []struct {
		h    Header
		buf  int
		want Error
	}{
		{Header{Type: 0, Length: 8}, 64, ErrType},
		{Header{Type: 4, Length: 12}, 64, ErrType},
		{Header{Type: TypeBFCPause, Length: 11}, 64, ErrLength},
		{Header{Type: TypeSFCBTS, Length: 35}, 64, ErrLength},
		{Header{Type: TypeXPCredit, Length: 8}, 15, ErrBuffer},
		{Header{Type: TypeXPCredit, Length: 8}, 7, ErrBuffer},
	} {
		if _, err := PutHeader(b[:c.buf], c.h); err != c.want {
			t.Errorf("%+v in %d bytes: got %v, want %v", c.h, c.buf, err, c.want)
		}
	}
}

func TestErrors(t *testing.T) {
	var err error = ErrQuote
	if !errors.Is(err, ErrQuote) || errors.Is(err, ErrQueue) {
		t.Fatal("errors.Is on Error")
	}
	if err.Error() != "wire: quote" {
		t.Fatalf("message %q", err.Error())
	}
	seen := map[string]bool{}
	for e := Error(1); int(e) < NumErrors; e++ {
		s := e.String()
		if s == "unknown" || s == "ok" || seen[s] {
			t.Errorf("error %d has name %q", e, s)
		}
		seen[s] = true
	}
}

func TestSeq(t *testing.T) {
	for _, c := range []struct {
		a, b  uint32
		after bool
		diff  int32
	}{
		{1, 0, true, 1},
		{0, 1, false, -1},
		{5, 5, false, 0},
		{0, 0xffffffff, true, 1}, // wrap
		{0xffffffff, 0, false, -1},
		{10, 0xfffffff0, true, 26},
		{0x7fffffff, 0, true, 0x7fffffff},
		{0x80000000, 0, false, -0x80000000}, // exactly half the space apart: neither is after
		{0, 0x80000000, false, -0x80000000},
	} {
		if got := SeqAfter(c.a, c.b); got != c.after {
			t.Errorf("SeqAfter(%#x, %#x) = %v", c.a, c.b, got)
		}
		if got := SeqDiff(c.a, c.b); got != c.diff {
			t.Errorf("SeqDiff(%#x, %#x) = %d, want %d", c.a, c.b, got, c.diff)
		}
	}
}
