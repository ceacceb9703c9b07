package afq_test

import (
	"encoding/binary"
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/internal/fairness"
	"github.com/gswitch/gswitch/mech/afq"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/sched"
	"github.com/gswitch/gswitch/units"
)

var ip1, ip2, ip3 = [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, [4]byte{10, 0, 0, 3}

// harness: ports a and b send to c, which is shaped and runs rsp + afq.
func harness(t *testing.T, c *afq.Config, rate uint64) *dptest.Harness {
	cfg := dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{{Name: "a"}, {Name: "b"},
		{Name: "c", Scheduler: "rsp", Queues: 8, Rate: units.Rate(rate), Buffer: 4 << 20,
			Mechanisms: config.Mechanisms{{Name: "afq", Config: c}}}}}}
	h := dptest.New(t, cfg, 8192)
	// c's host announces itself so the switch learns it.
	h.Links[2].Inject(pkttest.ARP(pkttest.MAC(3), ip3, ip1))
	h.Settle()
	return h
}

func flowOf(frame []byte) uint16 { return binary.BigEndian.Uint16(frame[34:]) }

// TestAFQSharesFairly: flow A offers three times what flow B offers, both
// more than the port serves; AFQ serves them equal bytes and drops A's
// excess as round overflow.
func TestAFQSharesFairly(t *testing.T) {
	h := harness(t, &afq.Config{BytesPerRound: 1500, Sketch: afq.Sketch{Rows: 4, Cols: 1024}}, 8e6) // 1 B/us
	out := h.Links[2]
	out.Record = true
	a := pkttest.UDP4(pkttest.MAC(3), pkttest.MAC(1), ip1, ip3, 1, 9, make([]byte, 958)) // 1000-byte frames
	b := pkttest.UDP4(pkttest.MAC(3), pkttest.MAC(2), ip2, ip3, 2, 9, make([]byte, 958))
	for tick := 0; tick < 3000; tick++ {
		// Each 2 ms tick: A offers 3 frames, B 1; the port sends about 2 (2,048 B of wire time).
		for k := 0; k < 3; k++ {
			h.Links[0].Inject(a)
		}
		h.Links[1].Inject(b)
		h.Advance(2e6, 250e3)
	}
	served := map[uint16]float64{}
	for i, f := range out.Sent {
		if i > 1000 && len(f) > 34 {
			served[flowOf(f)] += float64(len(f))
		}
	}
	out.Sent = nil
	j := fairness.Jain([]float64{served[1], served[2]})
	ov := h.SW.Counters(2).Drops[pkt.ReasonRoundOverflow]
	t.Logf("served A %.0f B, B %.0f B, Jain %.4f, %d round overflows", served[1], served[2], j, ov)
	if j < 0.99 || ov == 0 || served[2] == 0 {
		t.Fatalf("AFQ not fair: %v, overflow %d", served, ov)
	}
}

// TestAFQRoundPastTwoToTheThirtyTwo runs a port whose calendar starts just
// below round 2^32 across it. The first AFQ kept rounds in 32 bits: after
// the wrap every flow's bid was ~2^32 rounds ahead and every packet was
// dropped as round overflow.
func TestAFQRoundPastTwoToTheThirtyTwo(t *testing.T) {
	h := harness(t, &afq.Config{BytesPerRound: 1514, Sketch: afq.Sketch{Rows: 4, Cols: 1024}}, 80e6) // 10 B/us
	rsp := h.SW.Scheduler(2).(*sched.RSP)
	start := uint64(1<<32 - 40)
	rsp.SetRound(start)
	frames := [][]byte{
		pkttest.UDP4(pkttest.MAC(3), pkttest.MAC(1), ip1, ip3, 1, 9, make([]byte, 1472)),
		pkttest.UDP4(pkttest.MAC(3), pkttest.MAC(2), ip2, ip3, 2, 9, make([]byte, 1472)),
	}
	sent0 := h.Links[2].SentCount
	for i := 0; i < 400; i++ {
		h.Links[i%2].Inject(frames[i%2])
		h.Advance(160e3, 40e3) // 1,600 B of wire time per frame: below the line rate
	}
	h.Advance(10e6, 100e3)
	c := h.SW.Counters(2)
	if r := rsp.Round(); r <= 1<<32 {
		t.Fatalf("round %d did not cross 2^32", r)
	}
	if c.Drops[pkt.ReasonRoundOverflow] != 0 || h.Links[2].SentCount-sent0 != 400 {
		t.Fatalf("round %d: %d of 400 sent, %d round-overflow drops", rsp.Round(), h.Links[2].SentCount-sent0, c.Drops[pkt.ReasonRoundOverflow])
	}
	h.CheckFrames(t)
}

func TestAFQMarksECN(t *testing.T) {
	h := harness(t, &afq.Config{BytesPerRound: 1000, Sketch: afq.Sketch{Rows: 4, Cols: 1024}, ECNRounds: 2}, 8e3)
	out := h.Links[2]
	out.Record = true
	frame := pkttest.UDP4(pkttest.MAC(3), pkttest.MAC(1), ip1, ip3, 1, 2, make([]byte, 958))
	frame[15] = 1 // ECT(1)
	frame[24], frame[25] = 0, 0
	sum := pkttest.Checksum(frame[14:34])
	frame[24], frame[25] = byte(sum>>8), byte(sum)
	for i := 0; i < 4; i++ {
		h.Links[0].Inject(frame)
	}
	h.Settle()
	h.Advance(5e9, 1e7)
	inst := h.SW.Mechanisms()["afq"].(*afq.AFQ)
	// Rounds 1, 2, 3, 4 (the first is admitted at round 0): the last three are >= 2 ahead... of the current round 0.
	if inst.Marked(2) != 3 || len(out.Sent) != 4 {
		t.Fatalf("marked %d, sent %d", inst.Marked(2), len(out.Sent))
	}
	for i, f := range out.Sent {
		ce := f[15]&3 == 3
		if ce != (i >= 1) {
			t.Errorf("frame %d: TOS %#x", i, f[15])
		}
		if pkttest.Checksum(f[14:34]) != 0 {
			t.Errorf("frame %d: bad IPv4 checksum after marking", i)
		}
	}
	h.CheckFrames(t)
}
