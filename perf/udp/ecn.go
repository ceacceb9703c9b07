package udp

import (
	"encoding/binary"
	"fmt"
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The ECN field: the low two bits of the IPv4 TOS byte and of the IPv6
// traffic class (RFC 3168 section 5).
const (
	ecnMask = 0x03
	ect0    = 0x02 // ECN-capable transport, ECT(0): what a DCTCP sender sends
	ecnCE   = 0x03 // congestion experienced: what a marking switch (mech/ecn) sets
)

// oobLen is room for the control messages Serve asks for: one IP_TOS (a
// byte) or IPV6_TCLASS (an int), with slack for one more.
const oobLen = 64

// socketFamily is the address family of conn's socket: unix.AF_INET or
// unix.AF_INET6.
func socketFamily(conn *net.UDPConn) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0, err
	}
	var fam int
	var serr error
	if err := raw.Control(func(fd uintptr) { fam, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DOMAIN) }); err != nil {
		return 0, err
	}
	return fam, serr
}

// setsockopt sets an int option on conn's socket.
func setsockopt(conn *net.UDPConn, level, opt, v int) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), level, opt, v) }); err != nil {
		return err
	}
	return serr
}

// setECT makes every datagram conn sends ECN-capable, ECT(0), with DSCP 0
// (IP_TOS 0x02; IPV6_TCLASS 0x02 on an IPv6 socket, and IP_TOS too for the
// IPv4 destinations an IPv6 socket reaches through mapped addresses). The
// kernel leaves a UDP socket's ECN bits as they are set (it clears them
// only for TCP, whose stack owns them).
func setECT(conn *net.UDPConn) error {
	fam, err := socketFamily(conn)
	if err != nil {
		return fmt.Errorf("ECN-capable socket: %w", err)
	}
	if fam == unix.AF_INET6 {
		if err := setsockopt(conn, unix.IPPROTO_IPV6, unix.IPV6_TCLASS, ect0); err != nil {
			return fmt.Errorf("ECN-capable socket: IPV6_TCLASS: %w", err)
		}
		setsockopt(conn, unix.IPPROTO_IP, unix.IP_TOS, ect0) // mapped IPv4 destinations; the IPv6 setting is what matters
		return nil
	}
	if err := setsockopt(conn, unix.IPPROTO_IP, unix.IP_TOS, ect0); err != nil {
		return fmt.Errorf("ECN-capable socket: IP_TOS: %w", err)
	}
	return nil
}

// enableRecvECN asks the kernel to hand each datagram conn receives its
// ECN field, in a control message (IP_RECVTOS: IP_TOS; IPV6_RECVTCLASS:
// IPV6_TCLASS) that ecnOf reads. An IPv6 socket that also takes IPv4
// (every address) gets both: its IPv4 datagrams come with IP_TOS.
func enableRecvECN(conn *net.UDPConn) error {
	fam, err := socketFamily(conn)
	if err != nil {
		return fmt.Errorf("reading the ECN field: %w", err)
	}
	if fam == unix.AF_INET6 {
		if err := setsockopt(conn, unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS, 1); err != nil {
			return fmt.Errorf("reading the ECN field: IPV6_RECVTCLASS: %w", err)
		}
		setsockopt(conn, unix.IPPROTO_IP, unix.IP_RECVTOS, 1) // IPv4 on a dual-stack socket; refused where there is none
		return nil
	}
	if err := setsockopt(conn, unix.IPPROTO_IP, unix.IP_RECVTOS, 1); err != nil {
		return fmt.Errorf("reading the ECN field: IP_RECVTOS: %w", err)
	}
	return nil
}

// ecnOf returns the ECN field that the control messages in oob (as
// recvmsg filled them, after enableRecvECN) give a datagram, or 0 (not
// ECN-capable) if they give none. It reads the messages in place and
// allocates nothing.
func ecnOf(oob []byte) uint8 {
	hdr := unix.CmsgLen(0) // the header, aligned: where a message's data starts
	var h unix.Cmsghdr
	for len(oob) >= hdr {
		// Copied out rather than cast: oob need not be aligned for a Cmsghdr.
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&h)), unix.SizeofCmsghdr), oob)
		n := int(h.Len)
		if n < hdr || n > len(oob) {
			return 0
		}
		data := oob[hdr:n]
		switch {
		case h.Level == unix.IPPROTO_IP && h.Type == unix.IP_TOS && len(data) >= 1:
			return data[0] & ecnMask // Linux sends the TOS byte alone
		case h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_TCLASS && len(data) >= 4:
			return uint8(binary.NativeEndian.Uint32(data)) & ecnMask // an int
		}
		next := unix.CmsgSpace(n - hdr)
		if next > len(oob) {
			return 0
		}
		oob = oob[next:]
	}
	return 0
}
