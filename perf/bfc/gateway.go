package bfc

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// GatewayMAC returns the MAC of the host's IPv4 default gateway, from the
// kernel's routing table and ARP cache (/proc/net/route, /proc/net/arp):
// in an L3 fabric, the switch port the host's link ends on. It reports
// false when there is no default route or its gateway is not resolved.
func GatewayMAC() ([6]byte, bool) {
	rt, err := os.Open("/proc/net/route")
	if err != nil {
		return [6]byte{}, false
	}
	defer rt.Close()
	gw, ok := defaultGateway(rt)
	if !ok {
		return [6]byte{}, false
	}
	arp, err := os.Open("/proc/net/arp")
	if err != nil {
		return [6]byte{}, false
	}
	defer arp.Close()
	return arpEntry(arp, gw)
}

// defaultGateway reads /proc/net/route's format: the gateway of the
// default route (destination and mask 0, flags RTF_UP|RTF_GATEWAY),
// addresses in hex in the kernel's byte order.
func defaultGateway(r io.Reader) (netip.Addr, bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 || f[1] != "00000000" || f[7] != "00000000" {
			continue
		}
		flags, err1 := strconv.ParseUint(f[3], 16, 16)
		gw, err2 := hex.DecodeString(f[2])
		if err1 != nil || err2 != nil || len(gw) != 4 || flags&3 != 3 {
			continue
		}
		var a [4]byte
		binary.NativeEndian.PutUint32(a[:], binary.BigEndian.Uint32(gw))
		return netip.AddrFrom4(a), true
	}
	return netip.Addr{}, false
}

// arpEntry reads /proc/net/arp's format: the MAC of a complete entry
// (flags with ATF_COM, 0x2) for ip.
func arpEntry(r io.Reader, ip netip.Addr) ([6]byte, bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[0] != ip.String() {
			continue
		}
		flags, err := strconv.ParseUint(strings.TrimPrefix(f[2], "0x"), 16, 16)
		mac, err2 := net.ParseMAC(f[3])
		if err != nil || err2 != nil || flags&2 == 0 || len(mac) != 6 {
			continue
		}
		return [6]byte(mac), true
	}
	return [6]byte{}, false
}
