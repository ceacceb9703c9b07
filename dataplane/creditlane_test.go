package dataplane

import (
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/tm/shaper"
)

// laneTester is a test mechanism: on the ports it is enabled on it gives
// itself a credit lane (rate, burst, queue and policy from its config) and
// sends every UDP frame of 60 bytes or less down it.
type laneTester struct{}

type laneTesterConfig struct {
	Rate         uint64
	Burst, Queue int
	Policy       mech.LanePolicy // nil: the lane drops what finds it full
}

func init() {
	mech.Register(mech.Spec{Name: "test-credit-lane", Config: func() any { return &laneTesterConfig{} },
		New: func(sw mech.Switch, ports []mech.Port) (mech.Instance, error) {
			for i, p := range ports {
				if c, ok := p.Config.(*laneTesterConfig); ok {
					if err := sw.SetCreditLane(i, c.Rate, c.Burst, c.Queue, c.Policy); err != nil {
						return nil, err
					}
				}
			}
			return laneTester{}, nil
		}})
}

func (laneTester) Admit(_ *mech.PortView, p *pkt.Packet, _ int64) {
	if p.Proto == 17 && p.Len <= 60 {
		p.Lane = pkt.LaneCredit
	}
}

// TestCreditLaneMetersDropsAndCounts: credits offered at twice the lane's
// rate for a second leave at exactly the lane's rate, never more than the
// bucket's depth back to back, the rest dropped as lane_full, and
// CreditLane counts both; data on the same port is not held back by the
// credits' meter.
func TestCreditLaneMetersDropsAndCounts(t *testing.T) {
	const rateBits = 8 * 84 * 10000 // 10,000 credits/s
	s, l, clk := testSwitch(t, 2, 1, 4096, func(c *Config) {
		c.Ports[1].Mechanisms = config.Mechanisms{{Name: "test-credit-lane", Config: &laneTesterConfig{Rate: rateBits, Burst: 168, Queue: 8}}}
	})
	l[1].Inject(udp(1, 2, 10)) // learn host 2 on port b
	settle(s)
	credit := udp(2, 1, 10) // 52 bytes: a credit to the lane
	if len(credit) > 60 {
		t.Fatalf("credit frame of %d bytes", len(credit))
	}
	st, ok := s.CreditLane(1)
	if !ok || st.DepthBytes != 168 || st.TokenBytes != 168 || st.RateBits != rateBits {
		t.Fatalf("lane %+v, %v", st, ok)
	}
	if _, ok := s.CreditLane(0); ok {
		t.Fatal("port a has no credit lane")
	}
	// Five credits at once into a full bucket: two leave now, three wait.
	before := l[1].SentCount
	for i := 0; i < 5; i++ {
		l[0].Inject(credit)
	}
	settle(s)
	if got := l[1].SentCount - before; got != 2 {
		t.Fatalf("%d credits left a full 2-credit bucket at once, want 2", got)
	}
	clk.t += 1e9 // two of the three go; the third 100 us later
	settle(s)
	clk.t += 100e3
	settle(s)
	clk.t += 1e9 // the bucket fills again
	settle(s)
	if st, _ := s.CreditLane(1); st.Sent != 5 || st.Queued != 0 || st.TokenBytes != 168 {
		t.Fatalf("after a second: %+v", st)
	}
	// Offer 20,000 credits/s: one every 50 us, for 1 s.
	start := clk.t
	perTick := map[int64]int{}
	for i := 0; i < 20000; i++ {
		clk.t = start + int64(i)*50e3
		before = l[1].SentCount
		l[0].Inject(credit)
		settle(s)
		perTick[clk.t] += l[1].SentCount - before
		if tk := s.ports[1].tm.Credit().Tokens(clk.t); tk > 168 {
			t.Fatalf("bucket holds %d B, more than its 2 credits", tk)
		}
	}
	clk.t = start + 1e9
	settle(s)
	st, _ = s.CreditLane(1)
	st.Sent -= 5
	// The bucket starts full (2 credits), then 10,000 per second.
	if st.Sent < 10000 || st.Sent > 10002 {
		t.Fatalf("%d credits left in 1 s, want 10,000 (+2 for the full bucket)", st.Sent)
	}
	drops := s.Counters(1).Drops[pkt.ReasonLaneFull]
	if st.Dropped == 0 || st.Dropped != drops || st.Sent+st.Dropped+uint64(st.Queued) != 20000 {
		t.Fatalf("lane %+v, lane_full drops %d: credits offered 20,000", st, drops)
	}
	for at, n := range perTick {
		if n > 2 {
			t.Fatalf("%d credits left at once at %d ns", n, at)
		}
	}
	// Data is not metered by the lane: 1000-byte frames leave at once.
	before = l[1].SentCount
	for i := 0; i < 10; i++ {
		l[0].Inject(udp(2, 1, 1000))
	}
	settle(s)
	if got := l[1].SentCount - before; got != 10 {
		t.Fatalf("%d of 10 data frames sent on an unshaped port", got)
	}
	if shaper.WireBytes(uint32(len(credit))) != 84 {
		t.Fatal("a credit must cost 84 bytes on the wire")
	}
}
