package bfc

import "github.com/gswitch/gswitch/internal/keyhash"

// SetKey replaces the random key New drew for port i's flow table and
// stochastic hash with the one keyhash.FromKey derives from k, so a test
// knows where its flows land and can check that they land where it needs
// them (FlowEntry, StochasticQueue). Call it before the port sees traffic.
func (b *BFC) SetKey(i int, k [2]uint64) { b.ports[i].key = keyhash.FromKey(k) }

// FlowEntry is the entry of port i's flow table (assign: dynamic) that
// flow hash h indexes.
func (b *BFC) FlowEntry(i int, h uint32) int { return b.ports[i].index(h) }

// StochasticQueue is the queue port i gives flow hash h under assign:
// stochastic (the expression of Admit's stochastic case).
func (b *BFC) StochasticQueue(i int, h uint32) int {
	s := b.ports[i]
	return keyhash.Index(s.key.Sum(uint64(h)), s.nq)
}
