package tm

import (
	"testing"

	"github.com/gswitch/gswitch/fidelity"
	"github.com/gswitch/gswitch/pkt"
)

// TestDelayLineErrors: PopDue takes only frames that are due and counts
// how late each leaves, by the next Publish at the latest (frames equally
// late are counted together); Pop (a line emptied) counts nothing.
func TestDelayLineErrors(t *testing.T) {
	d := NewDelayLine(16)
	for i := 0; i < 3; i++ {
		d.Push(uint64(i), 100, 1000) // one batch: due together
	}
	d.Push(3, 100, 2000)
	d.Push(4, 100, 9000)
	if _, ok := d.PopDue(999); ok {
		t.Fatal("a frame left before it was due")
	}
	for i := 0; i < 4; i++ {
		if x, ok := d.PopDue(2500); !ok || x.Addr != uint64(i) {
			t.Fatalf("frame %d: %+v %v", i, x, ok)
		}
	}
	if _, ok := d.PopDue(2500); ok || d.Len() != 1 {
		t.Fatalf("the frame due at 9000 left at 2500 (len %d)", d.Len())
	}
	// The batch due at 1000 was counted when a frame of another lateness
	// came; the last one waits for Publish.
	var c fidelity.Counts
	if d.Errors(&c); c.Total() != 3 {
		t.Fatalf("before Publish: %v", c.N)
	}
	d.Publish()
	c = fidelity.Counts{}
	d.Errors(&c)
	// Three frames 1500 ns late, one 500 ns late.
	if c.Total() != 4 || c.N[fidelity.Bucket(1500)] != 3 || c.N[fidelity.Bucket(500)] != 1 || c.SumNs != 3*1500+500 {
		t.Fatalf("errors %v, sum %d", c.N, c.SumNs)
	}
	d.Pop()
	d.Publish()
	var c2 fidelity.Counts
	if d.Errors(&c2); c2.Total() != 4 || d.Published() != 0 {
		t.Fatalf("Pop counted: %v; published %d", c2.N, d.Published())
	}
}

// TestPortDelayErrors: frames a port's Send takes off its delay line
// count how late they leave; a port without a delay line has no
// histogram.
func TestPortDelayErrors(t *testing.T) {
	p, w, _ := testPort(t, "fifo", 0)
	var c fidelity.Counts
	if p.DelayErrors(&c) {
		t.Fatal("a port without a delay has a delay error histogram")
	}
	p.SetDelay(100e3, 0)
	var in []pkt.Packet
	for i := 0; i < 10; i++ {
		in = append(in, frame(i, 100, pkt.LaneData))
	}
	p.Admit(in, 0)
	var out [MaxBatch]pkt.Packet
	if n, moved := p.Send(out[:], 0); n != 0 || !moved {
		t.Fatalf("sent %d, moved %v", n, moved)
	}
	w.EndPass()
	if n, _ := p.Send(out[:], 100e3+70e3); n != 10 { // 70 µs late
		t.Fatalf("%d of 10 frames left", n)
	}
	w.EndPass()
	if !p.DelayErrors(&c) || c.Total() != 10 || c.N[fidelity.Bucket(70e3)] != 10 {
		t.Fatalf("delay errors %v", c.N)
	}
}

// TestWakeBounds: the shaper's wait and the delay line's head are timers;
// a full tx ring is a look again; SleepBound is the lesser.
func TestWakeBounds(t *testing.T) {
	p, w, _ := testPort(t, "fifo", 8*1538*1000) // a full frame every ms
	p.SetDelay(5e6, 8*1538*1000)
	var in []pkt.Packet
	for i := 0; i < 4; i++ {
		in = append(in, frame(i, 1514, pkt.LaneData))
	}
	p.Admit(in, 0)
	var out [MaxBatch]pkt.Packet
	p.Send(out[:], 0) // the bucket's two frames go onto the line
	w.EndPass()
	p.Publish(0)
	timer, look := p.WakeBounds(0, 1e9, 1e9)
	if timer != 1e6 || look != 1e9 || p.SleepBound(0, 1e9) != 1e6 {
		t.Fatalf("timer %d, look %d, sleep bound %d: want the shaper's 1 ms", timer, look, p.SleepBound(0, 1e9))
	}
	// Nothing to send but the line: its head is due at 5 ms.
	p2, w2, _ := testPort(t, "fifo", 0)
	p2.SetDelay(5e6, 0)
	p2.Admit([]pkt.Packet{frame(9, 100, pkt.LaneData)}, 0)
	p2.Send(out[:], 0)
	w2.EndPass()
	p2.Publish(0)
	if timer, look := p2.WakeBounds(1e6, 1e9, 1e9); timer != 4e6 || look != 1e9 {
		t.Fatalf("timer %d, look %d: want the line's head in 4 ms", timer, look)
	}
	// Frames eligible now, but no room on the tx ring: look again soon.
	p3, w3, _ := testPort(t, "fifo", 0)
	p3.Admit([]pkt.Packet{frame(10, 100, pkt.LaneData)}, 0)
	p3.Send(out[:0], 0)
	w3.EndPass()
	p3.Publish(0)
	if timer, look := p3.WakeBounds(0, 1e9, 1e9); timer != 1e9 || look != 20e3 {
		t.Fatalf("timer %d, look %d: want no timer and 20 µs to look again", timer, look)
	}
}
