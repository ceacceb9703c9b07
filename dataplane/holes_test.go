package dataplane

import (
	"encoding/binary"
	"testing"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/wire"
)

// TestCongestedPortsCannotTakeEveryFrame: two ports whose queues are paused
// and whose buffers are large take 64-byte frames until the traffic manager
// refuses them by frame count (frame_limit), not by bytes: the fill rings
// keep frames, and two other hosts keep talking. Before admission counted
// frames, 64-byte frames filled every UMEM frame and every port stopped
// receiving.
func TestCongestedPortsCannotTakeEveryFrame(t *testing.T) {
	for _, workers := range []int{1, 2} {
		s, l, clk := testSwitch(t, 4, workers, 4096, func(c *Config) {
			c.Buffer = 64 << 20
			for i := 2; i < 4; i++ {
				c.Ports[i].Buffer = 64 << 20
				c.Ports[i].BufferPackets = 1 << 20
			}
		})
		for i := range l { // every host announces itself
			l[i].Inject(udp(0xff, byte(i+1), 10))
			settle(s)
		}
		s.Ports()[2].PauseQueue(0)
		s.Ports()[3].PauseQueue(0)
		small := [2][]byte{udp(3, 1, 18), udp(4, 1, 18)} // 60-byte frames
		for i := 0; i < 20000; i++ {
			l[0].Inject(small[i%2])
			if i%64 == 63 {
				settle(s)
			}
		}
		settle(s)
		c2, c3 := s.Counters(2), s.Counters(3)
		if c2.Drops[pkt.ReasonFrameLimit]+c3.Drops[pkt.ReasonFrameLimit] == 0 {
			t.Fatalf("workers %d: no frame_limit drops; frames %+v", workers, s.Frames())
		}
		f := s.Frames()
		if f.Queued > uint64(s.QueueFrameLimit(0))*uint64(workers)+1 {
			t.Fatalf("workers %d: %d frames queued, limit %d per worker", workers, f.Queued, s.QueueFrameLimit(0))
		}
		// Hosts 2 and 1 still reach each other, for more frames than host 2's fill ring held.
		before := l[0].SentCount
		for i := 0; i < 2000; i++ {
			l[1].Inject(udp(1, 2, 100))
			settle(s)
		}
		if got := l[0].SentCount - before; got != 2000 {
			t.Fatalf("workers %d: %d of 2000 frames between uncongested hosts arrived (frames %+v)", workers, got, s.Frames())
		}
		s.Ports()[2].ResumeQueue(0)
		s.Ports()[3].ResumeQueue(0)
		for i := 0; i < 50; i++ {
			clk.t += 1e7
			settle(s)
		}
		checkFrames(t, s)
	}
}

// TestFloodReachesEveryPort: a broadcast on a switch of 100 ports reaches
// the 99 others (flooding stopped at 64 ports).
func TestFloodReachesEveryPort(t *testing.T) {
	s, l, _ := testSwitch(t, 100, 1, 16384, nil)
	l[0].Inject(pkttest.ARP(pkttest.MAC(1), ip1, ip2))
	settle(s)
	for i := 1; i < 100; i++ {
		if l[i].SentCount != 1 {
			t.Fatalf("port %d got %d copies", i, l[i].SentCount)
		}
	}
	checkFrames(t, s)
}

// TestLinkLocalAndControlFrames: bridge-protocol frames are never
// forwarded; control messages of ours are forged on host ports and
// unclaimed on fabric ports when no mechanism takes them; a UDP message of a
// type only switches send (a BTS) is forged from a host but forwarded on a
// fabric port when the switch runs no SFC.
func TestLinkLocalAndControlFrames(t *testing.T) {
	s, l, _ := testSwitch(t, 3, 1, 4096, func(c *Config) { c.Ports[1].Role = mech.RoleFabric })
	l[2].Inject(udp(1, 3, 10)) // host 3 is learnt on port 2 (the frame floods)
	settle(s)
	l[0].SentCount, l[2].SentCount = 0, 0
	stp := pkttest.Eth([6]byte{0x01, 0x80, 0xc2, 0, 0, 0}, pkttest.MAC(1), 0x0027, 0, 0)
	stp = append(stp, make([]byte, 46)...)
	gc := pkttest.Eth([6]byte{0x01, 0x80, 0xc2, 0, 0, 0x0e}, pkttest.MAC(1), pkt.EtherTypeGC, 0, 0)
	gc = append(gc, 'G', 'C', 1, 1, 0, 12, 0, 0)
	gc = append(gc, make([]byte, 38)...)
	bts := btsFrame(3, 1, wire.BTSPort)
	for _, in := range []int{0, 1} {
		l[in].Inject(stp)
		l[in].Inject(gc)
		l[in].Inject(bts)
	}
	settle(s)
	host, fabric := s.Counters(0), s.Counters(1)
	if host.Drops[pkt.ReasonLinkLocal] != 1 || fabric.Drops[pkt.ReasonLinkLocal] != 1 {
		t.Errorf("link-local drops: host port %d, fabric port %d", host.Drops[pkt.ReasonLinkLocal], fabric.Drops[pkt.ReasonLinkLocal])
	}
	if host.Drops[pkt.ReasonForged] != 2 || fabric.Drops[pkt.ReasonForged] != 0 || fabric.Drops[pkt.ReasonUnclaimed] != 1 {
		t.Errorf("host forged %d, fabric forged %d, fabric unclaimed %d", host.Drops[pkt.ReasonForged], fabric.Drops[pkt.ReasonForged], fabric.Drops[pkt.ReasonUnclaimed])
	}
	if host.ControlRx[1] != 1 || host.ControlRx[16] != 1 || fabric.ControlRx[16] != 1 {
		t.Errorf("control messages counted: host %d %d, fabric %d", host.ControlRx[1], host.ControlRx[16], fabric.ControlRx[16])
	}
	if host.Forged[1] != 1 || host.Forged[16] != 1 || fabric.Forged[1] != 0 || fabric.Forged[16] != 0 {
		t.Errorf("forged by type: host %d %d, fabric %d %d", host.Forged[1], host.Forged[16], fabric.Forged[1], fabric.Forged[16])
	}
	// Only the BTS from the fabric port reached host 3; nothing was flooded.
	if l[2].SentCount != 1 || l[0].SentCount != 0 {
		t.Errorf("host 3 got %d frames, host 1 got %d", l[2].SentCount, l[0].SentCount)
	}
	checkFrames(t, s)
}

// TestMACControlNeverForwarded: on a switch without PFC, MAC control
// frames (EtherType 0x8808: 802.3x PAUSE, PFC) are never relayed, whatever
// their destination: the PFC group, another bridge group, a learnt host's
// unicast MAC, an unknown one, broadcast, tagged or not, from a host port
// or a fabric port. Each is dropped as link_local and counted; the data
// around them goes through.
func TestMACControlNeverForwarded(t *testing.T) {
	s, l, _ := testSwitch(t, 3, 1, 4096, func(c *Config) { c.Ports[1].Role = mech.RoleFabric })
	l[2].Inject(udp(1, 3, 10)) // host 3 is learnt on port 2
	settle(s)
	for _, ml := range l {
		ml.Record, ml.Sent, ml.SentCount = true, nil, 0
	}
	mac3 := pkttest.MAC(3)
	control := func(dst [6]byte, vlan uint16, opcode uint16) []byte {
		f := pkttest.Eth(dst, pkttest.MAC(1), wire.EtherTypeMACControl, vlan, 0)
		f = binary.BigEndian.AppendUint16(f, opcode)
		f = append(f, 0, 0x08, 0, 0, 0, 0, 0, 0, 0xff, 0xff) // priority 3 (PFC) or the whole link (PAUSE)
		return append(f, make([]byte, 60-len(f))...)
	}
	dsts := [][6]byte{wire.PFCDst, {0x01, 0x80, 0xc2, 0, 0, 0x02}, mac3, pkttest.MAC(9),
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, {0x01, 0x00, 0x5e, 0, 0, 1}}
	n := 0
	for _, in := range []int{0, 1} {
		for _, dst := range dsts {
			for _, vlan := range []uint16{0, 10} {
				for _, op := range []uint16{wire.OpcodePause, wire.OpcodePFC} {
					l[in].Inject(control(dst, vlan, op))
					n++
				}
			}
		}
		l[in].Inject(udp(3, 1, 10)) // data to host 3 still goes
	}
	settle(s)
	for i, ml := range l {
		for _, f := range ml.Sent {
			if binary.BigEndian.Uint16(f[12:]) == wire.EtherTypeMACControl || binary.BigEndian.Uint16(f[16:]) == wire.EtherTypeMACControl {
				t.Fatalf("port %d was sent a MAC control frame: % x", i, f)
			}
		}
	}
	if l[2].SentCount != 2 || l[0].SentCount+l[1].SentCount != 0 {
		t.Fatalf("host 3 got %d frames (want the 2 data frames), ports 0 and 1 %d", l[2].SentCount, l[0].SentCount+l[1].SentCount)
	}
	host, fabric := s.Counters(0), s.Counters(1)
	if got := host.Drops[pkt.ReasonLinkLocal] + fabric.Drops[pkt.ReasonLinkLocal]; got != uint64(n) || host.Drops[pkt.ReasonLinkLocal] != uint64(n/2) {
		t.Fatalf("link_local drops: host port %d, fabric port %d, want %d each", host.Drops[pkt.ReasonLinkLocal], fabric.Drops[pkt.ReasonLinkLocal], n/2)
	}
	if host.ControlRx[wire.TypeMACControl]+fabric.ControlRx[wire.TypeMACControl] != 0 {
		t.Fatal("PFC frames counted as received on a switch without PFC")
	}
	checkFrames(t, s)
}

// btsFrame is a UDP datagram from host src to host dst, to UDP port dport,
// whose payload starts with the GC header of a BTS (type 16).
func btsFrame(dst, src byte, dport uint16) []byte {
	payload := make([]byte, 56)
	copy(payload, []byte{'G', 'C', 1, 16, 0, 36, 0, 0})
	return pkttest.UDP4(pkttest.MAC(dst), pkttest.MAC(src), ip1, ip2, wire.BTSPort, dport, payload)
}

// TestEmitGetsOutWhenDataFillsEverything: with the data handoff ring full
// and the data queues holding all they may, a frame the switch emits on the
// congested port from another worker still leaves, first.
func TestEmitGetsOutWhenDataFillsEverything(t *testing.T) {
	s, l, clk := testSwitch(t, 2, 2, 4096, func(c *Config) {
		c.HandoffSize = 64
		c.Ports[1].Rate = 8e6
		c.Ports[1].Buffer = 64 << 20
		c.Ports[1].BufferPackets = 1 << 20
		c.Buffer = 64 << 20
	})
	l[1].Inject(udp(1, 2, 10))
	settle(s)
	p1 := s.Ports()[1]
	p1.PauseQueue(0)
	in := s.Ports()[0].link.workers[0]
	if p1.eg.owner == in {
		t.Skip("both ports on one worker")
	}
	// Worker `in` receives data for port 1 while port 1's worker does not run: the handoff ring fills.
	for i := 0; i < 200; i++ {
		l[0].Inject(udp(2, 1, 1000))
		s.Step(in)
	}
	if s.Counters(1).Drops[pkt.ReasonHandoffFull] == 0 {
		t.Fatal("the handoff ring never filled")
	}
	em := s.Emitter(in)
	buf := em.Frame(1, 2)
	if buf == nil {
		t.Fatal("no frame to emit")
	}
	n := copy(buf, pkttest.Eth([6]byte{0x01, 0x80, 0xc2, 0, 0, 0x0e}, pkttest.MAC(0xfe), pkt.EtherTypeGC, 0, 0))
	n += copy(buf[n:], []byte{'G', 'C', 1, 2, 0, 12, 0, 0})
	n = max(n, 60)
	if !em.Send(n, pkt.LaneControl) {
		t.Fatal("emission refused")
	}
	l[1].Record = true
	s.Step(p1.eg.owner)
	if len(l[1].Sent) == 0 || pkt.DstMAC(l[1].Sent[0]) != 0x0180c200000e {
		t.Fatalf("the emitted frame did not leave first: %d frames sent", len(l[1].Sent))
	}
	if c := s.Counters(1); c.Emitted[2] != 1 || c.EmitFailed[2] != 0 {
		t.Fatalf("emitted %d, failed %d", c.Emitted[2], c.EmitFailed[2])
	}
	p1.ResumeQueue(0)
	for i := 0; i < 300; i++ {
		clk.t += 1e7
		settle(s)
	}
	checkFrames(t, s)
}

// TestPortDownFlushesAndRecovers: a port that goes down drops what it holds
// (port_down), refuses new frames and emissions, gives every frame back,
// and forwards again when it comes back.
func TestPortDownFlushesAndRecovers(t *testing.T) {
	s, l, clk := testSwitch(t, 2, 2, 4096, func(c *Config) { c.Ports[1].Rate = 8e6 })
	l[1].Inject(udp(1, 2, 10))
	settle(s)
	for i := 0; i < 50; i++ {
		l[0].Inject(udp(2, 1, 1000))
	}
	settle(s)
	if s.Frames().Queued == 0 {
		t.Fatal("nothing queued")
	}
	s.SetPortDown(1, true)
	settle(s)
	for i := 0; i < 10; i++ {
		l[0].Inject(udp(2, 1, 1000))
	}
	settle(s)
	c := s.Counters(1)
	if c.Drops[pkt.ReasonPortDown] < 40 || s.Frames().Queued != 0 {
		t.Fatalf("port_down drops %d, queued %d", c.Drops[pkt.ReasonPortDown], s.Frames().Queued)
	}
	if s.Emitter(0).Frame(1, 3) != nil {
		t.Fatal("a frame to emit on a down port")
	}
	if s.Counters(1).EmitFailed[3] != 1 {
		t.Fatal("failed emission not counted")
	}
	checkFrames(t, s)
	s.SetPortDown(1, false)
	before := l[1].SentCount
	l[0].Inject(udp(2, 1, 100))
	clk.t += 1e9
	settle(s)
	if l[1].SentCount != before+1 {
		t.Fatalf("after up: %d frames sent, want %d", l[1].SentCount, before+1)
	}
	checkFrames(t, s)
}

// TestInterfaceGoneAndBack: the interface of a port is deleted (DetachPort):
// the frames on its rings and in its queues come back to the pool, the
// workers stop touching its link; a new link is attached when the
// interface is back, and the port forwards again.
func TestInterfaceGoneAndBack(t *testing.T) {
	for _, workers := range []int{1, 2} {
		s, l, clk := testSwitch(t, 2, workers, 4096, func(c *Config) { c.Ports[1].Rate = 8e6 })
		l[1].Inject(udp(1, 2, 10))
		settle(s)
		for i := 0; i < 50; i++ {
			l[0].Inject(udp(2, 1, 1000))
		}
		settle(s)
		l[1].Inject(udp(1, 2, 10)) // one frame waiting on the rx ring
		fillBefore := l[1].FillLen()
		if s.Frames().Queued == 0 || fillBefore == 0 {
			t.Fatal("nothing queued or nothing on the fill ring")
		}
		s.DetachPort(1)
		settle(s)
		if !s.Detached(1) {
			t.Fatalf("workers %d: port not detached", workers)
		}
		if l[1].FillLen() != 0 {
			t.Fatalf("workers %d: %d frames left on the gone link's fill ring", workers, l[1].FillLen())
		}
		checkFrames(t, s)
		if f := s.Frames(); f.Fill >= f.Total-uint64(fillBefore)+1 {
			t.Fatalf("workers %d: the gone link's frames still counted as fill: %+v", workers, f)
		}
		// Traffic for the gone port is dropped; the old link is never touched.
		sent := l[1].SentCount
		l[0].Inject(udp(2, 1, 100))
		settle(s)
		if l[1].SentCount != sent || l[1].FillLen() != 0 {
			t.Fatalf("workers %d: the detached link was used", workers)
		}
		nl := NewMemLink(s.mem, frameSize, 256)
		if err := s.AttachPort(1, []Link{nl}); err != nil {
			t.Fatal(err)
		}
		s.SetPortDown(1, false)
		settle(s)
		if s.Detached(1) || nl.FillLen() == 0 {
			t.Fatalf("workers %d: new link not taken up (fill %d)", workers, nl.FillLen())
		}
		nl.Inject(udp(1, 2, 10))
		l[0].Inject(udp(2, 1, 100))
		clk.t += 1e9
		settle(s)
		if nl.SentCount != 1 || l[0].SentCount == 0 {
			t.Fatalf("workers %d: after the interface came back: %d frames out of the new link, %d to host 1", workers, nl.SentCount, l[0].SentCount)
		}
		clk.t += 1e9
		settle(s)
		checkFrames(t, s)
	}
}

// TestMACFloodAndFlapping: a host port sending frames from 100,000 random
// source MACs fills only its own share of the table (port_limit); hosts on
// the other ports stay known and their traffic is not flooded. A MAC that
// flaps between two ports every frame moves once per move_hold; the rest of
// its moves are refused and counted. Frames to bridge-protocol groups are
// never flooded.
func TestMACFloodAndFlapping(t *testing.T) {
	s, l, clk := testSwitch(t, 4, 1, 8192, func(c *Config) {
		c.MACTable.Size = 1024
		c.MACTable.PortLimit = 64
		c.MACTable.MoveHold = 1e9
	})
	for i := 0; i < 3; i++ { // hosts 1..3 on ports 0..2
		l[i].Inject(udp(0xff, byte(i+1), 10))
		settle(s)
	}
	for i := range l {
		l[i].SentCount = 0
	}
	flooded := s.Counters(1).Flooded
	flood := udp(1, 0, 10)
	for i := 0; i < 100000; i++ {
		flood[6], flood[7], flood[8], flood[9], flood[10], flood[11] = 0x02, byte(i>>24), byte(i>>16), byte(i>>8), byte(i), 0x77
		l[3].Inject(flood)
		if i%128 == 127 {
			settle(s)
		}
		if i%10000 == 0 { // meanwhile host 2 talks to host 3
			l[1].Inject(udp(3, 2, 10))
		}
	}
	settle(s)
	st := s.MACTable().Stats(clk.t)
	if st.PerPort[3] > 64 || st.PortFull == 0 {
		t.Fatalf("port 3 holds %d MACs (limit 64), %d refused", st.PerPort[3], st.PortFull)
	}
	for i, want := range []uint16{0, 1, 2} {
		if p, ok := s.MACTable().Lookup(pkttest.MACInt(byte(i+1)), clk.t); !ok || p != want {
			t.Fatalf("host %d lost from the table: %v %v", i+1, p, ok)
		}
	}
	if l[2].SentCount != 10 || s.Counters(1).Flooded != flooded {
		t.Fatalf("host 3 got %d of 10 frames; %d flooded from host 2", l[2].SentCount, s.Counters(1).Flooded-flooded)
	}
	// Host 1's MAC flaps between ports 0 and 2 every frame for 3 seconds.
	for k := 0; k < 300; k++ {
		l[k%2*2].Inject(udp(2, 1, 10))
		clk.t += 1e7
		settle(s)
	}
	st = s.MACTable().Stats(clk.t)
	if st.Moves > 4 || st.MoveRefused < 140 { // half the frames come from the port the MAC is on
		t.Fatalf("flapping MAC: %d moves, %d refused", st.Moves, st.MoveRefused)
	}
	// A bridge protocol frame is not flooded.
	before := l[1].SentCount + l[2].SentCount + l[3].SentCount
	lldp := pkttest.Eth([6]byte{0x01, 0x80, 0xc2, 0, 0, 0x0e}, pkttest.MAC(1), 0x88cc, 0, 0)
	l[0].Inject(append(lldp, make([]byte, 46)...))
	settle(s)
	if l[1].SentCount+l[2].SentCount+l[3].SentCount != before || s.Counters(0).Drops[pkt.ReasonLinkLocal] != 1 {
		t.Fatal("an LLDP frame was flooded")
	}
	checkFrames(t, s)
}

// TestOtherPathsDoNotAllocate: the control stage (forged, unclaimed and
// routed control messages, bridge-protocol and MAC control frames),
// flooding, L3 routing with ARP, and emission allocate nothing per frame
// either.
func TestOtherPathsDoNotAllocate(t *testing.T) {
	s, l, _ := testSwitch(t, 3, 1, 8192, func(c *Config) { c.Ports[1].Role = mech.RoleFabric })
	l[2].Inject(udp(1, 3, 10))
	settle(s)
	gc := pkttest.Eth([6]byte{0x01, 0x80, 0xc2, 0, 0, 0x0e}, pkttest.MAC(1), pkt.EtherTypeGC, 0, 0)
	gc = append(append(gc, 'G', 'C', 1, 1, 0, 12, 0, 0), make([]byte, 38)...)
	bts := btsFrame(3, 1, wire.BTSPort)
	stp := append(pkttest.Eth([6]byte{0x01, 0x80, 0xc2, 0, 0, 0}, pkttest.MAC(1), 0x0027, 0, 0), make([]byte, 46)...)
	bcast := pkttest.ARP(pkttest.MAC(1), ip1, ip2)
	pause := append(pkttest.Eth(pkttest.MAC(3), pkttest.MAC(1), wire.EtherTypeMACControl, 0, 0), make([]byte, 46)...)
	em := s.Emitter(0)
	if a := testing.AllocsPerRun(200, func() {
		for _, in := range []int{0, 1} {
			l[in].Inject(gc)
			l[in].Inject(bts)
			l[in].Inject(stp)
			l[in].Inject(pause)
		}
		l[0].Inject(bcast)
		settle(s)
		if b := em.Frame(2, 2); b != nil {
			em.Send(copy(b, gc), pkt.LaneControl)
		}
		settle(s)
	}); a != 0 {
		t.Errorf("%v allocations per round of control frames, floods and emissions", a)
	}
	checkFrames(t, s)

	r, rl, _ := routerSwitch(t)
	data := pkttest.UDP4(mac6(macPort(0)), pkttest.MAC(1), hostA, hostB, 1000, 2000, make([]byte, 100))
	// B is bound by its reply to the request the first frame to it makes
	// the switch send (an unsolicited reply binds nothing), so what follows
	// is routed, not dropped for want of a neighbour.
	rl[0].Inject(data)
	settle(r)
	rl[1].Inject(pkttest.ARPReply(mac6(macPort(1)), pkttest.MAC(2), hostB, gwB))
	settle(r)
	if _, _, ok := r.router.nbrs.Lookup4(be32(hostB), r.Now()); !ok {
		t.Fatal("B's reply to the switch's request did not bind B")
	}
	ping := pkttest.Ping(mac6(macPort(0)), pkttest.MAC(1), hostA, gwA, 7, 1, 32)
	arp := pkttest.ARP(pkttest.MAC(1), hostA, gwA)
	for _, l := range rl {
		l.Record = false
	}
	if a := testing.AllocsPerRun(200, func() {
		for k := 0; k < 16; k++ {
			rl[0].Inject(data)
		}
		rl[0].Inject(ping)
		rl[0].Inject(arp)
		settle(r)
	}); a != 0 {
		t.Errorf("%v allocations per batch of routed frames, pings and ARP", a)
	}
	checkFrames(t, r)
}
