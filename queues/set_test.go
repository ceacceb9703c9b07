package queues

import (
	"testing"

	"github.com/gswitch/gswitch/pkt"
)

func fillQueue(s *Set, q int, size uint32) (n int, d Drop) {
	for {
		p := pkt.Packet{Len: size}
		if d = s.Push(q, &p); d != Accepted {
			return n, d
		}
		n++
	}
}

func TestDynamicThresholdSharesThePort(t *testing.T) {
	s, err := NewSet(SetConfig{Queues: 4, PortBytes: 100000, Alpha: 1}, NewBuffer(1<<30))
	if err != nil {
		t.Fatal(err)
	}
	// One queue alone settles at alpha/(1+alpha) = half the port.
	n, d := fillQueue(s, 0, 1000)
	if d != QueueLimit || n != 50 {
		t.Fatalf("one queue took %d packets (%v), want 50", n, d)
	}
	// A second queue still gets in (no lockout), at a third of what is left...
	n2, _ := fillQueue(s, 1, 1000)
	if n2 < 16 {
		t.Fatalf("second queue took only %d packets", n2)
	}
}

func TestSharedBufferAndPortLimit(t *testing.T) {
	buf := NewBuffer(10000)
	a, _ := NewSet(SetConfig{Queues: 1, PortBytes: 8000}, buf)
	b, _ := NewSet(SetConfig{Queues: 1, PortBytes: 8000}, buf)
	if n, d := fillQueue(a, 0, 1000); n != 8 || d != PortLimit {
		t.Fatalf("port a: %d %v", n, d)
	}
	if n, d := fillQueue(b, 0, 1000); n != 2 || d != BufferFull {
		t.Fatalf("port b: %d %v", n, d)
	}
	var p pkt.Packet
	for a.Pop(0, &p) {
	}
	if buf.Used() != 2000 || a.Bytes() != 0 {
		t.Fatalf("used %d, port a %d", buf.Used(), a.Bytes())
	}
	a.Publish()
	if by, n := a.Depth(0); by != 0 || n != 0 {
		t.Fatalf("depth %d %d", by, n)
	}
}

func TestPauseBitmap(t *testing.T) {
	s, _ := NewSet(SetConfig{Queues: 64, PortBytes: 1 << 20}, nil)
	for q := 0; q < 64; q++ {
		p := pkt.Packet{Len: 100}
		s.Push(q, &p)
	}
	s.Pause(63)
	s.Pause(0)
	if s.Ready() != ^uint64(0)&^(1<<63|1) || !s.Paused(63) || s.Paused(1) {
		t.Fatalf("ready %x", s.Ready())
	}
	s.Resume(63)
	if s.Paused(63) || First(s.Ready()) != 1 {
		t.Fatal("resume")
	}
}
