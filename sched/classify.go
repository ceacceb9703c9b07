package sched

import (
	"fmt"

	"github.com/gswitch/gswitch/pkt"
)

// ClassifyBy is what the prio and drr schedulers pick a packet's queue by:
// the config's classify key.
type ClassifyBy string

// What a Classifier classifies by.
const (
	// ByDSCP (the default, also spelt "") looks the packet's DSCP up in the map.
	ByDSCP ClassifyBy = "dscp"
	// ByPCP looks the outer 802.1Q priority up in the map's first 8 entries.
	ByPCP ClassifyBy = "pcp"
	// ByQueue takes the queue an earlier stage (a mechanism) set in the packet.
	ByQueue ClassifyBy = "queue"
)

// UnmarshalText implements encoding.TextUnmarshaler (the config's classify
// key): dscp, pcp or queue; empty is dscp.
func (b *ClassifyBy) UnmarshalText(t []byte) error {
	switch v := ClassifyBy(t); v {
	case "", ByDSCP, ByPCP, ByQueue:
		*b = v
		return nil
	}
	return fmt.Errorf("%q (use dscp, pcp or queue: the queue a mechanism chose)", t)
}

// Classifier maps a packet to a queue for the prio and drr schedulers.
//
// By ByDSCP (or "") it looks the packet's DSCP up in Map; by ByPCP the
// outer 802.1Q priority; by ByQueue it takes the queue an earlier stage set
// in the packet. Queue 0 is the highest priority for prio. The default map
// sends DSCP class selector c (DSCP >> 3, 0..7) to queue 7 - c, so CS7 is
// served first and best effort (0) last; EF (46) is class 5, queue 2.
//
// A Classifier is a description: the scheduler compiles it when it is
// built, so that the per-packet path indexes a table and never compares
// the mode's name.
type Classifier struct {
	By  ClassifyBy
	Map [64]uint8 // DSCP (or PCP, first 8) -> queue
}

// DefaultClassifier is the DSCP class-selector mapping onto n queues.
func DefaultClassifier(n int) Classifier {
	c := Classifier{By: ByDSCP}
	for d := 0; d < 64; d++ {
		c.Map[d] = uint8(min(7-d>>3, n-1))
	}
	return c
}

// DefaultPCPClassifier maps 802.1p priority p to queue 7 - p on n queues.
func DefaultPCPClassifier(n int) Classifier {
	c := Classifier{By: ByPCP}
	for p := 0; p < 8; p++ {
		c.Map[p] = uint8(min(7-p, n-1))
	}
	return c
}

// classifier is a Classifier compiled for a scheduler of n queues.
type classifier struct {
	mode  uint8 // byDSCP, byPCP or byQueue
	n     int
	table [64]uint8
}

const (
	byDSCP uint8 = iota
	byPCP
	byQueue
)

// compile checks c for n queues and builds its table. A Classifier with
// no mode is the default DSCP mapping.
func (c Classifier) compile(n int) (classifier, error) {
	out := classifier{n: n, table: c.Map}
	switch c.By {
	case "":
		out.table = DefaultClassifier(n).Map
	case ByDSCP:
	case ByPCP:
		out.mode = byPCP
	case ByQueue:
		out.mode = byQueue
	default:
		return out, fmt.Errorf("classify by %q (use dscp, pcp or queue)", c.By)
	}
	if out.mode != byQueue {
		for d, q := range out.table {
			if int(q) >= n {
				return out, fmt.Errorf("classifier maps %d to queue %d, but the port has %d queues", d, q, n)
			}
		}
	}
	return out, nil
}

// queue is p's queue: one table look-up (or the packet's own queue).
func (c *classifier) queue(p *pkt.Packet) int {
	switch c.mode {
	case byDSCP:
		return int(c.table[p.TOS>>2])
	case byPCP:
		return int(c.table[p.PCP&7])
	}
	q := int(p.Queue)
	if q >= c.n {
		q %= c.n
	}
	return q
}
