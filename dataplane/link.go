package dataplane

import "github.com/gswitch/gswitch/dataplane/afxdp"

// Link is one (port, queue) socket as a worker drives it. *afxdp.Socket
// implements it for real devices and MemLink in memory for tests. All
// methods are called by the one worker that owns the link.
type Link interface {
	// Fill gives frame addresses to the device to receive into; returns how many it took.
	Fill(addrs []uint64) int
	// Receive takes up to len(descs) received frames.
	Receive(descs []afxdp.Desc) int
	// TxFree is how many frames Transmit can take now.
	TxFree() int
	// Transmit queues frames for sending; returns how many it took.
	Transmit(descs []afxdp.Desc) int
	// Kick makes the device send what Transmit queued.
	Kick()
	// Complete takes up to len(addrs) addresses of sent frames.
	Complete(addrs []uint64) int
	// WakeFill tells the device that the fill ring has frames, if it asked to be told.
	WakeFill()
	// FD is a descriptor that polls readable when frames arrive; -1 if none.
	FD() int
	// Reclaim appends every frame on the link's rings to dst and stops the
	// link for good (its device went away); see afxdp.Socket.Reclaim.
	Reclaim(dst []uint64) []uint64
	// Outstanding counts frames the device took and has not given back: after
	// Reclaim, frames the switch will not see again.
	Outstanding() (rx, tx int)
}

var _ Link = (*afxdp.Socket)(nil)

// StatsLink is a Link whose kernel counters can be read from any goroutine.
type StatsLink interface {
	Stats() (afxdp.Stats, error)
}
