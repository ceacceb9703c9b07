// Package afxdp is gswitchd's AF_XDP port layer, written on golang.org/x/sys/unix.
//
// # Model
//
// One UMEM (a region of frames of FrameSize bytes) is shared by every socket
// of the switch (XDP_SHARED_UMEM), so a frame received on one port is sent on
// another by handing over its address: nothing is copied in user space. Each
// socket is bound to one (interface, rx queue) pair and has four rings:
//
//	fill       (we produce frame addresses, the kernel consumes them to receive into)
//	rx         (the kernel produces received descriptors, we consume them)
//	tx         (we produce descriptors to send, the kernel consumes them)
//	completion (the kernel produces addresses of sent frames, we consume them)
//
// Every ring keeps a cached copy of the other side's index and touches the
// shared producer/consumer words with sync/atomic once per batch: reserve or
// peek many entries, then publish once.
//
// # Ownership
//
// A Socket and its four rings belong to exactly one goroutine (a dataplane
// worker locked to its OS thread). Nothing on the hot path takes a lock; two
// goroutines calling methods of the same Socket is a bug. UMEM.Open may run
// on another goroutine while socket owners call Reclaim or Close: those
// three take the UMEM's mutex. UMEM.Mem may be read and written by any
// worker, for the frames it owns at the time.
//
// # Interfaces that go away
//
// When its device is deleted the kernel unbinds a socket for good and
// leaves its rings as they were; poll() then reports nothing at all. Err
// tells a socket that is unbound (ErrUnbound) or whose device is down
// (ErrDown) from a working one; Reclaim takes every frame back from the
// four rings of a socket the switch gives up on, and Outstanding counts the
// few the kernel kept. docs/afxdp.md, "When the interface goes away",
// records what the kernel does in each case.
//
// # Why not github.com/asavie/xdp
//
// The design card names asavie/xdp. docs/afxdp.md records why the switch
// does not use it (no need_wakeup, a scan of every frame per receive, ring
// indices written with plain stores, panics on transmit errors, and no safe
// split between a receiving and a transmitting goroutine) and what a minimal
// forwarder built on it measured on this machine.
package afxdp
