// Package dataplane is gswitchd's forwarding engine: ports, workers and the
// pipeline that carries frames from AF_XDP rx rings to AF_XDP tx rings.
//
// # Pipeline
//
// The stages follow a Tofino2 pipeline (docs/architecture.md has the diagram):
//
//	rx ring -> parse -> ingress (learn, lookup, flood) -> traffic manager
//	        (handoff ring -> scheduler) -> egress (shaper) -> tx ring
//
// Each worker runs to completion over batches of up to BatchSize frames:
// it receives a batch on each rx socket it owns, parses and classifies it
// in place, and enqueues each packet on its egress port's scheduler. When
// another worker owns that egress port, the packet crosses over a lock-free
// single-producer single-consumer handoff ring (one per worker and port).
// The owner of each egress port drains its handoff rings into the
// scheduler, then pulls packets from the scheduler as long as the port's
// shaper allows and its tx ring has room.
//
// # Frames
//
// All sockets share one UMEM. Its frames are split into one contiguous range
// per worker; a worker fills its rx sockets' fill rings only with its own
// frames. A frame is owned by exactly one party at a time: the kernel (fill
// ring, tx ring), a scheduler queue, a handoff ring, or a worker. When a
// worker is done with a frame that another worker owns (sent, dropped), it
// sends the address back over a return ring to that worker. The return rings
// are as large as the owner's range, so a return never fails. Every frame is
// forwarded or freed; Switch.Frames counts them by state and the tests check
// that all of them come back when traffic stops.
//
// # Goroutines
//
// Each worker is one goroutine locked to its OS thread. A worker touches
// only its own sockets' rings, its own egress ports' schedulers and
// shapers, and its own free list. The learning table and the rings between
// workers are lock-free. Counters are per worker and read by the metrics
// goroutine with atomic loads. An idle worker sleeps in ppoll() on its
// sockets and an eventfd that other workers write when they hand it work.
package dataplane
