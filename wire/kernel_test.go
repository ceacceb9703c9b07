//go:build linux

package wire

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestKernelAcceptsRoutedFrames writes built BTS, credit, XP_REQUEST and
// XP_STOP frames into a tap device of a fresh network namespace and receives
// them on ordinary UDP sockets: Linux's IPv4 and UDP input (header checksum,
// lengths, route and address checks, checksum 0) accepts them, with the
// DSCP they were given. A BTS with a broken header checksum, sent first, must
// not arrive: that is what shows the kernel checks what this test relies on.
func TestKernelAcceptsRoutedFrames(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates a network namespace and a tap device")
	}
	type result struct {
		skip string
		errs []string
	}
	done := make(chan result)
	go func() {
		// The goroutine keeps its thread locked until it returns, so the
		// thread exits then, and the namespace (and the tap, closed before)
		// goes with it whatever happens.
		runtime.LockOSThread()
		skip, errs := kernelAccepts()
		done <- result{skip, errs}
	}()
	r := <-done
	if r.skip != "" {
		t.Skip(r.skip)
	}
	for _, e := range r.errs {
		t.Error(e)
	}
}

func kernelAccepts() (skip string, errs []string) {
	fail := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return fmt.Sprintf("no network namespace: unshare: %v", err), nil
	}
	tun, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Sprintf("no tap devices: %v", err), nil
	}
	defer unix.Close(tun)
	name := fmt.Sprintf("gsw%08x", rand.Uint32())
	local, peer := [4]byte{192, 0, 2, 1}, [4]byte{192, 0, 2, 2}
	ctl, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		fail("socket: %v", err)
		return
	}
	defer unix.Close(ctl)
	ifreq := func(req uint, set func(*unix.Ifreq)) error {
		ifr, err := unix.NewIfreq(name)
		if err != nil {
			return err
		}
		if set != nil {
			set(ifr)
		}
		fd := ctl
		if req == unix.TUNSETIFF {
			fd = tun
		}
		return unix.IoctlIfreq(fd, req, ifr)
	}
	for _, step := range []struct {
		what string
		req  uint
		set  func(*unix.Ifreq)
	}{
		{"create tap", unix.TUNSETIFF, func(r *unix.Ifreq) { r.SetUint16(unix.IFF_TAP | unix.IFF_NO_PI) }},
		{"address", unix.SIOCSIFADDR, func(r *unix.Ifreq) { r.SetInet4Addr(local[:]) }},
		{"netmask", unix.SIOCSIFNETMASK, func(r *unix.Ifreq) { r.SetInet4Addr([]byte{255, 255, 255, 0}) }},
		{"up", unix.SIOCSIFFLAGS, func(r *unix.Ifreq) { r.SetUint16(unix.IFF_UP) }},
	} {
		if err := ifreq(step.req, step.set); err != nil {
			fail("%s %s: %v", step.what, name, err)
			return
		}
	}
	ifc, err := net.InterfaceByName(name) // the thread is in the namespace
	if err != nil || len(ifc.HardwareAddr) != 6 {
		fail("tap MAC: %v", err)
		return
	}
	macs := MACs{Dst: [6]byte(ifc.HardwareAddr), Src: [6]byte{0x02, 0x77, 0, 0, 0, 2}}

	listen := func(port int) (int, error) {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_RECVTOS, 1)
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 2})
		if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: local}); err != nil {
			unix.Close(fd)
			return -1, err
		}
		return fd, nil
	}
	// expect receives one datagram on fd and checks it is frame's message,
	// from the frame's source, with its TOS.
	expect := func(what string, fd int, frame []byte) {
		f, msg, err := ParseIPv4UDP(frame)
		if err != nil {
			fail("%s: built frame does not parse: %v", what, err)
			return
		}
		if _, err := unix.Write(tun, frame); err != nil {
			fail("%s: write to tap: %v", what, err)
			return
		}
		buf, oob := make([]byte, 2048), make([]byte, 128)
		n, oobn, _, from, err := unix.Recvmsg(fd, buf, oob, 0)
		if err != nil {
			fail("%s: the kernel did not deliver it: %v", what, err)
			return
		}
		if !bytes.Equal(buf[:n], msg) {
			fail("%s: received %x, sent %x", what, buf[:n], msg)
		}
		if sa, ok := from.(*unix.SockaddrInet4); !ok || sa.Addr != f.Src || sa.Port != int(f.SrcPort) {
			fail("%s: from %+v, want %v:%d", what, from, f.Src, f.SrcPort)
		}
		tos := -1
		cmsgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
		for _, c := range cmsgs {
			if c.Header.Level == unix.IPPROTO_IP && c.Header.Type == unix.IP_TOS && len(c.Data) > 0 {
				tos = int(c.Data[0])
			}
		}
		if tos != int(f.TOS) {
			fail("%s: TOS %d, sent %d", what, tos, f.TOS)
		}
	}

	// SFC BTS about a packet this namespace sent to the peer.
	btsFd, err := listen(BTSPort)
	if err != nil {
		fail("listen %d: %v", BTSPort, err)
		return
	}
	defer unix.Close(btsFd)
	original := orig(false, 20, 17, 0x4000, 200, cat(udpHdr, gsperf16, filler))
	copy(original[26:30], local[:])
	copy(original[30:34], peer[:])
	frame := make([]byte, MaxBTSFrameLen)
	n, err := BuildBTS(frame, macs, DefaultBTSDSCP, original, 14, 34, BTS{Pause: 1})
	if err != nil {
		fail("BuildBTS: %v", err)
		return
	}
	bad := bytes.Clone(frame[:n])
	bad[UDPFrameLen+HeaderLen+3] = 99 // pause 99 us: must never arrive
	bad[24] ^= 0x40                   // break the IPv4 header checksum
	if _, err := unix.Write(tun, bad); err != nil {
		fail("write to tap: %v", err)
	}
	expect("BTS (after one with a bad checksum)", btsFd, frame[:n])

	// ExpressPass: a credit for a flow this namespace sends, and a request and
	// stop for a flow it receives.
	flowOut := FiveTuple{Src: local, Dst: peer, SrcPort: 5000, DstPort: 6000}
	flowIn := FiveTuple{Src: peer, Dst: local, SrcPort: 7000, DstPort: 6001}
	creditFd, err := listen(5000)
	if err != nil {
		fail("listen 5000: %v", err)
		return
	}
	defer unix.Close(creditFd)
	xpFd, err := listen(6001)
	if err != nil {
		fail("listen 6001: %v", err)
		return
	}
	defer unix.Close(xpFd)
	if n, err = BuildCredit(frame, macs, DefaultCreditDSCP, flowOut, Credit{Seq: 1, SentTime: 2}); err != nil {
		fail("BuildCredit: %v", err)
		return
	}
	expect("credit", creditFd, frame[:n])
	if n, err = BuildXPRequest(frame, macs, flowIn, XPRequest{FlowID: 9, Size: 1 << 20}); err != nil {
		fail("BuildXPRequest: %v", err)
		return
	}
	expect("XP_REQUEST", xpFd, frame[:n])
	if n, err = BuildXPStop(frame, macs, flowIn, XPStop{FlowID: 9}); err != nil {
		fail("BuildXPStop: %v", err)
		return
	}
	expect("XP_STOP", xpFd, frame[:n])
	return "", errs
}
