package l2

import (
	"sync"
	"testing"
)

const sec = int64(1e9)

func TestLearnLookupAge(t *testing.T) {
	tb, err := New(64, 300*sec)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tb.Lookup(0x020000000001, 0); ok {
		t.Fatal("empty table found a MAC")
	}
	if !tb.Learn(0x020000000001, 3, 10*sec) {
		t.Fatal("first learn not reported as new")
	}
	if p, ok := tb.Lookup(0x020000000001, 11*sec); !ok || p != 3 {
		t.Fatalf("Lookup = %d %v", p, ok)
	}
	if tb.Learn(0x020000000001, 3, 12*sec) {
		t.Fatal("re-learn on the same port reported a change")
	}
	// Move to port 0 (port 0 must be representable).
	if !tb.Learn(0x020000000001, 0, 13*sec) {
		t.Fatal("move not reported")
	}
	if p, ok := tb.Lookup(0x020000000001, 14*sec); !ok || p != 0 {
		t.Fatalf("after move Lookup = %d %v", p, ok)
	}
	// Ages out 300 s after the last refresh.
	if _, ok := tb.Lookup(0x020000000001, 13*sec+300*sec+1); ok {
		t.Fatal("entry did not age out")
	}
	if tb.Len(14*sec) != 1 || tb.Len(400*sec) != 0 {
		t.Fatalf("Len = %d, %d", tb.Len(14*sec), tb.Len(400*sec))
	}
}

func TestRefreshKeepsAlive(t *testing.T) {
	tb, _ := New(16, 100*sec)
	mac := uint64(0x0200000000aa)
	for now := int64(0); now < 1000*sec; now += 20 * sec {
		tb.Learn(mac, 1, now)
		if _, ok := tb.Lookup(mac, now+sec); !ok {
			t.Fatalf("refreshed entry lost at %d s", now/sec)
		}
	}
}

func TestFullAndReuse(t *testing.T) {
	tb, _ := New(4, 10*sec)
	for m := uint64(1); m <= 4; m++ {
		tb.Learn(m, uint16(m), 0)
	}
	if tb.Learn(99, 1, sec) || tb.Full() != 1 {
		t.Fatalf("a full table learnt: full=%d", tb.Full())
	}
	if _, ok := tb.Lookup(99, sec); ok {
		t.Fatal("unlearnt MAC found")
	}
	// After aging, the slots are reusable.
	if !tb.Learn(99, 2, 20*sec) {
		t.Fatal("expired slot not reused")
	}
	if p, ok := tb.Lookup(99, 20*sec); !ok || p != 2 {
		t.Fatalf("Lookup = %d %v", p, ok)
	}
}

// TestConcurrentLearn learns from two goroutines while a third looks up (run with -race).
func TestConcurrentLearn(t *testing.T) {
	tb, _ := New(4096, 1000*sec)
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 20000; i++ {
				tb.Learn(uint64(w*500+i%500+1), uint16(w), int64(i))
			}
		}(w)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 20000; i++ {
			if p, ok := tb.Lookup(uint64(i%1000+1), 20000); ok && int(p) != (i%1000)/500 {
				t.Errorf("MAC %d on port %d", i%1000+1, p)
				return
			}
		}
	}()
	wg.Wait()
	for m := 1; m <= 1000; m++ {
		if p, ok := tb.Lookup(uint64(m), 20000); !ok || int(p) != (m-1)/500 {
			t.Fatalf("MAC %d: %d %v", m, p, ok)
		}
	}
}
