package pkt

import "fmt"

// Reason says why the switch dropped a frame. Each is a label value of
// gswitch_drops_total. The built-in reasons are constants; a mechanism adds
// its own with RegisterReason from its package's init.
type Reason uint8

// Built-in drop reasons.
const (
	ReasonNone          Reason = iota
	ReasonMalformed            // the parser refused the frame (see gswitch_malformed_total)
	ReasonBufferFull           // the switch's shared buffer (bytes) was full
	ReasonFrameLimit           // the traffic manager holds as many UMEM frames as it may (the rest are kept for receiving and emitting)
	ReasonPortLimit            // the egress port's byte or packet limit
	ReasonQueueLimit           // the egress queue's limit or dynamic threshold
	ReasonEvicted              // pushed out by a better packet (pFabric)
	ReasonRoundOverflow        // too many rounds ahead (AFQ/RSP)
	ReasonHandoffFull          // the ring to the egress port's worker was full
	ReasonNoFrames             // no free frame for a flooded copy, or no free jumbo slot for a frame arriving in several buffers
	ReasonSamePort             // destination learnt on the ingress port (filtered)
	ReasonBadDesc              // the device returned a descriptor outside the UMEM
	ReasonForged               // a control message or header of ours (only switches send them) arrived on a host port
	ReasonUnclaimed            // a link-local control frame no mechanism of this switch handles
	ReasonLinkLocal            // addressed to 01:80:C2:00:00:0x (bridge protocols), or MAC control (EtherType 0x8808, any destination): never forwarded
	ReasonPortDown             // the egress port is down
	ReasonLaneFull             // the control or credit lane of the egress port was full
	ReasonNoHeadroom           // an egress stage could not grow the frame
	ReasonNotRouted            // on an L3 port: not addressed to the port's MAC, multicast, VLAN-tagged, or not IP
	ReasonLocal                // addressed to the switch itself, and not a ping it answers
	ReasonTTL                  // the TTL or hop limit expired
	ReasonNoRoute              // no route to the destination
	ReasonNoNeighbor           // the next hop's MAC is not known yet (an ARP request went out)
	ReasonTooLong              // longer than the egress port's link takes (its MTU), or a multi-buffer frame longer than the switch's largest frame, or a buffer that overruns its UMEM frame
	ReasonSpoofed              // from a host port with a source address the port's source guard refuses (not the port's subnet, the switch's own, or bound elsewhere)
	numBuiltin
)

// MaxReasons bounds the built-in and registered reasons together.
const MaxReasons = 64

var reasonNames = []string{"none", "malformed", "buffer_full", "frame_limit", "port_limit", "queue_limit", "evicted",
	"round_overflow", "handoff_full", "no_frames", "same_port", "bad_descriptor", "forged", "unclaimed_control",
	"link_local", "port_down", "lane_full", "no_headroom", "not_routed", "local", "ttl_expired", "no_route", "no_neighbor", "too_long", "spoofed"}

func init() {
	if len(reasonNames) != int(numBuiltin) {
		panic("pkt: reason names out of step")
	}
}

// RegisterReason adds a drop reason named name and returns it. Call it from
// an init function: the switch sizes its counters when it starts.
func RegisterReason(name string) Reason {
	for i, n := range reasonNames {
		if n == name {
			panic(fmt.Sprintf("pkt: drop reason %q registered twice (it is %d)", name, i))
		}
	}
	if len(reasonNames) == MaxReasons {
		panic("pkt: too many drop reasons")
	}
	reasonNames = append(reasonNames, name)
	return Reason(len(reasonNames) - 1)
}

// NumReasons is the number of reasons, built-in and registered.
func NumReasons() int { return len(reasonNames) }

func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason%d", r)
}
