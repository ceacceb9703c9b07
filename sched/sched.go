// Package sched holds the egress schedulers of gswitchd's traffic manager.
//
// # Model
//
// A scheduler is pulled, never pushes (like Click's pull elements): the
// traffic manager hands it each arriving packet with Enqueue, and the
// port's egress asks it for the next packet with Dequeue whenever the
// port's shaper lets a frame leave. A scheduler owns its queues and decides
// what to drop when they are full; Enqueue reports a refused packet so the
// caller frees its frame and counts the drop.
//
// A scheduler belongs to the worker that owns its port's egress and is not
// safe for concurrent use; Depth may be read from any goroutine.
//
// Adding a scheduler is one package (or file) and one Register call.
package sched

import (
	"fmt"
	"sort"

	"github.com/gswitch/gswitch/dataplane/pkt"
)

// Drop reasons a scheduler can report from Enqueue.
type Drop uint8

const (
	Accepted  Drop = iota
	QueueFull      // the queue's byte or packet limit
)

// Scheduler is one port's egress scheduler.
type Scheduler interface {
	// Enqueue takes p, or returns why it refused it (the caller still owns the frame then).
	Enqueue(p *pkt.Packet) Drop
	// Dequeue moves the next packet to send into p; false when nothing is eligible.
	Dequeue(p *pkt.Packet) bool
	// Depth reports the queued bytes and packets of queue i, i < NumQueues (any goroutine).
	Depth(i int) (bytes uint64, packets uint32)
	// NumQueues is the number of queues the scheduler reports depth for.
	NumQueues() int
}

// Params configure a scheduler for one port.
type Params struct {
	BufferBytes uint64 // the port's byte limit
	MaxPackets  int    // the port's packet capacity
}

// Factory builds a scheduler.
type Factory func(Params) (Scheduler, error)

var registry = map[string]Factory{}

// Register makes a scheduler available by name to the config. Call it from init.
func Register(name string, f Factory) {
	if _, dup := registry[name]; dup {
		panic("sched: duplicate registration of " + name)
	}
	registry[name] = f
}

// New builds the scheduler registered under name.
func New(name string, p Params) (Scheduler, error) {
	f, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown scheduler %q (known: %v)", name, Names())
	}
	return f(p)
}

// Names lists the registered schedulers.
func Names() []string {
	var n []string
	for k := range registry {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}
