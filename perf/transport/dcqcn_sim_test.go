package transport

import (
	"container/heap"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/gswitch/gswitch/perf/proto"
)

// A model of the namespace test's fabric on a fake clock
// (test/netns/dcqcn_test.go: topologies/expresspass/incast.yaml with
// RED marking): DCQCN senders on 10 Gbit/s links joining one every join
// ns into a 10 Gbit/s FIFO that marks by RED on its instantaneous depth
// (DCQCN's Kmin 5 KB, Kmax 200 KB, Pmax 1%, mech/ecn's mode red) and
// drops beyond its buffer (buffer bytes, frames frames); 1 us links, so data
// reach the queue 1 us after they leave, the receiver 2 us after they
// leave the queue, and acks and CNPs come back in 3 us. gsperf's frame:
// 1408 bytes of payload, 130 of headers, gap and preamble.
type qcParams struct {
	n         int
	join, run int64
	seed      int64
	cfg       DCQCNConfig // LineRate etc.; the sim fills Overhead and Burst
	window    int
	buffer    int // the queue's limit in bytes on the wire ...
	frames    int // ... and in frames
	log       bool
}

type qcResult struct {
	timeline   [][]uint64 // acknowledged bytes per flow, every qcStep
	drops      int
	cnps, cuts []uint64
	rates      [][]float64 // each flow's Rc at each step
	queue      []int       // bytes queued at each step
}

const (
	qcStep     = 100e3 // ns
	qcMSS      = 1408
	qcOverhead = 130  // on the wire beyond the payload: gsperf 64 + UDP 8 + IP 20 + Ethernet 14 + 24
	qcRate     = 1.25 // bytes per ns: 10 Gbit/s
	qcKMin     = 5e3
	qcKMax     = 200e3
	qcPMax     = 0.01
)

func runDCQCN(t *testing.T, p qcParams) qcResult {
	var q cvEvents
	seq := 0
	push := func(e cvEvent) { seq++; e.seq = seq; heap.Push(&q, e) }
	rng := rand.New(rand.NewSource(p.seed))
	buffer, frames := p.buffer, p.frames
	busy := 0.0
	type queued struct {
		leaves int64
		bytes  int
	}
	var inQ []queued
	qBytes := 0
	drain := func(now int64) {
		i := 0
		for i < len(inQ) && inQ[i].leaves <= now {
			qBytes -= inQ[i].bytes
			i++
		}
		inQ = inQ[i:]
	}
	res := qcResult{timeline: make([][]uint64, p.n), cnps: make([]uint64, p.n), cuts: make([]uint64, p.n), rates: make([][]float64, p.n)}
	var logb strings.Builder
	// arrive is a datagram reaching the queue at now.
	arrive := func(f int, b []byte, now int64) {
		drain(now)
		wire := len(b) - proto.HeaderLen + qcOverhead
		if qBytes+wire > buffer || len(inQ) >= frames {
			res.drops++
			return
		}
		var pm float64
		switch {
		case qBytes >= qcKMax:
			pm = 1
		case qBytes >= qcKMin:
			pm = qcPMax * float64(qBytes-qcKMin) / (qcKMax - qcKMin)
		}
		ce := pm > 0 && rng.Float64() < pm
		busy = max(busy, float64(now)) + float64(wire)/qcRate
		inQ = append(inQ, queued{int64(busy), wire})
		qBytes += wire
		push(cvEvent{at: int64(busy) + 2e3, flow: f, toRecv: true, ce: ce, payload: b})
	}
	snd := make([]*Sender, p.n)
	rcv := make([]*Receiver, p.n)
	next := make([]int64, p.n)
	started := make([]bool, p.n)
	cfg := p.cfg
	cfg.Overhead = qcOverhead
	cfg.Burst = 4 * (qcMSS + qcOverhead)
	start := func(i int) int64 { return int64(i)*p.join + 1 }
	nextSample := int64(qcStep)
	for now := int64(1); now < p.run; {
		for i := 0; i < p.n; i++ {
			if !started[i] && now >= start(i) {
				started[i] = true
				snd[i] = NewSender(Config{Mode: DCQCN, MSS: qcMSS, InitWindow: p.window, DCQCN: cfg}, uint64(i+1), 1<<34, now)
				rcv[i] = NewReceiver(uint64(i + 1))
				rcv[i].SendCNPs(DefaultCNPInterval)
				next[i] = now
			}
		}
		for q.Len() > 0 && q[0].at <= now {
			e := heap.Pop(&q).(cvEvent)
			f := e.flow
			switch {
			case e.toRecv:
				h, pl, _ := proto.Decode(e.payload)
				rcv[f].OnPacketCE(h, pl, e.ce, now, func(b []byte) {
					push(cvEvent{at: now + 3e3, flow: f, payload: append([]byte(nil), b...)})
				})
			case e.payload[3] == 0: // a datagram on its way to the queue (type byte 0: see below)
				e.payload[3] = proto.TypeData
				arrive(f, e.payload, now)
			default:
				h, _, _ := proto.Decode(e.payload)
				snd[f].OnAck(h, now)
				next[f] = now
			}
		}
		for i := 0; i < p.n; i++ {
			if started[i] && next[i] != 0 && now >= next[i] {
				next[i] = snd[i].Poll(now, func(b []byte) {
					// On its way to the queue for 1 us; the type byte is
					// 0 meanwhile, to tell it from an ack.
					c := append([]byte(nil), b...)
					c[3] = 0
					push(cvEvent{at: now + 1e3, flow: i, payload: c})
				})
			}
		}
		for now >= nextSample {
			drain(now)
			for i := 0; i < p.n; i++ {
				a, r := uint64(0), 0.0
				if started[i] {
					a, r = snd[i].Acked(), snd[i].Rate()
				}
				res.timeline[i] = append(res.timeline[i], a)
				res.rates[i] = append(res.rates[i], r)
				if p.log && started[i] {
					s := snd[i]
					fmt.Fprintf(&logb, "%8.1fus flow %d acked %10d Rc %6.3f Rt %6.3f alpha %.4f cnps %d retx %d to %d q %d\n",
						float64(nextSample)/1e3, i+1, s.Acked(), s.Rate()/1e9, s.TargetRate()/1e9, s.RateAlpha(), s.CNPs, s.Retransmits, s.Timeouts, qBytes)
				}
			}
			res.queue = append(res.queue, qBytes)
			nextSample += qcStep
		}
		at := p.run
		if q.Len() > 0 {
			at = min(at, q[0].at)
		}
		for i := 0; i < p.n; i++ {
			if !started[i] {
				at = min(at, start(i))
			} else if next[i] != 0 {
				at = min(at, next[i])
			}
		}
		at = min(at, nextSample)
		now = max(now+1, at)
	}
	for i := 0; i < p.n; i++ {
		if snd[i] != nil {
			res.cnps[i], res.cuts[i] = snd[i].CNPs, snd[i].RateCuts
		}
	}
	if p.log {
		t.Log(logb.String())
	}
	return res
}

// rateOver is flow f's goodput in bit/s over [from, to) (multiples of qcStep).
func (r qcResult) rateOver(f int, from, to int64) float64 {
	at := func(x int64) float64 {
		i := int(x/qcStep) - 1
		if i < 0 {
			return 0
		}
		return float64(r.timeline[f][min(i, len(r.timeline[f])-1)])
	}
	return (at(to) - at(from)) * 8 / (float64(to-from) / 1e9)
}

// TestDCQCNTwoFlowsConverge: a second flow joins, at line rate, a 10
// Gbit/s bottleneck that the first has had to itself for 1 ms (the
// namespace test's scenario, test/netns/dcqcn_test.go, and its fabric:
// 600 KB of buffer, see there). The queue passes Kmax, every packet is
// marked, and both flows take a CNP every 50 us until the queue drains:
// both fall near the floor, and rise again together. After the
// convergence time the namespace test derives from the constants (1 ms
// after the join), each flow's goodput over the next 10 ms (an
// additive-increase cycle and the next cuts) is within 10% of the fair
// share, half of what the two carried, in every one of 10 seeds of the
// RED marking (30 seeds: at most 5.4% off), with no drop; the two carry
// at least half of the link's payload rate (30 seeds: 0.57 to 0.66:
// DCQCN's sawtooth, from near the floor to the fair share).
func TestDCQCNTwoFlowsConverge(t *testing.T) {
	const join, conv, measure = 1e6, 1e6, 10e6
	payload := 10e9 * qcMSS / (qcMSS + qcOverhead)
	for seed := int64(1); seed <= 10; seed++ {
		p := qcParams{n: 2, join: join, run: join + conv + measure, seed: seed, buffer: 600e3, frames: 390,
			cfg: DCQCNConfig{LineRate: 10e9}, window: DCQCNWindow(10e9, 200e3, DefaultCNPInterval, qcMSS)}
		r := runDCQCN(t, p)
		from, to := int64(join+conv), int64(join+conv+measure)
		a, b := r.rateOver(0, from, to), r.rateOver(1, from, to)
		fair := (a + b) / 2
		t.Logf("seed %2d: flows at %.3f and %.3f of the fair share %.2f Gbit/s (%.2f of the payload rate); %d drops; CNPs %v, cuts %v",
			seed, a/fair, b/fair, fair/1e9, 2*fair/payload, r.drops, r.cnps, r.cuts)
		if a < 0.9*fair || b < 0.9*fair {
			t.Errorf("seed %d: %.3f and %.3f of the fair share, want both within 10%%", seed, a/fair, b/fair)
		}
		if 2*fair < 0.5*payload {
			t.Errorf("seed %d: the flows carried %.2f of the payload rate, want at least 0.5", seed, 2*fair/payload)
		}
		if r.drops != 0 || r.cnps[0] == 0 || r.cnps[1] == 0 {
			t.Errorf("seed %d: %d drops, CNPs %v", seed, r.drops, r.cnps)
		}
	}
}
