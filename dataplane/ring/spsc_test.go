package ring

import (
	"sync"
	"testing"
)

func TestSizeMustBePowerOfTwo(t *testing.T) {
	for _, n := range []int{0, -1, 3, 1000} {
		if _, err := New[int](n); err == nil {
			t.Errorf("New(%d) succeeded", n)
		}
	}
}

func TestPushPopWraps(t *testing.T) {
	r, _ := New[int](8)
	next, want := 0, 0
	buf := make([]int, 5)
	for round := 0; round < 100; round++ {
		in := []int{next, next + 1, next + 2}
		n := r.Push(in)
		next += n
		if r.Len() > 8 {
			t.Fatalf("Len %d > cap", r.Len())
		}
		m := r.Pop(buf[:round%5+1])
		for _, v := range buf[:m] {
			if v != want {
				t.Fatalf("got %d want %d", v, want)
			}
			want++
		}
	}
	if full := r.Push(make([]int, 20)); r.Len() != 8 || full > 8 {
		t.Fatalf("overfill: pushed %d, len %d", full, r.Len())
	}
}

// TestConcurrentOrder runs a producer and a consumer goroutine (run with -race).
func TestConcurrentOrder(t *testing.T) {
	r, _ := New[uint64](64)
	const total = 200000
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var batch [7]uint64
		for v := uint64(0); v < total; {
			k := 0
			for ; k < len(batch) && v+uint64(k) < total; k++ {
				batch[k] = v + uint64(k)
			}
			v += uint64(r.Push(batch[:k]))
		}
	}()
	var out [13]uint64
	for want := uint64(0); want < total; {
		n := r.Pop(out[:])
		for _, v := range out[:n] {
			if v != want {
				t.Fatalf("got %d want %d", v, want)
			}
			want++
		}
	}
	wg.Wait()
}

func BenchmarkPushPop32(b *testing.B) {
	r, _ := New[uint64](1024)
	var in, out [32]uint64
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		r.Push(in[:])
		r.Pop(out[:])
	}
}
