package pfabric_test

import (
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/mech/pfabric"
	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
)

var ip1, ip2 = [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}

func harness(t *testing.T, rank string) *dptest.Harness {
	cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{{Name: "a"},
		{Name: "b", Scheduler: "pfabric", Rate: 8e6, Buffer: 64 << 10,
			Mechanisms: config.Mechanisms{{Name: "pfabric", Config: &pfabric.Config{Rank: rank}}}}}}}
	h := dptest.New(t, cfg, 4096)
	h.Links[1].Inject(pkttest.ARP(pkttest.MAC(2), ip2, ip1))
	h.Settle()
	return h
}

// gsperfUDP is a gsperf data segment of flow with priority prio.
func gsperfUDP(flow uint16, prio uint32, payload int) []byte {
	b := make([]byte, proto.HeaderLen+payload)
	h := proto.Header{Type: proto.TypeData, Flow: uint64(flow), Priority: prio}
	h.Encode(b)
	return pkttest.UDP4(pkttest.MAC(2), pkttest.MAC(1), ip1, ip2, flow, 5500, b)
}

// TestGsperfRanksOrderTheQueue: with the port paused, segments of three
// flows arrive worst first; released, they leave best rank first, and a
// non-gsperf packet (rank 0) leads.
func TestGsperfRanksOrderTheQueue(t *testing.T) {
	h := harness(t, pfabric.RankGsperf)
	out := h.Links[1]
	out.Record = true
	h.SW.Ports()[1].PauseQueue(0)
	for _, f := range [][]byte{gsperfUDP(3, 3000, 100), gsperfUDP(2, 2000, 100), gsperfUDP(1, 1000, 100),
		pkttest.UDP4(pkttest.MAC(2), pkttest.MAC(1), ip1, ip2, 9, 53, make([]byte, 100))} {
		h.Links[0].Inject(f)
	}
	h.Settle()
	h.SW.Ports()[1].ResumeQueue(0)
	h.Advance(1e9, 1e6)
	var got []uint16
	for _, f := range out.Sent {
		if len(f) > 36 {
			got = append(got, uint16(f[34])<<8|uint16(f[35]))
		}
	}
	if len(got) != 4 || got[0] != 9 || got[1] != 1 || got[2] != 2 || got[3] != 3 {
		t.Fatalf("order of flows %v, want [9 1 2 3]", got)
	}
	h.CheckFrames(t)
}

// TestLASRanks: the las source ranks a flow by the bytes it sent before.
func TestLASRanks(t *testing.T) {
	h := harness(t, pfabric.RankLAS)
	inst := h.SW.Mechanisms()["pfabric"].(*pfabric.PFabric)
	v := mech.NewPortView(1, h.SW.Scheduler(1), 0, 0)
	var ranks []uint32
	for i := 0; i < 4; i++ {
		p := pkt.Packet{Len: 1000, Hash: 12345}
		inst.Admit(&v, &p, 0)
		ranks = append(ranks, p.Rank)
	}
	n := pkt.Packet{Len: 1000, Hash: 999}
	inst.Admit(&v, &n, 0)
	if ranks[0] != 0 || ranks[3] != 3000 || n.Rank != 0 {
		t.Fatalf("las ranks %v, new flow %d", ranks, n.Rank)
	}
}

// TestGsperfRankReadsOnlyWithinTheFrame: a UDP payload too short to hold
// the priority field ranks 0 and is never read beyond the frame (the
// memory after the frame holds a valid-looking priority).
func TestGsperfRankReadsOnlyWithinTheFrame(t *testing.T) {
	hdr := make([]byte, proto.HeaderLen)
	(&proto.Header{Type: proto.TypeData, Flow: 1, Priority: 777}).Encode(hdr)
	for k := 0; k <= len(hdr); k++ {
		f := pkttest.UDP4(pkttest.MAC(2), pkttest.MAC(1), ip1, ip2, 1, 5500, hdr[:k])
		mem := make([]byte, len(f)+len(hdr))
		copy(mem, f)
		copy(mem[len(f):], hdr[k:]) // the rest of the header right after the frame
		var p pkt.Packet
		if e := pkt.Parse(mem[:len(f)], &p); e != pkt.OK {
			t.Fatalf("payload %d: %v", k, e)
		}
		p.Len = uint32(len(f))
		r := pfabric.GsperfRank(mem, &p)
		if want := map[bool]uint32{true: 777, false: 0}[k >= 44]; r != want {
			t.Fatalf("payload of %d bytes: rank %d, want %d", k, r, want)
		}
	}
}

// TestRankedBytes: the port counts the bytes it ranked by the rank's
// source: what a host wrote in a gsperf header, and what carried none
// (rank 0, the best: traffic that is not gsperf's takes it by default).
func TestRankedBytes(t *testing.T) {
	h := harness(t, pfabric.RankGsperf)
	g := gsperfUDP(1, 1000, 100)
	u := pkttest.UDP4(pkttest.MAC(2), pkttest.MAC(1), ip1, ip2, 9, 53, make([]byte, 300))
	h.Links[0].Inject(g)
	h.Links[0].Inject(u)
	h.Links[0].Inject(u)
	h.Settle()
	inst := h.SW.Mechanisms()["pfabric"].(*pfabric.PFabric)
	if gs, un, las := inst.Ranked(1); gs != uint64(len(g)) || un != 2*uint64(len(u)) || las != 0 {
		t.Fatalf("ranked bytes: gsperf %d, unmarked %d, las %d; want %d, %d, 0", gs, un, las, len(g), 2*len(u))
	}
	l := harness(t, pfabric.RankLAS)
	l.Links[0].Inject(u)
	l.Settle()
	if gs, un, las := l.SW.Mechanisms()["pfabric"].(*pfabric.PFabric).Ranked(1); gs != 0 || un != 0 || las != uint64(len(u)) {
		t.Fatalf("las ranked bytes: %d %d %d", gs, un, las)
	}
}
