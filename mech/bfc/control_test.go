package bfc_test

import (
	"encoding/binary"
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/mech/bfc"
	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/wire"
	"github.com/gswitch/gswitch/wire/wiretest"
)

var neighbour = [6]byte{0x02, 0x99, 0, 0, 0, 9}

func msg(t wire.Type, seq uint32, q uint16) []byte { return wiretest.BFC(neighbour, 9, 1, t, seq, q) }

func bitmap(seq uint32, nq int, set ...int) []byte {
	return wiretest.Bitmap(neighbour, 9, 1, seq, nq, set...)
}

// TestPausesFromTheNeighbour: PAUSE, RESUME and BITMAP from the
// neighbour pause and resume the port's own queues; each queue follows
// the newest message about it (a stale one is ignored, frames about
// different queues may come in any order, seq wraps); a queue the port
// does not have and a malformed frame change nothing and are counted; the
// watchdog resumes a pause nobody refreshes.
func TestPausesFromTheNeighbour(t *testing.T) {
	h := congested(t, &bfc.Config{}, 100e6, 1<<20)
	b := inst(h)
	up := h.SW.Scheduler(0)
	send := func(f []byte) {
		h.Links[0].Inject(f)
		h.Settle()
	}
	paused := func() (m uint64) {
		for q := 0; q < 8; q++ {
			if up.Paused(q) {
				m |= 1 << q
			}
		}
		if m != b.Stats(0).PausedByPeer {
			t.Fatalf("scheduler paused %08b, BFC's view %08b", m, b.Stats(0).PausedByPeer)
		}
		return m
	}
	expect := func(what string, want uint64) {
		t.Helper()
		if got := paused(); got != want {
			t.Fatalf("%s: paused queues %08b, want %08b", what, got, want)
		}
	}
	send(msg(wire.TypeBFCPause, 10, 3))
	expect("PAUSE 3", 1<<3)
	send(msg(wire.TypeBFCResume, 9, 3))
	expect("an older RESUME 3", 1<<3)
	send(msg(wire.TypeBFCResume, 11, 3))
	expect("RESUME 3", 0)
	send(msg(wire.TypeBFCPause, 14, 1)) // 13 overtaken on the way
	send(msg(wire.TypeBFCPause, 13, 2))
	expect("PAUSE 1 then an older PAUSE 2", 1<<1|1<<2)
	send(bitmap(15, 8, 1, 6))
	expect("BITMAP {1, 6}", 1<<1|1<<6)
	send(msg(wire.TypeBFCPause, 16, 9)) // the port has 8 queues
	expect("PAUSE 9", 1<<1|1<<6)
	send(bitmap(17, 16, 0, 12))
	expect("BITMAP {0, 12} of 16", 1<<0)
	// Seq runs on past 2^32 - 1 to 0 (steps below 2^31 are newer).
	send(msg(wire.TypeBFCPause, 0x7fff0000, 4))
	send(msg(wire.TypeBFCPause, 0xfffe0000, 4))
	send(msg(wire.TypeBFCResume, 0xffffffff, 4))
	expect("seq up to 2^32 - 1", 1<<0)
	send(msg(wire.TypeBFCPause, 5, 4))
	expect("seq wrapped to 5", 1<<0|1<<4)
	send(msg(wire.TypeBFCResume, 0xfffffff0, 4))
	expect("an older RESUME from before the wrap", 1<<0|1<<4)
	send(msg(wire.TypeBFCResume, 6, 4))
	expect("RESUME 4 at 6", 1<<0)
	bad := msg(wire.TypeBFCPause, 20, 1)
	binary.BigEndian.PutUint16(bad[18:], 2) // GC length 2: too short for a PAUSE
	send(bad)
	expect("malformed", 1<<0)
	st := b.Stats(0)
	if st.PausesRx != 7 || st.ResumesRx != 5 || st.BitmapsRx != 2 || st.StaleRx != 2 || st.BadQueueRx != 2 || st.Malformed != 1 {
		t.Fatalf("stats %+v", st)
	}
	if d := h.SW.Counters(0).Drops[pkt.ReasonMalformed]; d != 1 {
		t.Fatalf("%d malformed drops", d)
	}
	// Nobody refreshes queue 0: the watchdog resumes it.
	_, wd := b.Period(0)
	h.Advance(wd/2, wd/20)
	expect("half the watchdog", 1<<0)
	h.Advance(wd, wd/20)
	expect("after the watchdog", 0)
	if st := b.Stats(0); st.WatchdogResumes != 1 {
		t.Fatalf("%d watchdog resumes", st.WatchdogResumes)
	}
	// The neighbour's numbering is forgotten: a restarted neighbour starting at 1 is heard.
	send(msg(wire.TypeBFCPause, 1, 2))
	expect("a restarted neighbour", 1<<2)
	h.CheckFrames(t)
}

// TestForgedPauses: a PAUSE from a host port is dropped as forged before
// BFC sees it and changes nothing; one from a fabric port whose peer is not
// BFC is refused and counted.
func TestForgedPauses(t *testing.T) {
	cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{
		{Name: "host", Scheduler: "drr", Queues: 8, Mechanisms: mechs(&bfc.Config{})},
		{Name: "plain", Role: mech.RoleFabric, Scheduler: "drr", Queues: 8, Mechanisms: mechs(&bfc.Config{Peer: bfc.PeerNone})},
		{Name: "bfc", Role: mech.RoleFabric, Scheduler: "drr", Queues: 8, Mechanisms: mechs(&bfc.Config{})},
	}}}
	h := dptest.New(t, cfg, 4096)
	b := inst(h)
	for port := 0; port < 2; port++ {
		h.Links[port].Inject(msg(wire.TypeBFCPause, 1, 0))
		h.Links[port].Inject(bitmap(2, 8, 0, 1, 2, 3, 4, 5, 6, 7))
	}
	h.Settle()
	for port := 0; port < 3; port++ {
		for q := 0; q < 8; q++ {
			if h.SW.Scheduler(port).Paused(q) {
				t.Fatalf("port %d queue %d paused", port, q)
			}
		}
	}
	if d := h.SW.Counters(0).Drops[pkt.ReasonForged]; d != 2 {
		t.Fatalf("%d forged drops on the host port, want 2", d)
	}
	if d := h.SW.Counters(1).Drops[pkt.ReasonUnclaimed]; d != 2 || b.Stats(1).NotPeerRx != 2 {
		t.Fatalf("%d unclaimed drops, %d counted by BFC on the port whose peer is not BFC", d, b.Stats(1).NotPeerRx)
	}
	if st := b.Stats(0); st.PausesRx+st.BitmapsRx != 0 {
		t.Fatalf("BFC saw the forged frames: %+v", st)
	}
	h.CheckFrames(t)
}

// gsperfFrame is a gsperf data segment from sport carrying mechanism field mf.
func gsperfFrame(sport uint16, mf uint64) []byte {
	payload := make([]byte, frameLen-42)
	hd := proto.Header{Type: proto.TypeData, Flow: uint64(sport), Size: 1 << 20, Mech: mf}
	hd.Encode(payload)
	return pkttest.UDP4(pkttest.MAC(3), pkttest.MAC(1), ip1, ip3, sport, 5500, payload)
}

// TestHostQueueFromGsperfHeader: on a host port with peer host, the
// upstream queue comes from the gsperf header; the pause goes back to the
// host naming it. A host that names no queue is never paused.
func TestHostQueueFromGsperfHeader(t *testing.T) {
	cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{
		{Name: "h", Scheduler: "drr", Queues: 8, Mechanisms: mechs(&bfc.Config{})},
		{Name: "out", Scheduler: "drr", Queues: 8, Rate: 100e6, Burst: 1538, Mechanisms: mechs(&bfc.Config{Th: 2 * wireLen})},
	}}}
	h := dptest.New(t, cfg, 4096)
	h.Record()
	h.Links[1].Inject(pkttest.ARP(pkttest.MAC(3), ip3, ip1))
	h.Settle()
	h.Links[0].Sent = nil
	b := inst(h)
	plain := uint16(1)
	for i := 0; i < 10; i++ {
		h.Links[0].Inject(gsperfFrame(plain, 0)) // no queue id: a host that ignores pauses
	}
	h.Settle()
	if n := len(bfcFrames(t, h.Links[0].Sent)); n != 0 || b.Stats(1).OverThreshold != 0 {
		t.Fatalf("a host with no queue id got %d BFC frames; %d packets counted", n, b.Stats(1).OverThreshold)
	}
	h.Advance(10e6, 100e3)
	mf, _ := wire.MechBFC(77)
	for i := 0; i < 10; i++ {
		h.Links[0].Inject(gsperfFrame(2, mf))
	}
	h.Settle()
	ms := bfcFrames(t, h.Links[0].Sent)
	if len(ms) != 1 || ms[0].Type != wire.TypeBFCPause || ms[0].Queue != 77 || b.Counter(0, 77) == 0 {
		t.Fatalf("frames to the host %+v, counter %d: want one PAUSE of queue 77", ms, b.Counter(0, 77))
	}
	h.Advance(10e6, 100e3)
	ms = bfcFrames(t, h.Links[0].Sent)
	if r := ofType(ms, wire.TypeBFCResume); len(r) != 1 || r[0].Queue != 77 {
		t.Fatalf("frames to the host %+v: want a RESUME of 77", ms)
	}
	if st := b.Stats(0); st.HostQueued != 10 {
		t.Fatalf("%d packets read their queue from the gsperf header, want 10", st.HostQueued)
	}
	for _, f := range h.Links[1].Sent {
		if _, tagged := wire.ReadTag(f); tagged {
			t.Fatal("a frame left toward a host tagged")
		}
	}
	h.CheckFrames(t)
}

// TestSingleAndStochastic: single puts every flow in queue 0 and counts all
// upstream queues of a single-mode port as one (a per-port pause, as PFC);
// stochastic hashes flows onto the queues, each flow always on the same,
// the one the port's keyed hash gives it.
func TestSingleAndStochastic(t *testing.T) {
	for _, mode := range []string{bfc.AssignSingle, bfc.AssignStochastic} {
		t.Run(mode, func(t *testing.T) {
			cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{
				{Name: "up", Role: mech.RoleFabric, Scheduler: "drr", Queues: 8, Mechanisms: mechs(&bfc.Config{Assign: mode})},
				{Name: "out", Role: mech.RoleFabric, Scheduler: "drr", Queues: 8, Rate: 100e6, Burst: 1538, Mechanisms: mechs(&bfc.Config{Assign: mode, Th: 2 * wireLen})},
			}}}
			h := dptest.New(t, cfg, 4096)
			b := inst(h)
			if mode == bfc.AssignStochastic {
				// Under a random key the 32 flows land on five queues or
				// fewer once in about 60,000 draws: fix the key, and check
				// that it spreads them as the test needs.
				b.SetKey(1, testKey)
				spread := map[int]bool{}
				for sp := uint16(100); sp < 132; sp++ {
					spread[b.StochasticQueue(1, hashOf(t, udp(sp)))] = true
				}
				if len(spread) < 6 {
					t.Fatalf("the test's key puts its 32 flows on %d queues: pick another key", len(spread))
				}
			}
			h.Record()
			h.Links[1].Inject(pkttest.ARP(pkttest.MAC(3), ip3, ip1))
			h.Settle()
			h.Links[0].Sent, h.Links[1].Sent = nil, nil
			for i := 0; i < 64; i++ {
				h.Links[0].Inject(tagged(uint16(3+i%2), uint16(100+i%32)))
			}
			h.Settle()
			pauses := ofType(bfcFrames(t, h.Links[0].Sent), wire.TypeBFCPause)
			h.Advance(50e6, 100e3)
			queues := map[uint16]map[uint16]bool{}
			for _, f := range h.Links[1].Sent {
				q, _ := wire.ReadTag(f)
				sp := binary.BigEndian.Uint16(f[wire.TagLen+34:])
				if queues[sp] == nil {
					queues[sp] = map[uint16]bool{}
				}
				queues[sp][q] = true
			}
			used := map[uint16]bool{}
			for sp, qs := range queues {
				if len(qs) != 1 {
					t.Fatalf("flow %d on queues %v", sp, qs)
				}
				for q := range qs {
					used[q] = true
					if mode == bfc.AssignStochastic {
						if want := b.StochasticQueue(1, hashOf(t, udp(sp))); int(q) != want {
							t.Fatalf("stochastic: flow %d on queue %d, its keyed hash gives %d", sp, q, want)
						}
					}
				}
			}
			switch mode {
			case bfc.AssignSingle:
				if len(used) != 1 || !used[0] {
					t.Fatalf("single: queues %v", used)
				}
				if len(pauses) != 1 || pauses[0].Queue != 0 || b.Counter(0, 3)+b.Counter(0, 4) != 0 {
					t.Fatalf("single: pauses %+v: want one, of queue 0", pauses)
				}
			case bfc.AssignStochastic:
				if len(used) < 6 {
					t.Fatalf("stochastic: 32 flows on %d of 8 queues", len(used))
				}
				if len(pauses) == 0 {
					t.Fatal("stochastic: no pause")
				}
				for _, p := range pauses {
					if p.Queue != 3 && p.Queue != 4 {
						t.Fatalf("pause of queue %d, the upstream queues were 3 and 4", p.Queue)
					}
				}
			}
			h.CheckFrames(t)
		})
	}
}

// TestElisionUpDown: packets that come in on an uplink and leave through
// an uplink never pause their upstream (no cyclic buffer dependency in a
// leaf-spine); from a downlink they do. pause_from replaces the rule.
func TestElisionUpDown(t *testing.T) {
	uplink := true
	cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{
		{Name: "spine1", Role: mech.RoleFabric, Scheduler: "drr", Queues: 8, Mechanisms: mechs(&bfc.Config{Uplink: &uplink})},
		{Name: "down", Role: mech.RoleFabric, Scheduler: "drr", Queues: 8, Mechanisms: mechs(&bfc.Config{})},
		{Name: "spine2", Role: mech.RoleFabric, Scheduler: "drr", Queues: 8, Rate: 100e6, Burst: 1538,
			Mechanisms: mechs(&bfc.Config{Uplink: &uplink, Th: 2 * wireLen})},
		{Name: "host", Scheduler: "drr", Queues: 8, Rate: 100e6, Burst: 1538,
			Mechanisms: mechs(&bfc.Config{Th: 2 * wireLen, PauseFrom: []string{"down"}})},
	}}}
	h := dptest.New(t, cfg, 4096)
	h.Record()
	ip4 := [4]byte{10, 0, 0, 4}
	h.Links[2].Inject(pkttest.ARP(pkttest.MAC(3), ip3, ip1)) // MAC 3 behind spine2
	h.Links[3].Inject(pkttest.ARP(pkttest.MAC(4), ip4, ip1)) // MAC 4 on the host port
	h.Settle()
	b := inst(h)
	burst := func(in int, dst [6]byte) int {
		for i := range h.Links {
			h.Links[i].Sent = nil
		}
		for i := 0; i < 20; i++ {
			f := pkttest.UDP4(dst, pkttest.MAC(1), ip1, ip3, 7, 9, make([]byte, frameLen-42))
			g := make([]byte, len(f)+4)
			copy(g[4:], f)
			wire.InsertTag(g, 2)
			h.Links[in].Inject(g)
		}
		h.Settle()
		n := len(ofType(bfcFrames(t, h.Links[in].Sent), wire.TypeBFCPause))
		h.Advance(50e6, 100e3)
		return n
	}
	if n := burst(0, pkttest.MAC(3)); n != 0 {
		t.Fatalf("spine1 -> spine2 (up to up) paused its upstream %d times", n)
	}
	if n := burst(1, pkttest.MAC(3)); n != 1 {
		t.Fatalf("down -> spine2 paused its upstream %d times, want 1", n)
	}
	if n := burst(0, pkttest.MAC(4)); n != 0 {
		t.Fatalf("spine1 -> host (not in the host port's pause_from) paused %d times", n)
	}
	if n := burst(1, pkttest.MAC(4)); n != 1 {
		t.Fatalf("down -> host (in pause_from) paused %d times, want 1", n)
	}
	if st := b.Stats(2); st.OverThreshold == 0 {
		t.Fatal("nothing counted at spine2")
	}
	h.CheckFrames(t)
}

// TestConfigErrors: what the config refuses, naming the key.
func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  bfc.Config
		role mech.Role
		want string
	}{
		{bfc.Config{Assign: "random"}, mech.RoleHost, "assign"},
		{bfc.Config{Peer: bfc.PeerBFC}, mech.RoleHost, "peer: bfc needs role: fabric"},
		{bfc.Config{Peer: bfc.PeerHost}, mech.RoleFabric, "peer: host on a fabric port"},
		{bfc.Config{Peer: "switch"}, mech.RoleFabric, "peer"},
		{bfc.Config{BitmapPeriod: 5000}, mech.RoleFabric, "bitmap_period"},
		{bfc.Config{BitmapPeriod: 200e3, Watchdog: 100e3}, mech.RoleFabric, "watchdog"},
		{bfc.Config{FlowTable: -1}, mech.RoleFabric, "flow_table"},
	} {
		err := c.cfg.Validate(mech.PortInfo{Name: "p", Role: c.role, RateBits: 1e9, Queues: 8})
		if err == nil || !contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error about %q", c.cfg, err, c.want)
		}
	}
	cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{
		{Name: "a", Scheduler: "drr", Mechanisms: mechs(&bfc.Config{PauseFrom: []string{"nope"}})},
	}}}
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	if _, err := dataplane.New(cfg, make([]byte, 4096*2048), 2048, [][]dataplane.Link{{dataplane.NewMemLink(make([]byte, 1), 2048, 64)}}); err == nil || !contains(err.Error(), "pause_from") {
		t.Errorf("pause_from naming no port: %v", err)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
