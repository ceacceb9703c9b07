package gsperf_test

import (
	"testing"

	"github.com/gswitch/gswitch/wire/gsperf"
)

// A header with an INT option of 3 slots: hops are pushed in order, read
// back exactly, and a fourth push finds no slot.
func TestINTPushAndRead(t *testing.T) {
	b := make([]byte, gsperf.Len+gsperf.INTLen(3)+100)
	h := gsperf.Header(b)
	h.Init(gsperf.TypeData)
	n := gsperf.InitINT(b[gsperf.Len:], 3)
	h.SetHdrLen(uint16(gsperf.Len + n))
	o := h.INT()
	if o == nil || o.Hops() != 0 || o.Slots() != 3 || len(o) != gsperf.INTLen(3) {
		t.Fatalf("fresh option: %v hops %d slots %d len %d", o == nil, o.Hops(), o.Slots(), len(o))
	}
	for i := range 3 {
		if !o.Push(uint64(1000+i), uint64(1<<40+i), uint64(1500*i), 100e9) {
			t.Fatalf("push %d refused", i)
		}
	}
	if o.Push(1, 1, 1, 1) || o.Hops() != 3 {
		t.Fatalf("a push beyond the slots was taken: hops %d", o.Hops())
	}
	for i := range 3 {
		want := gsperf.INTHop{TS: uint64(1000 + i), TxBytes: 1<<40 + uint64(i), QLen: uint32(1500 * i), RateKbps: 100e6}
		if got := h.INT().Hop(i); got != want {
			t.Errorf("hop %d: %+v, want %+v", i, got, want)
		}
	}
	if (h.INT().Hop(3) != gsperf.INTHop{}) || (h.INT().Hop(-1) != gsperf.INTHop{}) {
		t.Error("a hop out of range reads non-zero")
	}
	if !h.Valid() || len(h.Payload()) != 100 {
		t.Errorf("valid %v payload %d", h.Valid(), len(h.Payload()))
	}
}

// Saturation: a queue over 4 GB and a rate over 4 Tbit/s read as the
// fields' maxima.
func TestINTSaturates(t *testing.T) {
	b := make([]byte, gsperf.Len+gsperf.INTLen(1))
	h := gsperf.Header(b)
	h.Init(gsperf.TypeData)
	h.SetHdrLen(uint16(gsperf.Len + gsperf.InitINT(b[gsperf.Len:], 1)))
	h.INT().Push(1, 2, 1<<40, 1<<60)
	if hop := h.INT().Hop(0); hop.QLen != 1<<32-1 || hop.RateKbps != 1<<32-1 {
		t.Fatalf("%+v", hop)
	}
}

// Inconsistent options read as none: the wrong kind, slots out of range,
// more hops than slots, slots past the header length or past the bytes.
func TestINTRejectsInconsistentOptions(t *testing.T) {
	mk := func(hdrLen int, kind, hops, slots byte, size int) gsperf.Header {
		b := make([]byte, size)
		h := gsperf.Header(b)
		h.Init(gsperf.TypeData)
		h.SetHdrLen(uint16(hdrLen))
		if size > gsperf.Len+2 {
			b[gsperf.Len], b[gsperf.Len+1], b[gsperf.Len+2] = kind, hops, slots
		}
		return h
	}
	full := gsperf.Len + gsperf.INTLen(2)
	for name, h := range map[string]gsperf.Header{
		"no option":          mk(gsperf.Len, 1, 0, 2, full),
		"wrong kind":         mk(full, 2, 0, 2, full),
		"zero slots":         mk(full, 1, 0, 0, full),
		"too many slots":     mk(gsperf.Len+gsperf.INTLen(9), 1, 0, 9, gsperf.Len+gsperf.INTLen(9)),
		"hops above slots":   mk(full, 1, 3, 2, full),
		"slots past hdr len": mk(full-1, 1, 0, 2, full),
		"hdr len past bytes": mk(full, 1, 0, 2, full-1),
		"short":              mk(gsperf.Len, 1, 0, 1, gsperf.Len+2),
	} {
		if o := h.INT(); o != nil {
			t.Errorf("%s: read an option of %d bytes", name, len(o))
		}
	}
	if o := mk(full, 1, 2, 2, full).INT(); o == nil || o.Push(1, 1, 1, 1) {
		t.Error("a full, consistent option was not read, or took a push")
	}
}

// FuzzINT: any bytes, any hop index: never a panic, never a view past the
// header length, and a push never writes outside the option.
func FuzzINT(f *testing.F) {
	b := make([]byte, gsperf.Len+gsperf.INTLen(2))
	h := gsperf.Header(b)
	h.Init(gsperf.TypeData)
	h.SetHdrLen(uint16(gsperf.Len + gsperf.InitINT(b[gsperf.Len:], 2)))
	f.Add(b, 0)
	f.Fuzz(func(t *testing.T, b []byte, i int) {
		before := append([]byte(nil), b...)
		o := gsperf.Header(b).INT()
		_ = o.Hop(i)
		if o == nil {
			return
		}
		if gsperf.Len+len(o) > int(gsperf.Header(b).HdrLen()) {
			t.Fatalf("option of %d bytes past the header length %d", len(o), gsperf.Header(b).HdrLen())
		}
		o.Push(1, 2, 3, 4000)
		for k := range b {
			if (k < gsperf.Len || k >= gsperf.Len+len(o)) && b[k] != before[k] {
				t.Fatalf("push wrote byte %d outside the option", k)
			}
		}
	})
}
