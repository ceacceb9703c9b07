package mech

import (
	"strings"
	"testing"

	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/sched"
)

// register registers specs for the test alone.
func register(t *testing.T, specs ...Spec) {
	t.Helper()
	for _, s := range specs {
		s.Config = func() any { return &struct{}{} }
		s.New = func(Switch, []Port) (Instance, error) { return struct{}{}, nil }
		Register(s)
		name := s.Name
		t.Cleanup(func() { delete(registry, name) })
	}
}

// TestOrderFollowsDeclarations: the order is what the mechanisms declare,
// by name or by role, from either side; undeclared pairs go by name; the
// order of the list does not matter.
func TestOrderFollowsDeclarations(t *testing.T) {
	register(t,
		Spec{Name: "t-queuer", SetsQueue: true},
		Spec{Name: "t-marker", After: []string{QueueSetter}},
		Spec{Name: "t-early", Before: []string{"t-queuer"}},
		Spec{Name: "t-free"},
		Spec{Name: "t-ranker", SetsRank: true, Before: []string{"t-absent"}},
		Spec{Name: "t-reader", After: []string{RankSetter, QueueSetter}})
	want := "t-early t-free t-queuer t-marker"
	for _, in := range [][]string{
		{"t-marker", "t-free", "t-queuer", "t-early"},
		{"t-early", "t-queuer", "t-marker", "t-free"},
		{"t-free", "t-marker", "t-early", "t-queuer"},
	} {
		got, err := Order(in)
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("Order(%v) = %v, %v; want %s", in, got, err, want)
		}
	}
	if got, err := Order([]string{"t-reader", "t-ranker"}); err != nil || strings.Join(got, " ") != "t-ranker t-reader" {
		t.Errorf("rank setter and reader: %v, %v", got, err)
	}
	// A role nobody plays on the port constrains nothing.
	if got, err := Order([]string{"t-reader", "t-free"}); err != nil || strings.Join(got, " ") != "t-free t-reader" {
		t.Errorf("no setter: %v, %v", got, err)
	}
	if _, err := Order([]string{"t-free", "nope"}); err == nil || !strings.Contains(err.Error(), `unknown mechanism "nope"`) {
		t.Errorf("unknown name: %v", err)
	}
}

// TestOrderRefusesContradictions: two mechanisms that must each run after
// the other, or a longer cycle, are refused, naming every mechanism, what
// each declared, and the fix; Check says the same.
func TestOrderRefusesContradictions(t *testing.T) {
	register(t,
		Spec{Name: "t-queuer", SetsQueue: true, After: []string{"t-marker"}},
		Spec{Name: "t-marker", After: []string{QueueSetter}},
		Spec{Name: "t-a", Before: []string{"t-b"}},
		Spec{Name: "t-b", Before: []string{"t-c"}},
		Spec{Name: "t-c", After: []string{"t-free"}, Before: []string{"t-a"}},
		Spec{Name: "t-free"})
	_, err := Order([]string{"t-queuer", "t-free", "t-marker"})
	if err == nil {
		t.Fatal("a contradiction was accepted")
	}
	for _, s := range []string{"mechanisms t-marker and t-queuer cannot run on the same port",
		"t-marker runs after the mechanism that assigns the queues", "t-queuer runs after t-marker",
		"enable only some of them", "Spec.After and Spec.Before"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if err2 := Check([]string{"t-marker", "t-queuer"}, "fifo"); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("Check: %v", err2)
	}
	_, err = Order([]string{"t-c", "t-free", "t-b", "t-a"})
	if err == nil || !strings.Contains(err.Error(), "mechanisms t-a, t-b and t-c cannot run on the same port") ||
		!strings.Contains(err.Error(), "t-c before t-a (t-c runs before t-a)") || strings.Contains(err.Error(), "t-free") {
		t.Errorf("cycle of three: %v", err)
	}
	if got, err := Order([]string{"t-a", "t-b", "t-free"}); err != nil || strings.Join(got, " ") != "t-a t-b t-free" {
		t.Errorf("no cycle without t-c: %v, %v", got, err)
	}
}

// TestRegisterRefusesBadNames: names are keys of the config and metric
// prefixes; a mechanism cannot run before itself.
func TestRegisterRefusesBadNames(t *testing.T) {
	for _, s := range []Spec{{Name: "Bad"}, {Name: "a.b"}, {Name: "t-self", After: []string{"t-self"}}, {Name: "t-x", Before: []string{"<nope>"}}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%+v registered", s)
					delete(registry, s.Name)
				}
			}()
			register(t, s)
		}()
	}
}

type oldAdmit struct{}

func (oldAdmit) Admit(port int, p *pkt.Packet, now int64) {}

type goodHooks struct{}

func (goodHooks) Admit(*PortView, *pkt.Packet, int64)               {}
func (goodHooks) Dropped(*PortView, *pkt.Packet, pkt.Reason, int64) {}
func (goodHooks) Tick(int, int64) int64                             { return 0 }

// TestCheckHooks: a method with a hook's name and another signature is
// refused, showing both signatures; hooks as declared pass.
func TestCheckHooks(t *testing.T) {
	err := CheckHooks(oldAdmit{})
	if err == nil || !strings.Contains(err.Error(), "method Admit(int, *pkt.Packet, int64) is not the Admit hook, Admit(*mech.PortView, *pkt.Packet, int64) (mech.AdmitHook)") {
		t.Errorf("old Admit: %v", err)
	}
	if err := CheckHooks(goodHooks{}); err != nil {
		t.Error(err)
	}
	if err := CheckHooks(nil); err != nil {
		t.Error(err)
	}
}

// TestPortView: the view tells the exact depth the scheduler holds now and
// the queue a packet would take, and the facts it was given.
func TestPortView(t *testing.T) {
	s, err := sched.New("prio", sched.Params{Queues: 4, PortBytes: 1 << 20, Classify: sched.Classifier{By: sched.ByQueue}})
	if err != nil {
		t.Fatal(err)
	}
	v := NewPortView(3, s, 1<<20, 100)
	v.SetRate(1e9)
	v.SetDelay(5000)
	if v.Index() != 3 || v.Queues() != 4 || v.BufferBytes() != 1<<20 || v.BufferPackets() != 100 || v.RateBits() != 1e9 ||
		v.DelayNs() != 5000 || !v.Exact() || !v.Classifies() || v.Admitting() {
		t.Fatalf("view %+v", v)
	}
	for i, q := range []uint16{2, 2, 1} {
		p := pkt.Packet{Addr: uint64(i) * 2048, Len: 100 * uint32(i+1), Queue: q}
		if got := v.QueueOf(&p); got != int(q) {
			t.Fatalf("QueueOf = %d, want %d", got, q)
		}
		s.Enqueue(&p)
	}
	if b, n := v.Backlog(2); b != 300 || n != 2 {
		t.Fatalf("queue 2: %d B, %d packets (the scheduler's Depth is unpublished: %v)", b, n, func() []uint64 { b, _ := s.Depth(2); return []uint64{b} }())
	}
	if b, n := v.Total(); b != 600 || n != 3 {
		t.Fatalf("total %d B, %d packets", b, n)
	}
	v.SetAdmitting(true)
	if !v.Admitting() {
		t.Fatal("admitting not set")
	}
}
