package shaper

import "testing"

// drain sends back-to-back frames of size bytes for dur ns on a fake clock
// advancing by step, and returns the bytes (with overhead) sent.
func drain(b *Bucket, size uint32, start, dur, step int64) int64 {
	var sent int64
	for now := start; now < start+dur; now += step {
		for b.Ready(now) {
			b.Take(size)
			sent += int64(size + Overhead)
		}
	}
	return sent
}

func TestRateOverOneSecond(t *testing.T) {
	for _, rate := range []uint64{10e6, 100e6, 1e9, 10e9} {
		for _, size := range []uint32{64, 1514} {
			b, err := New(rate, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			// Start with an empty bucket so the burst does not count.
			drain(b, size, 0, 1, 1)
			got := drain(b, size, 1, 1e9, 1000) * 8
			if diff := float64(got)/float64(rate) - 1; diff > 0.01 || diff < -0.01 {
				t.Errorf("rate %d size %d: %d bit/s sent (%.2f%% off)", rate, size, got, diff*100)
			}
		}
	}
}

func TestBurstIsBounded(t *testing.T) {
	b, _ := New(100e6, 10000, 0)
	// After a long idle period, at most burst bytes (plus one frame of debt) leave at once.
	got := drain(b, 1000, 10e9, 1, 1)
	if got > 10000+1024 {
		t.Fatalf("burst of %d B after idle, want <= %d", got, 10000+1024)
	}
}

func TestWait(t *testing.T) {
	b, _ := New(8e6, 2*(1514+Overhead), 0) // 1 byte per µs
	for b.Ready(0) {
		b.Take(1514)
	}
	w := b.Wait(0)
	if w <= 0 || w > 1538*1000 {
		t.Fatalf("Wait = %d ns", w)
	}
	if b.Ready(w - 1000) {
		t.Fatal("ready before Wait elapsed")
	}
	if !b.Ready(w) {
		t.Fatal("not ready after Wait")
	}
}

func TestUnlimitedAndBadConfig(t *testing.T) {
	b, _ := New(0, 0, 0)
	if !b.Unlimited() || !b.Ready(0) || b.Wait(0) != 0 {
		t.Fatal("zero rate should be unlimited")
	}
	if _, err := New(100, 0, 0); err == nil {
		t.Fatal("100 bit/s accepted")
	}
	if _, err := New(1e9, 100, 0); err == nil {
		t.Fatal("burst smaller than a frame accepted")
	}
}
