package sched

import "fmt"

// Quantum is the DRR quantum in bytes (owner only).
func (d *drr) Quantum() int { return d.quantum }

// SetQuantum changes the quantum while the scheduler runs (owner only: the
// port's egress worker). Queues keep the credit they have; each gets the
// new quantum from its next turn on.
func (d *drr) SetQuantum(q int) error {
	if q < 64 || q > 1<<20 {
		return fmt.Errorf("quantum %d B out of range [64 B, 1 MiB]", q)
	}
	d.quantum = q
	d.maxIter = d.s.Len() * (9216/q + 2)
	return nil
}
