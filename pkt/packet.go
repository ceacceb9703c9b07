// Package pkt is the packet model of gswitch: the descriptor that moves
// through the pipeline, the verdicts stages give it, the drop reasons, and
// the parse stage that fills it. The switch's stages, the traffic manager
// and the mechanisms import it; of the project's packages it imports only
// wire (the frames of the mechanisms it recognises).
//
// # Model
//
// A frame's bytes stay where the NIC (or veth) wrote them, in the UMEM. What
// moves between stages, workers and queues is a Packet: a 56-byte value with
// the frame's UMEM address and length, the ports, what the parse stage learnt
// of the headers (offsets, protocol, DSCP, PCP, a flow hash) and the metadata
// later stages set for the traffic manager and for each other (egress port,
// queue, rank, lane, verdict, the upstream queue of a BFC tag, the scratch
// bits mechanisms register: RegisterMeta). Packets are
// copied by value in batches and rings; none is ever allocated on the heap
// per frame. Stages talk to each other only through these fields, as the
// stages of a Tofino pipeline talk through their metadata.
//
// Parse decodes in place, like gopacket's DecodingLayerParser: it reads the
// headers it needs straight from the frame and records offsets, so later
// stages (classification, ECN marking, priority stamping) can find them
// again without decoding twice.
//
// Every frame a UMEM holds starts at least Headroom bytes into its chunk, so
// an egress stage can grow a frame at the front (a 4-byte tag) in place:
// PushTag and PopTag put on and take off BFC's upstream-queue tag and keep
// the descriptor's address, length and offsets right.
package pkt

import "fmt"

// Packet is the per-frame metadata of the pipeline. The goroutine that holds
// a Packet owns its frame: it must forward it (transmit, hand it to another
// worker) or free it, exactly once.
type Packet struct {
	Addr    uint64 // UMEM offset of the frame's first byte
	TS      int64  // switch clock (ns) when the frame arrived, or was built if the switch emits it
	Len     uint32 // frame length in bytes (no FCS)
	Hash    uint32 // flow hash of the 5-tuple (of the addresses for non-TCP/UDP IP; 0 for non-IP)
	Rank    uint32 // scheduling rank for rank-based schedulers (lower leaves first; rsp: the departure round)
	InPort  uint16 // index of the ingress port
	OutPort uint16 // index of the egress port (Verdict Forward)
	Queue   uint16 // egress queue chosen by classification or queue assignment
	VLAN    uint16 // VLAN ID of the outer 802.1Q tag, 0 if untagged
	EthType uint16 // EtherType after any tags
	UpQ     uint16 // upstream queue from a BFC tag (FlagUpQ), or set by a mechanism
	Meta    uint16 // scratch bits of the mechanisms, each bit registered by one (RegisterMeta); zero when the frame is received
	L3Off   uint8  // offset of the IP (or ARP) header; 0 if none
	L4Off   uint8  // offset of the TCP/UDP header; 0 if none
	Proto   uint8  // IP protocol (6 TCP, 17 UDP, ...); 0 if not IP
	TOS     uint8  // IPv4 TOS / IPv6 traffic class (DSCP << 2 | ECN)
	PCP     uint8  // 802.1p priority of the outer 802.1Q tag
	Flags   uint8  // FlagTagged, FlagIPv4, ...
	Verdict Verdict
	Reason  Reason // why, when Verdict is Drop
	Lane    Lane   // which egress lane carries the frame
	Ctl     uint8  // the GC type of a control frame of ours (FlagControl), else 0
	TagOff  uint8  // offset of the BFC upstream-queue tag the frame carries now (12); 0 if none
}

// Flags of Packet.Flags.
const (
	FlagTagged    = 1 << iota // carried an 802.1Q tag
	FlagIPv4                  // IPv4 header found at L3Off
	FlagIPv6                  // IPv6 header found at L3Off
	FlagFragment              // a non-first IP fragment: no L4 header
	FlagMulticast             // destination MAC is group (broadcast or multicast)
	FlagControl               // a gswitch control message (Ctl holds its type)
	FlagUpQ                   // UpQ holds an upstream queue: from the BFC tag the frame carried (TagOff while it is on), or set by a mechanism
	FlagLinkLocal             // destination is 01:80:C2:00:00:0x: never forwarded
)

// MaxMeta is the number of scratch bits in Packet.Meta.
const MaxMeta = 16

var metaOwners []string

// RegisterMeta gives the mechanism owner one scratch bit of Packet.Meta and
// returns its mask, which the mechanism keeps (p.Meta |= mask to set it,
// p.Meta&mask != 0 to test it). Call it from an init function, once per
// bit needed. The bit is the owner's alone: every frame is received with
// it clear, and it travels with the packet (and its flooded copies) from
// the ingress hooks to the egress hooks; the owner's package documents
// what it means. Registering more than MaxMeta bits panics.
func RegisterMeta(owner string) uint16 {
	if owner == "" {
		panic("pkt: RegisterMeta needs the owner's name")
	}
	if len(metaOwners) == MaxMeta {
		panic(fmt.Sprintf("pkt: no scratch bit left for %s (all %d taken: %v)", owner, MaxMeta, metaOwners))
	}
	metaOwners = append(metaOwners, owner)
	return 1 << (len(metaOwners) - 1)
}

// MetaOwner returns the name of the mechanism that registered bit (a mask
// of one bit RegisterMeta returned), or "" if no mechanism did.
func MetaOwner(bit uint16) string {
	for i, o := range metaOwners {
		if bit == 1<<i {
			return o
		}
	}
	return ""
}

// Verdict is what the stages decided about a packet.
type Verdict uint8

// Verdicts. The zero value lets the packet go on.
const (
	Forward Verdict = iota // on to OutPort
	Flood                  // to every port but InPort (the forwarding stage knew no single port)
	Drop                   // freed and counted as Reason on the port the stage is about
	Consume                // a stage used the frame and is done: freed, not counted as a drop
)

func (v Verdict) String() string {
	switch v {
	case Forward:
		return "forward"
	case Flood:
		return "flood"
	case Drop:
		return "drop"
	case Consume:
		return "consume"
	}
	return "unknown"
}

// DropWith sets the verdict Drop with reason r.
func (p *Packet) DropWith(r Reason) { p.Verdict, p.Reason = Drop, r }

// Lane is the egress lane a frame leaves on. Each port serves, in order:
// the control lane (frames the switch emits: never paused, first), the
// credit lane (ExpressPass credits, under its own token bucket), then the
// data scheduler.
type Lane uint8

// Lanes.
const (
	LaneData Lane = iota
	LaneControl
	LaneCredit
	NumLanes
)

func (l Lane) String() string {
	switch l {
	case LaneData:
		return "data"
	case LaneControl:
		return "control"
	case LaneCredit:
		return "credit"
	}
	return "unknown"
}

// DSCP returns the packet's DiffServ code point.
func (p *Packet) DSCP() uint8 { return p.TOS >> 2 }

// Headroom is the least number of bytes every frame in the UMEM has before
// its first byte within its chunk (the kernel leaves XDP_PACKET_HEADROOM,
// 256, in front of received frames; the switch builds copies and emitted
// frames at the same offset).
const Headroom = 256
