package transport

import (
	"sync"
	"testing"
)

// A sender behind a pacer (no acks, a window and timeout that never bind) puts no more on the wire than the rate allows
// (plus the burst), and, with a window that never limits it, no less.
func TestPacerHoldsASenderToTheRate(t *testing.T) {
	const rate, overhead, burst = 200e6, 128, 4 * 1514
	p := NewPacer(rate, overhead, burst)
	s := NewSender(Config{Mode: PFabric, MSS: 1386, InitWindow: 64 << 20, MaxWindow: 64 << 20, RTO: 10e9}, 1, 50<<20, 1)
	s.Gate(p)
	wire := 0
	for now := int64(1); now <= 1e9; now += 10e3 { // one second in 10 µs steps
		s.Poll(now, func(b []byte) { wire += len(b) - 64 + overhead })
		if allowed := int(float64(now)*rate/8e9) + burst + 1514; wire > allowed {
			t.Fatalf("at %d ns: %d bytes on the wire, the rate allows %d", now, wire, allowed)
		}
	}
	if got := float64(wire) * 8; got < 0.995*rate {
		t.Fatalf("paced sender put %.0f bit on the wire in one second at %.0f bit/s", got, rate)
	}
}

// Senders sharing a host's pacer share its rate.
func TestPacerSharedByConcurrentSenders(t *testing.T) {
	const rate, overhead, burst, seg = 100e6, 128, 3000, 1386
	p := NewPacer(rate, overhead, burst)
	const T = 200e6 // 200 ms in 1 µs steps
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for now := int64(0); now < T; now += 1e3 {
				if ok, _ := p.Allow(now, seg); ok {
					n += seg + overhead
				}
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	// Each goroutine's clock runs on its own, so the pacer's virtual clock
	// can only be trusted against the latest now any of them passed.
	if limit := int(T*rate/8e9) + burst + 2*(seg+overhead); total > limit {
		t.Fatalf("four senders put %d bytes through a pacer allowing %d", total, limit)
	}
}

func TestPacerWakeTime(t *testing.T) {
	p := NewPacer(8e6, 0, 0) // 1 byte per µs, no burst
	if ok, _ := p.Allow(0, 1000); !ok {
		t.Fatal("first segment refused")
	}
	ok, wake := p.Allow(10, 1000)
	if ok || wake != 1000e3 {
		t.Fatalf("second segment at 10 ns: ok %v wake %d, want a wake at 1 ms", ok, wake)
	}
	if ok, _ := p.Allow(wake, 1000); !ok {
		t.Fatal("refused at its wake time")
	}
}
