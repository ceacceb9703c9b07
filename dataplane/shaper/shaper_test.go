package shaper

import "testing"

// drain sends back-to-back frames of size bytes for dur ns on a fake clock
// advancing by step, and returns the bytes (with overhead) sent.
func drain(b *Bucket, size uint32, start, dur, step int64) int64 {
	var sent int64
	for now := start; now < start+dur; now += step {
		for b.Ready(now) {
			b.Take(size)
			sent += WireBytes(size)
		}
	}
	return sent
}

func TestRateOverOneSecond(t *testing.T) {
	for _, rate := range []uint64{10e6, 100e6, 1e9, 10e9} {
		for _, size := range []uint32{42, 60, 64, 1514} {
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

// TestCreditRatio is ExpressPass's arithmetic on the wire accounting: a
// bucket at 84/(84+1538) of a port's rate passes, over one second of
// minimum frames offered at twice that rate, exactly that rate's worth, and
// a bucket two credits deep never holds more than two.
func TestCreditRatio(t *testing.T) {
	const line = 1e9
	rate := uint64(line) * 84 / 1622
	b, err := NewBucket(rate, 2*84, 0)
	if err != nil {
		t.Fatal(err)
	}
	if WireBytes(60) != 84 || WireBytes(1514) != 1538 || WireBytes(42) != 84 {
		t.Fatalf("wire bytes %d %d %d", WireBytes(60), WireBytes(1514), WireBytes(42))
	}
	gap := int64(84 * 8 * 1e9 / float64(rate) / 2) // offered at twice the rate
	passed := 0
	for now := int64(0); now < 1e9; now += gap {
		if b.Ready(now) {
			b.Take(60)
			passed++
		}
		if b.tokens > 2*84*1e9 {
			t.Fatalf("bucket holds %d bytes at %d ns", b.tokens/1e9, now)
		}
	}
	want := float64(rate) / 8 / 84
	if d := float64(passed)/want - 1; d > 0.005 || d < -0.005 {
		t.Fatalf("passed %d credits in 1 s, want %.0f", passed, want)
	}
}

func TestNewBucketBounds(t *testing.T) {
	if _, err := NewBucket(1e9, 83, 0); err == nil {
		t.Fatal("a bucket smaller than one minimum frame was accepted")
	}
	if _, err := NewBucket(1e9, 1<<40, 0); err == nil {
		t.Fatal("a burst that overflows the token arithmetic was accepted")
	}
	if _, err := New(1e9, 1<<40, 0); err == nil {
		t.Fatal("New accepted a burst that overflows")
	}
}

// TestReadyForNeverGoesIntoDebt: a meter asked with ReadyFor lets out at
// most its depth at once (two 84-byte credits from a 168-byte bucket, not
// the third that Ready's debt would allow), WaitFor says exactly when the
// next may go, and over a second the rate holds.
func TestReadyForNeverGoesIntoDebt(t *testing.T) {
	b, err := NewBucket(8*84*1000, 2*84, 0) // 1000 credits/s, depth 2 credits
	if err != nil {
		t.Fatal(err)
	}
	if b.Depth() != 168 {
		t.Fatalf("depth %d, want 168", b.Depth())
	}
	now := int64(5e9) // long idle: full
	n := 0
	for b.ReadyFor(now, 60) {
		b.Take(60)
		n++
	}
	if n != 2 || b.Tokens(now) != 0 {
		t.Fatalf("%d credits left a full 2-credit bucket at once (tokens now %d), want 2 and 0", n, b.Tokens(now))
	}
	if w := b.WaitFor(now, 60); w != 1e6 {
		t.Fatalf("WaitFor = %d ns, want 1 ms (one credit at 1000/s)", w)
	}
	if b.ReadyFor(now+1e6-1, 60) || !b.ReadyFor(now+1e6, 60) {
		t.Fatal("ReadyFor disagrees with WaitFor")
	}
	b.Take(60)
	sent := 0
	for t0 := now + 1e6; t0 <= now+1e6+1e9; t0 += 1000 {
		for b.ReadyFor(t0, 60) {
			b.Take(60)
			sent++
		}
		if tk := b.Tokens(t0); tk > 168 || tk < 0 {
			t.Fatalf("tokens %d outside [0, 168]", tk)
		}
	}
	if sent != 1000 {
		t.Fatalf("%d credits in 1 s at 1000/s", sent)
	}
}
