package bfc_test

import (
	"encoding/binary"
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/mech/bfc"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/wire"
)

// threePorts: port 0 faces a BFC switch, port 1 a gsperf host (peer host),
// port 2 the receiver, shaped, with a small fixed Th so counters move.
func threePorts(t testing.TB) *dptest.Harness {
	cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{
		{Name: "up", Role: mech.RoleFabric, Scheduler: "drr", Queues: 8, Mechanisms: mechs(&bfc.Config{})},
		{Name: "h", Scheduler: "drr", Queues: 8, Mechanisms: mechs(&bfc.Config{})},
		{Name: "out", Scheduler: "drr", Queues: 8, Rate: 100e6, Burst: 1538, Buffer: 64 << 10, Mechanisms: mechs(&bfc.Config{Th: 2 * wireLen})},
	}}}
	h := dptest.New(t, cfg, 4096)
	h.Links[2].Inject(pkttest.ARP(pkttest.MAC(3), ip3, ip1))
	h.Settle()
	return h
}

// TestHotPathDoesNotAllocate: queue assignment, counting, tagging, PAUSE,
// RESUME and BITMAP frames out, and pause frames in allocate nothing.
func TestHotPathDoesNotAllocate(t *testing.T) {
	h := threePorts(t)
	b := inst(h)
	mf, _ := wire.MechBFC(9)
	frames := [][]byte{tagged(1, 1), tagged(2, 2), gsperfFrame(3, mf), gsperfFrame(4, 0),
		msg(wire.TypeBFCPause, 1, 3), msg(wire.TypeBFCResume, 2, 3), bitmap(3, 8, 1)}
	seq := uint32(10)
	run := func() {
		for i := 0; i < 40; i++ {
			h.Links[i%4/2].Inject(frames[i%4]) // tagged frames from the switch, gsperf ones from the host
		}
		for _, f := range frames[4:] {
			binary.BigEndian.PutUint32(f[22:], seq) // newer each time
			seq++
			h.Links[0].Inject(f)
		}
		h.Advance(8e6, 100e3)
	}
	run()
	if allocs := testing.AllocsPerRun(20, run); allocs != 0 {
		t.Fatalf("%.1f allocations per run", allocs)
	}
	s0, s1 := b.Stats(0), b.Stats(1)
	if s0.PausesSent == 0 || s0.ResumesSent == 0 || s0.BitmapsSent == 0 || s1.PausesSent == 0 || s0.PausesRx == 0 || s0.BitmapsRx == 0 {
		t.Fatalf("the run did not exercise the paths: %+v %+v", s0, s1)
	}
	h.CheckFrames(t)
}

// FuzzControl feeds arbitrary BFC messages (the bytes after the Ethernet
// header of a 0x88B6 frame) to a BFC fabric port: nothing panics, only the
// port's own queues are ever paused, and every frame comes back.
func FuzzControl(f *testing.F) {
	f.Add(msg(wire.TypeBFCPause, 1, 3)[14:])
	f.Add(msg(wire.TypeBFCResume, 2, 3)[14:])
	f.Add(bitmap(3, 4096, 0, 7, 4095)[14:])
	f.Add(bitmap(0xffffffff, 8, 1)[14:])
	f.Add([]byte("GC\x01\x03\x00\x0c\x00\x00"))
	h := threePorts(f)
	b := inst(h)
	f.Fuzz(func(t *testing.T, body []byte) {
		frame := make([]byte, 14+len(body))
		copy(frame, wire.LinkLocalDst[:])
		copy(frame[6:], neighbour[:])
		binary.BigEndian.PutUint16(frame[12:], wire.EtherType)
		copy(frame[14:], body)
		if len(frame) > 1500 {
			frame = frame[:1500]
		}
		h.Links[0].Inject(frame)
		h.Settle()
		if p := b.Stats(0).PausedByPeer; p&^0xff != 0 {
			t.Fatalf("paused %x: beyond the port's 8 queues", p)
		}
		for q := 8; q < 64; q++ {
			if h.SW.Scheduler(0).Paused(q) {
				t.Fatalf("queue %d paused", q)
			}
		}
		h.CheckFrames(t)
	})
}

// FuzzUpstreamQueue: any tag value, any gsperf mechanism field, any frame
// after them, from the BFC port or the host port, into the congested port:
// nothing panics, counters stay in range, and once the port drains every
// counter is zero again with no underflow.
func FuzzUpstreamQueue(f *testing.F) {
	f.Add(uint16(5), uint64(0), false, []byte{})
	f.Add(uint16(0xffff), uint64(0xffffffffffffffff), true, []byte("x"))
	f.Add(uint16(4095), uint64(4095)<<48, true, make([]byte, 900))
	h := threePorts(f)
	b := inst(h)
	f.Fuzz(func(t *testing.T, upq uint16, mf uint64, fromHost bool, tail []byte) {
		if len(tail) > 1400 {
			tail = tail[:1400]
		}
		payload := make([]byte, 64+len(tail))
		copy(payload, gsperfFrame(1, mf)[42:42+64])
		copy(payload[64:], tail)
		f := pkttest.UDP4(pkttest.MAC(3), pkttest.MAC(1), ip1, ip3, upq, 5500, payload)
		in := 0
		if fromHost {
			in = 1
		} else {
			g := make([]byte, len(f)+4)
			copy(g[4:], f)
			wire.InsertTag(g, upq&(wire.MaxQueues-1))
			binary.BigEndian.PutUint16(g[14:], upq) // the flag bits too
			f = g
		}
		for i := 0; i < 6; i++ {
			h.Links[in].Inject(f)
		}
		h.Settle()
		h.Advance(20e6, 200e3)
		for _, p := range []int{0, 1} {
			if st := b.Stats(p); st.CountersActive != 0 || st.Underflow != 0 {
				t.Fatalf("port %d after the drain: %+v", p, st)
			}
		}
		if st := b.Stats(2); st.Underflow != 0 {
			t.Fatalf("underflow %+v", st)
		}
		h.CheckFrames(t)
	})
}
