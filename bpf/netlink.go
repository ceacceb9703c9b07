package bpf

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// The hand-written rtnetlink below covers the two requests Attach needs:
// RTM_GETLINK to read which XDP programs an interface carries, and
// RTM_SETLINK with IFLA_XDP to remove a program attached through netlink.

// IFLA_XDP_ATTACHED values (include/uapi/linux/if_link.h).
const (
	xdpAttachedDrv = 1
	xdpAttachedSkb = 2
	xdpAttachedHw  = 3
)

// xdpState is the IFLA_XDP part of an RTM_NEWLINK reply: the program id in
// each attach point (0 when none).
type xdpState struct {
	Ifname string
	Drv    uint32 // native (driver) mode
	Skb    uint32 // generic mode
	HW     uint32 // offloaded to the NIC
}

var le = binary.LittleEndian

// nlAttr appends one netlink attribute (header, payload, padding to 4 bytes).
func nlAttr(b []byte, typ uint16, payload []byte) []byte {
	l := 4 + len(payload)
	b = le.AppendUint16(b, uint16(l))
	b = le.AppendUint16(b, typ)
	b = append(b, payload...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// nlAttrs calls fn for each well-formed attribute in b, the flag bits
// (nested, byte order) cleared from its type. It stops at the first
// malformed one.
func nlAttrs(b []byte, fn func(typ uint16, val []byte)) {
	for len(b) >= 4 {
		l := int(le.Uint16(b[0:2]))
		if l < 4 || l > len(b) {
			return
		}
		fn(le.Uint16(b[2:4])&^(unix.NLA_F_NESTED|unix.NLA_F_NET_BYTEORDER), b[4:l])
		l = (l + 3) &^ 3
		if l > len(b) {
			return
		}
		b = b[l:]
	}
}

// ifinfomsg returns struct ifinfomsg for ifindex: family, pad, type(u16),
// index(i32), flags(u32), change(u32).
func ifinfomsg(ifindex int) []byte {
	b := []byte{unix.AF_UNSPEC, 0, 0, 0}
	b = le.AppendUint32(b, uint32(ifindex))
	b = le.AppendUint32(b, 0)
	return le.AppendUint32(b, 0)
}

// routeRequest sends one request on a fresh NETLINK_ROUTE socket and waits
// for its answer: the payload of the first reply that is not an error or an
// ack (nil for a bare ack), or the error the kernel sent, with the kernel's
// extended-ack message when it gave one.
func routeRequest(typ uint16, flags uint16, body []byte) ([]byte, error) {
	s, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, os.NewSyscallError("socket(NETLINK_ROUTE)", err)
	}
	defer unix.Close(s)
	// Ask for the kernel's error text and a capped copy of our request in errors.
	unix.SetsockoptInt(s, unix.SOL_NETLINK, unix.NETLINK_EXT_ACK, 1)
	unix.SetsockoptInt(s, unix.SOL_NETLINK, unix.NETLINK_CAP_ACK, 1)

	const seq = 1
	msg := make([]byte, 0, unix.NLMSG_HDRLEN+len(body))
	msg = le.AppendUint32(msg, uint32(unix.NLMSG_HDRLEN+len(body)))
	msg = le.AppendUint16(msg, typ)
	msg = le.AppendUint16(msg, flags|unix.NLM_F_REQUEST)
	msg = le.AppendUint32(msg, seq)
	msg = le.AppendUint32(msg, 0) // pid: the kernel
	msg = append(msg, body...)
	if err := unix.Sendto(s, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, os.NewSyscallError("sendto(netlink)", err)
	}
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(s, buf, 0)
		if err != nil {
			return nil, os.NewSyscallError("recvfrom(netlink)", err)
		}
		payload, done, err := parseReply(buf[:n], seq)
		if done {
			return payload, err
		}
	}
}

// parseReply looks through one datagram of netlink messages for the answer
// to request seq. done is false when the datagram holds no such answer.
func parseReply(b []byte, seq uint32) (payload []byte, done bool, err error) {
	for len(b) >= unix.NLMSG_HDRLEN {
		l := int(le.Uint32(b[0:4]))
		if l < unix.NLMSG_HDRLEN || l > len(b) {
			return nil, true, fmt.Errorf("netlink: malformed reply (message length %d, %d bytes left)", l, len(b))
		}
		typ, flags := le.Uint16(b[4:6]), le.Uint16(b[6:8])
		m := b[:l]
		b = b[min((l+3)&^3, len(b)):]
		if le.Uint32(m[8:12]) != seq {
			continue
		}
		switch typ {
		case unix.NLMSG_ERROR:
			if l < unix.NLMSG_HDRLEN+4 {
				return nil, true, fmt.Errorf("netlink: short error message")
			}
			code := int32(le.Uint32(m[16:20]))
			if code == 0 {
				return nil, true, nil
			}
			err := error(unix.Errno(-code))
			if text := extAckMsg(m, flags); text != "" {
				err = fmt.Errorf("%w (%s)", err, text)
			}
			return nil, true, err
		case unix.NLMSG_DONE:
			return nil, true, nil
		case unix.NLMSG_NOOP:
			continue
		default:
			return append([]byte(nil), m[unix.NLMSG_HDRLEN:]...), true, nil
		}
	}
	return nil, false, nil
}

// extAckMsg returns the NLMSGERR_ATTR_MSG text of an error message, if any.
func extAckMsg(m []byte, flags uint16) string {
	if flags&unix.NLM_F_ACK_TLVS == 0 {
		return ""
	}
	// nlmsghdr, error code, then the request's header (and its payload unless capped).
	off := unix.NLMSG_HDRLEN + 4 + unix.NLMSG_HDRLEN
	if off > len(m) {
		return ""
	}
	if flags&unix.NLM_F_CAPPED == 0 {
		off += int(le.Uint32(m[unix.NLMSG_HDRLEN+4:])) - unix.NLMSG_HDRLEN
		off = (off + 3) &^ 3
		if off > len(m) {
			return ""
		}
	}
	var text string
	nlAttrs(m[off:], func(typ uint16, val []byte) {
		if typ == unix.NLMSGERR_ATTR_MSG {
			text = cString(val)
		}
	})
	return text
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// getLinkXDP asks the kernel (RTM_GETLINK) which XDP programs ifindex carries.
func getLinkXDP(ifindex int) (xdpState, error) {
	reply, err := routeRequest(unix.RTM_GETLINK, 0, ifinfomsg(ifindex))
	if err != nil {
		return xdpState{}, fmt.Errorf("RTM_GETLINK ifindex %d: %w", ifindex, err)
	}
	return parseLinkXDP(reply)
}

// parseLinkXDP reads the interface name and IFLA_XDP out of the payload of
// an RTM_NEWLINK message.
func parseLinkXDP(b []byte) (xdpState, error) {
	const ifinfomsgLen = 16
	var st xdpState
	if len(b) < ifinfomsgLen {
		return st, fmt.Errorf("RTM_GETLINK: reply of %d bytes, want at least %d", len(b), ifinfomsgLen)
	}
	nlAttrs(b[ifinfomsgLen:], func(typ uint16, val []byte) {
		switch typ {
		case unix.IFLA_IFNAME:
			st.Ifname = cString(val)
		case unix.IFLA_XDP:
			var attached uint8
			var prog uint32
			u32 := func(v []byte) uint32 {
				if len(v) < 4 {
					return 0
				}
				return le.Uint32(v)
			}
			nlAttrs(val, func(typ uint16, v []byte) {
				switch typ {
				case unix.IFLA_XDP_ATTACHED:
					if len(v) > 0 {
						attached = v[0]
					}
				case unix.IFLA_XDP_PROG_ID:
					prog = u32(v)
				case unix.IFLA_XDP_DRV_PROG_ID:
					st.Drv = u32(v)
				case unix.IFLA_XDP_SKB_PROG_ID:
					st.Skb = u32(v)
				case unix.IFLA_XDP_HW_PROG_ID:
					st.HW = u32(v)
				}
			})
			// Kernels before 4.19 report only ATTACHED and PROG_ID.
			if st.Drv == 0 && st.Skb == 0 && st.HW == 0 {
				switch attached {
				case xdpAttachedDrv:
					st.Drv = prog
				case xdpAttachedSkb:
					st.Skb = prog
				case xdpAttachedHw:
					st.HW = prog
				}
			}
		}
	})
	return st, nil
}

// setLinkXDP sends RTM_SETLINK with IFLA_XDP {FD, FLAGS} (and EXPECTED_FD
// when flags has XDP_FLAGS_REPLACE: the kernel then acts only if that
// program is the one attached, and answers EEXIST otherwise).
func setLinkXDP(ifindex int, fd, expectedFD int32, flags uint32) error {
	var xdp []byte
	xdp = nlAttr(xdp, unix.IFLA_XDP_FD, le.AppendUint32(nil, uint32(fd)))
	xdp = nlAttr(xdp, unix.IFLA_XDP_FLAGS, le.AppendUint32(nil, flags))
	if flags&unix.XDP_FLAGS_REPLACE != 0 {
		xdp = nlAttr(xdp, unix.IFLA_XDP_EXPECTED_FD, le.AppendUint32(nil, uint32(expectedFD)))
	}
	body := nlAttr(ifinfomsg(ifindex), unix.IFLA_XDP|unix.NLA_F_NESTED, xdp)
	if _, err := routeRequest(unix.RTM_SETLINK, unix.NLM_F_ACK, body); err != nil {
		return fmt.Errorf("RTM_SETLINK IFLA_XDP: %w", err)
	}
	return nil
}
