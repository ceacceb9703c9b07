// Package dataplane is gswitchd's forwarding engine: ports, workers and the
// pipeline that carries frames from AF_XDP rx rings to AF_XDP tx rings.
//
// # Pipeline
//
// The stages follow a Tofino2 pipeline (docs/architecture.md has the diagram):
//
//	rx ring -> parse -> control -> forwarding (L2: learn, look up, flood; L3: route)
//	        -> mechanisms' Ingress hooks -> dispatch -> (handoff ring)
//	        -> traffic manager (package tm: admission, lanes, scheduler, shaper, delay line)
//	        -> tx ring
//
// Each worker runs to completion over batches of up to BatchSize frames:
// it receives a batch on each rx socket it owns, parses and classifies it
// in place, and hands each packet to its egress port's traffic manager
// (package tm). When another worker owns that egress port, the packet
// crosses over a lock-free single-producer single-consumer handoff ring
// (one per worker and port). The owner of each egress port drains its
// handoff rings into the port's traffic manager, which decides what to
// admit and what may leave (lanes, scheduler, shaper, delay line); the
// worker puts what leaves on the tx ring as long as it has room. The
// traffic manager decides and the workers move the frames: package tm
// holds a port's egress state and calls the mechanisms' egress-side hooks,
// this package runs the workers, the rings and the receiving side's hooks
// (Control, Ingress) and ticks. It stands above tm and config in the
// packages' floors (docs/architecture.md, "The house").
//
// # Frames
//
// All sockets share one UMEM. Its frames are split into one contiguous range
// per worker; a worker fills its rx sockets' fill rings only with its own
// frames. A frame is owned by exactly one party at a time: the kernel (fill
// ring, tx ring), the traffic manager (a scheduler queue, a lane, a delay
// line), a handoff, emit or return ring, or a worker. When a
// worker is done with a frame that another worker owns (sent, dropped), it
// sends the address back over a return ring to that worker. The return rings
// are as large as the owner's range, so a return never fails. Every frame is
// forwarded or freed; Switch.Frames counts them by state and the tests check
// that all of them come back when traffic stops.
//
// # Goroutines
//
// Each worker is one goroutine locked to its OS thread. A worker touches
// only its own sockets' rings, its own egress ports' traffic managers
// (tm.Port: lanes, scheduler, shaper, delay line), and its own free list. The learning table and the rings between
// workers are lock-free. Counters are per worker and read by the metrics
// goroutine with atomic loads. An idle worker sleeps in ppoll() on its
// sockets and an eventfd that other workers write when they hand it work.
//
// # Files
//
// Each file holds one thing and refers only to files listed before it
// (types low, their users high), but that switch.go and worker.go name
// each other's types, and worker.go starts a worker with loop.go's noPass:
//
//	link.go, memlink.go  Link, the socket a worker drives, and MemLink, one in memory
//	spin.go              adaptive spinning before a worker sleeps
//	umem.go              the UMEM and how it is split between the workers
//	wake.go              how a worker sleeps and is woken (eventfd, ppoll)
//	capture.go           mirroring a port's frames
//	guard.go             a host port's source guard: its mode and subnets
//	port.go              Port: identity, links and attach state, traffic manager, run-time settings
//	router.go            the L3 tables and their config
//	config.go            Config: the switch's config and what the host knows
//	pool.go              a worker's frames: free lists, return rings
//	switch.go, worker.go Switch and its accessors; the worker's state, grouped by what it serves
//	emit.go              frames the switch emits
//	jumbo.go             frames longer than a UMEM frame
//	settings.go          changes while the switch runs
//	stats.go             counters
//	attach.go            ports going down and up, interfaces going and coming back
//	egress.go            the egress pass over a port, by phase
//	guardcheck.go        the source guard's checks
//	forward_l3.go        the L3 forwarding stage
//	ingress.go           the ingress stages and dispatch
//	rx.go                the receive phase
//	loop.go              the worker's loop: a pass, sleeping, how late each comes (fidelity)
//	threads.go           the workers' threads: start, stop, pinning, priority (nice, slice, realtime)
//	build.go             New: a switch from its Config
package dataplane
