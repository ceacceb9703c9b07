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

// serve is the owner's pass: frames of size leave while the bucket allows;
// the pass then tells the bucket whether frames were left waiting.
func serve(b *Bucket, now int64, size uint32, backlogged bool) int64 {
	var sent int64
	for b.Ready(now) {
		b.Take(size)
		sent += WireBytes(size)
	}
	b.Backlogged(backlogged)
	return sent
}

// TestCatchUp: a backlogged port whose owner comes back late sends what
// the line would have sent meanwhile, up to the catch-up, and counts the
// rest as lost; an idle port banks no more than its depth.
func TestCatchUp(t *testing.T) {
	const rate = 100e6 // 12.5 bytes per µs
	const frame = 1538 // WireBytes(1514)
	for _, c := range []struct {
		catchup, stall int64 // ns
		wantLate       int64
	}{
		{0, 4e6, 4e6 - 1e6},   // the bucket's 1 ms depth, the rest lost
		{5e6, 4e6, 0},         // 4 ms late: all made up
		{5e6, 8e6, 8e6 - 6e6}, // 5 ms catch-up + 1 ms depth
		{5e6, 1e9, 1e9 - 6e6},
	} {
		b, err := New(rate, 0, 0) // depth 12,500 B: 1 ms
		if err != nil {
			t.Fatal(err)
		}
		if err := b.SetCatchUp(c.catchup); err != nil {
			t.Fatal(err)
		}
		serve(b, 0, 1514, true) // the bucket's depth leaves; frames wait
		now := int64(0)
		for ; now < 10e6; now += 100e3 { // on time, every 100 µs
			serve(b, now, 1514, true)
		}
		if l := b.TakeLate(); l != 0 {
			t.Fatalf("catch-up %v: %d ns lost while the owner came on time", c.catchup, l)
		}
		got := serve(b, now+c.stall, 1514, true)
		// What the line carried during the stall, at most the depth and
		// the catch-up, give or take one frame of debt either way.
		want := min(c.stall, 1e6+c.catchup) * rate / 8 / 1e9
		if got < want-frame || got > want+frame {
			t.Errorf("catch-up %v, stall %v: %d B left after the stall, want %d ± %d", c.catchup, c.stall, got, want, frame)
		}
		late := b.TakeLate()
		if late < c.wantLate-200e3 || late > c.wantLate+200e3 { // one frame and the 100 µs step
			t.Errorf("catch-up %v, stall %v: %d ns counted late, want about %d", c.catchup, c.stall, late, c.wantLate)
		}
		if b.TakeLate() != 0 {
			t.Error("TakeLate did not reset")
		}
	}

	// Idle: nothing eligible at the end of the pass; after a long gap only
	// the depth leaves, and nothing counts as late.
	b, _ := New(rate, 0, 0)
	b.SetCatchUp(5e6)
	serve(b, 0, 1514, true)
	serve(b, 3e6, 1514, false) // caught up, then the queue emptied
	got := serve(b, 1e9, 1514, true)
	if got > 12500+frame {
		t.Errorf("%d B left after an idle second, want at most the depth, 12,500 B", got)
	}
	if l := b.TakeLate(); l != 0 {
		t.Errorf("%d ns counted late while the port was idle", l)
	}
}

// TestCatchUpKeepsTheRate: however late the owner comes, a backlogged port
// never sends more than the rate allows over the run (plus the depth and
// the catch-up once), and what it sends and what it lost add up to the
// line's time.
func TestCatchUpKeepsTheRate(t *testing.T) {
	const rate = 100e6
	b, _ := New(rate, 0, 0)
	b.SetCatchUp(5e6)
	var sent, late, now int64
	gap := int64(1)
	for {
		sent += serve(b, now, 1514, true)
		late += b.TakeLate()
		gap = gap*6364136223846793005 + 1442695040888963407
		next := now + 10e3 + int64(uint64(gap)>>40)%20e6 // 10 µs to 20 ms late
		if next > 2e9 {
			break
		}
		now = next
	}
	line := now * rate / 8 / 1e9 // up to the last pass
	if limit := line + 12500 + 5e6*rate/8/1e9 + 1538; sent > limit {
		t.Fatalf("%d B sent in %v, more than the line (%d B) with the depth and the catch-up (limit %d)", sent, now, line, limit)
	}
	carried := sent + late*rate/8/1e9
	if d := carried - line; d < -1538 || d > 12500+1538 { // the depth at the start, one frame of debt at the end
		t.Fatalf("sent %d B and lost %v of line time (%d B): %d B against the line's %d", sent, late, late*rate/8/1e9, carried, line)
	}
}

func TestSetCatchUpBounds(t *testing.T) {
	b, _ := New(100e6, 0, 0)
	for _, ns := range []int64{-1, 10e9 + 1} {
		if b.SetCatchUp(ns) == nil {
			t.Errorf("catch-up %d ns accepted", ns)
		}
	}
	big, _ := New(1e12, 0, 0)
	if err := big.SetCatchUp(1e9); err == nil {
		t.Error("a catch-up of 1 s at 1 Tbit/s (125 GB) accepted")
	}
	var unl Bucket
	if unl.SetCatchUp(5e6) != nil || !unl.Ready(0) {
		t.Error("the unlimited shaper refused a catch-up or stopped")
	}
}

// FuzzBucket drives a bucket of any rate, depth and catch-up with any
// sequence of passes (times that may jump or go back, frame sizes up to
// the largest uint32, backlog or not): the bucket never holds more than
// its depth (its catch-up while backlogged), never counts negative late
// time, and a pass never sends more than the bucket held plus one frame.
func FuzzBucket(f *testing.F) {
	f.Add(uint64(100e6), int64(0), int64(5e6), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add(uint64(1e12), int64(1<<32), int64(10e9), []byte{255, 255, 255, 255, 0, 1})
	f.Fuzz(func(t *testing.T, rate uint64, burst, catchup int64, ops []byte) {
		b, err := New(rate, burst, 0)
		if err != nil {
			return
		}
		if b.SetCatchUp(catchup) != nil {
			return
		}
		now := int64(0)
		for len(ops) >= 3 {
			dt := int64(ops[0])<<(ops[1]%40) - 1<<20 // jumps of up to hours, and backwards
			size := uint32(ops[1]) << (ops[2] % 32)
			backlog := ops[2]&1 != 0
			ops = ops[3:]
			now += dt
			held := b.Tokens(now)
			var sent int64
			for n := 0; b.Ready(now) && n < 1000; n++ {
				b.Take(size)
				sent += WireBytes(size)
			}
			b.Backlogged(backlog)
			if l := b.TakeLate(); l < 0 {
				t.Fatalf("negative late time %d", l)
			}
			if held > 0 && sent > held+WireBytes(size) {
				t.Fatalf("sent %d B from a bucket of %d B (frame %d)", sent, held, size)
			}
			if tk, lim := b.Tokens(now), b.catchup/1e9; !b.Unlimited() && tk > lim {
				t.Fatalf("bucket holds %d B, more than %d B", tk, lim)
			}
		}
	})
}
