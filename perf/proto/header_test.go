package proto

import (
	"bytes"
	"errors"
	"testing"
)

func TestRoundTripEveryField(t *testing.T) {
	h := Header{Type: TypeAck, Flags: FlagFIN | FlagRetx, Flow: 1 << 60, Seq: 2, Ack: 3 << 40, Size: 4, Priority: 5, Window: 6, Timestamp: 7, Mech: 8}
	b := make([]byte, 100)
	if n := h.Encode(b); n != HeaderLen {
		t.Fatal(n)
	}
	got, payload, err := Decode(b)
	h.HdrLen = HeaderLen
	if err != nil || got != h || len(payload) != 36 {
		t.Fatalf("%+v %v %d", got, err, len(payload))
	}
	if b[PriorityOffset+3] != 5 {
		t.Fatal("priority not at its documented offset")
	}
}

func TestDecodeErrors(t *testing.T) {
	good := make([]byte, HeaderLen)
	(&Header{Type: TypeData}).Encode(good)
	mut := func(i int, v byte) []byte { c := bytes.Clone(good); c[i] = v; return c }
	for _, c := range []struct {
		b    []byte
		want error
	}{{good[:63], ErrShort}, {mut(0, 'X'), ErrMagic}, {mut(2, 2), ErrVersion}, {mut(3, 9), ErrType}, {mut(3, 0), ErrType}, {mut(7, 65), ErrHdrLen}, {mut(7, 10), ErrHdrLen}} {
		if _, _, err := Decode(c.b); !errors.Is(err, c.want) {
			t.Errorf("got %v, want %v", err, c.want)
		}
	}
}

func TestRank(t *testing.T) {
	if Rank(1000, 0) != 1000 || Rank(1000, 400) != 600 || Rank(1000, 1000) != 0 || Rank(1<<40, 0) != 1<<32-1 {
		t.Fatal("rank")
	}
}

// FuzzHeader: Decode never panics, and whatever decodes re-encodes to the same 64 bytes.
func FuzzHeader(f *testing.F) {
	b := make([]byte, 80)
	(&Header{Type: TypeData, Flow: 9, Seq: 1448, Size: 1 << 20, Priority: 7}).Encode(b)
	f.Add(b)
	f.Add([]byte("GS"))
	f.Fuzz(func(t *testing.T, in []byte) {
		h, payload, err := Decode(in)
		if err != nil {
			return
		}
		if len(payload) != len(in)-int(h.HdrLen) {
			t.Fatalf("payload %d of %d with header %d", len(payload), len(in), h.HdrLen)
		}
		out := make([]byte, HeaderLen)
		h.Encode(out)
		want := bytes.Clone(in[:HeaderLen])
		want[6], want[7] = 0, HeaderLen
		if !bytes.Equal(out, want) {
			t.Fatalf("re-encoded %x, want %x", out, want)
		}
	})
}
