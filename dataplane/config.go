package dataplane

import (
	"net"
	"net/netip"
	"runtime"
	"time"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/sched"
)

// BatchSize is the most frames a worker takes from one ring at a time.
const BatchSize = 64

// MaxJumboFrame is the longest frame the switch carries (Ethernet header
// to payload end, no FCS): 9216 B, the usual limit of data-centre
// switches, an MTU of 9198 with a VLAN tag. It keeps a chain within the
// kernel's limit on buffers per frame (MAX_SKB_FRAGS, 17) for 2 KB frames.
const MaxJumboFrame = 9216

// DefaultWorkers is half the CPUs, at least one. The hosts that send and
// receive through a namespace switch run on the same CPUs as the switch;
// docs/results.md shows what one worker per core does on a 2-core machine
// (a worker starved by the iperf3 processes lets its egress queue overflow:
// 23,000 TCP retransmits in 3 s against none with one worker).
func DefaultWorkers() int { return max(1, runtime.NumCPU()/2) }

// Clock gives the time in nanoseconds. Tests use a fake one.
type Clock interface{ Now() int64 }

type monoClock struct{ base time.Time }

func (c monoClock) Now() int64 { return int64(time.Since(c.base)) }

// PortConfig configures one switch port.
type PortConfig struct {
	Name        string
	Role        mech.Role
	MAC         net.HardwareAddr // the port's own MAC (source of frames the switch emits); nil = derived from the switch id and the port index
	RateBits    uint64           // egress line rate in bit/s; 0 = unlimited
	BurstBytes  int64            // shaper burst; 0 = default
	BufferBytes uint64           // the port's egress buffer limit in bytes
	MaxPackets  int              // the port's egress packet limit; 0 = min(BufferBytes/128, 8192)
	Scheduler   string           // registered scheduler name; "" = fifo
	Queues      int              // egress queues (0 = 32; single-queue schedulers use one)
	QueueBytes  uint64           // static per-queue limit (0 = BufferBytes)
	Quantum     int              // DRR/SFQ quantum (0 = 1514)
	Classify    sched.Classifier
	Mechanisms  []MechConfig   // mechanisms enabled on the port (their hooks run in the order they declare: mech.Order)
	DelayNs     int64          // one-way propagation delay of the port's link: frames are held after the shaper (0 = none)
	RxDelayNs   int64          // delay of the link toward the switch: received frames are held before the pipeline (0 = none)
	Addrs       []netip.Prefix // the switch's addresses on the port: an L3 (routed) port; none = an L2 port
	// MaxFrame is the longest frame the port's link takes (its MTU plus
	// the Ethernet header and a VLAN tag): longer data frames bound for the
	// port are dropped as too_long, as a switch port drops giants, instead
	// of being handed to a device that would drop them unseen. 0 = no limit.
	MaxFrame int
}

// MechConfig enables a registered mechanism on a port with its config (the
// value its Spec.Config returned, decoded).
type MechConfig struct {
	Name   string
	Config any
}

// Config configures a Switch.
type Config struct {
	Ports        []PortConfig
	SwitchID     uint16        // carried in frames the switch emits (0 = 1)
	Workers      int           // 0 = DefaultWorkers()
	MACTableSize int           // 0 = 4096
	MACAging     time.Duration // 0 = 300 s
	MACPortLimit int           // most MACs learnt on one port; 0 = half the table, < 0 = no limit
	MACMoveHold  time.Duration // a MAC that moved may not move again this soon (0: moves are free)
	HandoffSize  int           // slots of each worker-to-port handoff ring; 0 = 1024
	FillTarget   int           // frames to keep on each fill ring; 0 = automatic
	BusyPoll     bool          // never sleep
	SpinTime     time.Duration // how long an idle worker polls before sleeping; 0 = 50 µs, negative = it sleeps at once
	CPUs         []int         // worker i runs on CPUs[i mod len]; empty: anywhere
	Nice         int           // the workers' nice value (0 = default)
	CatchUp      time.Duration // line time a shaped port may make up after its worker ran late (shaper.Bucket.SetCatchUp); 0 = none
	Slice        time.Duration // the workers' scheduler slice (sched_setattr's runtime for SCHED_OTHER, Linux 6.12+); 0 = the kernel's
	SharedBuffer uint64        // bytes of the buffer all egress queues share; 0 = half the UMEM
	Alpha        float64       // dynamic threshold: a queue may take Alpha x the free buffer; 0 = off (gswitchd's config defaults to 1)
	QueueFrames  float64       // fraction of each worker's UMEM frames the queues may hold (0 = 0.5)
	// MaxFrame is the longest frame (Ethernet header to payload end, no FCS)
	// the ports must carry; 0 = what one UMEM frame holds. Longer than that,
	// the switch receives and sends frames as AF_XDP multi-buffer chains
	// (the links must be bound with XDP_USE_SG) and keeps each whole in a
	// jumbo slot: JumboSlots runs of contiguous UMEM frames, taken from the
	// top of each worker's range (jumbo.go; docs/architecture.md, "Jumbo frames").
	MaxFrame   int
	JumboSlots int   // 0 = a quarter of the UMEM's memory
	Clock      Clock // nil = monotonic time
	L3         L3    // routes and neighbours of the L3 ports
}
