package transport

import (
	"container/heap"
	"fmt"
	"strings"
	"testing"

	"github.com/gswitch/gswitch/perf/proto"
)

// A model of xpass.sh's DCTCP convergence run, on a fake clock: N DCTCP
// senders, each paced to its 10 Gbit/s link, join a shared 10 Gbit/s FIFO
// (step marking above k packets, buf packets of buffer), one every join
// ns, 4 us each way, the default RTO.
type cvEvent struct {
	at      int64
	seq     int
	flow    int
	toRecv  bool
	ce      bool
	payload []byte
}
type cvEvents []cvEvent

func (e cvEvents) Len() int { return len(e) }
func (e cvEvents) Less(i, j int) bool {
	return e[i].at < e[j].at || e[i].at == e[j].at && e[i].seq < e[j].seq
}
func (e cvEvents) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *cvEvents) Push(x any)   { *e = append(*e, x.(cvEvent)) }
func (e *cvEvents) Pop() any {
	o := *e
	x := o[len(o)-1]
	*e = o[:len(o)-1]
	return x
}

type cvParams struct {
	n          int
	join, run  int64
	k, buf     int // packets
	delay      int64
	wirePerSeg int // bytes on the wire beyond the datagram
	mss        int
	maxWindow  int
	pace       bool
	paceRate   float64
	log        bool
}

type cvResult struct {
	acked        []uint64
	drops        []int
	ret, to, red []uint64
	timeline     [][]uint64
	qSamples     []int
}

func runConverge(t *testing.T, p cvParams) cvResult {
	const rate = 1.25 // bytes per ns
	var q cvEvents
	seq := 0
	push := func(e cvEvent) { seq++; e.seq = seq; heap.Push(&q, e) }
	busy := 0.0
	inQ := []int64{} // departure times of packets queued (for depth in packets)
	depth := func(now int64) int {
		i := 0
		for i < len(inQ) && inQ[i] <= now {
			i++
		}
		inQ = inQ[i:]
		return len(inQ)
	}
	snd := make([]*Sender, p.n)
	rcv := make([]*Receiver, p.n)
	next := make([]int64, p.n)
	res := cvResult{acked: make([]uint64, p.n), drops: make([]int, p.n), timeline: make([][]uint64, p.n)}
	var logb strings.Builder
	toRecv := func(f int, now int64) func([]byte) {
		return func(b []byte) {
			d := depth(now)
			if d >= p.buf {
				res.drops[f]++
				if p.log {
					h, _, _ := proto.Decode(b)
					fmt.Fprintf(&logb, "%8.1fus drop flow %d seq %d (retx %v)\n", float64(now)/1e3, f+1, h.Seq, h.Flags&proto.FlagRetx != 0)
				}
				return
			}
			ce := d > p.k
			busy = max(busy, float64(now)) + float64(len(b)+p.wirePerSeg)/rate
			inQ = append(inQ, int64(busy))
			push(cvEvent{at: int64(busy) + p.delay, flow: f, toRecv: true, ce: ce, payload: append([]byte(nil), b...)})
		}
	}
	started := make([]bool, p.n)
	pacers := make([]*Pacer, p.n)
	for i := range pacers {
		pr := p.paceRate
		if pr == 0 {
			pr = 10e9
		}
		pacers[i] = NewPacer(pr, p.wirePerSeg+proto.HeaderLen, 4*(p.mss+p.wirePerSeg+proto.HeaderLen))
	}
	step := int64(100e3)
	nextSample := step
	for now := int64(1); now < p.run; {
		for i := 0; i < p.n; i++ {
			if !started[i] && now >= int64(i)*p.join+1 {
				started[i] = true
				snd[i] = NewSender(Config{Mode: DCTCP, MSS: p.mss, MaxWindow: p.maxWindow}, uint64(i+1), 1<<34, now)
				if p.pace {
					snd[i].Gate(pacers[i])
				}
				rcv[i] = NewReceiver(uint64(i + 1))
				next[i] = 1
			}
		}
		for q.Len() > 0 && q[0].at <= now {
			e := heap.Pop(&q).(cvEvent)
			h, pl, _ := proto.Decode(e.payload)
			f := e.flow
			if e.toRecv {
				rcv[f].OnPacketCE(h, pl, e.ce, now, func(b []byte) {
					push(cvEvent{at: now + p.delay, flow: f, payload: append([]byte(nil), b...)})
				})
			} else {
				snd[f].OnAck(h, now)
				next[f] = 1
			}
		}
		for i := 0; i < p.n; i++ {
			if started[i] && next[i] != 0 && now >= next[i] {
				next[i] = snd[i].Poll(now, toRecv(i, now))
			}
		}
		for now >= nextSample {
			for i := 0; i < p.n; i++ {
				a := uint64(0)
				if started[i] {
					a = snd[i].Acked()
				}
				res.timeline[i] = append(res.timeline[i], a)
				if p.log && started[i] {
					d := snd[i].dc
					fmt.Fprintf(&logb, "%8.1fus flow %d acked %9d nxt %9d cwnd %9.0f ssth %9.0f inflight %8d alpha %.4f cutting %v cutEnd %d red %d retx %d dup %d\n",
						float64(nextSample)/1e3, i+1, snd[i].una, snd[i].nxt, snd[i].cwnd, snd[i].ssthresh, snd[i].inflight, d.alpha, d.cutting, d.cutEnd, snd[i].Reductions, snd[i].Retransmits, snd[i].dupAcks)
				}
			}
			res.qSamples = append(res.qSamples, depth(now))
			nextSample += step
		}
		// next event
		at := p.run
		if q.Len() > 0 {
			at = min(at, q[0].at)
		}
		for i := 0; i < p.n; i++ {
			if !started[i] {
				at = min(at, int64(i)*p.join+1)
			} else if next[i] != 0 {
				at = min(at, next[i])
			}
		}
		at = min(at, nextSample)
		now = max(now+1, at)
	}
	for i := 0; i < p.n; i++ {
		if snd[i] != nil {
			res.acked[i] = snd[i].Acked()
			res.ret = append(res.ret, snd[i].Retransmits)
			res.to = append(res.to, snd[i].Timeouts)
			res.red = append(res.red, snd[i].Reductions)
		}
	}
	if p.log {
		t.Log(logb.String())
	}
	return res
}

// TestDCTCPJoinsAPacedFlow: four paced DCTCP flows join a marking FIFO
// one every 2 ms. A flow alone behind its pacer keeps the queue empty, so
// nothing marks it; were its window grown by every ack meanwhile (2 MB in
// 2 ms, alpha decayed near 0), the cuts of alpha/2 after the next flow
// joined would leave it far above the path's window: the buffer
// overflowed, and the later flows' first windows were dropped whole (the
// fourth flow got nothing acknowledged in 4 ms). With the window grown
// only while the sender fills it, nothing is dropped, every flow gets a
// share, and the queue settles about K.
func TestDCTCPJoinsAPacedFlow(t *testing.T) {
	p := cvParams{n: 4, join: 2e6, run: 10e6, k: 65, buf: 250, delay: 4e3, wirePerSeg: 8 + 20 + 14 + 24, mss: 1408, maxWindow: 4 << 20, pace: true}
	r := runConverge(t, p)
	t.Logf("acked %v drops %v retransmits %v timeouts %v reductions %v", r.acked, r.drops, r.ret, r.to, r.red)
	t.Logf("queue per 100us: %v", r.qSamples)
	for i, d := range r.drops {
		if d != 0 {
			t.Errorf("flow %d: %d packets dropped at the shared buffer", i+1, d)
		}
	}
	// Flow i runs (4 - i) x 2 ms; a fair share of the last 2 ms alone is
	// 2 ms x 10 Gbit/s / 4 = 625 KB. Each gets at least a fifth of that.
	for i, a := range r.acked {
		if a < 125e3 {
			t.Errorf("flow %d: %d bytes acknowledged, want at least 125 KB", i+1, a)
		}
	}
	// The last 2 ms (four flows): the queue stays within K + N + a bucket
	// of the paper's analysis, as the 16-to-1 test holds it.
	for j, q := range r.qSamples[len(r.qSamples)-15:] {
		if q > p.k+p.n+8 {
			t.Errorf("queue %d packets at sample %d of the last 1.5 ms, want at most K + N + 8 = %d", q, j, p.k+p.n+8)
		}
	}
}
