package transport

import (
	"math"
	"sync/atomic"
)

// Pacer is a Gate that lets segments leave no faster than a line rate, as
// a host's NIC of that rate would. pFabric's hosts start at line rate
// (section 4.2) and the paper's NICs run at the fabric's rate; a test
// host on a veth sends gigabits per second into a port shaped to a few
// hundred megabits, so without a pacer every window leaves as one burst,
// overruns the port's two-BDP buffer, and evicts the packets of the flows
// waiting behind. The paper names this alternative in section 4.3:
// rate-limit the traffic to the NIC at line rate in software.
//
// The pacer keeps a virtual clock: the time the segments it has let pass
// finish at the rate. A segment may leave while that clock is at most
// Burst ahead of now. One Pacer may be shared by all the senders of a host
// (it is safe for concurrent use) as long as they read the same clock.
type Pacer struct {
	nsPerByte float64
	overhead  int   // bytes each segment adds on the wire to its payload
	burst     int64 // ns of credit beyond the segment being sent
	next      atomic.Int64
}

// NewPacer paces at rateBits bits per second, counting overhead wire bytes
// per segment on top of its payload, with a burst of burstBytes (on the
// wire) allowed to leave back to back.
func NewPacer(rateBits float64, overhead, burstBytes int) *Pacer {
	p := &Pacer{nsPerByte: 8e9 / rateBits, overhead: overhead}
	p.burst = int64(math.Ceil(float64(burstBytes) * p.nsPerByte))
	return p
}

// Allow implements Gate.
func (p *Pacer) Allow(now int64, n int) (bool, int64) {
	cost := int64(float64(n+p.overhead) * p.nsPerByte)
	for {
		next := p.next.Load()
		if next > now+p.burst {
			return false, next - p.burst
		}
		if p.next.CompareAndSwap(next, max(next, now)+cost) {
			return true, 0
		}
	}
}
