// Package pkt defines the packet descriptor that moves through gswitchd's
// pipeline and the parse stage that fills it.
//
// # Model
//
// A frame's bytes stay where the NIC (or veth) wrote them, in the UMEM. What
// moves between stages, workers and queues is a Packet: a 40-byte value with
// the frame's UMEM address and length, the ports, and what the parse and
// ingress stages learnt of the headers (offsets, protocol, DSCP, PCP, a flow
// hash). Packets are copied by value in batches and rings; none is ever
// allocated on the heap per frame.
//
// Parse decodes in place, like gopacket's DecodingLayerParser: it reads the
// headers it needs straight from the frame and records offsets, so later
// stages (classification, ECN marking, priority stamping) can find them
// again without decoding twice.
package pkt

// Packet is the per-frame metadata of the pipeline. The goroutine that holds
// a Packet owns its frame: it must forward it (transmit, hand it to another
// worker) or free it, exactly once.
type Packet struct {
	Addr    uint64 // UMEM offset of the frame's first byte
	Len     uint32 // frame length in bytes (no FCS)
	Hash    uint32 // flow hash of the 5-tuple (of the addresses for non-TCP/UDP IP; 0 for non-IP)
	Rank    uint32 // scheduling rank for rank-based schedulers (lower leaves first)
	InPort  uint16 // index of the ingress port
	OutPort uint16 // index of the egress port
	Queue   uint16 // egress queue chosen by classification
	VLAN    uint16 // VLAN ID of the outer 802.1Q tag, 0 if untagged
	EthType uint16 // EtherType after any VLAN tags
	L3Off   uint8  // offset of the IP (or ARP) header; 0 if none
	L4Off   uint8  // offset of the TCP/UDP header; 0 if none
	Proto   uint8  // IP protocol (6 TCP, 17 UDP, ...); 0 if not IP
	TOS     uint8  // IPv4 TOS / IPv6 traffic class (DSCP << 2 | ECN)
	PCP     uint8  // 802.1p priority of the outer tag
	Flags   uint8  // FlagTagged, FlagIPv4, ...
}

// Flags of Packet.Flags.
const (
	FlagTagged    = 1 << iota // carried an 802.1Q tag
	FlagIPv4                  // IPv4 header found at L3Off
	FlagIPv6                  // IPv6 header found at L3Off
	FlagFragment              // a non-first IP fragment: no L4 header
	FlagMulticast             // destination MAC is group (broadcast or multicast)
	FlagControl               // a frame the switch emits itself: goes to the port's control queue
)

// DSCP returns the packet's DiffServ code point.
func (p *Packet) DSCP() uint8 { return p.TOS >> 2 }
