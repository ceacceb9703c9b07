package dataplane

import (
	"errors"
	"fmt"

	"github.com/gswitch/gswitch/tm"
	"github.com/gswitch/gswitch/tm/shaper"
)

// Run-time changes of a port's egress. The shaper and the scheduler belong
// to the port's egress worker, so a change is not made by the goroutine
// that asks for it: SetPortRate and SetQuantum check the value, build what
// the worker will install (a new shaper) and post it on the port; the
// egress worker installs it at its next pass (as it picks up a port going
// down), so the forwarding path never takes a lock for it. Before Start
// (a switch whose workers a test steps) the change is made at once.

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
	return tm.NewShaper(bits, burst, int64(s.cfg.CatchUp), now)
}

// SetQuantum changes the DRR quantum (bytes of credit per turn) of port's
// scheduler, which must be drr or sfq. Any goroutine, as SetPortRate.
func (s *Switch) SetQuantum(port, quantum int) error {
	if port < 0 || port >= len(s.ports) {
		return fmt.Errorf("no port %d", port)
	}
	if _, ok := s.ports[port].tm.Scheduler().(quantumSetter); !ok {
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

// Pending reports whether a change posted on port is still waiting for its
// egress worker (any goroutine).
func (s *Switch) Pending(port int) bool { return s.ports[port].run.pending.Load() != nil }

// post merges c into what is pending for the port and wakes the workers.
func (s *Switch) post(port int, c portSettings) {
	p := s.ports[port]
	if !s.started {
		p.apply(&c)
		return
	}
	for {
		old := p.run.pending.Load()
		n := c
		if old != nil {
			if n.shaper == nil {
				n.shaper = old.shaper
			}
			if n.quantum == 0 {
				n.quantum = old.quantum
			}
		}
		if p.run.pending.CompareAndSwap(old, &n) {
			break
		}
	}
	s.stateGen.Add(1)
	for _, w := range s.workers {
		w.nap.wake()
	}
}

// applySettings installs the changes posted on the worker's egress ports
// (the worker's goroutine, when the switch's state generation moved).
func (w *worker) applySettings() {
	for _, p := range w.eg.ports {
		if c := p.run.pending.Swap(nil); c != nil {
			p.apply(c)
		}
	}
}
