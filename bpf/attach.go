package bpf

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Mode selects the XDP attach point.
type Mode int

const (
	// ModeAuto tries native (driver) mode and falls back to generic mode.
	ModeAuto Mode = iota
	// ModeNative attaches in the driver's receive path (veth supports it, in copy mode).
	ModeNative
	// ModeGeneric attaches after the skb is built; works on every device.
	ModeGeneric
)

func (m Mode) String() string {
	switch m {
	case ModeNative:
		return "native"
	case ModeGeneric:
		return "generic"
	default:
		return "auto"
	}
}

// ParseMode turns "auto", "native" or "generic" into a Mode.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", "auto":
		return ModeAuto, nil
	case "native", "drv", "driver":
		return ModeNative, nil
	case "generic", "skb":
		return ModeGeneric, nil
	}
	return ModeAuto, fmt.Errorf("unknown XDP mode %q (want auto, native or generic)", s)
}

// Port is the XDP program of one switch port: the program, its XSKMAP and,
// once attached, the bpf_link that keeps it on the interface. The kernel
// removes a bpf_link's program when its last file descriptor closes, so a
// gswitchd killed with SIGKILL leaves no program behind.
//
// A Port is set up and closed by one goroutine (gswitchd's main goroutine).
type Port struct {
	objs xdpObjects
	lnk  link.Link
	Mode Mode // the mode the program was attached in (ModeNative or ModeGeneric)
}

// Load loads a fresh copy of the program and its XSKMAP into the kernel.
func Load() (*Port, error) {
	p := &Port{}
	if err := loadXdpObjects(&p.objs, nil); err != nil {
		return nil, fmt.Errorf("loading XDP program: %w", err)
	}
	return p, nil
}

// Register points rx queue q of the port at the AF_XDP socket fd.
func (p *Port) Register(q int, fd int) error {
	if err := p.objs.Xsks.Put(uint32(q), uint32(fd)); err != nil {
		return fmt.Errorf("XSKMAP[%d] = socket %d: %w", q, fd, err)
	}
	return nil
}

// Attach links the program to the interface. With ModeAuto it tries native
// mode first and falls back to generic mode. A program left on the
// interface by an earlier process that attached it through netlink (not a
// bpf_link) is removed first; a live bpf_link of another process is not
// touched and Attach fails.
func (p *Port) Attach(ifindex int, mode Mode) error {
	modes := []Mode{mode}
	if mode == ModeAuto {
		modes = []Mode{ModeNative, ModeGeneric}
	}
	var errs []error
	for _, m := range modes {
		l, err := p.attach(ifindex, m)
		if errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EEXIST) {
			// Something is attached. If it is a plain (netlink) program,
			// it is stale: remove it and try again.
			if derr := DetachNetlink(ifindex); derr == nil {
				l, err = p.attach(ifindex, m)
			}
			if errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EEXIST) {
				err = fmt.Errorf("%w (another process holds an XDP link on this interface: is another gswitchd running?)", err)
			}
		}
		if err == nil {
			p.lnk, p.Mode = l, m
			return nil
		}
		errs = append(errs, fmt.Errorf("%s mode: %w", m, err))
	}
	return fmt.Errorf("attaching XDP program to ifindex %d: %w", ifindex, errors.Join(errs...))
}

func (p *Port) attach(ifindex int, m Mode) (link.Link, error) {
	flags := link.XDPDriverMode
	if m == ModeGeneric {
		flags = link.XDPGenericMode
	}
	return link.AttachXDP(link.XDPOptions{Program: p.objs.XdpRedirectXsk, Interface: ifindex, Flags: flags})
}

// Map returns the XSKMAP (for tests and diagnostics).
func (p *Port) Map() *ebpf.Map { return p.objs.Xsks }

// Close detaches the program and releases the map.
func (p *Port) Close() error {
	var errs []error
	if p.lnk != nil {
		errs = append(errs, p.lnk.Close())
		p.lnk = nil
	}
	errs = append(errs, p.objs.Close())
	return errors.Join(errs...)
}

// DetachNetlink removes an XDP program attached through netlink (as
// `ip link set dev X xdp obj ...` or libxdp do) in both native and generic
// mode. It cannot remove a program held by a bpf_link: the kernel refuses
// with EBUSY, which is what protects a running gswitchd.
func DetachNetlink(ifindex int) error {
	var errs []error
	for _, flags := range []uint32{unix.XDP_FLAGS_DRV_MODE, unix.XDP_FLAGS_SKB_MODE} {
		if err := setLinkXDP(ifindex, -1, flags); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// setLinkXDP sends RTM_SETLINK with IFLA_XDP {FD, FLAGS}.
func setLinkXDP(ifindex int, fd int32, flags uint32) error {
	s, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return os.NewSyscallError("socket(NETLINK_ROUTE)", err)
	}
	defer unix.Close(s)

	attr := func(b []byte, typ uint16, payload []byte) []byte {
		l := 4 + len(payload)
		b = append(b, byte(l), byte(l>>8), byte(typ), byte(typ>>8))
		b = append(b, payload...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		return b
	}
	le32 := func(v uint32) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }

	var xdp []byte
	xdp = attr(xdp, unix.IFLA_XDP_FD, le32(uint32(fd)))
	xdp = attr(xdp, unix.IFLA_XDP_FLAGS, le32(flags))
	var body []byte
	// struct ifinfomsg: family, pad, type(u16), index(i32), flags(u32), change(u32)
	body = append(body, unix.AF_UNSPEC, 0, 0, 0)
	body = append(body, le32(uint32(ifindex))...)
	body = append(body, le32(0)...)
	body = append(body, le32(0)...)
	body = attr(body, unix.IFLA_XDP|unix.NLA_F_NESTED, xdp)

	msg := make([]byte, 0, 16+len(body))
	n := uint32(16 + len(body))
	msg = append(msg, le32(n)...)
	msg = append(msg, byte(unix.RTM_SETLINK), 0)
	fl := uint16(unix.NLM_F_REQUEST | unix.NLM_F_ACK)
	msg = append(msg, byte(fl), byte(fl>>8))
	msg = append(msg, le32(1)...) // seq
	msg = append(msg, le32(0)...) // pid
	msg = append(msg, body...)
	if err := unix.Sendto(s, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return os.NewSyscallError("sendto(RTM_SETLINK)", err)
	}
	buf := make([]byte, 4096)
	nr, _, err := unix.Recvfrom(s, buf, 0)
	if err != nil {
		return os.NewSyscallError("recvfrom(netlink)", err)
	}
	if nr >= 20 && uint16(buf[4])|uint16(buf[5])<<8 == unix.NLMSG_ERROR {
		code := int32(uint32(buf[16]) | uint32(buf[17])<<8 | uint32(buf[18])<<16 | uint32(buf[19])<<24)
		if code != 0 {
			return fmt.Errorf("RTM_SETLINK IFLA_XDP: %w", unix.Errno(-code))
		}
	}
	return nil
}
