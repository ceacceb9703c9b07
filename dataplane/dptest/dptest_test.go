package dptest

import (
	"testing"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/pkt/pkttest"
)

// TestFabricCarriesFrames: two L2 switches in a line; a frame from the
// host on the first reaches the host on the second, and its answer comes
// back unicast; every frame is back in both pools.
func TestFabricCarriesFrames(t *testing.T) {
	f := NewFabric()
	cfg := func() dataplane.Config {
		return dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{{Name: "host"}, {Name: "up"}}}}
	}
	a, b := f.Add(t, cfg(), 2048), f.Add(t, cfg(), 2048)
	f.Connect(a, 1, b, 1)
	a.Links[0].Record, b.Links[0].Record = true, true
	a.Links[0].Inject(pkttest.UDP4(pkttest.MAC(2), pkttest.MAC(1), [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, []byte("hello")))
	f.Settle()
	if len(b.Links[0].Sent) != 1 {
		t.Fatalf("host B got %d frames", len(b.Links[0].Sent))
	}
	b.Links[0].Inject(pkttest.UDP4(pkttest.MAC(1), pkttest.MAC(2), [4]byte{10, 0, 0, 2}, [4]byte{10, 0, 0, 1}, 2, 1, []byte("hi")))
	f.Advance(1e6, 1e5)
	if len(a.Links[0].Sent) != 1 || b.SW.Counters(0).Flooded != 0 {
		t.Fatalf("host A got %d frames; switch B flooded the answer %d times", len(a.Links[0].Sent), b.SW.Counters(0).Flooded)
	}
	a.CheckFrames(t)
	b.CheckFrames(t)
}

// TestFabricLosesFrames: a frame Lose refuses does not cross the wire
// and is counted; the others do; the lost frame's UMEM frame comes back.
func TestFabricLosesFrames(t *testing.T) {
	f := NewFabric()
	cfg := func() dataplane.Config {
		return dataplane.Config{Config: config.Config{Workers: 1, Ports: []config.Port{{Name: "host"}, {Name: "up"}}}}
	}
	a, b := f.Add(t, cfg(), 2048), f.Add(t, cfg(), 2048)
	f.Connect(a, 1, b, 1)
	b.Links[0].Record = true
	f.Lose = func(h *Harness, port int, frame []byte) bool {
		return h == a && port == 1 && len(frame) > 42 && frame[42] == 'x'
	}
	for _, p := range []string{"x lost", "kept"} {
		a.Links[0].Inject(pkttest.UDP4(pkttest.MAC(2), pkttest.MAC(1), [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1, 2, []byte(p)))
	}
	f.Settle()
	if len(b.Links[0].Sent) != 1 || string(b.Links[0].Sent[0][42:46]) != "kept" || f.LostFrames != 1 {
		t.Fatalf("host B got %d frames, %d lost", len(b.Links[0].Sent), f.LostFrames)
	}
	a.CheckFrames(t)
	b.CheckFrames(t)
}
