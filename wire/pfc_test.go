package wire

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestPFCGolden: the frame BuildPFC writes, byte for byte, and what
// ParsePFCFrame reads back from it.
func TestPFCGolden(t *testing.T) {
	want := hexBytes(t, `
		0180c2000001 020000000001 8808   # to the MAC control group, from macA, MAC control
		0101                             # opcode PFC
		0009                             # priorities 0 and 3
		ffff 0000 0000 0000 0000 0000 0000 0000  # time[0] 65535, time[3] 0 (resume), the rest not enabled
		`+zeros(26))
	b := make([]byte, 100)
	n, err := BuildPFC(b, macA, PFC{Enable: 1<<0 | 1<<3, Time: [8]uint16{0: 0xffff, 3: 0, 5: 77}}) // time[5] is not enabled: sent as 0
	if err != nil || n != MinFrameLen || !bytes.Equal(b[:n], want) {
		t.Fatalf("BuildPFC: %d, %v\n got  %x\n want %x", n, err, b[:n], want)
	}
	m, err := ParsePFCFrame(want)
	if err != nil || m != (PFC{Enable: 9, Time: [8]uint16{0: 0xffff}}) {
		t.Fatalf("ParsePFCFrame: %+v, %v", m, err)
	}
	if _, err := BuildPFC(make([]byte, MinFrameLen-1), macA, m); err != ErrBuffer {
		t.Fatalf("a 59-byte buffer: %v", err)
	}
}

// TestParsePFCFrameRefuses: every field the parser checks, and what it
// ignores.
func TestParsePFCFrameRefuses(t *testing.T) {
	good := make([]byte, MinFrameLen)
	if _, err := BuildPFC(good, macA, PFC{Enable: 0xff, Time: [8]uint16{1, 2, 3, 4, 5, 6, 7, 8}}); err != nil {
		t.Fatal(err)
	}
	mod := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		return b
	}
	for _, c := range []struct {
		name  string
		frame []byte
		want  error
	}{
		{"empty", nil, ErrShort},
		{"33 bytes", good[:PFCLen-1], ErrShort},
		{"to the nearest-bridge group", mod(func(b []byte) { b[5] = 0x0e }), ErrEthernet},
		{"to a unicast MAC", mod(func(b []byte) { copy(b, macB[:]) }), ErrEthernet},
		{"EtherType 0x88B6", mod(func(b []byte) { binary.BigEndian.PutUint16(b[12:], EtherType) }), ErrEthernet},
		{"VLAN tagged", mod(func(b []byte) { binary.BigEndian.PutUint16(b[12:], 0x8100) }), ErrEthernet},
		{"802.3x PAUSE", mod(func(b []byte) { binary.BigEndian.PutUint16(b[14:], OpcodePause) }), ErrWrongType},
		{"opcode 0x0102", mod(func(b []byte) { binary.BigEndian.PutUint16(b[14:], 0x0102) }), ErrWrongType},
	} {
		if _, err := ParsePFCFrame(c.frame); err != c.want {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// Unpadded (34 bytes) is accepted; reserved vector bits are ignored.
	m, err := ParsePFCFrame(mod(func(b []byte) { b[16] = 0xff })[:PFCLen])
	if err != nil || m.Enable != 0xff || m.Time != [8]uint16{1, 2, 3, 4, 5, 6, 7, 8} {
		t.Fatalf("34 bytes with reserved bits set: %+v, %v", m, err)
	}
	// Times of priorities not enabled read as 0.
	m, _ = ParsePFCFrame(mod(func(b []byte) { b[17] = 0x02 }))
	if m != (PFC{Enable: 2, Time: [8]uint16{1: 2}}) {
		t.Fatalf("only priority 1 enabled: %+v", m)
	}
}

// TestPauseNs: quanta x 512 bit times, rounded up, over the whole range
// of rates, never 0 for a non-zero pause and never overflowing.
func TestPauseNs(t *testing.T) {
	for _, c := range []struct {
		q    uint16
		rate uint64
		want int64
	}{
		{1, 1e9, 512},
		{0xffff, 10e9, 3355392},         // 3.36 ms at 10 Gbit/s
		{0xffff, 100e9, 335540},         // 335.5392 us, rounded up
		{1, 1e12, 1},                    // half a ns: not 0
		{1, ^uint64(0), 1},              // the fastest rate: still not 0
		{0xffff, 1, 0xffff * 512 * 1e9}, // a year at 1 bit/s: fits
		{0, 1e9, 0},                     // zero: resume
		{100, 0, 0},                     // no rate
		{0xffff, 1000, 33553920 * 1e6},  // 1 kbit/s
		{3, 3, 512 * 1e9},               // exact
		{2, 3, (1024*1e9 + 2) / 3},      // rounded up
	} {
		if got := PauseNs(c.q, c.rate); got != c.want {
			t.Errorf("PauseNs(%d, %d) = %d, want %d", c.q, c.rate, got, c.want)
		}
	}
}

// FuzzPFCFrame: the parser never panics and never reads beyond the frame;
// what it accepts rebuilds to the same fields (padding and the ignored
// bits aside), and what BuildPFC writes from any vector and times parses
// back to them.
func FuzzPFCFrame(f *testing.F) {
	seed := make([]byte, MinFrameLen)
	BuildPFC(seed, macA, PFC{Enable: 0x81, Time: [8]uint16{0: 0xffff, 7: 1}})
	f.Add(seed, uint8(0x81), uint16(0xffff), uint16(1))
	f.Add(seed[:PFCLen], uint8(0), uint16(0), uint16(0))
	f.Add(seed[:20], uint8(0xff), uint16(1), uint16(0xffff))
	f.Fuzz(func(t *testing.T, frame []byte, enable uint8, t0, t7 uint16) {
		m, err := ParsePFCFrame(frame)
		if err != nil {
			asError(t, err)
		} else {
			for p := 0; p < PFCPriorities; p++ {
				if m.Enable&(1<<p) == 0 && m.Time[p] != 0 {
					t.Fatalf("priority %d not enabled but time %d", p, m.Time[p])
				}
			}
			out := make([]byte, MinFrameLen)
			n, err := BuildPFC(out, [6]byte(frame[6:12]), m)
			if err != nil || n != MinFrameLen {
				t.Fatalf("rebuilding %+v: %v", m, err)
			}
			back, err := ParsePFCFrame(out)
			if err != nil || back != m {
				t.Fatalf("rebuilt %+v parses as %+v, %v", m, back, err)
			}
		}
		in := PFC{Enable: enable}
		for p := 0; p < PFCPriorities; p++ {
			in.Time[p] = t0 ^ uint16(p)*t7
		}
		out := make([]byte, MinFrameLen)
		if _, err := BuildPFC(out, macB, in); err != nil {
			t.Fatal(err)
		}
		back, err := ParsePFCFrame(out)
		if err != nil || back.Enable != enable {
			t.Fatalf("built %+v parses as %+v, %v", in, back, err)
		}
		for p := 0; p < PFCPriorities; p++ {
			want := in.Time[p]
			if enable&(1<<p) == 0 {
				want = 0
			}
			if back.Time[p] != want {
				t.Fatalf("priority %d: built %d, parsed %d", p, want, back.Time[p])
			}
		}
	})
}
