package transport

import "testing"

// TestPauseGateHoldsTheFlow: a paused sender sends nothing until the pause
// ends, then goes on; a newer BTS replaces the pause, shorter or longer;
// the pacer behind the pause is not charged while the pause holds.
func TestPauseGateHoldsTheFlow(t *testing.T) {
	g := &PauseGate{}
	pacer := NewPacer(8e6, 0, 1000) // 1 B/us, 1000 B of burst
	s := NewSender(Config{MSS: 1000, InitWindow: 100000}, 1, 100000, 0)
	s.Gate(All(g, pacer))
	var sent []int64
	now := int64(0)
	out := func([]byte) { sent = append(sent, now) }
	g.PauseUntil(5e6)
	if wake := s.Poll(now, out); len(sent) != 0 || wake != 5e6 {
		t.Fatalf("paused sender sent %d segments, wakes at %d", len(sent), wake)
	}
	g.PauseUntil(3e6) // the newest BTS wins, even shorter
	now = 3e6
	s.Poll(now, out)
	if len(sent) == 0 {
		t.Fatal("the sender did not resume when the replaced pause ended")
	}
	// The pacer let the burst out at 3 ms (a full bucket: no credit was spent while paused).
	n := len(sent)
	if n < 1 || n > 3 {
		t.Fatalf("%d segments at resume", n)
	}
	g.PauseUntil(now + 10e6)
	now += 4e6
	if s.Poll(now, out); len(sent) != n {
		t.Fatal("sent during a pause")
	}
	if g.Pauses() != 3 {
		t.Fatalf("%d pauses", g.Pauses())
	}
}
