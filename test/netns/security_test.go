package netns

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gswitch/gswitch/topo"
	"github.com/gswitch/gswitch/wire"
	"golang.org/x/sys/unix"
)

// The tests in this file are attacks a host makes on other hosts through
// a real gswitchd, with frames it crafts by hand (raw sockets), each
// checked where it would land: a BTS in two fragments at the victim's BTS
// socket, spoofed sources at the receiver, crowding and takeover ARP at
// the switch's neighbour table. They use only what the switch offered
// before the attacks were stopped, so they run against an older gswitchd
// too (GSWITCH_TEST_GSWITCHD), where each fails on what the attack
// achieved; the switch's counters of each attempt are checked last.

// secTopology brings up one L3 switch (gswitchd) with a host per entry of
// hosts (name: address/prefix), each on a port of its own, and takes it
// down when the test ends.
func secTopology(t *testing.T, hosts ...string) *topo.Running {
	t.Helper()
	requireNetns(t)
	var b strings.Builder
	fmt.Fprintf(&b, "name: x%s\nmode: l3\nmetrics_base: %d\ndefaults: {switch: {workers: 1}}\nswitches: {sw: {}}\nhosts:\n", randID()[:5], secFreePort(t)-1)
	for _, h := range hosts {
		name, addr, _ := strings.Cut(h, ":")
		fmt.Fprintf(&b, "  %s: {addr: %s}\n", name, addr)
	}
	b.WriteString("links:\n")
	for _, h := range hosts {
		name, _, _ := strings.Cut(h, ":")
		fmt.Fprintf(&b, "  - {a: %s, b: sw}\n", name)
	}
	tp, err := topo.Parse([]byte(b.String()))
	if err != nil {
		t.Fatalf("topology: %v\n%s", err, b.String())
	}
	return upTopology(t, tp, topo.UpOptions{})
}

// secFreePort is a free TCP port on 127.0.0.1 (the switch's metrics port
// is the topology's metrics_base + 1).
func secFreePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// secIn runs f on a thread in host h's namespace; sockets f opens stay in
// that namespace (the thread is never returned: it ends with the goroutine).
func secIn(h *topo.RunningHost, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		ns, err := os.Open("/var/run/netns/" + h.Namespace)
		if err != nil {
			errc <- err
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	return <-errc
}

// secSendIP sends IPv4 packets (whole, headers included, as given) from
// host h: a raw socket with IP_HDRINCL, which lets the host forge any
// source address and fragment as it likes.
//
// The kernel holds raw IP until it has resolved the gateway's MAC, and
// drops what it holds if the resolution fails (three ARP probes a second
// apart): callers ping across the switch first (secResolved), so that the
// packets leave at once and a slow first ARP cannot lose them.
func secSendIP(t *testing.T, h *topo.RunningHost, pkts ...[]byte) {
	t.Helper()
	err := secIn(h, func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		for _, p := range pkts {
			if err := unix.Sendto(fd, p, 0, &unix.SockaddrInet4{Addr: [4]byte(p[16:20])}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("raw IP from %s: %v", h.Name, err)
	}
}

// secSendEth sends Ethernet frames from host h's interface (AF_PACKET),
// with their source MAC as given; mac is the interface's own.
// secResolved pings dst from host h once, so that h has resolved its
// gateway's MAC before the test's raw packets (secSendIP); a failure is
// the fabric's, before the test's scenario.
func secResolved(t *testing.T, r *topo.Running, h string, dst netip.Addr) {
	t.Helper()
	if out, err := r.Exec(context.Background(), h, "ping", "-c", "1", "-W", "3", dst.String()).CombinedOutput(); err != nil {
		t.Fatalf("%s cannot reach %s across the switch before the test: %v\n%s", h, dst, err, out)
	}
}

func secSendEth(t *testing.T, h *topo.RunningHost, frames func(mac [6]byte) [][]byte) {
	t.Helper()
	err := secIn(h, func() error {
		ifc, err := net.InterfaceByName(h.Interface)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		to := &unix.SockaddrLinklayer{Ifindex: ifc.Index, Halen: 6}
		for _, f := range frames([6]byte(ifc.HardwareAddr)) {
			if err := unix.Sendto(fd, f, 0, to); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("raw Ethernet from %s: %v", h.Name, err)
	}
}

// secListen opens a UDP socket on port in host h's namespace.
func secListen(t *testing.T, h *topo.RunningHost, port int) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	err := secIn(h, func() (err error) {
		c, err = net.ListenUDP("udp4", &net.UDPAddr{Port: port})
		return err
	})
	if err != nil {
		t.Fatalf("listen on %s:%d: %v", h.Name, port, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// secReceive reads what c receives within d.
func secReceive(c *net.UDPConn, d time.Duration) (got [][]byte, from []netip.AddrPort) {
	c.SetReadDeadline(time.Now().Add(d))
	b := make([]byte, 2048)
	for {
		n, a, err := c.ReadFromUDPAddrPort(b)
		if err != nil {
			return got, from
		}
		got = append(got, append([]byte(nil), b[:n]...))
		from = append(from, a)
	}
}

// secIPv4 is an IPv4 header (no options) of a UDP packet from src to dst
// with plen bytes of payload, IP id id, fragment offset off (bytes, a
// multiple of 8) and MF if more; checksum filled in.
func secIPv4(src, dst netip.Addr, plen int, id uint16, off int, more bool) []byte {
	h := make([]byte, 20)
	h[0], h[8], h[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(h[2:], uint16(20+plen))
	binary.BigEndian.PutUint16(h[4:], id)
	fo := uint16(off / 8)
	if more {
		fo |= 0x2000
	}
	binary.BigEndian.PutUint16(h[6:], fo)
	s, d := src.As4(), dst.As4()
	copy(h[12:], s[:])
	copy(h[16:], d[:])
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(h[10:], ^uint16(sum))
	return h
}

// secUDP is a UDP header and payload (checksum 0).
func secUDP(sport, dport uint16, payload []byte) []byte {
	u := make([]byte, 8, 8+len(payload))
	binary.BigEndian.PutUint16(u[0:], sport)
	binary.BigEndian.PutUint16(u[2:], dport)
	binary.BigEndian.PutUint16(u[4:], uint16(8+len(payload)))
	return append(u, payload...)
}

// secMetric reads one sample of a switch's metrics (0 if absent).
func secMetric(t *testing.T, r *topo.Running, sample string) float64 {
	t.Helper()
	m, err := scrape(r.Switches[0].Metrics)
	if err != nil {
		t.Fatal(err)
	}
	return m[sample]
}

// TestSecurityFragmentedBTS (issue 24, finding 1): host a sends host v a
// BTS that would pause v's flow to r for 71 minutes, split in two IPv4
// fragments: the first holds only the UDP header (to port 19020), the
// second the GC message, so that neither carries a whole GC header. v
// listens on 19020, as gsperf -mode sfc does. Its kernel must receive
// nothing there: the switch drops the first fragments as forged (without
// them v cannot rebuild the datagram), and counts them. Other fragmented
// traffic between the hosts (a large ping) still goes through.
func TestSecurityFragmentedBTS(t *testing.T) {
	r := secTopology(t, "a:10.61.1.1/24", "v:10.61.2.1/24", "r:10.61.3.1/24")
	a, v := r.Host("a"), r.Host("v")
	bts := secListen(t, v, wire.BTSPort)
	quote := append(secIPv4(v.Addr.Addr(), netip.MustParseAddr("10.61.3.1"), 8+64, 0, 0, false), secUDP(40000, 5500, make([]byte, 64))...)
	msg := make([]byte, 256)
	n, err := wire.PutBTS(msg, wire.BTS{Flags: wire.BTSCacheable, Pause: 0xffffffff, Switch: 1, Quote: quote[:20+8+16]})
	if err != nil {
		t.Fatal(err)
	}
	dgram := secUDP(wire.BTSPort, wire.BTSPort, msg[:n])
	const tries = 3
	var pkts [][]byte
	for i := range tries {
		id := uint16(0x4000 + i)
		pkts = append(pkts,
			append(secIPv4(a.Addr.Addr(), v.Addr.Addr(), 8, id, 0, true), dgram[:8]...),
			append(secIPv4(a.Addr.Addr(), v.Addr.Addr(), len(dgram)-8, id, 8, false), dgram[8:]...))
	}
	secResolved(t, r, "a", v.Addr.Addr())
	secSendIP(t, a, pkts...)
	got, from := secReceive(bts, 1500*time.Millisecond)
	for i, m := range got {
		b, err := wire.ParseBTS(m)
		t.Errorf("v's BTS socket received %d bytes from %s: a BTS pausing its flow for %d us (%v)", len(m), from[i], b.Pause, err)
	}
	if out, err := r.Exec(context.Background(), "a", "ping", "-c", "2", "-i", "0.2", "-W", "2", "-s", "3000", v.Addr.Addr().String()).CombinedOutput(); err != nil {
		t.Errorf("a fragmented ping from a to v: %v\n%s", err, out)
	}
	if f := secMetric(t, r, `gswitch_control_forged_total{kind="sfc_bts",port="a"}`); f != tries {
		t.Errorf("forged BTS counted on a's port: %v, want %d", f, tries)
	}
}

// TestSecuritySpoofedSource (issue 24, finding 2): host a sends r UDP
// datagrams with host v's address as their source (what makes a congested
// switch send v a BTS about a flow of a's), and some with its own. r must
// receive a's own only; the switch counts the others as spoofed on a's
// port (the source guard a routed host port has by default).
func TestSecuritySpoofedSource(t *testing.T) {
	r := secTopology(t, "a:10.62.1.1/24", "v:10.62.2.1/24", "r:10.62.3.1/24")
	a, v, rh := r.Host("a"), r.Host("v"), r.Host("r")
	c := secListen(t, rh, 7777)
	const n = 5
	var pkts [][]byte
	for i := range 2 * n {
		src := a.Addr.Addr()
		if i%2 == 1 {
			src = v.Addr.Addr()
		}
		u := secUDP(7000, 7777, []byte(fmt.Sprintf("datagram %d from %s", i, src)))
		pkts = append(pkts, append(secIPv4(src, rh.Addr.Addr(), len(u), uint16(i+1), 0, false), u...))
	}
	secResolved(t, r, "a", rh.Addr.Addr())
	secSendIP(t, a, pkts...)
	got, from := secReceive(c, 1500*time.Millisecond)
	own := 0
	for i := range got {
		if from[i].Addr() != a.Addr.Addr() {
			t.Errorf("r received %q from %s, sent by a", got[i], from[i])
			continue
		}
		own++
	}
	if own != n {
		t.Errorf("r received %d of a's %d datagrams from its own address", own, n)
	}
	if d := secMetric(t, r, `gswitch_drops_total{port="a",reason="spoofed"}`); d != n {
		t.Errorf("spoofed drops on a's port: %v, want %d", d, n)
	}
}

// secCrowding returns addresses of base/plen, none of them victim or in
// skip, that fill the 16 slots of victim's probe path in an empty
// neighbour table of 4096 slots hashed as it was before the table was
// keyed (the first slot of ip's path: ip x 2^64/phi >> 52), when learnt in
// order: what a host on that subnet could compute. (As
// dataplane/l3.crowdingAddrs, whose test shows 17 on a /20.)
func secCrowding(victim, base uint32, plen int, skip ...uint32) []uint32 {
	const bits = 12
	mask := uint64(1)<<bits - 1
	home := func(ip uint32) uint64 { return uint64(ip) * 0x9e3779b97f4a7c15 >> (64 - bits) }
	h := home(victim)
	before := func(ip uint32) uint64 { return (h + 15 - home(ip)) & mask }
	fills := func(ips []uint32) bool {
		used := map[uint64]bool{}
		for _, ip := range ips {
			for p := uint64(0); p < 16; p++ {
				if s := (home(ip) + p) & mask; !used[s] {
					used[s] = true
					break
				}
			}
		}
		for p := uint64(0); p < 16; p++ {
			if !used[(h+p)&mask] {
				return false
			}
		}
		return true
	}
	var ips []uint32
	for i := uint32(0); i < 1<<(32-plen); i++ {
		if ip := base + i; ip != victim && !slices.Contains(skip, ip) && before(ip) < 80 {
			ips = append(ips, ip)
		}
	}
	slices.SortFunc(ips, func(a, b uint32) int { return int(before(b)) - int(before(a)) })
	if !fills(ips) {
		return nil
	}
	for i := 0; i < len(ips); {
		if less := slices.Delete(slices.Clone(ips), i, i+1); fills(less) {
			ips = less
		} else {
			i++
		}
	}
	return ips
}

func secU32(a netip.Addr) uint32 { b := a.As4(); return binary.BigEndian.Uint32(b[:]) }

func secAddr(u uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], u)
	return netip.AddrFrom4(b)
}

// secARP is an ARP frame (op 1 request, 2 reply) from sha/spa to tha/tpa,
// broadcast.
func secARP(op uint16, sha [6]byte, spa netip.Addr, tha [6]byte, tpa netip.Addr) []byte {
	f := make([]byte, 60)
	copy(f[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(f[6:12], sha[:])
	binary.BigEndian.PutUint16(f[12:], 0x0806)
	a := f[14:]
	binary.BigEndian.PutUint16(a[0:], 1)
	binary.BigEndian.PutUint16(a[2:], 0x0800)
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:], op)
	s, d := spa.As4(), tpa.As4()
	copy(a[8:], sha[:])
	copy(a[14:], s[:])
	copy(a[18:], tha[:])
	copy(a[24:], d[:])
	return f
}

// secPing pings dst from host h; nil if an answer came.
func secPing(r *topo.Running, h, dst string) error {
	out, err := r.Exec(context.Background(), h, "ping", "-c", "3", "-i", "0.2", "-W", "1", dst).CombinedOutput()
	if err != nil {
		return errors.New(strings.TrimSpace(string(out)))
	}
	return nil
}

// TestSecurityARP (issue 24, finding 4): host a, on a /20, sends
// gratuitous ARPs for addresses computed to fill the probe path of a
// server's address (a second address of v's) in the neighbour table as it
// was hashed before it was keyed (17 in an empty table, 16 here, where the
// hosts' static entries take a slot); the server must still be reachable. Then
// another host on v's link (frames from v's interface with another MAC)
// claims a bound address of v's by gratuitous ARP, by a reply and by a
// request for the gateway; the switch must keep sending to v. The switch
// counts the ARP it ignored.
func TestSecurityARP(t *testing.T) {
	r := secTopology(t, "a:10.63.0.1/20", "v:10.64.0.1/24", "c:10.65.0.1/24")
	a, v := r.Host("a"), r.Host("v")
	server, taken := netip.MustParseAddr("10.64.0.77"), netip.MustParseAddr("10.64.0.88")
	for _, ip := range []netip.Addr{server, taken} {
		if out, err := r.Exec(context.Background(), "v", "ip", "addr", "add", ip.String()+"/24", "dev", v.Interface).CombinedOutput(); err != nil {
			t.Fatalf("v: a second address: %v\n%s", err, out)
		}
	}
	gw := secAddr(secU32(a.Addr.Masked().Addr()) | 1<<(32-a.Addr.Bits()) - 2) // the switch's address on a's /20
	crowd := secCrowding(secU32(server), secU32(a.Addr.Masked().Addr()), a.Addr.Bits(), secU32(a.Addr.Addr()), secU32(gw))
	if len(crowd) == 0 || len(crowd) > 20 {
		t.Fatalf("%d addresses of %s crowd %s's path", len(crowd), a.Addr.Masked(), server)
	}
	secSendEth(t, a, func(mac [6]byte) (fs [][]byte) {
		for _, ip := range crowd {
			fs = append(fs, secARP(1, mac, secAddr(ip), [6]byte{}, secAddr(ip)))
		}
		return fs
	})
	time.Sleep(200 * time.Millisecond)
	if err := secPing(r, "c", server.String()); err != nil {
		t.Errorf("after %d gratuitous ARPs from a, c cannot reach %s: %v", len(crowd), server, err)
	}
	// The takeover: v's second address is bound (c reaches it), then a
	// thief on v's link claims it.
	if err := secPing(r, "c", taken.String()); err != nil {
		t.Fatalf("c cannot reach %s before the takeover: %v", taken, err)
	}
	thief := [6]byte{0x02, 0x66, 0x66, 0x66, 0x66, 0x66}
	vgw := secAddr(secU32(v.Addr.Masked().Addr()) | 1<<(32-v.Addr.Bits()) - 2)
	secSendEth(t, v, func([6]byte) [][]byte {
		return [][]byte{
			secARP(1, thief, taken, [6]byte{}, taken),
			secARP(2, thief, taken, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, vgw),
			secARP(1, thief, taken, [6]byte{}, vgw),
		}
	})
	time.Sleep(200 * time.Millisecond)
	if err := secPing(r, "c", taken.String()); err != nil {
		t.Errorf("after ARP from another MAC on v's link, c cannot reach %s: %v", taken, err)
	}
	if u := secMetric(t, r, `gswitch_arp_total{result="unsolicited"}`); u < float64(len(crowd)) {
		t.Errorf("unsolicited ARP counted: %v, want at least %d", u, len(crowd))
	}
	if m := secMetric(t, r, `gswitch_arp_total{result="move_refused"}`); m < 3 {
		t.Errorf("move_refused ARP counted: %v, want at least 3", m)
	}
}
