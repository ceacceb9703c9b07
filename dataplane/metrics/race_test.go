package metrics

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/afxdp"
	"github.com/gswitch/gswitch/mech"
	_ "github.com/gswitch/gswitch/mech/all"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/prometheus/client_golang/prometheus"
)

// lockedLink is a MemLink a test goroutine and a running worker can share:
// every call takes a lock (test code, not the forwarding path).
type lockedLink struct {
	mu sync.Mutex
	ml *dataplane.MemLink
}

func (l *lockedLink) Fill(a []uint64) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ml.Fill(a)
}
func (l *lockedLink) Receive(d []afxdp.Desc) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ml.Receive(d)
}
func (l *lockedLink) TxFree() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ml.TxFree()
}
func (l *lockedLink) Transmit(d []afxdp.Desc) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ml.Transmit(d)
}
func (l *lockedLink) Kick() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ml.Kick()
}
func (l *lockedLink) Complete(a []uint64) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ml.Complete(a)
}
func (l *lockedLink) WakeFill() {}
func (l *lockedLink) FD() int   { return -1 }
func (l *lockedLink) Reclaim(dst []uint64) []uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ml.Reclaim(dst)
}
func (l *lockedLink) Outstanding() (int, int) { return 0, 0 }
func (l *lockedLink) inject(f []byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ml.Inject(f)
}

// TestStartTrafficScrapeStop runs the switch on its own goroutines (two
// workers) while one goroutine sends frames, another scrapes the metrics,
// another takes ports down and up, and then stops it: run under -race, it
// shows the workers, the collector and the control paths share state only
// through atomics and rings.
func TestStartTrafficScrapeStop(t *testing.T) {
	const frameSize = 2048
	mem := make([]byte, 8192*frameSize)
	var links [][]dataplane.Link
	var ll []*lockedLink
	cfg := dataplane.Config{Config: config.Config{Workers: 2}}
	for i := 0; i < 4; i++ {
		l := &lockedLink{ml: dataplane.NewMemLink(mem, frameSize, 256)}
		ll = append(ll, l)
		links = append(links, []dataplane.Link{l})
		pc := config.Port{Name: string(rune('a' + i))}
		if i == 3 {
			spec, _ := mech.Lookup("afq")
			pc.Scheduler, pc.Rate = "rsp", 100e6
			pc.Mechanisms = config.Mechanisms{{Name: "afq", Config: spec.Config()}}
		}
		cfg.Ports = append(cfg.Ports, pc)
	}
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	sw, err := dataplane.New(cfg, mem, frameSize, links)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(New(sw, nil))
	for _, m := range sw.Mechanisms() {
		if c, ok := m.(prometheus.Collector); ok {
			reg.MustRegister(c)
		}
	}
	if err := sw.Start(); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var sent, scrapes atomic.Int64
	wg.Add(3)
	go func() { // traffic: every host to every other
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			src, dst := byte(i%4), byte((i/4)%4)
			if src == dst {
				continue
			}
			if ll[src].inject(pkttest.UDP4(pkttest.MAC(dst+1), pkttest.MAC(src+1), [4]byte{10, 0, 0, src + 1}, [4]byte{10, 0, 0, dst + 1}, uint16(i), 9, make([]byte, 200))) {
				sent.Add(1)
			}
			if i%64 == 0 {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	go func() { // Prometheus scrapes
		defer wg.Done()
		for !stop.Load() {
			if _, err := reg.Gather(); err != nil {
				t.Error(err)
				return
			}
			scrapes.Add(1)
			time.Sleep(time.Millisecond)
		}
	}()
	go func() { // a port flaps
		defer wg.Done()
		for !stop.Load() {
			sw.SetPortDown(2, true)
			time.Sleep(20 * time.Millisecond)
			sw.SetPortDown(2, false)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	time.Sleep(time.Second)
	stop.Store(true)
	wg.Wait()
	time.Sleep(50 * time.Millisecond) // let the last frames drain
	sw.Stop()
	var tx uint64
	for i := range ll {
		tx += sw.Counters(i).TxPackets
	}
	f := sw.Frames()
	t.Logf("%d frames sent in, %d out, %d scrapes; frames %+v", sent.Load(), tx, scrapes.Load(), f)
	if sent.Load() < 1000 || tx == 0 || scrapes.Load() < 10 {
		t.Fatalf("too little happened: %d in, %d out, %d scrapes", sent.Load(), tx, scrapes.Load())
	}
	if f.Sum() != f.Total {
		t.Fatalf("frames lost: %+v", f)
	}
}
