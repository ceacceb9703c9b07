package dataplane

import (
	"net"
	"net/netip"
	"sync/atomic"

	"github.com/gswitch/gswitch/dataplane/ring"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/sched"
	"github.com/gswitch/gswitch/tm"
	"github.com/gswitch/gswitch/tm/shaper"
)

// Port is one switch port: its sockets (one per rx queue) and its egress.
type Port struct {
	// Identity, fixed in New.
	Index    int
	Name     string
	Role     mech.Role
	MAC      net.HardwareAddr
	addrs    []netip.Prefix     // the switch's addresses on an L3 port (none: an L2 port)
	mechs    []string           // names of the mechanisms enabled on the port, in hook order (mech.Order)
	ingressH []mech.IngressHook // mechanisms' Ingress hooks, in hook order: run on the receiving worker after forwarding
	guard    portGuard          // the source guard of a host port (guard.go)

	link portLink   // its sockets and their state
	eg   portEgress // who serves its egress, and the rings to that worker
	tm   tm.Port    // its traffic manager (the egress worker's)
	run  portRun    // run-time settings (settings.go)
}

// portLink is a port's sockets and their state: up or down, detached when
// the interface went away, attached again when it came back (attach.go).
type portLink struct {
	links         atomic.Pointer[[]Link] // the port's links; replaced when its interface comes back
	workers       []int                  // worker of each link
	tx            Link                   // egress worker: links[0], which transmits
	txDetached    bool                   // egress worker: links[0] was reclaimed, do not touch tx
	txOutstanding atomic.Int64           // frames on the tx ring not yet completed
	rxDelayNs     int64                  // the link's delay toward the switch
	down          atomic.Bool            // the interface is down or gone
	detachReq     atomic.Bool            // the interface is gone: workers reclaim and stop using its links
	detachAcks    atomic.Int32           // links reclaimed since the last detach request
	attachAcks    atomic.Int32           // links taken up since the last AttachPort
	newLinks      atomic.Pointer[[]Link] // links to take up after a detach (AttachPort)
	lost          atomic.Int64           // frames the kernel kept when the interface went away
}

// portEgress is who serves a port's egress: the worker of its first link,
// and the rings on which the other workers hand it what they have for the
// port.
type portEgress struct {
	owner  int                      // the worker that owns the egress
	wake   *sleeper                 // that worker's
	in     []*ring.SPSC[pkt.Packet] // in[w]: data packets handed over by worker w (nil for the egress worker)
	emitIn []*ring.SPSC[pkt.Packet] // emitIn[w]: frames worker w emits on this port (nil for the egress worker)
}

// portRun is a port's run-time settings: changes posted for its egress
// worker to apply, and copies of the current ones for other goroutines.
type portRun struct {
	pending  atomic.Pointer[portSettings] // changes for the egress worker to apply
	rateBits atomic.Uint64                // the shaper's rate, for any goroutine
	quantum  atomic.Int64                 // the DRR/SFQ quantum, for any goroutine (0: the scheduler has none)
}

// portSettings is one posted change; zero fields are left alone.
type portSettings struct {
	shaper  *shaper.Bucket
	quantum int
}

// quantumSetter is a scheduler with a DRR quantum that may change while it
// runs (drr and sfq). SetQuantum and Quantum are for its owner only.
type quantumSetter interface {
	SetQuantum(q int) error
	Quantum() int
}

// apply installs c (the port's egress worker, or any goroutine before Start).
func (p *Port) apply(c *portSettings) {
	if c.shaper != nil {
		p.tm.SetShaper(c.shaper)
		p.run.rateBits.Store(c.shaper.RateBits())
	}
	if c.quantum != 0 {
		if q, ok := p.tm.Scheduler().(quantumSetter); ok && q.SetQuantum(c.quantum) == nil {
			p.run.quantum.Store(int64(c.quantum))
		}
	}
}

// Scheduler returns the port's egress scheduler (for metrics: Depth only).
func (p *Port) Scheduler() sched.Scheduler { return p.tm.Scheduler() }

// PauseQueue stops egress queue q of the port (any goroutine); its packets stay.
func (p *Port) PauseQueue(q int) { p.tm.Pause(q) }

// ResumeQueue serves egress queue q again and wakes the port's egress
// worker (any goroutine). A worker whose ports hold only paused frames
// sleeps until something wakes it, so a resume must go through here (or
// Switch.ResumeQueue), not straight to the scheduler.
func (p *Port) ResumeQueue(q int) {
	p.tm.Resume(q)
	if z := p.eg.wake; z != nil {
		z.resume()
	}
}

// ControlDepth is the depth of the port's control lane (any goroutine).
func (p *Port) ControlDepth() (uint64, uint32) { return p.tm.ControlDepth() }

// CreditDepth is the depth of the port's credit lane, and whether it has one (any goroutine).
func (p *Port) CreditDepth() (uint64, uint32, bool) { return p.tm.CreditDepth() }

// CreditLane returns the counters of the port's credit lane, and whether
// it has one (any goroutine).
func (p *Port) CreditLane() (mech.CreditLaneStats, bool) { return p.tm.CreditLane() }

// RateBits returns the port's shaper rate in bit/s (0 = unlimited; any goroutine).
func (p *Port) RateBits() uint64 { return p.run.rateBits.Load() }

// Quantum is port's current DRR quantum, 0 if its scheduler has none (any goroutine).
func (p *Port) Quantum() int { return int(p.run.quantum.Load()) }

// Links returns the port's per-queue links (any goroutine).
func (p *Port) Links() []Link { return *p.link.links.Load() }

// Lost counts frames the kernel kept when the port's interface went away.
func (p *Port) Lost() int64 { return p.link.lost.Load() }

// Down reports whether the port is down (any goroutine).
func (p *Port) Down() bool { return p.link.down.Load() }

// Mechanisms lists the mechanisms enabled on the port, in the order their
// hooks run (mech.Order).
func (p *Port) Mechanisms() []string { return p.mechs }
