package mech_test

import (
	"encoding/binary"
	"fmt"
	"github.com/gswitch/gswitch/config"
	"testing"

	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
)

// UDP destination ports of the contract test's frames, and what becomes of
// them at admission.
const (
	portData    = 5000 // queued, or refused by the scheduler
	portLane    = 7    // the recorder moves them to the control lane
	portConsume = 8    // the recorder consumes them
	portDrop    = 9    // the dropper, which runs before the recorder, drops them
)

var reasonTest = pkt.RegisterReason("test_contract")

// recorder is a test mechanism that checks mech's admission contract on
// every port it runs on, as it is told of each packet: it ranks packets by
// their UDP source port (for the pfabric scheduler) and keeps, per port,
// the packet its last Admit saw (until its outcome) and the packets
// queued. It allocates: it is for this test alone.
type recorder struct {
	ports []*recState
	bad   []string
}

type recState struct {
	pending uint64          // address of the packet Admit saw, until its outcome; 0: none
	queued  map[uint64]bool // addresses of the packets Enqueued and not yet gone
	n       map[string]int  // events, by kind
}

type dropper struct{}

func init() {
	mech.Register(mech.Spec{Name: "test-contract", SetsRank: true, Config: func() any { return &struct{}{} },
		New: func(sw mech.Switch, ports []mech.Port) (mech.Instance, error) {
			r := &recorder{ports: make([]*recState, len(ports))}
			for i, p := range ports {
				if p.Config != nil {
					r.ports[i] = &recState{queued: map[uint64]bool{}, n: map[string]int{}}
				}
			}
			return r, nil
		}})
	mech.Register(mech.Spec{Name: "test-contract-dropper", Before: []string{"test-contract"}, Config: func() any { return &struct{}{} },
		New: func(mech.Switch, []mech.Port) (mech.Instance, error) { return dropper{}, nil }})
}

func dport(mem []byte, p *pkt.Packet) uint16 {
	return binary.BigEndian.Uint16(mem[p.Addr+uint64(p.L4Off)+2:])
}

var testMem []byte

func (d dropper) Admit(v *mech.PortView, p *pkt.Packet, now int64) {
	if dport(testMem, p) == portDrop {
		p.DropWith(reasonTest)
	}
}

func (r *recorder) fail(f string, a ...any) { r.bad = append(r.bad, fmt.Sprintf(f, a...)) }

func (r *recorder) Admit(v *mech.PortView, p *pkt.Packet, now int64) {
	s := r.ports[v.Index()]
	s.n["admit"]++
	if !v.Admitting() || p.Lane != pkt.LaneData {
		r.fail("Admit of %#x: admitting %v, lane %v", p.Addr, v.Admitting(), p.Lane)
	}
	if s.pending != 0 {
		r.fail("Admit of %#x before the outcome of %#x", p.Addr, s.pending)
	}
	p.Rank = uint32(binary.BigEndian.Uint16(testMem[p.Addr+uint64(p.L4Off):]))
	switch dport(testMem, p) {
	case portLane:
		p.Lane = pkt.LaneControl // off the data path: no outcome follows
		s.n["lane"]++
		return
	case portConsume:
		p.Verdict = pkt.Consume
		s.n["consume"]++
		return
	}
	s.pending = p.Addr
}

func (r *recorder) Enqueued(v *mech.PortView, p *pkt.Packet, now int64) {
	s := r.ports[v.Index()]
	s.n["enqueued"]++
	if !v.Admitting() || s.pending != p.Addr || s.queued[p.Addr] {
		r.fail("Enqueued %#x: admitting %v, pending %#x, already queued %v", p.Addr, v.Admitting(), s.pending, s.queued[p.Addr])
	}
	s.pending = 0
	s.queued[p.Addr] = true
}

func (r *recorder) Dropped(v *mech.PortView, p *pkt.Packet, why pkt.Reason, now int64) {
	s := r.ports[v.Index()]
	switch {
	case v.Admitting() && s.pending == p.Addr:
		s.n["refused"]++ // the scheduler or the frame budget refused it
		s.pending = 0
	case v.Admitting() && s.pending == 0 && why == reasonTest:
		s.n["dropped before my Admit"]++
	case v.Admitting():
		r.fail("Dropped %#x (%v) at admission, pending %#x", p.Addr, why, s.pending)
	case !s.queued[p.Addr] || (why != pkt.ReasonEvicted && why != pkt.ReasonPortDown):
		r.fail("Dropped %#x (%v) later, queued %v", p.Addr, why, s.queued[p.Addr])
	default:
		s.n[why.String()]++
		delete(s.queued, p.Addr)
	}
}

func (r *recorder) Dequeued(v *mech.PortView, b *mech.Batch) {
	s := r.ports[v.Index()]
	for i := range b.Pkts {
		p := &b.Pkts[i]
		s.n["dequeued"]++
		if v.Admitting() || !s.queued[p.Addr] || p.Verdict != pkt.Forward || p.Lane != pkt.LaneData {
			r.fail("Dequeued %#x: admitting %v, queued %v, verdict %v, lane %v", p.Addr, v.Admitting(), s.queued[p.Addr], p.Verdict, p.Lane)
		}
		delete(s.queued, p.Addr)
	}
}

func (r *recorder) Egress(v *mech.PortView, b *mech.Batch) {
	r.ports[v.Index()].n["egress"] += len(b.Pkts)
}

// TestAdmissionContract runs the recorder through the real pipeline on a
// pfabric port: packets queued and sent, refused by the scheduler, evicting
// worse ones, moved to the control lane, consumed, dropped by a mechanism
// that runs before the recorder, and flushed when the port goes down. The
// recorder hears exactly what the contract says, in order.
func TestAdmissionContract(t *testing.T) {
	cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{{Name: "in"},
		{Name: "out", Scheduler: "pfabric", Rate: 8e6, Burst: 1538, Buffer: 20000,
			Mechanisms: config.Mechanisms{{Name: "test-contract", Config: &struct{}{}}, {Name: "test-contract-dropper", Config: &struct{}{}}}}}}}
	h := dptest.New(t, cfg, 4096)
	testMem = h.Mem
	if got := h.SW.Ports()[1].Mechanisms(); len(got) != 2 || got[0] != "test-contract-dropper" {
		t.Fatalf("hook order %v: the dropper declares it runs before the recorder", got)
	}
	r := h.SW.Mechanisms()["test-contract"].(*recorder)
	ip1, ip2 := [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}
	h.Links[1].Inject(pkttest.ARP(pkttest.MAC(2), ip2, ip1)) // the switch learns host 2 on out
	h.Settle()
	frame := func(sport, dport uint16) []byte {
		return pkttest.UDP4(pkttest.MAC(2), pkttest.MAC(1), ip1, ip2, sport, dport, make([]byte, 958))
	}
	inject := func(n int, sport, dport uint16) {
		for i := 0; i < n; i++ {
			h.Links[0].Inject(frame(sport, dport))
			if i%64 == 63 {
				h.Settle() // the link's ring holds 256
			}
		}
		h.Settle()
	}
	inject(25, 100, portData)  // 20 fit in the buffer, the rest are refused
	inject(10, 1, portData)    // each evicts a worse one
	inject(5, 200, portData)   // worse than all: refused, nothing evicted
	inject(300, 50, portLane)  // to the control lane; the lane holds 256
	inject(5, 50, portConsume) // consumed by the recorder
	inject(5, 50, portDrop)    // dropped before the recorder's Admit
	h.Advance(5e6, 100e3)      // some leave
	h.SW.SetPortDown(1, true)  // the rest are flushed
	h.Settle()
	h.SW.SetPortDown(1, false)
	h.Settle()
	s := r.ports[1]
	for _, b := range r.bad {
		t.Error(b)
	}
	if s.pending != 0 || len(s.queued) != 0 {
		t.Errorf("after the flush: pending %#x, %d packets still queued for the recorder", s.pending, len(s.queued))
	}
	t.Logf("events: %v", s.n)
	for _, k := range []string{"refused", "evicted", "dequeued", "port_down"} {
		if s.n[k] == 0 {
			t.Errorf("no %s event: the test does not exercise it", k)
		}
	}
	want := map[string]int{"admit": 345, "lane": 300, "consume": 5, "dropped before my Admit": 5, "enqueued": 30,
		"egress": s.n["dequeued"]}
	for k, n := range want {
		if s.n[k] != n {
			t.Errorf("%d %s events, want %d", s.n[k], k, n)
		}
	}
	if s.n["enqueued"] != s.n["dequeued"]+s.n["evicted"]+s.n["port_down"] {
		t.Errorf("%d enqueued, but %d dequeued + %d evicted + %d flushed", s.n["enqueued"], s.n["dequeued"], s.n["evicted"], s.n["port_down"])
	}
	c := h.SW.Counters(1)
	if c.Drops[pkt.ReasonLaneFull] == 0 {
		t.Error("the control lane never filled: lane_full drops are not exercised")
	}
	h.CheckFrames(t)
}
