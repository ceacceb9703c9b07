package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gswitch/gswitch/control"
	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/wire"
)

func TestCtlFlagsAnywhere(t *testing.T) {
	f := newCtlFlags("queues", "queues [PORT]")
	all := f.fs.Bool("a", false, "")
	pos, code, ok := f.parse([]string{"p1", "-o", "json", "-a", "--", "-x"})
	if !ok || code != 0 || !f.json() || !*all || len(pos) != 2 || pos[0] != "p1" || pos[1] != "-x" {
		t.Fatalf("parse: %v %d %v json %v a %v", pos, code, ok, f.json(), *all)
	}
	f = newCtlFlags("ports", "ports")
	if _, code, ok := f.parse([]string{"-o", "yaml"}); ok || code != 2 {
		t.Fatalf("-o yaml accepted: %d %v", code, ok)
	}
}

func TestTopRows(t *testing.T) {
	t0 := time.Unix(100, 0)
	a := &control.Stats{Time: t0, Ports: []control.PortStats{{Name: "p1", RateBits: 100e6, Counters: control.Counters{TxBytes: 1000, TxPackets: 10, RxBytes: 0, Drops: 5}}}}
	b := &control.Stats{Time: t0.Add(2 * time.Second), Ports: []control.PortStats{{Name: "p1", RateBits: 100e6, QueueBytes: 7,
		Counters: control.Counters{TxBytes: 1000 + 12_500_000, TxPackets: 10 + 10_000, RxBytes: 250, RxPackets: 4, Drops: 25}}}}
	r := topRows(a, b)[0]
	// 12.5 MB in 2 s: 50 Mbit/s; with 24 B per frame on the wire (10,000 frames): +0.96 Mbit/s of 100 Mbit/s.
	if r.TxBits != 50e6 || r.TxPackets != 5000 || r.RxBits != 1000 || r.RxPackets != 2 || r.Drops != 10 || r.QueueBytes != 7 {
		t.Fatalf("row %+v", r)
	}
	if r.Load < 0.5095 || r.Load > 0.5097 {
		t.Fatalf("load %v, want 0.5096", r.Load)
	}
}

func TestSummary(t *testing.T) {
	m1, m2 := pkttest.MAC(1), pkttest.MAC(2)
	ip1, ip2 := [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}
	b := make([]byte, 256)
	n, _ := wire.BuildBFC(b, m1, wire.BFC{Type: wire.TypeBFCPause, Seq: 3, Switch: 4, Port: 5, Queue: 6})
	gs := make([]byte, proto.HeaderLen)
	(&proto.Header{Type: proto.TypeData, Flow: 77, Seq: 1500}).Encode(gs)
	for frame, want := range map[string]string{
		string(b[:n]): "02:00:00:00:00:01 > 01:80:c2:00:00:0e BFC_PAUSE seq 3 switch 4 port 5 queue 6",
		string(pkttest.UDP4(m2, m1, ip1, ip2, 5500, 5500, gs)): "UDP 10.0.0.1:5500 > 10.0.0.2:5500 gsperf data flow 77 offset 1500",
		string(pkttest.ARP(m1, ip1, ip2)):                      "ARP who-has 10.0.0.2 tell 10.0.0.1",
		string(pkttest.Ping(m2, m1, ip1, ip2, 9, 4, 56)):       "10.0.0.1 > 10.0.0.2 ICMP echo request id 9 seq 4",
		string([]byte{1, 2, 3}):                                "malformed (short)",
	} {
		if got := summary([]byte(frame)); got != want {
			t.Errorf("summary %q, want %q", got, want)
		}
	}
}

func TestCompletionScriptParses(t *testing.T) {
	code, out, _ := capture(t, func() int { return completionMain([]string{"bash"}) })
	if code != 0 || !strings.Contains(out, "complete -F _gswitchctl gswitchctl") || !strings.Contains(out, "capture") || !strings.Contains(out, "quantum") {
		t.Fatalf("completion: %d\n%s", code, out)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to check the script's syntax")
	}
	c := exec.Command(bash, "-n")
	c.Stdin = strings.NewReader(out)
	if o, err := c.CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, o)
	}
}
