package bpf

import (
	"errors"
	"fmt"

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
func Load() (*Port, error) { return LoadWith(Options{}) }

// Options choose how the program is loaded.
type Options struct {
	// Frags loads the program as one that handles multi-buffer frames
	// (BPF_F_XDP_HAS_FRAGS, Linux 5.18+). An interface whose MTU makes
	// frames longer than a page takes only such a program in native mode
	// (veth refuses the others). The program reads no packet data, so
	// frames in several buffers need nothing else of it; the AF_XDP socket
	// takes them as chains when bound with XDP_USE_SG.
	Frags bool
}

// LoadWith loads a fresh copy of the program and its XSKMAP with opts.
func LoadWith(opts Options) (*Port, error) {
	spec, err := loadXdp()
	if err != nil {
		return nil, fmt.Errorf("loading XDP program: %w", err)
	}
	if opts.Frags {
		for _, ps := range spec.Programs {
			ps.Flags |= unix.BPF_F_XDP_HAS_FRAGS
		}
	}
	p := &Port{}
	if err := spec.LoadAndAssign(&p.objs, nil); err != nil {
		if opts.Frags {
			return nil, fmt.Errorf("loading XDP program for multi-buffer frames (needs Linux 5.18 or later): %w", err)
		}
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
// mode first and falls back to generic mode.
//
// If the interface already carries an XDP program, Attach asks the kernel
// which one. It removes it only if it is gswitchd's own program (see
// AttachedProgram.Ours) attached through netlink: a leftover, which
// nothing runs. Any other program (someone else's, or gswitchd's held by
// the bpf_link of a running gswitchd) stays, and Attach fails with an
// *InUseError naming it, without trying another mode.
func (p *Port) Attach(ifindex int, mode Mode) error {
	modes := []Mode{mode}
	if mode == ModeAuto {
		modes = []Mode{ModeNative, ModeGeneric}
	}
	var errs []error
	for _, m := range modes {
		l, err := p.attach(ifindex, m)
		if busy(err) {
			l, err = p.replaceStale(ifindex, m, err)
			if inUse := (*InUseError)(nil); errors.As(err, &inUse) {
				return fmt.Errorf("attaching XDP program: %w", err)
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

// busy reports whether attaching failed because of a program already there:
// EBUSY in the same mode, EEXIST in the other one (native and generic
// cannot both be active).
func busy(err error) bool { return errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EEXIST) }

// replaceStale handles an attach in mode m that failed with attachErr
// because of a program already on the interface: it removes that program
// and attaches again if the program is a stale copy of gswitchd's, and
// returns an *InUseError otherwise.
func (p *Port) replaceStale(ifindex int, m Mode, attachErr error) (link.Link, error) {
	found, err := inspectXDP(ifindex)
	if err != nil {
		return nil, fmt.Errorf("%w (could not see which program is attached: %v)", attachErr, err)
	}
	defer func() {
		for _, f := range found {
			f.prog.Close()
		}
	}()
	if len(found) == 0 {
		return nil, fmt.Errorf("%w (the kernel reports no XDP program on the interface itself; does a master device, e.g. a bond, carry one?)", attachErr)
	}
	for _, f := range found {
		if !replaceable(f.AttachedProgram) {
			return nil, &InUseError{Prog: f.AttachedProgram}
		}
	}
	for _, f := range found {
		flags := uint32(unix.XDP_FLAGS_DRV_MODE)
		if f.Mode == ModeGeneric {
			flags = unix.XDP_FLAGS_SKB_MODE
		}
		// EXPECTED_FD: remove this program and no other, should it have
		// been replaced since we looked.
		if err := setLinkXDP(ifindex, -1, int32(f.prog.FD()), flags|unix.XDP_FLAGS_REPLACE); err != nil {
			if errors.Is(err, unix.EBUSY) {
				err = fmt.Errorf("%w (another process holds an XDP link on this interface: is another gswitchd running?)", err)
			}
			return nil, fmt.Errorf("removing gswitchd's stale XDP program id %d (%s mode) from %s: %w", f.ID, f.Mode, f.Interface, err)
		}
	}
	l, err := p.attach(ifindex, m)
	if busy(err) {
		err = fmt.Errorf("%w (a program came back after gswitchd removed its stale one: is another gswitchd starting?)", err)
	}
	return l, err
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
// mode, whoever it belongs to (Attach does not use it: it removes only
// gswitchd's own stale program). It cannot remove a program held by a
// bpf_link: the kernel refuses with EBUSY, which is what protects a running
// gswitchd.
func DetachNetlink(ifindex int) error {
	var errs []error
	for _, flags := range []uint32{unix.XDP_FLAGS_DRV_MODE, unix.XDP_FLAGS_SKB_MODE} {
		if err := setLinkXDP(ifindex, -1, -1, flags); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
