package udp

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/perf/transport"
)

// A server with a CNP interval sends a flow's sender a CNP for a CE data
// segment, at most one per interval, before the ack; a server without
// one (every server but gsperf server -mode dcqcn) sends none.
func TestServerSendsCNPs(t *testing.T) {
	for _, c := range []struct {
		every time.Duration
		cnps  int
	}{{50 * time.Microsecond, 2}, {0, 0}} {
		s := NewServer(ServerConfig{CNPInterval: c.every})
		var types []uint8
		out := func(b []byte) {
			h, _, err := proto.Decode(b)
			if err != nil || h.Flow != 1 {
				t.Fatalf("%v %+v", err, h)
			}
			types = append(types, h.Type)
		}
		for i, at := range []int64{0, 10e3, 60e3} { // CE at 0, 10 and 60 us: CNPs at 0 and 60
			s.HandleCE(segment(1, uint64(i*1000), 1<<20, 1000), client, true, at, out)
		}
		s.HandleCE(segment(1, 3000, 1<<20, 1000), client, false, 200e3, out) // not CE: an ack only
		cnps := 0
		for _, ty := range types {
			if ty == proto.TypeCNP {
				cnps++
			}
		}
		if cnps != c.cnps || len(types) != 4+c.cnps || (c.cnps > 0 && types[0] != proto.TypeCNP) || s.Stats().CNPs != uint64(c.cnps) {
			t.Errorf("interval %v: sent %v, stats %d CNPs; want %d CNPs, each before its ack", c.every, types, s.Stats().CNPs, c.cnps)
		}
	}
}

// The receive path of a CE segment in order that gets a CNP and an ack
// allocates nothing.
func TestServerCNPPathAllocatesNothing(t *testing.T) {
	s := NewServer(ServerConfig{CNPInterval: 1})
	b := segment(1, 0, 1<<40, 1400)
	out := func([]byte) {}
	off := uint64(0)
	now := int64(0)
	if a := testing.AllocsPerRun(1000, func() {
		binary.BigEndian.PutUint64(b[16:], off)
		transport.Fill(b[proto.HeaderLen:], 1, off)
		now += 10
		s.HandleCE(b, client, true, now, out)
		off += 1400
	}); a != 0 {
		t.Fatalf("%.1f allocations per CE segment", a)
	}
	if st := s.Stats(); st.CNPs < 1000 || st.Marked < 1000 || st.Corrupt != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A dcqcn flow's datagrams leave ECT(0); marked on the way, they get CNPs
// from a server with a CNP interval, and the flow cuts its rate, as its
// record says.
func TestDCQCNFlowOverLoopback(t *testing.T) {
	r, stop := newRelay(t, func(h proto.Header) bool { return h.Seq/MSS%4 == 0 })
	defer stop()
	r.mu.Lock()
	r.srv = NewServer(ServerConfig{CNPInterval: transport.DefaultCNPInterval})
	r.mu.Unlock()
	const size = 2 << 20
	segs := (size + MSS - 1) / MSS
	rec, ecn := r.runOne(t, transport.DCQCN, 1, size)
	r.mu.Lock()
	st := r.srv.Stats()
	r.mu.Unlock()
	t.Logf("dcqcn, one segment in four marked: %+v; server marked %d, sent %d CNPs", rec.Mech, st.Marked, st.CNPs)
	if len(ecn) != 1 || ecn[ect0] < segs {
		t.Fatalf("dcqcn: data segments by ECN field %v, want all %d or more ECT(0)", ecn, segs)
	}
	m := rec.Mech
	if st.CNPs == 0 || m["cnps"] == 0 || m["cnps"] > st.CNPs || m["rate_cuts"] == 0 || m["rate_cuts"] > m["cnps"] ||
		m["rate_ppm"] >= 1e6 || m["alpha_ppm"] == 0 || m["alpha_ppm"] > 1e6 {
		t.Fatalf("dcqcn record %+v (server sent %d CNPs)", m, st.CNPs)
	}
}
