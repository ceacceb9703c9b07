package dataplane

import (
	"testing"

	"github.com/gswitch/gswitch/pkt"
)

// TestCaptureMirrorsBothWays: a capture on a port sees what it receives
// (malformed frames too) and what it sends (emitted frames too), in order;
// a ring too small for the traffic drops mirror copies and counts them,
// while forwarding goes on untouched; mirroring allocates nothing.
func TestCaptureMirrorsBothWays(t *testing.T) {
	s, l, _ := testSwitch(t, 2, 1, 4096, nil)
	l[1].Inject(udp(1, 2, 10))
	settle(s)
	c, err := s.Capture(1, CaptureRx|CaptureTx, 100, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Capture(1, CaptureRx, 0, 0); err == nil {
		t.Fatal("two captures on one port")
	}
	l[0].Inject(udp(2, 1, 500))  // forwarded to port 1: tx
	l[1].Inject(udp(1, 2, 20))   // received on port 1: rx
	l[1].Inject([]byte{1, 2, 3}) // malformed, received on port 1: rx
	em := s.Emitter(0)
	b := em.Frame(1, 1)
	em.Send(copy(b, udp(2, 0xfe, 30)), pkt.LaneControl) // emitted on port 1: tx
	settle(s)
	type rec struct{ dir, n, orig int }
	var got []rec
	c.Read(func(r *CaptureRecord) { got = append(got, rec{r.Dir, len(r.Data), r.OrigLen}) })
	want := []rec{{CaptureRx, 62, 62}, {CaptureRx, 3, 3}, {CaptureTx, 72, 72}, {CaptureTx, 100, 542}}
	if len(got) != len(want) {
		t.Fatalf("records %v, want %v", got, want)
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			t.Fatalf("records %v, want %v", got, want)
		}
	}
	// Flood the mirror: forwarding goes on, copies are dropped and counted.
	frame := udp(2, 1, 1400)
	sent := l[1].SentCount
	if a := testing.AllocsPerRun(100, func() {
		for k := 0; k < 32; k++ {
			l[0].Inject(frame)
		}
		settle(s)
	}); a != 0 {
		t.Fatalf("%v allocations per batch while capturing", a)
	}
	if l[1].SentCount-sent != 3232 || c.Drops() == 0 {
		t.Fatalf("forwarded %d of 3232 while capturing; %d mirror drops", l[1].SentCount-sent, c.Drops())
	}
	c.Stop()
	n := c.Read(func(*CaptureRecord) {})
	l[0].Inject(frame)
	settle(s)
	if c.Read(func(*CaptureRecord) {}) != 0 || n == 0 {
		t.Fatalf("after Stop: %d records read before, mirror still on", n)
	}
	checkFrames(t, s)
}
