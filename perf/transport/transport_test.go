package transport

import (
	"container/heap"
	"fmt"
	"math/rand"
	"testing"

	"github.com/gswitch/gswitch/perf/proto"
)

// link is an in-memory network on a fake clock: each datagram is dropped,
// duplicated or delayed (reordering it) at random.
type link struct {
	rng                *rand.Rand
	delay              int64
	drop, dup, reorder float64
	q                  events
	seq                int
	sent, lost, dupd   int
}

type event struct {
	at      int64
	seq     int
	toRecv  bool
	ce      bool // the datagram arrives CE-marked (dctcp_test.go's switch)
	payload []byte
}
type events []event

func (e events) Len() int { return len(e) }
func (e events) Less(i, j int) bool {
	return e[i].at < e[j].at || e[i].at == e[j].at && e[i].seq < e[j].seq
}
func (e events) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)   { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	o := *e
	x := o[len(o)-1]
	*e = o[:len(o)-1]
	return x
}

func (l *link) send(now int64, toRecv bool, b []byte) {
	l.sent++
	if l.rng.Float64() < l.drop {
		l.lost++
		return
	}
	copies := 1
	if l.rng.Float64() < l.dup {
		copies = 2
		l.dupd++
	}
	for c := 0; c < copies; c++ {
		d := l.delay
		if l.rng.Float64() < l.reorder {
			d += l.rng.Int63n(3 * l.delay)
		}
		l.seq++
		heap.Push(&l.q, event{at: now + d, seq: l.seq, toRecv: toRecv, payload: append([]byte(nil), b...)})
	}
}

// transfer runs one flow over the link until it completes or time runs out.
func transfer(t *testing.T, cfg Config, size uint64, l *link) (*Sender, *Receiver, int64) {
	t.Helper()
	now := int64(1)
	s := NewSender(cfg, 42, size, now)
	r := NewReceiver(42)
	toRecv := func(b []byte) { l.send(now, true, b) }
	toSend := func(b []byte) { l.send(now, false, b) }
	next := s.Poll(now, toRecv)
	for step := 0; step < 10_000_000 && !s.Done(); step++ {
		at := next
		if l.q.Len() > 0 && (at == 0 || l.q[0].at < at) {
			at = l.q[0].at
		}
		if at == 0 {
			t.Fatalf("stalled: nothing scheduled, %d of %d bytes acknowledged", s.una, size)
		}
		now = max(now, at)
		for l.q.Len() > 0 && l.q[0].at <= now {
			e := heap.Pop(&l.q).(event)
			h, p, err := proto.Decode(e.payload)
			if err != nil {
				t.Fatal(err)
			}
			if e.toRecv {
				r.OnPacket(h, p, now, toSend)
			} else {
				s.OnAck(h, now)
			}
		}
		next = s.Poll(now, toRecv)
	}
	return s, r, now
}

func TestDeliversEveryByteInOrderOverABadLink(t *testing.T) {
	for _, mode := range []Mode{Plain, PFabric} {
		for _, size := range []uint64{1, 1399, 1400, 1401, 100_000, 3_000_000} {
			l := &link{rng: rand.New(rand.NewSource(int64(size))), delay: 50e3, drop: 0.05, dup: 0.02, reorder: 0.1}
			cfg := Config{Mode: mode, RTO: 300e3}
			s, r, end := transfer(t, cfg, size, l)
			if !s.Done() || !r.Complete() || r.Delivered() != size || r.Corrupt != 0 {
				t.Fatalf("%v %d B: done %v complete %v delivered %d corrupt %d", mode, size, s.Done(), r.Complete(), r.Delivered(), r.Corrupt)
			}
			if size == 3_000_000 {
				t.Logf("%v, 3 MB over a link losing 5%%, duplicating 2%%, reordering 10%%: %.1f ms simulated, %d segments sent, %d retransmitted, %d timeouts, %d dups at the receiver",
					mode, float64(end)/1e6, s.Sent, s.Retransmits, s.Timeouts, r.Dups)
			}
		}
	}
}

func TestPFabricStampsRemainingSize(t *testing.T) {
	s := NewSender(Config{Mode: PFabric, MSS: 1000, InitWindow: 5000}, 7, 4500, 1)
	var got []uint32
	s.Poll(1, func(b []byte) {
		h, _, _ := proto.Decode(b)
		got = append(got, h.Priority)
	})
	want := []uint32{4500, 3500, 2500, 1500, 500}
	if len(got) != len(want) {
		t.Fatalf("sent %d segments with a 5-segment window: %v", len(got), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("priorities %v, want %v", got, want)
		}
	}
}

func TestPFabricProbeModeAfterFiveTimeouts(t *testing.T) {
	l := &link{rng: rand.New(rand.NewSource(1)), delay: 50e3, drop: 1}
	cfg := Config{Mode: PFabric, RTO: 200e3}
	now := int64(1)
	s := NewSender(cfg, 1, 100000, now)
	out := func(b []byte) { l.send(now, true, b) }
	s.Poll(now, out)
	for i := 0; i < 8; i++ {
		now += cfg.RTO
		s.Poll(now, out)
	}
	if !s.probing || s.Timeouts != 8 || s.Probes < 3 {
		t.Fatalf("probing %v after %d timeouts, %d probes", s.probing, s.Timeouts, s.Probes)
	}
	// A probe ack ends probe mode and the window restarts at one segment.
	s.OnAck(proto.Header{Type: proto.TypeProbeAck, Flow: 1}, now)
	sent := 0
	s.Poll(now, func([]byte) { sent++ })
	if s.probing || sent != 1 {
		t.Fatalf("after the probe ack: probing %v, %d segments sent", s.probing, sent)
	}
}

// closedGate holds the sender until a time, as SFC's pause or missing ExpressPass credits would.
type closedGate struct{ until int64 }

func (g closedGate) Allow(now int64, _ int) (bool, int64) { return now >= g.until, g.until }

func TestGateHoldsTheSender(t *testing.T) {
	s := NewSender(Config{}, 1, 10000, 1)
	s.Gate(closedGate{until: 5e6})
	n := 0
	wake := s.Poll(1, func([]byte) { n++ })
	if n != 0 || wake != 5e6 {
		t.Fatalf("sent %d through a closed gate, wake %d", n, wake)
	}
	s.Poll(5e6, func([]byte) { n++ })
	if n == 0 {
		t.Fatal("nothing sent once the gate opened")
	}
}

func TestReceiverCatchesCorruptBytes(t *testing.T) {
	r := NewReceiver(3)
	p := make([]byte, 100)
	Fill(p, 3, 0)
	p[50] ^= 1
	r.OnPacket(proto.Header{Type: proto.TypeData, Flow: 3, Size: 100}, p, 1, func([]byte) {})
	if r.Corrupt != 1 {
		t.Fatalf("corrupt %d", r.Corrupt)
	}
}

// TestMechFieldInEverySegment: the config's mechanism field is in the
// header of every data segment and probe.
func TestMechFieldInEverySegment(t *testing.T) {
	s := NewSender(Config{MSS: 1000, InitWindow: 3000, Mech: 0x0123_0000_0000_0000}, 7, 2500, 1)
	n := 0
	s.Poll(1, func(b []byte) {
		h, _, _ := proto.Decode(b)
		if h.Mech != 0x0123_0000_0000_0000 {
			t.Fatalf("segment with mechanism field %#x", h.Mech)
		}
		n++
	})
	s.sendProbe(2, func(b []byte) {
		if h, _, _ := proto.Decode(b); h.Type != proto.TypeProbe || h.Mech != 0x0123_0000_0000_0000 {
			t.Fatalf("probe %+v", h)
		}
	})
	if n != 3 {
		t.Fatalf("%d segments", n)
	}
}

// The plain sender's timeout doubles on consecutive timeouts up to MaxRTO:
// 1 s by default, whatever a timescale makes it otherwise.
func TestPlainBackoffStopsAtMaxRTO(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want []int64
	}{
		{Config{}, []int64{20e6, 40e6, 80e6, 160e6, 320e6, 640e6, 1e9, 1e9}},
		{Config{RTO: 100e6, MaxRTO: 100e9}, []int64{200e6, 400e6, 800e6, 1.6e9, 3.2e9, 6.4e9, 12.8e9, 25.6e9}},
		{Config{RTO: 5e9}, []int64{1e9, 1e9}}, // a timeout above the cap falls to it, as it always did
	} {
		now := int64(1)
		s := NewSender(c.cfg, 1, 100000, now)
		s.Poll(now, func([]byte) {})
		for i, w := range c.want {
			now = s.timer
			s.Poll(now, func([]byte) {})
			if s.rto != w {
				t.Fatalf("%+v: after %d timeouts the timeout is %d, want %d", c.cfg, i+1, s.rto, w)
			}
		}
	}
}

// Every mode's name parses back to it; a value out of range prints as a
// number instead of panicking.
func TestModeString(t *testing.T) {
	for m := Plain; m <= DCQCN; m++ {
		if p, err := ParseMode(m.String()); err != nil || p != m {
			t.Errorf("mode %d: %q parses as %v, %v", int(m), m.String(), p, err)
		}
	}
	for _, m := range []Mode{DCQCN + 1, -1} {
		if got, want := m.String(), fmt.Sprintf("mode(%d)", int(m)); got != want {
			t.Errorf("Mode(%d).String() = %q, want %q", int(m), got, want)
		}
	}
}
