package expresspass

import (
	"testing"

	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/tm"
)

// testLane is a credit lane of limit credits metered to perSec credits a
// second with a bucket of two, as the switch builds it (tm.Lane), under
// ExpressPass's policy with the given drop and seed; it returns the lane
// and its policy.
func testLane(t testing.TB, limit int, perSec uint64, random bool, seed uint64) (*tm.Lane, *lanePolicy) {
	pol := &lanePolicy{random: random, rng: seed | 1, gap: 1e9 / int64(perSec)}
	l, err := tm.NewLane(perSec*84*8, 168, limit, 2048, 0, pol, 0)
	if err != nil {
		t.Fatal(err)
	}
	return l, pol
}

// credit is a 60-byte credit from source src with sequence number seq (in Addr).
func credit(src, seq uint32) pkt.Packet {
	return pkt.Packet{Addr: uint64(src)<<32 | uint64(seq), Len: 60, Lane: pkt.LaneCredit}
}

// TestCreditLaneFairWithinAPass: ten credits of port A and then ten of
// port B arrive in one pass at a lane with room for ten. Tail drop would
// keep A's ten; the lane keeps each credit with the same chance (five of
// each on average), and in their order.
func TestCreditLaneFairWithinAPass(t *testing.T) {
	l, pol := testLane(t, 10, 1000, false, 7)
	var scratch, out pkt.Packet
	keptA, trials := 0, 4000
	for trial := 0; trial < trials; trial++ {
		pol.Sent()
		dropped := 0
		for src := uint32(0); src < 2; src++ {
			for seq := uint32(0); seq < 10; seq++ {
				p := credit(src, seq)
				queued, evicted := l.Push(&p, &scratch, 0)
				if !queued || evicted {
					dropped++
				}
			}
		}
		if dropped != 10 || l.Len() != 10 {
			t.Fatalf("trial %d: %d dropped, %d queued; want 10 and 10", trial, dropped, l.Len())
		}
		last := [2]int64{-1, -1}
		for l.Remove(&out) {
			src, seq := out.Addr>>32, int64(uint32(out.Addr))
			if seq <= last[src] {
				t.Fatalf("trial %d: source %d's credit %d after %d: the lane reordered", trial, src, seq, last[src])
			}
			last[src] = seq
			if src == 0 {
				keptA++
			}
		}
	}
	if f := float64(keptA) / float64(trials*10); f < 0.47 || f > 0.53 {
		t.Fatalf("port A kept %.3f of the room, want 0.5 (tail drop: 1)", f)
	}
}

// laneLoss runs two sources at the lane's rate each for two seconds of
// fake time, A spacing its credits evenly and B sending them four at a
// time, and returns the fraction of each one's credits the lane dropped.
func laneLoss(t *testing.T, random bool) (a, b float64) {
	const perSec = 10000
	l, _ := testLane(t, 32, perSec, random, 11)
	var scratch, out pkt.Packet
	var sent, lost [2]int
	gap := int64(1e9 / perSec)
	for now := int64(0); now < 2e9; now += gap / 10 {
		var arrive []uint32
		if now%gap == 0 {
			arrive = append(arrive, 0)
		}
		if now%(4*gap) == 2*gap+gap/10*3 { // off A's phase
			arrive = append(arrive, 1, 1, 1, 1)
		}
		for _, src := range arrive {
			p := credit(src, uint32(sent[src]))
			sent[src]++
			queued, evicted := l.Push(&p, &scratch, now)
			if !queued {
				lost[p.Addr>>32]++
			}
			if evicted {
				lost[scratch.Addr>>32]++
			}
		}
		for l.Pop(now, &out) { // a send: the bucket allows it, the policy hears of it
		}
	}
	return float64(lost[0]) / float64(sent[0]), float64(lost[1]) / float64(sent[1])
}

// TestCreditLaneRandomDropIsUniform: offered twice its rate by an even
// source and a bursty one, a lane with credit_drop random drops the same
// share of each (half); tail drop favours the even one.
func TestCreditLaneRandomDropIsUniform(t *testing.T) {
	ta, tb := laneLoss(t, false)
	ra, rb := laneLoss(t, true)
	t.Logf("loss, even source vs bursty: tail %.3f vs %.3f; random %.3f vs %.3f", ta, tb, ra, rb)
	if ra < 0.45 || ra > 0.55 || rb < 0.45 || rb > 0.55 {
		t.Fatalf("random drop: even source lost %.3f, bursty %.3f; want both 0.5 +- 0.05", ra, rb)
	}
}

// FuzzCreditLane drives a lane with arbitrary arrivals, sends and time:
// it never holds more than its queue length, keeps every source's credits
// in order, and accounts for every credit once (queued, sent or dropped).
func FuzzCreditLane(f *testing.F) {
	f.Add([]byte{8, 0, 0, 0, 0, 1, 2, 3, 0, 0, 1, 1})
	f.Add([]byte{1, 1, 0, 1, 0, 1, 0, 1, 3, 3, 3, 2, 2})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) < 2 {
			return
		}
		limit := int(ops[0])%64 + 1
		l, _ := testLane(t, limit, 100000, ops[1]&1 == 1, uint64(ops[1])+1)
		var scratch, out pkt.Packet
		var pushed, dropped, sent int
		var seq [4]uint32
		var last [4]int64
		last = [4]int64{-1, -1, -1, -1}
		gone := map[uint64]bool{}
		now := int64(0)
		for _, op := range ops[2:] {
			switch op % 4 {
			case 0, 1: // a credit from source op/4%4
				src := uint32(op / 4 % 4)
				p := credit(src, seq[src])
				seq[src]++
				pushed++
				queued, evicted := l.Push(&p, &scratch, now)
				for _, d := range []struct {
					yes  bool
					addr uint64
				}{{!queued, p.Addr}, {evicted, scratch.Addr}} {
					if !d.yes {
						continue
					}
					if gone[d.addr] {
						t.Fatalf("credit %x dropped twice", d.addr)
					}
					gone[d.addr] = true
					dropped++
				}
				if evicted && !queued {
					t.Fatal("a credit evicted for one that was not queued")
				}
			case 2: // a send, as the egress pass makes
				if l.Pop(now, &out) {
					if gone[out.Addr] {
						t.Fatalf("credit %x sent after it was dropped", out.Addr)
					}
					src, s := out.Addr>>32, int64(uint32(out.Addr))
					if s <= last[src] {
						t.Fatalf("source %d: credit %d after %d", src, s, last[src])
					}
					last[src] = s
					sent++
				}
			case 3:
				now += int64(op) * 1000
			}
			if n := int(l.Len()); n > limit {
				t.Fatalf("lane of %d holds %d", limit, n)
			}
		}
		if q := int(l.Len()); pushed != dropped+sent+q {
			t.Fatalf("%d pushed, %d dropped + %d sent + %d queued", pushed, dropped, sent, q)
		}
	})
}

// TestCreditLaneRandomForgetsAnIdleQueue: with credit_drop random, a lane
// whose average says "full" but that has stood empty for a second takes
// the next credit: the average decays over idle time (else the first
// credits after every pause would be dropped for the queue of before).
// Credits it drops early do not count among the arrivals that compete for
// room.
func TestCreditLaneRandomForgetsAnIdleQueue(t *testing.T) {
	const limit = 8
	l, pol := testLane(t, limit, 10000, true, 3)
	pol.avg = int64(limit) << 8 // the average at the whole queue: drop everything
	var scratch pkt.Packet
	p := credit(0, 0)
	if queued, _ := l.Push(&p, &scratch, 0); queued || pol.arrived != 0 {
		t.Fatalf("queued %v, arrivals %d: at a full average the credit is dropped early and not counted", queued, pol.arrived)
	}
	if st := l.Stats(); st.Early != 1 || st.Dropped != 1 {
		t.Fatalf("lane counters %+v: want the credit counted as dropped early", st)
	}
	for i := uint32(1); i <= 4; i++ {
		p = credit(0, i)
		if queued, _ := l.Push(&p, &scratch, 1e9); !queued {
			t.Fatalf("after a second of an empty lane credit %d was dropped (average %d/256)", i, pol.avg)
		}
	}
}
