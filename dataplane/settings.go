package dataplane

import (
	"errors"
	"fmt"

	"github.com/gswitch/gswitch/dataplane/shaper"
)

// Run-time changes of a port's egress. The shaper and the scheduler belong
// to the port's egress worker, so a change is not made by the goroutine
// that asks for it: SetPortRate and SetQuantum check the value, build what
// the worker will install (a new shaper) and post it on the port; the
// egress worker installs it at its next pass (as it picks up a port going
// down), so the forwarding path never takes a lock for it. Before Start
// (a switch whose workers a test steps) the change is made at once.

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

// SetPortRate changes port's egress line rate to bits per second (0 =
// unlimited) with a bucket of burst bytes (0 = the default: max(2 frames,
// 1 ms at the rate)). Frames already queued leave at the new rate. Any
// goroutine; after Start the port's egress worker applies it at its next
// pass (Pending reports when it has).
func (s *Switch) SetPortRate(port int, bits uint64, burst int64) error {
	if port < 0 || port >= len(s.ports) {
		return fmt.Errorf("no port %d", port)
	}
	b, err := s.newShaper(bits, burst, s.clock.Now())
	if err != nil {
		return err
	}
	s.post(port, portSettings{shaper: b})
	return nil
}

// newShaper is a port's shaper with the switch's catch-up (Config.CatchUp).
func (s *Switch) newShaper(bits uint64, burst int64, now int64) (*shaper.Bucket, error) {
	b, err := shaper.New(bits, burst, now)
	if err != nil {
		return nil, err
	}
	if err := b.SetCatchUp(int64(s.cfg.CatchUp)); err != nil {
		return nil, fmt.Errorf("catchup: %w", err)
	}
	return b, nil
}

// SetQuantum changes the DRR quantum (bytes of credit per turn) of port's
// scheduler, which must be drr or sfq. Any goroutine, as SetPortRate.
func (s *Switch) SetQuantum(port, quantum int) error {
	if port < 0 || port >= len(s.ports) {
		return fmt.Errorf("no port %d", port)
	}
	if _, ok := s.ports[port].sched.(quantumSetter); !ok {
		return errors.New("the port's scheduler has no quantum (only drr and sfq have one)")
	}
	if err := checkQuantum(quantum); err != nil {
		return err
	}
	s.post(port, portSettings{quantum: quantum})
	return nil
}

func checkQuantum(q int) error {
	if q < 64 || q > 1<<20 {
		return fmt.Errorf("quantum %d B out of range [64 B, 1 MiB]", q)
	}
	return nil
}

// Quantum is port's current DRR quantum, 0 if its scheduler has none (any goroutine).
func (p *Port) Quantum() int { return int(p.quantum.Load()) }

// Pending reports whether a change posted on port is still waiting for its
// egress worker (any goroutine).
func (s *Switch) Pending(port int) bool { return s.ports[port].pending.Load() != nil }

// post merges c into what is pending for the port and wakes the workers.
func (s *Switch) post(port int, c portSettings) {
	p := s.ports[port]
	if !s.started {
		p.apply(&c)
		return
	}
	for {
		old := p.pending.Load()
		n := c
		if old != nil {
			if n.shaper == nil {
				n.shaper = old.shaper
			}
			if n.quantum == 0 {
				n.quantum = old.quantum
			}
		}
		if p.pending.CompareAndSwap(old, &n) {
			break
		}
	}
	s.stateGen.Add(1)
	for _, w := range s.workers {
		w.wake()
	}
}

// applySettings installs the changes posted on the worker's egress ports
// (the worker's goroutine, when the switch's state generation moved).
func (w *worker) applySettings() {
	for _, p := range w.egress {
		if c := p.pending.Swap(nil); c != nil {
			p.apply(c)
		}
	}
}

// apply installs c (the port's egress worker, or any goroutine before Start).
func (p *Port) apply(c *portSettings) {
	if c.shaper != nil {
		p.shaper = c.shaper
		p.rateBits.Store(c.shaper.RateBits())
	}
	if c.quantum != 0 {
		if q, ok := p.sched.(quantumSetter); ok && q.SetQuantum(c.quantum) == nil {
			p.quantum.Store(int64(c.quantum))
		}
	}
}
