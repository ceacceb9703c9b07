// Package queues holds the traffic manager's packet queues.
//
// # Model
//
// A FIFO is a bounded ring of packet descriptors (pkt.Packet) with a byte
// limit; the frames stay in the UMEM. Depth is kept in bytes and packets and
// published with atomic stores, so the metrics goroutine reads it without
// locks while the owner works.
//
// A FIFO belongs to the worker that owns its port's egress: only that
// goroutine may call Push and Pop. Bytes and Packets may be read from any
// goroutine.
package queues
