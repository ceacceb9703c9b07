// Package queues holds the traffic manager's packet queues and buffer
// accounting.
//
// # Model
//
// A FIFO is a bounded ring of packet descriptors (pkt.Packet) with a byte
// limit; the frames stay in the UMEM. A Set is one egress port's N FIFOs
// (default 32, the Tofino2 figure) over a Buffer shared by the whole switch.
// A packet is admitted when all of these hold, else it is dropped with the
// reason of the first that fails:
//
//	the shared buffer has room                          (BufferFull)
//	the port stays within its byte limit               (PortLimit)
//	the queue stays within its static limit and within
//	alpha x the free shared buffer (dynamic threshold)  (QueueLimit)
//
// Each queue can be paused and resumed on its own; a paused queue keeps its
// packets and its place, and schedulers do not serve it.
//
// # Goroutines
//
// A Set belongs to the worker that owns its port's egress: only that
// goroutine may Push and Pop. Pause, Resume and Paused may be called from
// any goroutine (a pause frame arrives on some other port's worker). Depth
// may be read from any goroutine. The Buffer is shared by all workers
// through atomics; two workers admitting at the same instant can overshoot
// it by at most one frame each.
package queues
