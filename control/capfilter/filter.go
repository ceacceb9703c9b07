// Package capfilter is the filter language of gswitchctl capture: a small
// subset of tcpdump's, plus gswitch's own frames, evaluated in Go on the
// frames the switch mirrors.
//
// # Why not BPF
//
// tcpdump's filters compile to classic BPF through libpcap, which needs cgo
// and the library on every machine gswitchctl runs on. The mirror is read in
// user space anyway, so the filter need not run in the kernel; and what an
// operator of gswitch filters on most (a GC message type, the BFC tag, the
// upstream queue, gsperf segments) has no BPF primitive. So the filter is a
// parsed expression evaluated per mirrored frame, after the switch's own
// parser (pkt.Parse) has found the headers: a frame matches exactly when
// the switch would see what the expression names.
//
// # Grammar
//
//	expr    = and { ("or" | "||") and }
//	and     = unary { ("and" | "&&") unary }
//	unary   = ("not" | "!") unary | "(" expr ")" | primitive
//
// Primitives:
//
//	rx, tx                     received on, or sent on (forwarded, flooded, emitted), the port
//	arp, ip, ip6, tcp, udp, icmp, icmp6
//	vlan [ID]                  an 802.1Q/802.1ad tag (with that VLAN ID)
//	gc [TYPE]                  a gswitch control message, over EtherType 0x88B6 or UDP (of that
//	                           type: a number or a name, bfc_pause, bfc_resume, bfc_bitmap, sfc_bts,
//	                           xp_credit, xp_request, xp_stop)
//	bfc, sfc, xp               a control message of that mechanism (types 1-15, 16-31, 32-47)
//	tag [Q]                    the BFC upstream-queue tag (TPID 0x88B5) (with upstream queue Q)
//	gsperf                     a UDP datagram whose payload starts with the gsperf header ("GS", 1)
//	[src|dst] host ADDR        IPv4 or IPv6 address (ARP: sender or target protocol address)
//	[src|dst] net PREFIX       address in PREFIX, e.g. 10.1.0.0/16
//	[src|dst] port N           TCP or UDP port
//	ether [src|dst] MAC        Ethernet address
//	ether proto N              EtherType after any tags (0x0800, 0x88b6, ...)
//	proto N|NAME               IP protocol (tcp, udp, icmp or a number)
//	dscp N                     IPv4 DSCP or IPv6 traffic class >> 2
//	len OP N                   frame length; OP is one of < <= > >= == !=
//	malformed                  frames the switch's parser refuses
//
// Without src or dst, host, net and port match either side. Numbers may be
// decimal or 0x hexadecimal. An empty expression matches every frame.
//
// A Filter is immutable once compiled; Match may be called from any number
// of goroutines at once.
package capfilter

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/wire"
	"github.com/gswitch/gswitch/wire/gsperf"
)

// Direction of a frame, as Match takes it.
const (
	Rx = 1 // received on the port
	Tx = 2 // sent on the port
)

// Filter is a compiled expression.
type Filter struct {
	expr string
	root node
}

// String returns the expression the filter was compiled from.
func (f *Filter) String() string { return f.expr }

// Match reports whether frame, seen in direction dir (Rx or Tx), matches.
// A nil Filter matches everything.
func (f *Filter) Match(frame []byte, dir int) bool {
	if f == nil || f.root == nil {
		return true
	}
	fr := frameInfo{data: frame, dir: dir}
	fr.err = pkt.Parse(frame, &fr.p)
	return f.root(&fr)
}

// frameInfo is a frame with what the parser found in it.
type frameInfo struct {
	data []byte
	dir  int
	p    pkt.Packet
	err  pkt.Err
}

type node func(*frameInfo) bool

// Compile parses expr. Errors say where and what was expected.
func Compile(expr string) (*Filter, error) {
	toks, err := lex(expr)
	if err != nil {
		return nil, err
	}
	c := &compiler{toks: toks}
	f := &Filter{expr: expr}
	if len(toks) == 0 {
		return f, nil
	}
	if f.root, err = c.or(); err != nil {
		return nil, err
	}
	if c.pos < len(toks) {
		return nil, fmt.Errorf("filter: unexpected %q after a complete expression (join primitives with and, or)", toks[c.pos])
	}
	return f, nil
}

func lex(s string) ([]string, error) {
	var out []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case c == '(' || c == ')':
			out = append(out, string(c))
			i++
		case c == '!' && (i+1 >= len(s) || s[i+1] != '='):
			out = append(out, "!")
			i++
		case c == '&' || c == '|':
			if i+1 < len(s) && s[i+1] == c {
				out = append(out, s[i:i+2])
				i += 2
				continue
			}
			return nil, fmt.Errorf("filter: %q at offset %d (write && or and, || or or)", string(c), i)
		case c == '<' || c == '>' || c == '=' || c == '!':
			j := i + 1
			if j < len(s) && s[j] == '=' {
				j++
			}
			out = append(out, s[i:j])
			i = j
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n()<>=!&|", rune(s[j])) {
				j++
			}
			out = append(out, s[i:j])
			i = j
		}
	}
	return out, nil
}

type compiler struct {
	toks []string
	pos  int
}

func (c *compiler) peek() string {
	if c.pos < len(c.toks) {
		return c.toks[c.pos]
	}
	return ""
}

func (c *compiler) next() string {
	t := c.peek()
	if t != "" {
		c.pos++
	}
	return t
}

func (c *compiler) or() (node, error) {
	l, err := c.and()
	if err != nil {
		return nil, err
	}
	for t := c.peek(); t == "or" || t == "||"; t = c.peek() {
		c.next()
		r, err := c.and()
		if err != nil {
			return nil, err
		}
		a := l
		l = func(f *frameInfo) bool { return a(f) || r(f) }
	}
	return l, nil
}

func (c *compiler) and() (node, error) {
	l, err := c.unary()
	if err != nil {
		return nil, err
	}
	for t := c.peek(); t == "and" || t == "&&"; t = c.peek() {
		c.next()
		r, err := c.unary()
		if err != nil {
			return nil, err
		}
		a := l
		l = func(f *frameInfo) bool { return a(f) && r(f) }
	}
	return l, nil
}

func (c *compiler) unary() (node, error) {
	switch t := c.peek(); t {
	case "not", "!":
		c.next()
		n, err := c.unary()
		if err != nil {
			return nil, err
		}
		return func(f *frameInfo) bool { return !n(f) }, nil
	case "(":
		c.next()
		n, err := c.or()
		if err != nil {
			return nil, err
		}
		if c.next() != ")" {
			return nil, fmt.Errorf("filter: missing )")
		}
		return n, nil
	case "":
		return nil, fmt.Errorf("filter: the expression ends where a primitive was expected")
	}
	return c.primitive()
}

// number reads an optional numeric argument.
func (c *compiler) optNumber(max uint64) (uint64, bool, error) {
	t := c.peek()
	if t == "" || t[0] < '0' || t[0] > '9' {
		return 0, false, nil
	}
	c.next()
	v, err := strconv.ParseUint(t, 0, 64)
	if err != nil || v > max {
		return 0, false, fmt.Errorf("filter: %q is not a number from 0 to %d", t, max)
	}
	return v, true, nil
}

func (c *compiler) number(what string, max uint64) (uint64, error) {
	v, ok, err := c.optNumber(max)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("filter: %s needs a number (0 to %d), not %q", what, max, c.peek())
	}
	return v, nil
}

// side is which address of a pair a primitive looks at.
type side int

const (
	either side = iota
	srcSide
	dstSide
)

var gcTypes = map[string]uint8{
	"bfc_pause": uint8(wire.TypeBFCPause), "bfc_resume": uint8(wire.TypeBFCResume), "bfc_bitmap": uint8(wire.TypeBFCBitmap),
	"sfc_bts": uint8(wire.TypeSFCBTS), "xp_credit": uint8(wire.TypeXPCredit), "xp_request": uint8(wire.TypeXPRequest), "xp_stop": uint8(wire.TypeXPStop),
}

var protoNames = map[string]uint8{"icmp": 1, "tcp": 6, "udp": 17, "icmp6": 58}

func (c *compiler) primitive() (node, error) {
	t := c.next()
	sd := either
	if t == "src" || t == "dst" {
		sd = map[string]side{"src": srcSide, "dst": dstSide}[t]
		t = c.next()
		if t != "host" && t != "net" && t != "port" {
			return nil, fmt.Errorf("filter: src/dst goes with host, net or port, not %q", t)
		}
	}
	switch t {
	case "rx", "inbound":
		return func(f *frameInfo) bool { return f.dir == Rx }, nil
	case "tx", "outbound":
		return func(f *frameInfo) bool { return f.dir == Tx }, nil
	case "malformed":
		return func(f *frameInfo) bool { return f.err != pkt.OK }, nil
	case "arp":
		return func(f *frameInfo) bool { return f.err == pkt.OK && f.p.EthType == 0x0806 }, nil
	case "ip":
		return func(f *frameInfo) bool { return f.err == pkt.OK && f.p.Flags&pkt.FlagIPv4 != 0 }, nil
	case "ip6":
		return func(f *frameInfo) bool { return f.err == pkt.OK && f.p.Flags&pkt.FlagIPv6 != 0 }, nil
	case "tcp", "udp", "icmp", "icmp6":
		proto := protoNames[t]
		return func(f *frameInfo) bool { return f.err == pkt.OK && f.p.Proto == proto }, nil
	case "vlan":
		id, ok, err := c.optNumber(4095)
		if err != nil {
			return nil, err
		}
		return func(f *frameInfo) bool {
			return f.err == pkt.OK && f.p.Flags&pkt.FlagTagged != 0 && (!ok || uint64(f.p.VLAN) == id)
		}, nil
	case "gc":
		want, ok := -1, false
		if n := c.peek(); n != "" {
			if v, known := gcTypes[strings.ToLower(n)]; known {
				c.next()
				want, ok = int(v), true
			} else if n[0] >= '0' && n[0] <= '9' {
				v, err := c.number("gc", 255)
				if err != nil {
					return nil, err
				}
				want, ok = int(v), true
			}
		}
		return func(f *frameInfo) bool {
			ty, is := gcType(f)
			return is && (!ok || int(ty) == want)
		}, nil
	case "bfc", "sfc", "xp":
		r := map[string][2]uint8{"bfc": {1, 15}, "sfc": {16, 31}, "xp": {32, 47}}[t]
		lo, hi := r[0], r[1]
		return func(f *frameInfo) bool {
			ty, is := gcType(f)
			return is && ty >= lo && ty <= hi
		}, nil
	case "tag":
		q, ok, err := c.optNumber(4095)
		if err != nil {
			return nil, err
		}
		return func(f *frameInfo) bool {
			return f.err == pkt.OK && f.p.Flags&pkt.FlagUpQ != 0 && (!ok || uint64(f.p.UpQ) == q)
		}, nil
	case "gsperf":
		return func(f *frameInfo) bool {
			return gsperf.Header(udpPayload(f)).Known()
		}, nil
	case "host":
		a := c.next()
		ip, err := netip.ParseAddr(a)
		if err != nil {
			return nil, fmt.Errorf("filter: host needs an IPv4 or IPv6 address, not %q", a)
		}
		pfx := netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen())
		return addrMatch(pfx, sd), nil
	case "net":
		a := c.next()
		pfx, err := netip.ParsePrefix(a)
		if err != nil {
			return nil, fmt.Errorf("filter: net needs a prefix such as 10.1.0.0/16, not %q", a)
		}
		return addrMatch(pfx.Masked(), sd), nil
	case "port":
		n, err := c.number("port", 65535)
		if err != nil {
			return nil, err
		}
		return func(f *frameInfo) bool {
			if f.err != pkt.OK || f.p.L4Off == 0 || (f.p.Proto != pkt.ProtoTCP && f.p.Proto != pkt.ProtoUDP) {
				return false
			}
			o := int(f.p.L4Off)
			sp, dp := uint64(binary.BigEndian.Uint16(f.data[o:])), uint64(binary.BigEndian.Uint16(f.data[o+2:]))
			return (sd != dstSide && sp == n) || (sd != srcSide && dp == n)
		}, nil
	case "ether":
		switch w := c.next(); w {
		case "proto":
			n, err := c.number("ether proto", 0xffff)
			if err != nil {
				return nil, err
			}
			return func(f *frameInfo) bool { return f.err == pkt.OK && uint64(f.p.EthType) == n }, nil
		case "src", "dst", "host":
			a := c.next()
			mac, err := net.ParseMAC(a)
			if err != nil || len(mac) != 6 {
				return nil, fmt.Errorf("filter: ether %s needs a MAC address such as 02:00:00:00:00:01, not %q", w, a)
			}
			return func(f *frameInfo) bool {
				if len(f.data) < 12 {
					return false
				}
				d, s := string(f.data[0:6]), string(f.data[6:12])
				return (w != "src" && d == string(mac)) || (w != "dst" && s == string(mac))
			}, nil
		default:
			return nil, fmt.Errorf("filter: ether takes src, dst, host or proto, not %q", w)
		}
	case "proto":
		a := c.peek()
		var n uint64
		if v, ok := protoNames[a]; ok {
			c.next()
			n = uint64(v)
		} else {
			var err error
			if n, err = c.number("proto", 255); err != nil {
				return nil, err
			}
		}
		return func(f *frameInfo) bool {
			return f.err == pkt.OK && f.p.Flags&(pkt.FlagIPv4|pkt.FlagIPv6) != 0 && uint64(f.p.Proto) == n
		}, nil
	case "dscp":
		n, err := c.number("dscp", 63)
		if err != nil {
			return nil, err
		}
		return func(f *frameInfo) bool {
			return f.err == pkt.OK && f.p.Flags&(pkt.FlagIPv4|pkt.FlagIPv6) != 0 && uint64(f.p.DSCP()) == n
		}, nil
	case "len":
		op := c.next()
		cmp, ok := map[string]func(a, b uint64) bool{
			"<": func(a, b uint64) bool { return a < b }, "<=": func(a, b uint64) bool { return a <= b },
			">": func(a, b uint64) bool { return a > b }, ">=": func(a, b uint64) bool { return a >= b },
			"==": func(a, b uint64) bool { return a == b }, "=": func(a, b uint64) bool { return a == b },
			"!=": func(a, b uint64) bool { return a != b },
		}[op]
		if !ok {
			return nil, fmt.Errorf("filter: len takes <, <=, >, >=, == or != and a number, not %q", op)
		}
		n, err := c.number("len "+op, 1<<20)
		if err != nil {
			return nil, err
		}
		return func(f *frameInfo) bool { return cmp(uint64(len(f.data)), n) }, nil
	}
	return nil, fmt.Errorf("filter: unknown primitive %q (see gswitchctl capture -h for the list)", t)
}

// addrs returns the frame's source and destination IP addresses (ARP: the
// sender and target protocol addresses).
func addrs(f *frameInfo) (src, dst netip.Addr, ok bool) {
	if f.err != pkt.OK || f.p.L3Off == 0 {
		return
	}
	o, d := int(f.p.L3Off), f.data
	switch {
	case f.p.Flags&pkt.FlagIPv4 != 0 && len(d) >= o+20:
		return netip.AddrFrom4([4]byte(d[o+12 : o+16])), netip.AddrFrom4([4]byte(d[o+16 : o+20])), true
	case f.p.Flags&pkt.FlagIPv6 != 0 && len(d) >= o+40:
		return netip.AddrFrom16([16]byte(d[o+8 : o+24])), netip.AddrFrom16([16]byte(d[o+24 : o+40])), true
	case f.p.EthType == 0x0806 && len(d) >= o+28 && d[o+5] == 4:
		return netip.AddrFrom4([4]byte(d[o+14 : o+18])), netip.AddrFrom4([4]byte(d[o+24 : o+28])), true
	}
	return
}

func addrMatch(pfx netip.Prefix, sd side) node {
	return func(f *frameInfo) bool {
		s, d, ok := addrs(f)
		if !ok {
			return false
		}
		return (sd != dstSide && pfx.Contains(s)) || (sd != srcSide && pfx.Contains(d))
	}
}

// udpPayload returns the UDP payload of an unfragmented UDP datagram.
func udpPayload(f *frameInfo) []byte {
	if f.err != pkt.OK || f.p.Proto != pkt.ProtoUDP || f.p.L4Off == 0 || len(f.data) < int(f.p.L4Off)+8 {
		return nil
	}
	return f.data[int(f.p.L4Off)+8:]
}

// gcType returns the type of a GC message carried by the frame, over
// EtherType 0x88B6 or at the start of a UDP payload.
func gcType(f *frameInfo) (uint8, bool) {
	if f.err != pkt.OK {
		return 0, false
	}
	var m []byte
	if f.p.EthType == wire.EtherType {
		m = f.data[l2Len(f.data):]
	} else {
		m = udpPayload(f)
	}
	if len(m) < wire.HeaderLen || m[0] != 'G' || m[1] != 'C' || m[2] != wire.Version {
		return 0, false
	}
	return m[3], true
}

// l2Len is the length of the Ethernet header with its tags (of a frame
// pkt.Parse accepted).
func l2Len(d []byte) int {
	off := 12
	et := binary.BigEndian.Uint16(d[off:])
	if et == wire.TagTPID {
		off += 4
		et = binary.BigEndian.Uint16(d[off:])
	}
	for i := 0; i < 2 && (et == 0x8100 || et == 0x88a8); i++ {
		off += 4
		et = binary.BigEndian.Uint16(d[off:])
	}
	return off + 2
}
