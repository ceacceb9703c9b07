package control

import (
	"testing"
	"time"

	"github.com/gswitch/gswitch/fidelity"
	"github.com/gswitch/gswitch/pkt/pkttest"
)

const fidelityYAML = `
switch_id: 3
ports:
  - {name: p1, interface: veth-a}
  - {name: p2, interface: veth-b, rate: 100Mbit, delay: 100us}
`

// TestFidelityView: "fidelity" answers, through the socket, with the
// switch's fidelity counters as package fidelity holds a scrape: the
// worker's pass gaps (the fixture's steps), the ports' rates and lost
// line time, the delay line's error on the port with a delay (frames
// 250 µs late) and on no other, the timescale; and a snapshot of it
// judges like one scraped.
func TestFidelityView(t *testing.T) {
	f := newFixture(t, fidelityYAML)
	h := f.h
	h.Links[1].Inject(pkttest.UDP4(mA, mB, ipB, ipA, 1, 2, make([]byte, 10))) // learn B on p2
	h.Settle()
	for i := 0; i < 5; i++ {
		h.Links[0].Inject(pkttest.UDP4(mB, mA, ipA, ipB, 1, 2, make([]byte, 100)))
	}
	h.Settle()
	h.Clock.T += 100e3 + 250e3
	h.Settle()

	var v FidelityView
	f.call(t, Request{Cmd: "fidelity"}, &v)
	sw := v.Switch
	if sw.Name != "sw" || sw.Timescale != 1 || len(v.Workers) != 1 || v.Workers[0] != "0" || time.Since(sw.Time) > time.Minute || v.Started.After(sw.Time) {
		t.Fatalf("view %+v", v)
	}
	if g := sw.PassGap["0"]; g.Count == 0 || len(g.Bounds) != fidelity.NumBuckets-1 {
		t.Fatalf("pass gaps %+v", g)
	}
	if _, ok := sw.WakeLate["0"]; !ok {
		t.Fatal("no wake-up lateness for worker 0")
	}
	if _, ok := v.TickLate["0"]; !ok {
		t.Fatal("no tick lateness for worker 0")
	}
	if sw.Rate["p1"] != 0 || sw.Rate["p2"] != 100e6/8 || len(sw.TxLate) != 2 || len(sw.CreditLate) != 2 {
		t.Fatalf("rates %v, tx late %v, credit late %v", sw.Rate, sw.TxLate, sw.CreditLate)
	}
	if len(v.Ports) != 2 || v.Ports[0] != (FidelityPort{Name: "p1"}) || v.Ports[1] != (FidelityPort{Name: "p2", RateBits: 100e6, Delay: true}) {
		t.Fatalf("ports %+v", v.Ports)
	}
	d, ok := sw.DelayError["p2"]
	if _, other := sw.DelayError["p1"]; !ok || other || d.Count != 5 {
		t.Fatalf("delay errors %+v", sw.DelayError)
	}
	if q, _, _ := d.Quantile(0.99); q < 250e-6/1.2 || q > 250e-6*1.2 {
		t.Fatalf("delay error p99 %v, want about 250 µs", q)
	}

	// Judged since start: the fixture's fake clock moved 350 µs in the
	// switch; 250 µs of delay error is 2 frame times at 100 Mbit/s.
	w, err := fidelity.Diff(fidelity.Snapshot{Switches: []fidelity.Switch{{Name: sw.Name, Time: v.Started}}}, fidelity.Snapshot{Switches: []fidelity.Switch{sw}})
	if err != nil {
		t.Fatal(err)
	}
	vd := fidelity.Evaluate(w, fidelity.DefaultBounds())
	if vd.Valid || vd.DelayErrorCount != 5 || vd.FastestPort != "sw/p2" {
		t.Fatalf("verdict %v", vd)
	}
}
