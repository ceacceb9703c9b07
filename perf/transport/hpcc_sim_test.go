package transport

import (
	"container/heap"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/wire/gsperf"
)

// intPort is an in-memory bottleneck on a fake clock for HPCC: n senders
// attached straight to one switch port (a FIFO drained at rate), which, as
// the INT stage does, writes a hop into each data segment as it starts on
// the line (ts, the bytes sent before it, the bytes queued behind it,
// the rate), then a propagation delay to the receivers; acks take the
// delay back. Bytes on the line are wire bytes: the datagram plus the
// UDP, IPv4 and Ethernet headers, preamble, FCS and gap (66).
type intPort struct {
	rate  float64 // bytes per ns
	delay int64
	noINT bool // the port writes no hop (a switch without the INT stage)
	// jitter delays each segment on its way to the port by up to this
	// many ns, at random (each sender's segments in order): hosts that
	// run late.
	jitter int64
	rng    *rand.Rand
	last   map[int]int64 // each flow's latest arrival
	q      simEvents
	seq    int
	fifo   [][]byte // datagrams waiting, not yet on the line
	fifoB  int      // their wire bytes
	busy   bool
	tx     uint64 // wire bytes sent
	warm   int64  // samples from here on
	depths []int  // packets each data arrival found waiting, after warm
	maxB   int    // most wire bytes waiting an arrival found, after warm
	sentAt uint64 // wire bytes sent at warm
}

const simWire = 8 + 20 + 14 + 24 // UDP, IPv4, Ethernet, preamble + FCS + gap

type simEvent struct {
	at      int64
	seq     int
	kind    int // simFree, simDeliver, simAck
	flow    int
	payload []byte
}

const (
	simFree = iota
	simDeliver
	simAck
	simArrive
)

type simEvents []simEvent

func (e simEvents) Len() int { return len(e) }
func (e simEvents) Less(i, j int) bool {
	return e[i].at < e[j].at || e[i].at == e[j].at && e[i].seq < e[j].seq
}
func (e simEvents) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *simEvents) Push(x any)   { *e = append(*e, x.(simEvent)) }
func (e *simEvents) Pop() any {
	o := *e
	x := o[len(o)-1]
	*e = o[:len(o)-1]
	return x
}

func (l *intPort) push(e simEvent) {
	l.seq++
	e.seq = l.seq
	heap.Push(&l.q, e)
}

// arrive takes a data segment from a sender at now.
func (l *intPort) arrive(now int64, b []byte) {
	if now >= l.warm {
		if l.depths == nil {
			l.sentAt = l.tx
		}
		l.depths = append(l.depths, len(l.fifo))
		l.maxB = max(l.maxB, l.fifoB)
	}
	l.fifo = append(l.fifo, append([]byte(nil), b...))
	l.fifoB += len(b) + simWire
	if !l.busy {
		l.start(now)
	}
}

// start puts the head of the FIFO on the line at now, writing its hop.
func (l *intPort) start(now int64) {
	b := l.fifo[0]
	l.fifo = l.fifo[1:]
	w := len(b) + simWire
	l.fifoB -= w
	if !l.noINT {
		gsperf.Header(b).INT().Push(uint64(now), l.tx, uint64(l.fifoB), uint64(l.rate*8e9))
	}
	l.tx += uint64(w)
	l.busy = true
	end := now + int64(float64(w)/l.rate)
	l.push(simEvent{at: end, kind: simFree})
	l.push(simEvent{at: end + l.delay, kind: simDeliver, payload: b})
}

type simResult struct {
	util             float64 // the line's busy share after warm
	p50, p99, most   int     // packets an arrival found waiting, after warm
	maxBytes         int
	senders          []*Sender
	meanWindow, sumW float64
}

// runINTPort runs n HPCC senders (cfg) into one port for dur ns.
func runINTPort(t *testing.T, n int, cfg Config, l *intPort, dur int64) simResult {
	t.Helper()
	now := int64(1)
	snd := make([]*Sender, n)
	rcv := make([]*Receiver, n)
	next := make([]int64, n)
	for i := range n {
		snd[i] = NewSender(cfg, uint64(i+1), 1<<30, now)
		rcv[i] = NewReceiver(uint64(i + 1))
	}
	toPort := func(b []byte) {
		if l.jitter == 0 {
			l.arrive(now, b)
			return
		}
		f := int(gsperf.Header(b).Flow())
		at := max(now+l.rng.Int63n(l.jitter+1), l.last[f])
		l.last[f] = at
		l.push(simEvent{at: at, kind: simArrive, payload: append([]byte(nil), b...)})
	}
	l.last = map[int]int64{}
	for now < dur {
		for i, s := range snd {
			if next[i] == 0 || next[i] <= now {
				next[i] = s.Poll(now, toPort)
			}
		}
		at := int64(0)
		for _, x := range next {
			if x != 0 && (at == 0 || x < at) {
				at = x
			}
		}
		if l.q.Len() > 0 && (at == 0 || l.q[0].at < at) {
			at = l.q[0].at
		}
		if at == 0 {
			t.Fatal("nothing scheduled")
		}
		now = max(now, at)
		for l.q.Len() > 0 && l.q[0].at <= now {
			e := heap.Pop(&l.q).(simEvent)
			switch e.kind {
			case simArrive:
				l.arrive(now, e.payload)
			case simFree:
				l.busy = false
				if len(l.fifo) > 0 {
					l.start(now)
				}
			case simDeliver:
				h, p, err := proto.Decode(e.payload)
				if err != nil {
					t.Fatal(err)
				}
				f := int(h.Flow - 1)
				rcv[f].OnPacketINT(h, p, gsperf.Header(e.payload).INT(), false, now, func(a []byte) {
					l.push(simEvent{at: now + l.delay, kind: simAck, flow: f, payload: append([]byte(nil), a...)})
				})
			case simAck:
				h, _, err := proto.Decode(e.payload)
				if err != nil {
					t.Fatal(err)
				}
				snd[e.flow].OnAckINT(h, gsperf.Header(e.payload).INT(), now)
				next[e.flow] = 0 // poll it again
			}
		}
	}
	for i, r := range rcv {
		if r.Corrupt != 0 || r.Delivered() == 0 {
			t.Fatalf("flow %d: %d delivered, %d corrupt", i+1, r.Delivered(), r.Corrupt)
		}
	}
	res := simResult{senders: snd, util: float64(l.tx-l.sentAt) / l.rate / float64(dur-l.warm), maxBytes: l.maxB}
	d := append([]int(nil), l.depths...)
	sort.Ints(d)
	if len(d) > 0 {
		res.p50, res.p99, res.most = d[len(d)/2], d[len(d)*99/100], d[len(d)-1]
	}
	for _, s := range snd {
		res.sumW += float64(s.Window())
	}
	res.meanWindow = res.sumW / float64(n)
	return res
}

// HPCC at high utilization keeps the queue near zero. Four senders share
// a 10 Gbit/s port with a base RTT of about 9.2 us (4 us each way and a
// frame's time), T = 10 us, 1280-byte payloads with 5 INT slots.
//
// What "near zero" is, from eta: in the steady state each flow's per-RTT
// update keeps Wc = Wc / (U/eta) + W_AI, so summed over the n flows
// U - eta = n W_AI / W_init (the windows sum to U x B x T): U settles at
// U* = eta + n W_AI / W_init, 0.9516 with the simulator's W_AI
// (4e-4 W_init) and 0.975 with the paper's guideline for 2n flows. Below 1
// the port is not saturated, so no queue stands: with the hosts on time
// the paced senders settle into the line's slots, the line is busy U* of
// the time and no arrival finds a packet waiting.
//
// Hosts that run late (each segment up to two frame times, at random)
// make the senders' packets collide: at the 99th percentile an arrival
// finds no more than the two frame times of lateness waiting (2 packets),
// at most a packet of each sender (n). HPCC counts what
// waits as inflight (min(qlen, qlen') / (B x T): a frame is an eighth of
// B x T here), so the line's share falls below U*: with W_AI for n flows
// (U* = 1) it is 0.946 to 0.949 over seeds. The bar for every case: the
// line busy at least eta - 0.02, and queue p99 at most 2 packets and its
// most n.
//
// Without the INT stage the same senders never learn: each keeps W_init
// in flight at the line rate, and the queue stands at about
// (n - 1) x W_init.
func TestHPCCKeepsTheQueueNearZero(t *testing.T) {
	const (
		n     = 4
		rate  = 1.25 // bytes per ns: 10 Gbit/s
		delay = 4000
		T     = 10000
		dur   = 20e6
		warm  = 5e6
		frame = 1408 + proto.HeaderLen + simWire
	)
	wInit := rate * T
	hops := DefaultINTHops
	mss := 1408 - gsperf.INTLen(hops)
	for _, c := range []struct {
		name   string
		wai    float64
		u      float64 // U* by the analysis above
		jitter int64   // ns
	}{
		{"the simulator's W_AI", 0, DefaultHPCCEta + n*DefaultHPCCWAI, 0},
		{"the paper's W_AI for 2n flows", wInit * (1 - DefaultHPCCEta) / (2 * n), DefaultHPCCEta + (1-DefaultHPCCEta)/2, 0},
		{"the paper's W_AI for n flows, late hosts", wInit * (1 - DefaultHPCCEta) / n, 1, 2 * frame * 4 / 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Mode: HPCC, MSS: mss, RTO: 1e6, HPCC: HPCCConfig{LineRate: rate * 8e9, BaseRTT: T, WAI: c.wai,
				Overhead: proto.HeaderLen + gsperf.INTLen(hops) + simWire}}
			l := &intPort{rate: rate, delay: delay, warm: warm, jitter: c.jitter, rng: rand.New(rand.NewSource(1))}
			r := runINTPort(t, n, cfg, l, dur)
			var us, ws []string
			for _, s := range r.senders {
				st, _ := s.HPCC()
				us = append(us, fmt.Sprintf("%.3f", st.U))
				ws = append(ws, fmt.Sprintf("%.0f", st.Window))
				if st.Hops != 1 || st.Samples == 0 || s.Timeouts != 0 || s.Retransmits != 0 {
					t.Fatalf("sender: %+v, %d timeouts, %d retransmits", st, s.Timeouts, s.Retransmits)
				}
			}
			t.Logf("line busy %.4f (U* %.4f); queue an arrival found after %v ms: p50 %d p99 %d most %d packets (%d bytes); U %v; windows %v B (W_init %.0f)",
				r.util, c.u, warm/1e6, r.p50, r.p99, r.most, r.maxBytes, us, ws, wInit)
			if r.util < DefaultHPCCEta-0.02 || r.util > 1 {
				t.Errorf("line busy %.4f of the time, want at least eta - 0.02 = %.2f", r.util, DefaultHPCCEta-0.02)
			}
			if c.jitter == 0 && (r.util < c.u-0.002 || r.util > c.u+0.002) {
				t.Errorf("line busy %.4f of the time with the hosts on time, want U* = %.4f", r.util, c.u)
			}
			if r.p99 > 2 || r.most > n || c.jitter == 0 && r.most != 0 {
				t.Errorf("queue p99 %d, most %d packets: want at most 2 and n = %d (none with the hosts on time)", r.p99, r.most, n)
			}
		})
	}
	t.Run("without INT", func(t *testing.T) {
		cfg := Config{Mode: HPCC, MSS: mss, RTO: 1e6, HPCC: HPCCConfig{LineRate: rate * 8e9, BaseRTT: T,
			Overhead: proto.HeaderLen + gsperf.INTLen(hops) + simWire}}
		l := &intPort{rate: rate, delay: delay, warm: warm, noINT: true}
		r := runINTPort(t, n, cfg, l, dur)
		stand := (n-1)*wInit/frame - 2 // packets, less rounding and the segments on the way
		t.Logf("no INT: line busy %.4f; queue p50 %d p99 %d most %d packets; (n - 1) W_init is %.1f frames; windows %.0f B",
			r.util, r.p50, r.p99, r.most, (n-1)*wInit/frame, r.meanWindow)
		if float64(r.p50) < stand || r.meanWindow != wInit {
			t.Errorf("without INT the queue p50 is %d packets, want about (n - 1) W_init (at least %.1f), windows %.0f", r.p50, stand, r.meanWindow)
		}
	})
}
