package udp

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/perf/transport"
	"github.com/gswitch/gswitch/wire/gsperf"
)

// intSegment is segment with an INT option of slots after the fixed
// header, hops of it written.
func intSegment(flow, seq, size uint64, n, slots, hops int) []byte {
	hl := proto.HeaderLen + gsperf.INTLen(slots)
	b := make([]byte, hl+n)
	(&proto.Header{Type: proto.TypeData, Flow: flow, Seq: seq, Size: size}).Encode(b)
	gsperf.InitINT(b[proto.HeaderLen:], slots)
	gsperf.Header(b).SetHdrLen(uint16(hl))
	for i := range hops {
		gsperf.Header(b).INT().Push(uint64(1000+i), uint64(7*i), uint64(i), 10e9)
	}
	transport.Fill(b[hl:], flow, seq)
	return b
}

// The server echoes a data segment's INT option into its ack byte for
// byte, for any flow, and allocates nothing for in-order segments that
// carry one.
func TestServerEchoesINT(t *testing.T) {
	s := NewServer(ServerConfig{})
	b := intSegment(1, 0, 1<<40, 1000, 5, 2)
	var ack []byte
	s.Handle(b, client, 1, func(a []byte) { ack = append(ack[:0], a...) })
	opt := b[proto.HeaderLen:gsperf.Header(b).HdrLen()]
	if len(ack) != proto.HeaderLen+len(opt) || !bytes.Equal(ack[proto.HeaderLen:], opt) || gsperf.Header(ack).INT().Hops() != 2 {
		t.Fatalf("ack %x, option %x", ack, opt)
	}
	if h, _, err := proto.Decode(ack); err != nil || h.Ack != 1000 {
		t.Fatalf("ack %+v: %v", h, err)
	}
	off := uint64(1000)
	out := func([]byte) {}
	hl := int(gsperf.Header(b).HdrLen())
	if a := testing.AllocsPerRun(1000, func() {
		binary.BigEndian.PutUint64(b[16:], off)
		transport.Fill(b[hl:], 1, off)
		s.Handle(b, client, 1, out)
		off += 1000
	}); a != 0 {
		t.Fatalf("%.1f allocations per in-order segment with INT", a)
	}
	if st := s.Stats(); st.Corrupt != 0 || st.Invalid != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// An hpcc flow over loopback through a relay that writes one INT hop into
// each data segment, as a switch port running int would (its clock, the
// bytes it relayed, no queue, 1 Gbit/s): the segments stay within a
// 1514-byte frame, the flow completes, and its record carries what HPCC
// measured. Without the hop (a plain path), the flow still completes at
// W_init.
func TestHPCCFlowOverLoopback(t *testing.T) {
	for _, push := range []bool{true, false} {
		conn, err := Listen("127.0.0.1:0")
		if err != nil {
			t.Skipf("no loopback UDP: %v", err)
		}
		srv := NewServer(ServerConfig{})
		var mu sync.Mutex
		var data, biggest int
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			buf := make([]byte, 65536)
			var tx uint64
			for {
				select {
				case <-stop:
					return
				default:
				}
				conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
				n, from, err := conn.ReadFromUDPAddrPort(buf)
				if err != nil {
					continue
				}
				g := gsperf.Header(buf[:n])
				mu.Lock()
				if g.Type() == gsperf.TypeData {
					data++
					biggest = max(biggest, n)
					if o := g.INT(); push && o != nil {
						o.Push(uint64(time.Now().UnixNano()), tx, 0, 1e9)
					}
					tx += uint64(n + 66)
				}
				mu.Unlock()
				srv.Handle(buf[:n], from, time.Now().UnixNano(), func(a []byte) { conn.WriteToUDPAddrPort(a, netip.AddrPortFrom(from.Addr(), from.Port())) })
			}
		}()
		recs, err := Run(Plan{Dsts: []string{conn.LocalAddr().String()}, FixedSize: 1 << 20, Flows: 1, Arrivals: "burst", RateBits: 1e9,
			BaseRTT: 100 * time.Microsecond, RTO: 10 * time.Millisecond, Timeout: 20 * time.Second, Mode: transport.HPCC, FlowIDBase: 7,
			HPCC: transport.HPCCConfig{LineRate: 1e9, BaseRTT: 100e3, Hops: 3}})
		close(stop)
		<-done
		conn.Close()
		if err != nil || len(recs) != 1 || !recs[0].Complete {
			t.Fatalf("push %v: %v %+v", push, err, recs)
		}
		m := recs[0].Mech
		mu.Lock()
		t.Logf("push %v: %d data segments, the largest %d bytes; record %v", push, data, biggest, m)
		if biggest != 1514-14-20-8 || m["int_acks"] == 0 || m["window_bytes"] == 0 || m["window_bytes"] > 12500 {
			t.Errorf("push %v: largest segment %d bytes (want 1472: a 1514-byte frame), record %v", push, biggest, m)
		}
		if push && (m["hops"] != 1 || m["samples"] == 0) || !push && (m["hops"] != 0 || m["samples"] != 0 || m["window_bytes"] != 12500) {
			t.Errorf("push %v: record %v", push, m)
		}
		mu.Unlock()
	}
}

// An hpcc flow's rate takes the pacer's burst (Plan.PaceBurst frames,
// PaceBurst by default), so that a flow woken late catches up; a burst
// set in Plan.HPCC is kept.
// TestHPCCBurst: an HPCC flow's rate limiter bursts two segments (one to
// catch up after a late wake-up), or the pacer's burst if smaller, unless
// the plan gives one.
func TestHPCCBurst(t *testing.T) {
	frame := MSS + Overhead
	for _, c := range []struct {
		paceBurst, hpccBurst, want int
	}{{0, 0, 2 * frame}, {7, 0, 2 * frame}, {1, 0, frame}, {7, 5000, 5000}} {
		cfg, overhead := senderConfig(Plan{Mode: transport.HPCC, PaceBurst: c.paceBurst, HPCC: transport.HPCCConfig{Hops: 2, Burst: c.hpccBurst}})
		if cfg.HPCC.Burst != c.want || overhead != Overhead+INTLen(2) || cfg.MSS+overhead != frame {
			t.Errorf("%+v: burst %d, overhead %d, MSS %d", c, cfg.HPCC.Burst, overhead, cfg.MSS)
		}
	}
	if cfg, _ := senderConfig(Plan{Mode: transport.DCTCP}); cfg.HPCC != (transport.HPCCConfig{}) {
		t.Errorf("a dctcp flow has HPCC settings: %+v", cfg.HPCC)
	}
}
