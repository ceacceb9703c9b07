package transport

import "sync/atomic"

// PauseGate is SFC's reaction at the sender (seed 003, section 3.3): "When
// the sender receives a BTS, it pauses the targeted flow until the
// pause-end time, which is the sender's current time plus the pause
// duration specified in the BTS. If the sender receives another BTS for a
// connection that is currently paused, its pause-end time is updated with
// the new one." The newest BTS wins, shorter or longer.
//
// The flow's goroutine asks Allow before each segment; whoever receives the
// BTS calls PauseUntil from another goroutine: it is safe for concurrent
// use. Both must read the same clock.
type PauseGate struct {
	end    atomic.Int64
	pauses atomic.Uint64
}

// PauseUntil holds the flow until end (the flow's clock, ns), replacing any
// pause it was under.
func (g *PauseGate) PauseUntil(end int64) {
	g.end.Store(end)
	g.pauses.Add(1)
}

// Pauses is the number of pauses the gate was given.
func (g *PauseGate) Pauses() uint64 { return g.pauses.Load() }

// Allow implements Gate: closed until the pause ends.
func (g *PauseGate) Allow(now int64, _ int) (bool, int64) {
	if e := g.end.Load(); now < e {
		return false, e
	}
	return true, 0
}

// All is a Gate open when every one of gates is, asked in order: the first
// that refuses decides, and the ones after it are not asked (so a Pacer
// behind a PauseGate is not charged for a segment the pause holds back).
func All(gates ...Gate) Gate {
	if len(gates) == 1 {
		return gates[0]
	}
	return allGates(gates)
}

type allGates []Gate

func (a allGates) Allow(now int64, n int) (bool, int64) {
	for _, g := range a {
		if ok, wake := g.Allow(now, n); !ok {
			return false, wake
		}
	}
	return true, 0
}
