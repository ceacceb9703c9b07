package sched

import (
	"strings"
	"testing"

	"github.com/gswitch/gswitch/pkt"
)

// TestClassifierCompiles: each mode is compiled into its table at build
// time; the look-up gives the mapped queue (DSCP, PCP) or the packet's own
// (queue, folded onto the queues there are).
func TestClassifierCompiles(t *testing.T) {
	dscp := DefaultClassifier(8)
	dscp.Map[46] = 0
	pcp := DefaultPCPClassifier(8)
	pcp.Map[3] = 1
	cases := []struct {
		c    Classifier
		p    pkt.Packet
		want int
	}{
		{Classifier{}, pkt.Packet{TOS: 46 << 2}, 2}, // no mode: the default DSCP map (EF is class 5, queue 2)
		{dscp, pkt.Packet{TOS: 46 << 2}, 0},
		{dscp, pkt.Packet{TOS: 0}, 7},
		{pcp, pkt.Packet{PCP: 7, TOS: 46 << 2}, 0},
		{pcp, pkt.Packet{PCP: 3}, 1},
		{Classifier{By: ByQueue}, pkt.Packet{Queue: 5, TOS: 46 << 2}, 5},
		{Classifier{By: "queue"}, pkt.Packet{Queue: 13}, 5},
	}
	for _, c := range cases {
		cl, err := c.c.compile(8)
		if err != nil {
			t.Fatal(err)
		}
		if got := cl.queue(&c.p); got != c.want {
			t.Errorf("%s %+v: queue %d, want %d", c.c.By, c.p, got, c.want)
		}
	}
	bad := DefaultClassifier(8)
	bad.Map[10] = 8
	for c, want := range map[*Classifier]string{{By: "tos"}: `classify by "tos"`, &bad: "maps 10 to queue 8"} {
		if _, err := c.compile(8); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: error %v, want %q", c.By, err, want)
		}
		if _, err := New("prio", Params{Queues: 8, PortBytes: 1 << 20, Classify: *c}); err == nil {
			t.Errorf("New took classifier %q", c.By)
		}
	}
}

func TestClassifyByText(t *testing.T) {
	var b ClassifyBy
	for _, s := range []string{"", "dscp", "pcp", "queue"} {
		if err := b.UnmarshalText([]byte(s)); err != nil || string(b) != s {
			t.Errorf("%q: %q, %v", s, b, err)
		}
	}
	if err := b.UnmarshalText([]byte("tos")); err == nil || !strings.Contains(err.Error(), "use dscp, pcp or queue") {
		t.Errorf("tos: %v", err)
	}
}

// TestQuantumDefault: drr and sfq take their Spec's quantum; the others
// have none.
func TestQuantumDefault(t *testing.T) {
	for _, name := range []string{"drr", "sfq"} {
		if s, _ := Lookup(name); s.Quantum != DefaultQuantum {
			t.Errorf("%s: Spec.Quantum %d", name, s.Quantum)
		}
		if q := mk(t, name, Params{Queues: 4}).(*drr).Quantum(); q != DefaultQuantum {
			t.Errorf("%s: quantum %d", name, q)
		}
	}
	if s, _ := Lookup(DefaultScheduler); s.Quantum != 0 {
		t.Errorf("%s has a quantum", DefaultScheduler)
	}
}
