// Package wire encodes and decodes the frames gswitch switches and hosts
// emit for their congestion-control mechanisms (BFC, SFC, ExpressPass).
// It depends on nothing else in gswitch but its subpackage wire/gsperf (the
// gsperf header, which a BTS quote may start), so the switch's mechanism
// packages, gsperf on hosts, tests and dissectors share one definition of
// the bytes.
// docs/wire-formats.md has the same tables.
//
// # The envelope
//
// Every message starts with the 8-byte GC header (all fields big-endian):
// magic "GC", version 1, a type, the length of the body that follows, and
// per-type flags. A message rides either directly in Ethernet, EtherType
// 0x88B6 to LinkLocalDst (link-local: BFC, never forwarded), or as the
// payload of an IPv4/UDP datagram (routed: SFC and ExpressPass, forwarded
// like data). A receiver checks the magic, the version, that the type is
// known, that the length is at least the type's minimum body and that the
// message fits in the bytes it has; what follows the message is padding
// (ParseHeader). Type.Scope and Type.FromHost say where a type may travel
// and whether a host may send it; a switch drops the others when they come
// from a host port.
//
// # The messages
//
//	type name        carried in                                       API
//	1    BFC_PAUSE   Ethernet 0x88B6                                  BFC, PutBFC, ParseBFC, BuildBFC, ParseBFCFrame
//	2    BFC_RESUME  Ethernet 0x88B6                                  (same)
//	3    BFC_BITMAP  Ethernet 0x88B6                                  (same), BitmapLen, BitmapGet, BitmapSet
//	16   SFC_BTS     IPv4/UDP, port 19020 both ways                   BTS, PutBTS, ParseBTS, BuildBTS
//	32   XP_CREDIT   IPv4/UDP, the flow's ports reversed, credit DSCP Credit, PutCredit, ParseCredit, BuildCredit
//	33   XP_REQUEST  IPv4/UDP, the flow's ports, DSCP 0               XPRequest, PutXPRequest, ParseXPRequest, BuildXPRequest
//	34   XP_STOP     IPv4/UDP, the flow's ports, DSCP 0               XPStop, PutXPStop, ParseXPStop, BuildXPStop
//	(15) PFC         Ethernet 0x8808 (IEEE 802.1Qbb, not a GC message) PFC, BuildPFC, ParsePFCFrame, PauseNs
//
// Besides the messages: the BFC upstream-queue tag, a 4-byte shim after the
// source MAC of data frames between BFC ports (ReadTag, InsertTag,
// RemoveTag, in place; pkt.PushTag and pkt.PopTag also keep a packet's
// offsets right), the gsperf header's mechanism field (MechBFC, MechXP; the
// header itself is package wire/gsperf), the IPv4 header checksum
// (IPv4Checksum, VerifyIPv4Checksum) and serial-number comparison of
// sequence numbers (SeqAfter).
//
// # Conventions
//
// Put* write a GC message (header and body: a UDP payload for a host's
// socket). Build* write a whole Ethernet frame, padded with zeros to
// MinFrameLen. Both write into a buffer the caller provides and return the
// length written, or an Error (ErrBuffer if the buffer is too small) having
// written nothing; they refuse any value their parser would refuse, so what
// they write always parses back. Parse* read from a byte slice, check every
// length and field, and return a value or the first Error; they never read
// outside the slice and never panic, whatever the bytes. Parsed slices
// (BFC.Bitmap, BTS.Quote, the payload ParseIPv4UDP returns) alias the input.
// Nothing in the package allocates, locks or keeps state: any goroutine may
// call anything, on buffers it owns.
//
// Frames built by the switch have IPv4 ID 0, DF set, TTL 64, ECN 0 and UDP
// checksum 0; ParseIPv4UDP accepts any TTL and ID and a non-zero UDP
// checksum if it is correct (hosts send through their UDP stack).
package wire
