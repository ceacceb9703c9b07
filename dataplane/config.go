package dataplane

import (
	"runtime"
	"time"

	"github.com/gswitch/gswitch/config"
)

// BatchSize is the most frames a worker takes from one ring at a time.
const BatchSize = 64

// MaxJumboFrame is the longest frame the switch carries (Ethernet header
// to payload end, no FCS): 9216 B, the usual limit of data-centre
// switches, an MTU of 9198 with a VLAN tag. It keeps a chain within the
// kernel's limit on buffers per frame (MAX_SKB_FRAGS, 17) for 2 KB frames.
const MaxJumboFrame = 9216

// DefaultWorkers is half the CPUs, at least one: the workers key's 0. The
// hosts that send and receive through a namespace switch run on the same
// CPUs as the switch; docs/results.md shows what one worker per core does
// on a 2-core machine (a worker starved by the iperf3 processes lets its
// egress queue overflow: 23,000 TCP retransmits in 3 s against none with
// one worker).
func DefaultWorkers() int { return max(1, runtime.NumCPU()/2) }

// Clock gives the time in nanoseconds. Tests use a fake one.
type Clock interface{ Now() int64 }

type monoClock struct{ base time.Time }

func (c monoClock) Now() int64 { return int64(time.Since(c.base)) }

// Config is what New builds a switch from: the switch's config, as
// package config gives it, and what only the host that runs the switch
// knows.
//
// The config is taken as it is, complete: config.Parse fills in every key
// a file leaves out and checks them all; a config built in Go is filled
// in and checked by its Complete method (dptest does it). New neither
// defaults nor checks a key again: it resolves only what the config
// leaves to the machine (workers 0, the shared buffer's size, the MAC
// table's port limit) and checks what it asks of the machine.
type Config struct {
	// Config is the switch's config: its keys and its ports, in the order
	// of their indices. A port's mac, if unset, is derived from the switch
	// id and the port's index (gswitchd sets the interface's).
	config.Config
	// PortMaxFrame is the longest frame each port's link takes (its MTU
	// plus the Ethernet header and a VLAN tag), by port index: longer data
	// frames bound for the port are dropped as too_long, as a switch port
	// drops giants, instead of being handed to a device that would drop
	// them unseen. Missing or 0: no limit.
	PortMaxFrame []int
	// MaxFrame is the longest frame (Ethernet header to payload end, no
	// FCS) the switch must carry, if longer than every PortMaxFrame (New
	// takes the longest of them all); 0 = what one UMEM frame holds. Longer than that, the switch receives
	// and sends frames as AF_XDP multi-buffer chains (the links must be
	// bound with XDP_USE_SG) and keeps each whole in a jumbo slot:
	// JumboSlots runs of contiguous UMEM frames, taken from the top of each
	// worker's range (jumbo.go; docs/architecture.md, "Jumbo frames").
	MaxFrame    int
	JumboSlots  int     // 0 = a quarter of the UMEM's memory
	HandoffSize int     // slots of each worker-to-port handoff ring; 0 = 1024
	FillTarget  int     // frames to keep on each fill ring; 0 = automatic
	QueueFrames float64 // fraction of each worker's UMEM frames the queues may hold (0 = 0.5)
	Clock       Clock   // nil = monotonic time
}
