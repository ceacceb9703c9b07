package xpass

import (
	"testing"

	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/wire"
)

// kind tells what a sender's datagram is: "request", "stop" or "data".
func kind(t *testing.T, b []byte) (string, proto.Header) {
	t.Helper()
	if IsCredit(b) {
		h, err := wire.ParseHeader(b)
		if err != nil {
			t.Fatalf("bad GC message: %v", err)
		}
		switch h.Type {
		case wire.TypeXPRequest:
			if _, err := wire.ParseXPRequest(b); err != nil {
				t.Fatal(err)
			}
			return "request", proto.Header{}
		case wire.TypeXPStop:
			if len(b) != 18 {
				t.Fatalf("XP_STOP datagram of %d bytes: want 18 (a 60-byte frame)", len(b))
			}
			return "stop", proto.Header{}
		}
		t.Fatalf("sender sent GC type %v", h.Type)
	}
	h, _, err := proto.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return "data", h
}

// TestSenderOneSegmentPerCredit: the request is repeated after 100 µs,
// then 200, 400, ... until a credit comes; each credit releases exactly one segment echoing
// it; after the last segment the sender stops the credits, waits 2 RTT and
// 1 RTT, and closes; credits that find nothing to send are wasted.
func TestSenderOneSegmentPerCredit(t *testing.T) {
	const mss = 1000
	s := NewSender(SenderConfig{MSS: mss}, 5, 3500, 0) // 4 segments
	var got []string
	var data []proto.Header
	out := func(b []byte) {
		k, h := kind(t, b)
		got = append(got, k)
		if k == "data" {
			data = append(data, h)
		}
	}
	now := int64(0)
	for ; now < 350e3; now += 10e3 {
		s.Poll(now, out)
	}
	if len(got) != 3 || got[0] != "request" || got[2] != "request" { // at 0, 100, 300 µs: the gap doubles
		t.Fatalf("requests: %v", got)
	}
	got = nil
	r := transport.NewReceiver(5)
	for i := 0; i < 4; i++ {
		now += 20e3
		s.OnCredit(wire.Credit{Seq: uint32(i + 1), SentTime: uint32(i * 7)}, now, out)
		s.Poll(now, out)
	}
	if len(data) != 4 || got[len(got)-1] != "stop" || s.State() != StateStopSent {
		t.Fatalf("after 4 credits: %v, state %d", got, s.State())
	}
	for i, h := range data {
		seq, st := wire.MechXPCredit(h.Mech)
		if h.Seq != uint64(i*mss) || seq != uint32(i+1) || st != uint32(i*7) {
			t.Fatalf("segment %d: offset %d echoes credit %d/%d", i, h.Seq, seq, st)
		}
		r.OnPacket(h, make([]byte, min(mss, 3500-i*mss)), now, func(b []byte) {})
	}
	if s.rtt != 350e3+20e3-300e3 {
		t.Fatalf("rtt %d: want request (300 µs) to first credit (370 µs)", s.rtt)
	}
	// A fifth credit in flight finds nothing to send.
	s.OnCredit(wire.Credit{Seq: 5}, now, out)
	if s.Wasted != 1 || len(data) != 4 {
		t.Fatalf("wasted %d, data %d", s.Wasted, len(data))
	}
	ack := proto.Header{Type: proto.TypeAck, Flow: 5, Seq: 3000, Ack: 3500, Size: 3500}
	s.OnAck(ack, now)
	if !s.Done() || s.End != now {
		t.Fatal("not done after the cumulative ack")
	}
	// 2 RTT in stop-sent, then close-wait; a credit there means the stop
	// was lost: it is sent again, and after a quiet close-wait the sender closes.
	got = nil
	stopAt := now
	for s.State() == StateStopSent {
		now += 10e3
		s.Poll(now, out)
	}
	if s.State() != StateCloseWait || now-stopAt < 2*s.rtt || now-stopAt > 2*s.rtt+10e3 {
		t.Fatalf("state %d after %d ns in stop-sent (rtt %d)", s.State(), now-stopAt, s.rtt)
	}
	s.OnCredit(wire.Credit{Seq: 6}, now, out)
	for end := now + 10*s.rtt; now < end; now += 10e3 {
		s.Poll(now, out)
	}
	if s.State() != StateClosed || len(got) != 1 || got[0] != "stop" || s.Wasted != 2 || !s.Closed() {
		t.Fatalf("state %d, sent %v, wasted %d: want one more stop, then closed", s.State(), got, s.Wasted)
	}
}

// TestSenderRetransmitsWhatALaterAckShowsLost: segment 1 is lost; the ack
// of segment 2 shows the hole; the next credit carries segment 1 again.
func TestSenderRetransmitsWhatALaterAckShowsLost(t *testing.T) {
	s := NewSender(SenderConfig{MSS: 1000}, 1, 10000, 0)
	var data []proto.Header
	out := func(b []byte) {
		if k, h := kind(t, b); k == "data" {
			data = append(data, h)
		}
	}
	s.Poll(0, out)
	for i := 0; i < 3; i++ {
		s.OnCredit(wire.Credit{Seq: uint32(i + 1)}, 1000, out)
	}
	s.OnAck(proto.Header{Type: proto.TypeAck, Flow: 1, Seq: 0, Ack: 1000}, 2000)
	s.OnAck(proto.Header{Type: proto.TypeAck, Flow: 1, Seq: 2000, Ack: 1000}, 2000) // segment 1 missing
	s.OnCredit(wire.Credit{Seq: 4}, 3000, out)
	if h := data[len(data)-1]; h.Seq != 1000 || h.Flags&proto.FlagRetx == 0 || s.Retransmits != 1 {
		t.Fatalf("after the hole: sent offset %d flags %x", h.Seq, h.Flags)
	}
	s.OnCredit(wire.Credit{Seq: 5}, 3000, out)
	if h := data[len(data)-1]; h.Seq != 3000 {
		t.Fatalf("then offset %d, want 3000", h.Seq)
	}
}

// TestSenderAsksAgainAfterATailLoss: every segment was sent and the
// credits stopped, but the last segment is never acknowledged: after the
// timeout it is lost, the sender asks for credits again and resends it.
func TestSenderAsksAgainAfterATailLoss(t *testing.T) {
	s := NewSender(SenderConfig{MSS: 1000}, 1, 2000, 0)
	var kinds []string
	out := func(b []byte) { k, _ := kind(t, b); kinds = append(kinds, k) }
	s.Poll(0, out)
	s.OnCredit(wire.Credit{Seq: 1}, 100e3, out)
	s.OnCredit(wire.Credit{Seq: 2}, 110e3, out)
	s.OnAck(proto.Header{Type: proto.TypeAck, Flow: 1, Seq: 0, Ack: 1000}, 200e3)
	now := int64(200e3)
	for ; now < 100e6 && !s.Done(); now += 100e3 {
		if s.State() == StateRequestSent && s.Requests == 2 {
			s.OnCredit(wire.Credit{Seq: 3}, now, out) // the new credits
			s.OnAck(proto.Header{Type: proto.TypeAck, Flow: 1, Seq: 1000, Ack: 2000}, now+1)
		}
		s.Poll(now, out)
	}
	if !s.Done() || s.Retransmits != 1 || s.Requests != 2 {
		t.Fatalf("done %v, retransmits %d, requests %d, sent %v", s.Done(), s.Retransmits, s.Requests, kinds)
	}
	if now < 200e3+10e6 {
		t.Fatalf("asked again at %d ns, before the 10 ms timeout", now)
	}
}
