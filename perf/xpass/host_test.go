package xpass

import (
	"encoding/binary"
	"math"
	"net/netip"
	"strings"
	"testing"

	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/perf/timescale"
	"github.com/gswitch/gswitch/wire"
)

func key(port uint16) Key {
	return Key{From: netip.AddrPortFrom(netip.MustParseAddr("10.0.0.2"), port), Flow: uint64(port)}
}

// TestNICMetersTheHostsCredits: however many flows ask, the credits that
// leave the host in one second are exactly the link's 84/1622 (plus the
// bucket of 2 at the start), never more than 2 back to back; what the full
// NIC queue drops is counted, and each flow's credits carry rising
// sequence numbers.
func TestNICMetersTheHostsCredits(t *testing.T) {
	p := DefaultParams(500e6)
	p.Naive, p.Jitter, p.NICBurst = true, 0, 2 // exact: with jitter the NIC's gaps vary around the same mean
	h, err := NewHost(p, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if h.MaxRate() != 3_236_744 {
		t.Fatalf("max credit rate %d B/s at 500 Mbit/s, want 500e6 x 84/1622 / 8 = 3,236,744", h.MaxRate())
	}
	for i := 0; i < 4; i++ {
		h.Request(key(uint16(1000+i)), 1<<30, 1)
	}
	seqs := map[Key]uint32{}
	sent := 0
	for now := int64(1); now <= 1e9+1; now += 1000 { // 1 µs steps
		n := 0
		h.Poll(now, func(k Key, c wire.Credit) {
			if c.Seq <= seqs[k] { // gaps are credits the NIC queue dropped
				t.Fatalf("flow %v: credit %d after %d", k, c.Seq, seqs[k])
			}
			seqs[k] = c.Seq
			n++
		})
		// Feed back echoes so the flows stay alive (IdleStop).
		for k, s := range seqs {
			h.OnData(k, wire.MechXP(s, uint32(now/1000)), now)
		}
		if n > 2 {
			t.Fatalf("%d credits left at once", n)
		}
		sent += n
	}
	want := 2 + float64(h.MaxRate())/84
	st := h.Stats()
	t.Logf("%d credits sent in 1 s (want %.1f), %d generated, %d dropped by the NIC queue", sent, want, st.Credits, st.NICDrops)
	if math.Abs(float64(sent)-want) > 1 {
		t.Fatalf("%d credits in one second, want %.1f", sent, want)
	}
	if st.NICDrops == 0 || st.Credits != st.Sent+st.NICDrops+uint64(st.NICQueued) {
		t.Fatalf("4 naive flows offer 4x the link: %+v", st)
	}
	if uint64(sent) != st.Sent {
		t.Fatalf("sent %d, counted %d", sent, st.Sent)
	}
}

// TestCreditGapsFollowRateAndJitter: one flow's credits are spaced 84 B /
// rate apart, times 1 + U[-jitter, +jitter]; without jitter exactly.
func TestCreditGapsFollowRateAndJitter(t *testing.T) {
	for _, jit := range []float64{0, 0.1} {
		p := DefaultParams(1e9)
		p.Naive, p.Jitter, p.NICBurst, p.NICQueue = true, jit, 64, 4096
		h, _ := NewHost(p, 7, 1)
		h.Request(key(1), 1<<30, 1)
		var times []int64
		for now := int64(1); now < 20e6; now += 100 {
			h.Poll(now, func(Key, wire.Credit) { times = append(times, now) })
			if len(times) > 0 {
				h.OnData(key(1), wire.MechXP(uint32(len(times)), 0), now)
			}
		}
		ideal := 84.0 / float64(h.MaxRate()) * 1e9 // 12.98 µs
		lo, hi, sum := math.Inf(1), 0.0, 0.0
		for i := 1; i < len(times); i++ {
			g := float64(times[i] - times[i-1])
			lo, hi, sum = min(lo, g), max(hi, g), sum+g
		}
		mean := sum / float64(len(times)-1)
		t.Logf("jitter %.1f: %d credits, gap min %.0f mean %.0f max %.0f ns (ideal %.0f)", jit, len(times), lo, mean, hi, ideal)
		if math.Abs(mean/ideal-1) > 0.01 {
			t.Fatalf("mean gap %.0f ns, want %.0f", mean, ideal)
		}
		if jit == 0 && (lo < ideal-101 || hi > ideal+101) {
			t.Fatalf("without jitter gaps from %.0f to %.0f ns", lo, hi)
		}
		if jit > 0 && (lo > ideal*0.95 || hi < ideal*1.05 || lo < ideal*0.9-101 || hi > ideal*1.1+101) {
			t.Fatalf("jitter 0.1: gaps from %.0f to %.0f ns, want spread over ideal x [0.9, 1.1]", lo, hi)
		}
	}
}

// TestEchoesCountLossAndRTT: gaps in the echoed credit_seq are losses;
// old, duplicate and never-sent sequence numbers are not; the RTT comes
// from the echoed time.
func TestEchoesCountLossAndRTT(t *testing.T) {
	p := DefaultParams(1e9)
	p.NICQueue, p.NICBurst = 4096, 64
	h, _ := NewHost(p, 1, 1)
	k := key(9)
	h.Request(k, 1<<30, 1e6)
	var sent []wire.Credit
	for now := int64(1e6); len(sent) < 10; now += 1000 {
		h.Poll(now, func(_ Key, c wire.Credit) { sent = append(sent, c) })
	}
	f := h.Flow(k)
	now := int64(5e6)
	h.OnData(k, wire.MechXP(sent[0].Seq, sent[0].SentTime), now) // 1: no gap
	h.OnData(k, wire.MechXP(sent[3].Seq, sent[3].SentTime), now) // 4: 2 and 3 lost
	h.OnData(k, wire.MechXP(sent[2].Seq, sent[2].SentTime), now) // 3 late: reordered, not counted
	h.OnData(k, wire.MechXP(500, 0), now)                        // never sent
	h.OnData(Key{Flow: 77}, wire.MechXP(1, 0), now)              // unknown flow: ignored
	if f.FB.Total != 4 || f.FB.Dropped != 2 || f.Lost != 2 || f.Echoed != 2 || f.Reorder != 1 || f.Invalid != 1 {
		t.Fatalf("total %d dropped %d lost %d echoed %d reorder %d invalid %d", f.FB.Total, f.FB.Dropped, f.Lost, f.Echoed, f.Reorder, f.Invalid)
	}
	wantRTT := 0.8*(float64(now/1000)-float64(sent[0].SentTime))/1e6 + 0.2*(float64(now/1000)-float64(sent[3].SentTime))/1e6
	if math.Abs(f.FB.RTT-wantRTT) > 1e-9 {
		t.Fatalf("rtt %v, want %v", f.FB.RTT, wantRTT)
	}
	// Stop, and the flow is forgotten after StopTimeout; a request starts it again.
	h.Stop(k, now)
	if f.Sending() || h.Stats().Active != 0 {
		t.Fatal("still sending after XP_STOP")
	}
	h.Sweep(now + p.StopTimeout.Nanoseconds())
	if h.Flow(k) != nil {
		t.Fatal("stopped flow not forgotten")
	}
	// A flow whose data never comes back is stopped after IdleStop.
	h.Request(k, 1<<30, now)
	for t0 := now; t0 < now+p.IdleStop.Nanoseconds()+1e6; t0 += 10e3 {
		h.Poll(t0, func(Key, wire.Credit) {})
	}
	if st := h.Stats(); st.Active != 0 || st.IdleStops != 1 {
		t.Fatalf("silent flow: %+v", st)
	}
}

// TestHostRefusesBeyondMaxFlows bounds what requests can make a host keep.
func TestHostRefusesBeyondMaxFlows(t *testing.T) {
	p := DefaultParams(1e9)
	p.MaxFlows = 3
	h, _ := NewHost(p, 1, 1)
	for i := 0; i < 10; i++ {
		h.Request(key(uint16(i)), 1000, 1)
	}
	if st := h.Stats(); st.Remember != 3 || st.Refused != 7 {
		t.Fatalf("%+v", st)
	}
}

func TestParamsErrorsNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Params)
		flag string
	}{
		{func(p *Params) { p.LinkBits = 0 }, "-xp-link"},
		{func(p *Params) { p.Alpha = 0 }, "-xp-alpha"},
		{func(p *Params) { p.WInit = 0.9 }, "-xp-w-init"},
		{func(p *Params) { p.WMin = 0.1 }, "-xp-w-min"},
		{func(p *Params) { p.Jitter = 1 }, "-xp-jitter"},
		{func(p *Params) { p.DSCP = 64 }, "-xp-dscp"},
		{func(p *Params) { p.NICQueue = 0 }, "-xp-nic-queue"},
	} {
		p := DefaultParams(1e9)
		tc.mod(&p)
		if err := p.Validate(); err == nil || !contains(err.Error(), tc.flag) {
			t.Errorf("want an error naming %s, got %v", tc.flag, err)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestKeepAckThinsInOrderAcks: in-order progress is acknowledged one in
// four; a hole, a duplicate and the last byte at once.
func TestKeepAckThinsInOrderAcks(t *testing.T) {
	f := &Flow{}
	var kept []int
	ack := func(i int, seq, cum uint64) {
		if f.KeepAck(proto.Header{Type: proto.TypeAck, Seq: seq, Ack: cum, Size: 100_000}, 4) {
			kept = append(kept, i)
		}
	}
	for i := 0; i < 8; i++ { // segments 0..7 in order
		ack(i, uint64(i)*1000, uint64(i+1)*1000)
	}
	ack(8, 9000, 8000)    // segment 9 before 8: a hole
	ack(9, 8000, 10000)   // 8 fills it
	ack(10, 3000, 10000)  // a duplicate
	ack(11, 99000, 10000) // far ahead
	f2 := &Flow{}
	last := f2.KeepAck(proto.Header{Type: proto.TypeAck, Seq: 99000, Ack: 100_000, Size: 100_000}, 4)
	want := []int{3, 7, 8, 9, 10, 11}
	if len(kept) != len(want) || !last {
		t.Fatalf("kept %v, want %v; last byte kept %v", kept, want, last)
	}
	for i := range want {
		if kept[i] != want[i] {
			t.Fatalf("kept %v, want %v", kept, want)
		}
	}
	var nilFlow *Flow
	if !nilFlow.KeepAck(proto.Header{}, 4) {
		t.Fatal("an ack of an unknown flow must be kept")
	}
}

// FuzzHostAndSender drives a host's credit sender and a data sender with
// any sequence of requests, stops, echoes, credits and acks, values over
// their full ranges: nothing panics, the host keeps at most MaxFlows
// flows, and the sender never sends more data segments than it got credits.
func FuzzHostAndSender(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, uint64(1<<20))
	f.Add([]byte{255, 254, 0, 0, 7, 7, 7, 9}, uint64(1))
	f.Fuzz(func(t *testing.T, ops []byte, size uint64) {
		p := DefaultParams(1e9)
		p.MaxFlows = 4
		h, err := NewHost(p, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		s := NewSender(SenderConfig{MSS: 1000}, 3, size%(1<<24), 1)
		data := 0
		out := func(b []byte) {
			if !IsCredit(b) {
				data++
			}
		}
		now := int64(1)
		for i := 0; i+8 <= len(ops); i += 8 {
			v := binary.BigEndian.Uint64(ops[i:])
			k := Key{Flow: v % 6}
			switch ops[i] % 6 {
			case 0:
				h.Request(k, v, now)
			case 1:
				h.Stop(k, now)
			case 2:
				h.OnData(k, v, now)
			case 3:
				s.OnCredit(wire.Credit{Seq: uint32(v), SentTime: uint32(v >> 32)}, now, out)
			case 4:
				s.OnAck(proto.Header{Type: proto.TypeAck, Flow: 3, Seq: v >> 8, Ack: v, Size: s.size, Timestamp: v >> 3}, now)
			case 5:
				h.Sweep(now)
			}
			now += int64(v % 1_000_000)
			h.Poll(now, func(Key, wire.Credit) {})
			s.Poll(now, out)
			if st := h.Stats(); st.Remember > 4 {
				t.Fatalf("host keeps %d flows, cap 4", st.Remember)
			}
			if uint64(data) > s.Credits {
				t.Fatalf("%d data segments on %d credits", data, s.Credits)
			}
		}
	})
}

// The credit rate in the host's line is the wall clock's; at a timescale
// it is given on both clocks, and at 1 the line is what it always was.
func TestHostStatsFormatGivesBothClocks(t *testing.T) {
	s := HostStats{Requests: 2, Active: 1, PeakActive: 1, RateSum: 11875}
	one := s.String()
	if one != s.Format(timescale.MustNew(1)) || !strings.Contains(one, "1 active (peak 1) at 0.1 Mbit/s of credits; ") {
		t.Fatalf("%q", one)
	}
	if got := s.Format(timescale.MustNew(1000)); !strings.Contains(got, "at 95 kbit/s of credits wall = 95 Mbit/s fabric (timescale 1000); ") {
		t.Fatalf("%q", got)
	}
}
