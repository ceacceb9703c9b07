package tm

import (
	"testing"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/queues"
	"github.com/gswitch/gswitch/sched"
)

// sink records what the traffic manager drops, and the size of each batch.
type sink struct {
	drops   []Drop
	batches []int
}

func (s *sink) Drop(d []Drop) {
	s.drops = append(s.drops, d...)
	s.batches = append(s.batches, len(d))
}

const frameSize = 2048

// testPort is a port over a UMEM of two ranges of 1024 frames, each of
// which the data queues may fill halfway, with the given scheduler,
// unshaped unless rateBits is set.
func testPort(t *testing.T, scheduler string, rateBits uint64) (*Port, *Worker, *sink) {
	t.Helper()
	sk := &sink{}
	w := NewWorker(0, make([]byte, 2048*frameSize), NewFrames(frameSize, 1024, []int64{512, 512}), sk)
	p := &Port{}
	err := p.Init(Config{Index: 3, Scheduler: scheduler, RateBits: rateBits, Now: 0,
		Params: sched.Params{Queues: 8, PortBytes: 1 << 20, PortPackets: 4096, Buffer: queues.NewBuffer(1 << 22),
			Classify: sched.Classifier{By: "queue"}}})
	if err != nil {
		t.Fatal(err)
	}
	p.Serve(w)
	return p, w, sk
}

// frame is a packet of n bytes at UMEM frame i, on lane l.
func frame(i int, n uint32, l pkt.Lane) pkt.Packet {
	return pkt.Packet{Addr: uint64(i)*frameSize + pkt.Headroom, Len: n, Lane: l}
}

// scripted is a lane policy that answers from a list and counts its calls.
type scripted struct {
	answers      []mech.LaneVerdict
	seen         []bool // room, per arrival
	sent, resets int
}

func (s *scripted) Arrive(_, _ uint32, room bool, _ int64) mech.LaneVerdict {
	s.seen = append(s.seen, room)
	v := s.answers[0]
	s.answers = s.answers[1:]
	return v
}
func (s *scripted) Sent()  { s.sent++ }
func (s *scripted) Reset() { s.resets++ }

// TestLaneWithoutPolicy: a lane with no policy keeps what it has room
// for and drops the rest; its head leaves only when its bucket holds the
// frame's whole cost; it counts what it sent and dropped.
func TestLaneWithoutPolicy(t *testing.T) {
	l, err := NewLane(84*8*1000, 168, 4, frameSize, 0, nil, 0) // 1000 credits/s, 2 at once
	if err != nil {
		t.Fatal(err)
	}
	var victim, out pkt.Packet
	for i := 0; i < 6; i++ {
		p := frame(i, 60, pkt.LaneCredit)
		if queued, evicted := l.Push(&p, &victim, 0); queued != (i < 4) || evicted {
			t.Fatalf("credit %d: queued %v, evicted %v", i, queued, evicted)
		}
	}
	for i := 0; i < 2; i++ {
		if !l.Pop(0, &out) || out.Addr != frame(i, 60, 0).Addr {
			t.Fatalf("send %d at once: %+v", i, out)
		}
	}
	if l.Pop(0, &out) || l.wait(0) != 1e6 {
		t.Fatalf("a third credit left a bucket of two, or waits %d ns, not 1 ms", l.wait(0))
	}
	if !l.Pop(1e6, &out) || out.Addr != frame(2, 60, 0).Addr {
		t.Fatal("the third credit did not leave a credit time later")
	}
	l.publish(1e6)
	if st := l.Stats(); st.Sent != 3 || st.Dropped != 2 || st.Early != 0 || st.Queued != 1 || st.DepthBytes != 168 || st.TokenBytes != 0 {
		t.Fatalf("stats %+v", st)
	}
	if !l.Remove(&out) || !l.Empty() || l.Len() != 0 {
		t.Fatal("Remove left the lane holding frames")
	}
}

// TestLaneFollowsItsPolicy: the lane asks its policy about every arrival,
// telling it whether there is room, and does what it says; it tells it of
// every send and of a reset.
func TestLaneFollowsItsPolicy(t *testing.T) {
	pol := &scripted{answers: []mech.LaneVerdict{mech.LaneKeep, mech.LaneKeep, mech.LaneDropEarly,
		mech.LaneReplace(0), mech.LaneReplace(5), mech.LaneKeep, mech.LaneDrop}}
	l, err := NewLane(84*8*1000, 168, 2, frameSize, 0, pol, 0)
	if err != nil {
		t.Fatal(err)
	}
	var victim, out pkt.Packet
	type result struct{ queued, evicted bool }
	want := []result{{true, false}, {true, false}, {false, false}, {true, true}, {false, false}, {false, false}, {false, false}}
	for i, w := range want {
		p := frame(i, 60, pkt.LaneCredit)
		if q, e := l.Push(&p, &victim, 0); q != w.queued || e != w.evicted {
			t.Fatalf("arrival %d (%v): queued %v, evicted %v; want %+v", i, pol.seen[i], q, e, w)
		}
		if i == 3 && victim.Addr != frame(1, 60, 0).Addr {
			t.Fatalf("replacing the last frame gave up %x", victim.Addr)
		}
	}
	if rooms := []bool{true, true, false, false, false, false, false}; len(pol.seen) != len(rooms) {
		t.Fatalf("the policy saw %d arrivals", len(pol.seen))
	} else {
		for i := range rooms {
			if pol.seen[i] != rooms[i] {
				t.Fatalf("arrival %d: room %v, want %v", i, pol.seen[i], rooms[i])
			}
		}
	}
	for _, addr := range []uint64{frame(0, 0, 0).Addr, frame(3, 0, 0).Addr} {
		if !l.Pop(0, &out) || out.Addr != addr {
			t.Fatalf("sent %x, want %x", out.Addr, addr)
		}
	}
	l.Reset()
	l.publish(0)
	if st := l.Stats(); pol.sent != 2 || pol.resets != 1 || st.Sent != 2 || st.Dropped != 5 || st.Early != 1 {
		t.Fatalf("policy told of %d sends, %d resets; lane %+v", pol.sent, pol.resets, st)
	}
}

// TestDelayLine: frames leave in order, each when it is due.
func TestDelayLine(t *testing.T) {
	d := NewDelayLine(3)
	if d.Free() != 4 {
		t.Fatalf("a line of 3 rounds up to 4, has %d", d.Free())
	}
	for i := 0; i < 3; i++ {
		d.Push(uint64(i), uint32(100+i), int64(10*(i+1)))
	}
	d.Publish()
	if d.Len() != 3 || d.Free() != 1 || d.Published() != 3 || d.Next() != 10 {
		t.Fatalf("len %d free %d published %d next %d", d.Len(), d.Free(), d.Published(), d.Next())
	}
	for i := 0; i < 3; i++ {
		if x := d.Pop(); x != (Delayed{uint64(i), uint32(100 + i), int64(10 * (i + 1))}) {
			t.Fatalf("pop %d: %+v", i, x)
		}
	}
}

// TestFrameBudget: the data queues may hold a range's limit of its
// frames, and one port at most what is free in all; a worker's pending
// counts join the shared ones at the end of its pass.
func TestFrameBudget(t *testing.T) {
	f := NewFrames(frameSize, 1024, []int64{4, 100})
	w := NewWorker(0, nil, f, &sink{})
	if r := f.rangeOf(5000 * frameSize); r != 1 {
		t.Fatalf("a frame beyond the last range is in range %d", r)
	}
	for i := 0; i < 4; i++ {
		if !w.admits(0, 0) {
			t.Fatalf("range 0 refused its frame %d", i)
		}
		w.count(0, 1)
	}
	if w.admits(0, 0) || !w.admits(1, 0) {
		t.Fatal("range 0 took a fifth frame, or range 1 refused its first")
	}
	w.EndPass()
	if f.Queued(0) != 4 || f.queued.Load() != 4 || w.pend[0] != 0 {
		t.Fatalf("after the pass: range 0 holds %d, all %d", f.Queued(0), f.queued.Load())
	}
	if w.admits(1, 100) || !w.admits(1, 99) {
		t.Fatal("a port may hold as many frames as are free in all (104 - 4), no more")
	}
}

// observer counts what the mechanisms' Enqueued, Dropped and Dequeued
// hooks hear.
type observer struct{ enq, drop, deq int }

func (o *observer) Enqueued(*mech.PortView, *pkt.Packet, int64)            { o.enq++ }
func (o *observer) Dropped(*mech.PortView, *pkt.Packet, pkt.Reason, int64) { o.drop++ }
func (o *observer) Dequeued(_ *mech.PortView, b *mech.Batch)               { o.deq += len(b.Pkts) }

// TestSendServesTheLanesInOrder: what leaves at once is the control lane,
// then the credit lane as its bucket allows, then data, whatever order it
// came in; too long a data frame is dropped at admission.
func TestSendServesTheLanesInOrder(t *testing.T) {
	p, _, sk := testPort(t, "fifo", 0)
	l, err := NewLane(84*8*1000, 168, 8, frameSize, 0, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	p.SetCredit(l)
	obs := &observer{}
	p.Hook(obs)
	p.maxFrame = 1518
	in := []pkt.Packet{frame(0, 1000, pkt.LaneData), frame(1, 60, pkt.LaneCredit), frame(2, 60, pkt.LaneControl),
		frame(3, 60, pkt.LaneCredit), frame(4, 1000, pkt.LaneData), frame(5, 60, pkt.LaneCredit), frame(6, 2000, pkt.LaneData)}
	p.Admit(in, 0)
	if len(sk.drops) != 1 || sk.drops[0].Addr != frame(6, 0, 0).Addr || sk.drops[0].Reason != pkt.ReasonTooLong || sk.drops[0].OutPort != 3 {
		t.Fatalf("drops %+v: want frame 6 too long", sk.drops)
	}
	var out [MaxBatch]pkt.Packet
	n, moved := p.Send(out[:], 0)
	var got []uint64
	for _, o := range out[:n] {
		got = append(got, o.Addr/frameSize)
	}
	// Control, two credits (the bucket's two), then the data; the third credit waits.
	if want := []uint64{2, 1, 3, 0, 4}; len(got) != len(want) || moved {
		t.Fatalf("sent frames %v, moved %v; want %v", got, moved, want)
	} else {
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("sent frames %v, want %v", got, want)
			}
		}
	}
	if obs.enq != 2 || obs.deq != 2 || obs.drop != 0 || !p.Idle() || p.frames != 0 {
		t.Fatalf("hooks heard %+v; idle %v, frames %d", obs, p.Idle(), p.frames)
	}
	p.Publish(0)
	if !p.Queued() || p.Held() != 1 {
		t.Fatalf("queued %v, held %d: the third credit waits", p.Queued(), p.Held())
	}
	if b := p.SleepBound(0, 1e9); b != 1e6 {
		t.Fatalf("sleep bound %d ns, want the credit's 1 ms", b)
	}
}

// TestFlushDropsEverythingOnce: a port that went down drops all it holds,
// paused queues included (their pauses stay), once, handing the drops to
// the sink a batch at a time; the mechanisms hear of the data drops.
func TestFlushDropsEverythingOnce(t *testing.T) {
	p, w, sk := testPort(t, "prio", 0)
	obs := &observer{}
	p.Hook(obs)
	p.SetDelay(1e6, 0)
	var in []pkt.Packet
	for i := 0; i < 150; i++ {
		f := frame(i, 100, pkt.LaneData)
		f.Queue = uint16(i % 2)
		in = append(in, f)
	}
	p.Admit(in, 0)
	p.Pause(1)
	ctrl := frame(200, 60, pkt.LaneControl)
	p.ToLane(&ctrl, 0)
	var out [MaxBatch]pkt.Packet
	if n, moved := p.Send(out[:], 0); n != 0 || !moved { // onto the wire: a delay line of 1 ms
		t.Fatalf("sent %d, moved %v", n, moved)
	}
	w.EndPass()
	if !p.Flush(1) || p.Flush(2) {
		t.Fatal("Flush did not drop once")
	}
	seen := map[uint64]bool{}
	for _, d := range sk.drops {
		if d.Reason != pkt.ReasonPortDown || d.Free || seen[d.Addr] {
			t.Fatalf("drop %+v", d)
		}
		seen[d.Addr] = true
	}
	// 64 frames left for the wire (the control frame, 63 of queue 0's), so
	// 87 data packets were still queued.
	if len(seen) != 151 || obs.deq != 63 || obs.drop != 87 {
		t.Fatalf("%d frames dropped; hooks heard %d dequeued and %d data drops", len(seen), obs.deq, obs.drop)
	}
	for _, b := range sk.batches {
		if b > MaxBatch {
			t.Fatalf("a batch of %d drops", b)
		}
	}
	if !p.Paused(1) || p.Paused(0) || p.frames != 0 || p.Held() != 0 || p.Delayed() != 0 {
		t.Fatalf("after the flush: paused %v %v, frames %d, held %d, delayed %d", p.Paused(0), p.Paused(1), p.frames, p.Held(), p.Delayed())
	}
	w.EndPass()
	if w.frames.queued.Load() != 0 {
		t.Fatalf("the budget still counts %d frames", w.frames.queued.Load())
	}
}
