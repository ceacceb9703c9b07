// Package expresspass is the switch side of ExpressPass (Cho, Jang and
// Han, "Credit-Scheduled Delay-Bounded Congestion Control for
// Datacenters", SIGCOMM 2017; seed 004, an excerpt of sections 2 to 3.1)
// as a gswitch mechanism. What the excerpt leaves out follows the authors'
// simulator, ns2-xpass: the switch queue of queue/xpass-drop-tail.cc and,
// for the hosts, xpass/xpass.cc (gsperf -mode xpass, package perf/xpass).
//
// # Model
//
// Receivers send credits, minimum-size frames (84 bytes on the wire), to
// their senders; each credit that reaches a sender lets it send one data
// frame of up to 1538 bytes on the wire back along the same path. A switch
// port meters the credits it sends to 84/(84+1538) of its line rate, so the
// data that the surviving credits release arrives on the port's link, in the
// other direction, no faster than the link carries it (section 3.1):
//
//	receiver R                 switch                          sender S
//	  data  <==== port r <==============  port s  <==== data  ====
//	  credits ==> (R's NIC meters          credit lane of s:  ==> credits
//	              credits to its link)     rate(s) x 84/1622,
//	                                       bucket 2, queue 8
//
// The credit lane of port s limits the data arriving on port s (from S);
// R's own NIC limiter (gsperf's host bucket) limits the data on port r's
// link. Credits and data must cross the same links, so routing must be
// symmetric: gswitch's L3 ECMP hash is symmetric in (address, port) and the
// topology tool orders next hops the same way on every switch, so a
// credit (the flow's 5-tuple reversed) takes the reverse of its data's path.
//
// # What the switch does
//
//   - Classify (control stage, receiving worker; Control hook): the parser
//     marks UDP datagrams whose payload starts with a GC header of type 32
//     (XP_CREDIT); hosts may send them (wire.Type.FromHost). This package
//     checks the IPv4/UDP framing and the message with package wire and the
//     DSCP against the switch's credit class (credit_dscp, default 10), then
//     sets the packet's lane to the credit lane; forwarding routes it as any
//     packet. A credit of another DSCP, or behind a VLAN or BFC tag, is left
//     as data (counted); a malformed one is dropped (credit_malformed).
//     XP_REQUEST and XP_STOP are data to switches.
//   - Meter (egress of each port where expresspass is enabled): New gives
//     the port a credit lane (Switch.SetCreditLane) at CreditRateBits of
//     the port's rate, with a token bucket of credit_burst credits (default
//     2, 168 bytes) and a queue of credit_queue credits (default 8). The
//     head credit leaves when the bucket holds its whole cost (ns-2's
//     "tokens >= size"), before data; both the bucket and the port's shaper
//     charge max(len, 60) + 24 bytes per frame, so a credit costs 84 and a
//     full data frame 1538 and the ratio is exact. A credit that finds the
//     queue full is dropped (lane_full): the credit loss that receivers
//     read as congestion. Which credits the lane keeps is this package's
//     policy (lane.go), which New hands to the switch with the lane: the
//     credits that arrive between two sends compete alike for the room
//     (credit_drop: tail), and with credit_drop: random the lane also
//     drops at random before it is full (random early detection).
//   - Data takes the port's scheduler as any data; nothing else changes
//     (section 3.1: the data queue stays small because its arrivals are
//     scheduled by the credits). Traffic that is not credit-scheduled (TCP,
//     ARP) on an ExpressPass port shares the data queues and is not
//     bounded by credits; ports that carry it should run a scheduler that
//     keeps it apart (e.g. prio with a lower-priority queue by DSCP).
//
// There is no per-flow state in the switch and nothing to reclaim; there is
// no pause, so no deadlock.
//
// # Hosts' reach
//
//   - Hosts send credits (receivers do): a host may send credits toward
//     anyone, and those of the credit class ride the credit lane of every
//     port they cross. It can take credit-lane room from other flows'
//     credits on its paths (credits_dropped_total; their receivers read the
//     loss as congestion), never more than the lane's share of a link
//     (84/1622); credits of another class are data
//     (credits_refused_total{why="not_credit_class"}).
//   - A credit makes a sender send only if it comes from that flow's
//     receiver (the flow's 5-tuple reversed; gsperf's sender socket is
//     connected), an address the source guard leaves to the receiver.
//   - Data that ignores credits shares the data queues as any traffic
//     without congestion control does (data_dropped_total).
//   - The switch keeps no per-flow state (nothing to fill or aim at), no
//     pause, and no ExpressPass frame carries a duration.
//
// # Config (per port, under mechanisms: expresspass:)
//
//	credit_dscp: 10     # the credit class (one value per switch)
//	credit_queue: 8     # credits queued per port (the paper: 4 to 8)
//	credit_burst: 2     # the credit meter's depth, in credits (the paper: 2)
//
// The port must have a rate (the meter runs at rate x 84/1622).
//
// # Metrics
//
//	gswitch_expresspass_credits_received_total{port}        credits classified on arrival
//	gswitch_expresspass_credits_refused_total{port,why}     malformed (dropped), not_credit_class, tagged (data)
//	gswitch_expresspass_credits_forwarded_total{port}       credits sent by the port's credit lane
//	gswitch_expresspass_credits_dropped_total{port}         credits dropped by the port's full credit lane
//	gswitch_expresspass_credit_tokens_bytes{port}           the credit meter's bytes
//	gswitch_expresspass_credit_rate_bytes_per_second{port}  the credit meter's rate
//	gswitch_expresspass_data_queue_packets{port}            histogram: data-queue depth found by each arriving data packet
//	gswitch_expresspass_data_dropped_total{port}            data packets dropped by the port's traffic manager
//
// The credit lane's depth is gswitch_credit_queue_depth_packets{port}.
package expresspass
