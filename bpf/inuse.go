package bpf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// ProgramName is the name of gswitchd's XDP program: its C function in
// xdp.c. The kernel keeps the first 15 characters (BPF_OBJ_NAME_LEN less
// the NUL); the full name is read back from the program's BTF when it was
// loaded with BTF. Attach takes a program of this name (either form) that
// uses an XSKMAP named "xsks" for its own.
const ProgramName = "xdp_redirect_xsk"

// kernelName is name as the kernel records it.
func kernelName(name string) string {
	if len(name) > 15 {
		return name[:15]
	}
	return name
}

// xskMapName is the XSKMAP of gswitchd's program (xdp.c).
const xskMapName = "xsks"

// AttachedProgram is an XDP program the kernel reports on an interface.
type AttachedProgram struct {
	Interface string
	Ifindex   int
	Mode      Mode           // ModeNative or ModeGeneric: where it is attached
	ID        ebpf.ProgramID // as bpftool and `ip link` show it
	Name      string         // from BTF if it has it, else as the kernel records it (15 characters at most)
	Tag       string         // hash of the program's instructions, in hex
	XSKMap    bool           // it uses an XSKMAP named "xsks", as gswitchd's program does
	Link      link.ID        // the bpf_link holding it; 0 if attached through netlink
	Holders   []string       // the processes holding Link open, as "pid 42 (gswitchd)"
}

// Ours reports whether the program is gswitchd's: its name and its XSKMAP.
// The tag is not compared, so a program left by an older build counts as
// ours too.
func (a AttachedProgram) Ours() bool {
	return (a.Name == ProgramName || a.Name == kernelName(ProgramName)) && a.XSKMap
}

// replaceable reports whether Attach may remove the program: only
// gswitchd's own, and only when attached through netlink. Such a program is
// a leftover (an earlier version, or `ip link set ... xdp obj xdp_bpfel.o`);
// a bpf_link belongs to a running process (the kernel would refuse anyway).
func replaceable(a AttachedProgram) bool { return a.Ours() && a.Link == 0 }

// ipLinkMode is the mode as `ip link set dev X <mode> off` and
// `bpftool net detach <mode> dev X` spell it.
func (a AttachedProgram) ipLinkMode() string {
	if a.Mode == ModeGeneric {
		return "xdpgeneric"
	}
	return "xdpdrv"
}

func (a AttachedProgram) holders() string {
	if len(a.Holders) == 0 {
		return fmt.Sprintf("no process (it is pinned in a BPF file system: `bpftool link show id %d`, then remove the pin)", a.Link)
	}
	return strings.Join(a.Holders, ", ")
}

// InUseError is what Attach returns (wrapped) when the interface carries an
// XDP program that Attach must not remove: another program, or gswitchd's
// own program held by a bpf_link (a running gswitchd).
type InUseError struct {
	Prog AttachedProgram
}

func (e *InUseError) Error() string {
	a := e.Prog
	if a.Ours() {
		return fmt.Sprintf("%s (ifindex %d) already runs gswitchd's XDP program (id %d %q, tag %s, %s mode) through bpf_link %d held by %s: another process holds an XDP link on this interface: is another gswitchd running?",
			a.Interface, a.Ifindex, a.ID, a.Name, a.Tag, a.Mode, a.Link, a.holders())
	}
	what := fmt.Sprintf("%s (ifindex %d) already has XDP program id %d %q (tag %s, %s mode", a.Interface, a.Ifindex, a.ID, a.Name, a.Tag, a.Mode)
	if a.Link != 0 {
		return fmt.Sprintf("%s, held by bpf_link %d of %s), which is not gswitchd's %q: gswitchd leaves it alone. It goes when its holder closes the link or exits",
			what, a.Link, a.holders(), ProgramName)
	}
	return fmt.Sprintf("%s, attached through netlink), which is not gswitchd's %q: gswitchd leaves it alone. If it is unused, remove it with `ip link set dev %s %s off` (or `bpftool net detach %s dev %s`) and start gswitchd again",
		what, ProgramName, a.Interface, a.ipLinkMode(), a.ipLinkMode(), a.Interface)
}

// AttachedPrograms returns the XDP programs attached to ifindex in native
// and generic mode (offloaded ones are left out: they do not conflict).
func AttachedPrograms(ifindex int) ([]AttachedProgram, error) {
	found, err := inspectXDP(ifindex)
	if err != nil {
		return nil, err
	}
	out := make([]AttachedProgram, len(found))
	for i, f := range found {
		out[i] = f.AttachedProgram
		f.prog.Close()
	}
	return out, nil
}

// inspected is an attached program and an open handle on it, which makes
// the removal exact (IFLA_XDP_EXPECTED_FD).
type inspected struct {
	AttachedProgram
	prog *ebpf.Program
}

// inspectXDP asks the kernel which programs ifindex carries, then each
// program's name, tag and maps, and which bpf_link (if any) holds it. The
// caller closes the handles.
func inspectXDP(ifindex int) ([]inspected, error) {
	st, err := getLinkXDP(ifindex)
	if err != nil {
		return nil, err
	}
	var found []inspected
	fail := func(err error) ([]inspected, error) {
		for _, f := range found {
			f.prog.Close()
		}
		return nil, err
	}
	for _, at := range []struct {
		mode Mode
		id   uint32
	}{{ModeNative, st.Drv}, {ModeGeneric, st.Skb}} {
		if at.id == 0 {
			continue
		}
		a := AttachedProgram{Interface: st.Ifname, Ifindex: ifindex, Mode: at.mode, ID: ebpf.ProgramID(at.id)}
		prog, err := ebpf.NewProgramFromID(a.ID)
		if errors.Is(err, os.ErrNotExist) {
			continue // detached (and freed) since the kernel answered
		}
		if err != nil {
			return fail(fmt.Errorf("opening XDP program id %d on %s: %w", a.ID, a.Interface, err))
		}
		info, err := prog.Info()
		if err != nil {
			prog.Close()
			return fail(fmt.Errorf("reading XDP program id %d on %s: %w", a.ID, a.Interface, err))
		}
		a.Name, a.Tag = info.Name, info.Tag
		a.XSKMap = hasXSKMap(info)
		found = append(found, inspected{a, prog})
	}
	if len(found) > 0 {
		findLinks(found)
	}
	return found, nil
}

// hasXSKMap reports whether the program uses an XSKMAP named "xsks".
func hasXSKMap(info *ebpf.ProgramInfo) bool {
	ids, _ := info.MapIDs()
	for _, id := range ids {
		m, err := ebpf.NewMapFromID(id)
		if err != nil {
			continue
		}
		mi, err := m.Info()
		m.Close()
		if err == nil && mi.Type == ebpf.XSKMap && mi.Name == xskMapName {
			return true
		}
	}
	return false
}

// findLinks fills in the bpf_link (and its holders) of each program that
// one holds. If walking the links fails part way, a program may look
// attached through netlink when it is not; removing it then fails with
// EBUSY, so nothing is lost but the detail in the error.
func findLinks(found []inspected) {
	var it link.Iterator
	defer it.Close()
	for it.Next() {
		info, err := it.Link.Info()
		if err != nil || info.Type != link.XDPType {
			continue
		}
		x := info.XDP()
		if x == nil {
			continue
		}
		for i := range found {
			if int(x.Ifindex) == found[i].Ifindex && info.Program == found[i].ID {
				found[i].Link = info.ID
				found[i].Holders = linkHolders(info.ID)
			}
		}
	}
}

// linkHolders lists the processes with a file descriptor on bpf_link id,
// as "pid 42 (gswitchd)", from /proc/*/fdinfo.
func linkHolders(id link.ID) []string {
	want := fmt.Sprintf("link_id:\t%d\n", id)
	procs, _ := os.ReadDir("/proc")
	var out []string
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join("/proc", p.Name())
		fds, _ := os.ReadDir(filepath.Join(dir, "fd"))
		for _, fd := range fds {
			if t, _ := os.Readlink(filepath.Join(dir, "fd", fd.Name())); t != "anon_inode:bpf_link" {
				continue
			}
			b, _ := os.ReadFile(filepath.Join(dir, "fdinfo", fd.Name()))
			if strings.Contains(string(b), want) {
				comm, _ := os.ReadFile(filepath.Join(dir, "comm"))
				out = append(out, fmt.Sprintf("pid %d (%s)", pid, strings.TrimSpace(string(comm))))
				break
			}
		}
	}
	return out
}
