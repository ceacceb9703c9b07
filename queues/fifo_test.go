package queues

import (
	"testing"

	"github.com/gswitch/gswitch/pkt"
)

func TestFIFOOrderAndLimits(t *testing.T) {
	q, err := NewFIFO(3000, 4)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if !q.Push(&pkt.Packet{Addr: uint64(i), Len: 1500}) {
			t.Fatalf("push %d refused", i)
		}
	}
	if q.Push(&pkt.Packet{Addr: 9, Len: 1}) {
		t.Fatal("byte limit exceeded")
	}
	if b, n := q.Depth(); b != 0 || n != 0 {
		t.Fatal("depth visible before Publish")
	}
	q.Publish()
	if b, n := q.Depth(); q.Bytes() != 3000 || q.Packets() != 2 || b != 3000 || n != 2 {
		t.Fatalf("depth %d B %d pkts", q.Bytes(), q.Packets())
	}
	var p pkt.Packet
	if !q.Pop(&p) || p.Addr != 0 {
		t.Fatalf("pop got %+v", p)
	}
	for i := 0; i < 3; i++ {
		q.Push(&pkt.Packet{Addr: uint64(10 + i), Len: 100})
	}
	if q.Push(&pkt.Packet{Addr: 99, Len: 100}) {
		t.Fatal("packet capacity exceeded")
	}
	want := []uint64{1, 10, 11, 12}
	for _, w := range want {
		if !q.Pop(&p) || p.Addr != w {
			t.Fatalf("pop got %d want %d", p.Addr, w)
		}
	}
	if q.Pop(&p) || !q.Empty() || q.Bytes() != 0 || q.Packets() != 0 {
		t.Fatal("queue not empty at the end")
	}
}
