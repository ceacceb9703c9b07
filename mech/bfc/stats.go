package bfc

import "github.com/gswitch/gswitch/wire"

// Stats is a snapshot of one port's BFC counters (see metrics.go for what
// each counts).
type Stats struct {
	PausesSent, ResumesSent, BitmapsSent, EmitFailed               uint64
	PausesRx, ResumesRx, BitmapsRx, StaleRx, BadQueueRx, Malformed uint64
	NotPeerRx, WatchdogResumes, OverThreshold, Underflow           uint64
	FlowEntries, Collisions, Sticky, StickyReuse                   uint64
	AssignedEmpty, AssignedRandom, Tagged, TagsRemoved, HostQueued uint64
	Threshold                                                      uint64
	CountersActive                                                 int
	PausedByPeer                                                   uint64 // bit q: the neighbour paused queue q of this port
}

// Stats returns port i's counters (any goroutine); zero if BFC does not
// run on the port.
func (b *BFC) Stats(i int) Stats {
	if i < 0 || i >= len(b.ports) || b.ports[i] == nil {
		return Stats{}
	}
	s := b.ports[i]
	m := &s.m
	return Stats{PausesSent: m.pausesSent.Load(), ResumesSent: m.resumesSent.Load(), BitmapsSent: m.bitmapsSent.Load(),
		EmitFailed: m.emitFailed.Load(), PausesRx: m.pausesRx.Load(), ResumesRx: m.resumesRx.Load(), BitmapsRx: m.bitmapsRx.Load(),
		StaleRx: m.staleRx.Load(), BadQueueRx: m.badQueueRx.Load(), Malformed: m.malformedRx.Load(), NotPeerRx: m.notPeerRx.Load(),
		WatchdogResumes: m.watchdog.Load(), OverThreshold: m.overTh.Load(), Underflow: m.underflow.Load(),
		FlowEntries: m.occupancy.Load(), Collisions: m.collisions.Load(), Sticky: m.stickyHits.Load(), StickyReuse: m.stickyReuse.Load(),
		AssignedEmpty: m.assignEmpty.Load(), AssignedRandom: m.assignRandom.Load(), Tagged: m.tagged.Load(), TagsRemoved: m.untagged.Load(),
		HostQueued: m.hostQueued.Load(), Threshold: m.th.Load(), CountersActive: int(s.active.Load()), PausedByPeer: s.up.paused.Load()}
}

// Counter returns the pause counter of upstream queue upq of the
// neighbour on port i: the packets from it queued in this switch above
// Th (any goroutine).
func (b *BFC) Counter(i, upq int) int32 {
	if i < 0 || i >= len(b.ports) || b.ports[i] == nil || b.ports[i].ctr == nil || upq < 0 || upq >= wire.MaxQueues {
		return 0
	}
	return b.ports[i].ctr[upq].Load()
}

// Period returns the bitmap period of port i in ns, and its watchdog bound.
func (b *BFC) Period(i int) (period, watchdog int64) {
	if i < 0 || i >= len(b.ports) || b.ports[i] == nil {
		return 0, 0
	}
	return b.ports[i].period, b.ports[i].wdog
}
