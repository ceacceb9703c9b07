package sched

import (
	"fmt"

	"github.com/gswitch/gswitch/pkt"
)

// Classifier maps a packet to a queue for the prio and drr schedulers.
//
// By "dscp" (the default) it looks the packet's DSCP up in Map; by "pcp" the
// outer 802.1Q priority; by "queue" it takes the queue an earlier stage set
// in the packet. Queue 0 is the highest priority for prio. The default map
// sends DSCP class selector c (DSCP >> 3, 0..7) to queue 7 - c, so CS7 is
// served first and best effort (0) last; EF (46) is class 5, queue 2.
type Classifier struct {
	By  string
	Map [64]uint8 // DSCP (or PCP, first 8) -> queue
}

// DefaultClassifier is the DSCP class-selector mapping onto n queues.
func DefaultClassifier(n int) Classifier {
	c := Classifier{By: "dscp"}
	for d := 0; d < 64; d++ {
		c.Map[d] = uint8(min(7-d>>3, n-1))
	}
	return c
}

func (c *Classifier) check(n int) error {
	switch c.By {
	case "", "dscp", "pcp", "queue":
	default:
		return fmt.Errorf("classify by %q (use dscp, pcp or queue)", c.By)
	}
	if c.By == "" {
		*c = DefaultClassifier(n)
	}
	for d, q := range c.Map {
		if int(q) >= n {
			return fmt.Errorf("classifier maps %d to queue %d, but the port has %d queues", d, q, n)
		}
	}
	return nil
}

func (c *Classifier) queue(p *pkt.Packet, n int) int {
	switch c.By {
	case "pcp":
		return int(c.Map[p.PCP&7])
	case "queue":
		return int(p.Queue) % n
	}
	return int(c.Map[p.TOS>>2])
}
