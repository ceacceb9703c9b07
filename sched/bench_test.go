package sched

import (
	"testing"

	"github.com/gswitch/gswitch/pkt"
)

// BenchmarkEnqueueDequeue measures one enqueue plus one dequeue per packet,
// 32 queues, 1,000 flows spread over them, about 600 packets buffered.
func BenchmarkEnqueueDequeue(b *testing.B) {
	for _, name := range []string{"fifo", "prio", "drr", "sfq", "rsp", "pfabric"} {
		b.Run(name, func(b *testing.B) {
			s := mk(b, name, Params{Queues: 32, PortBytes: 1 << 22, PortPackets: 4096})
			flows := make([]pkt.Packet, 1000)
			for i := range flows {
				flows[i] = pkt.Packet{Len: uint32(64 + i%1400), Hash: uint32(i*2654435761) | 1, TOS: uint8(i%64) << 2, Rank: uint32(i * 37 % 1000)}
			}
			var p pkt.Packet
			rsp, _ := s.(*RSP)
			for i := 0; i < 600; i++ {
				p = flows[i%1000]
				if rsp != nil {
					p.Rank = uint32(rsp.Round()) + uint32(i%32)
				}
				s.Enqueue(&p)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p = flows[i%1000]
				if rsp != nil {
					p.Rank = uint32(rsp.Round()) + uint32(i%31)
				}
				s.Enqueue(&p)
				s.Dequeue(&p)
			}
		})
	}
}
