package bpf

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// newVeth makes a veth pair with a random name and returns the ifindex of
// one end; t.Cleanup deletes it (and with it any XDP program on it).
func newVeth(t *testing.T) (string, int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates a veth and loads XDP programs")
	}
	b := make([]byte, 3)
	rand.Read(b)
	name := "gsb" + hex.EncodeToString(b)
	if out, err := exec.Command("ip", "link", "add", name+"a", "type", "veth", "peer", "name", name+"b").CombinedOutput(); err != nil {
		t.Skipf("cannot create a veth (ip link add: %v: %s)", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "link", "del", name+"a").Run() })
	for _, n := range []string{name + "a", name + "b"} {
		if out, err := exec.Command("ip", "link", "set", n, "up").CombinedOutput(); err != nil {
			t.Fatalf("ip link set %s up: %v: %s", n, err, out)
		}
	}
	ifc, err := net.InterfaceByName(name + "a")
	if err != nil {
		t.Fatal(err)
	}
	return ifc.Name, ifc.Index
}

// foreignProg loads a minimal XDP_PASS program that is not gswitchd's.
func foreignProg(t *testing.T) *ebpf.Program {
	t.Helper()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "foreign_pass", Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2 /* XDP_PASS */), asm.Return()},
	})
	if err != nil {
		t.Fatalf("loading a test XDP program: %v", err)
	}
	t.Cleanup(func() { prog.Close() })
	return prog
}

func modeFlags(m Mode) uint32 {
	if m == ModeGeneric {
		return unix.XDP_FLAGS_SKB_MODE
	}
	return unix.XDP_FLAGS_DRV_MODE
}

// attachNetlink attaches prog the old way (no bpf_link, as `ip link set
// ... xdp` does) and removes exactly it, if still there, at cleanup.
func attachNetlink(t *testing.T, ifindex int, prog *ebpf.Program, m Mode) {
	t.Helper()
	if err := setLinkXDP(ifindex, int32(prog.FD()), -1, modeFlags(m)); err != nil {
		t.Fatalf("attaching through netlink in %s mode: %v", m, err)
	}
	// The cleanup needs its own handle: prog's may be closed by then.
	own, err := prog.Clone()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		setLinkXDP(ifindex, -1, int32(own.FD()), modeFlags(m)|unix.XDP_FLAGS_REPLACE)
		own.Close()
	})
}

func progID(t *testing.T, p *ebpf.Program) ebpf.ProgramID {
	t.Helper()
	info, err := p.Info()
	if err != nil {
		t.Fatal(err)
	}
	id, ok := info.ID()
	if !ok {
		t.Fatal("the kernel does not report program ids")
	}
	return id
}

func load(t *testing.T) *Port {
	t.Helper()
	p, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func only(t *testing.T, ifindex int) AttachedProgram {
	t.Helper()
	progs, err := AttachedPrograms(ifindex)
	if err != nil {
		t.Fatal(err)
	}
	if len(progs) != 1 {
		t.Fatalf("want one XDP program on ifindex %d, found %+v", ifindex, progs)
	}
	return progs[0]
}

func TestLoadedProgramName(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: loads the XDP program")
	}
	p := load(t)
	info, err := p.objs.XdpRedirectXsk.Info()
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != ProgramName && info.Name != kernelName(ProgramName) {
		t.Fatalf("gswitchd's program reads back as %q, ProgramName is %q", info.Name, ProgramName)
	}
}

// A program that is not gswitchd's stays on the interface, in either mode,
// and Attach names it.
func TestAttachRefusesForeign(t *testing.T) {
	for _, m := range []Mode{ModeNative, ModeGeneric} {
		t.Run(m.String(), func(t *testing.T) {
			name, ifindex := newVeth(t)
			foreign := foreignProg(t)
			attachNetlink(t, ifindex, foreign, m)
			id := progID(t, foreign)

			for _, want := range []Mode{ModeAuto, ModeNative, ModeGeneric} {
				err := load(t).Attach(ifindex, want)
				var inUse *InUseError
				if !errors.As(err, &inUse) {
					t.Fatalf("Attach(%s) with a foreign program in %s mode: %v, want an InUseError", want, m, err)
				}
				a := inUse.Prog
				if a.ID != id || a.Name != "foreign_pass" || a.Mode != m || a.Interface != name || a.Link != 0 || a.Tag == "" || a.Ours() {
					t.Errorf("Attach(%s): the error describes %+v", want, a)
				}
				for _, s := range []string{name, fmt.Sprintf("id %d", id), `"foreign_pass"`, a.Tag, m.String() + " mode"} {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("Attach(%s): %q is missing from %q", want, s, err)
					}
				}
				if got := only(t, ifindex); got.ID != id || got.Mode != m {
					t.Fatalf("after Attach(%s) the interface has %+v, want the foreign program %d in %s mode", want, got, id, m)
				}
			}
		})
	}
}

// A program held by another process's bpf_link stays too.
func TestAttachRefusesForeignLink(t *testing.T) {
	_, ifindex := newVeth(t)
	foreign := foreignProg(t)
	l, err := link.AttachXDP(link.XDPOptions{Program: foreign, Interface: ifindex, Flags: link.XDPGenericMode})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	linfo, err := l.Info()
	if err != nil {
		t.Fatal(err)
	}
	err = load(t).Attach(ifindex, ModeAuto)
	var inUse *InUseError
	if !errors.As(err, &inUse) {
		t.Fatalf("Attach with a foreign bpf_link: %v, want an InUseError", err)
	}
	me := fmt.Sprintf("pid %d ", os.Getpid())
	if a := inUse.Prog; a.ID != progID(t, foreign) || a.Link != linfo.ID || len(a.Holders) != 1 || !strings.HasPrefix(a.Holders[0], me) {
		t.Errorf("the error describes %+v; want link %d held by %s", a, linfo.ID, me)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("bpf_link %d", linfo.ID)) || strings.Contains(err.Error(), "another gswitchd") {
		t.Errorf("error text: %v", err)
	}
	if got := only(t, ifindex); got.ID != progID(t, foreign) {
		t.Fatalf("the foreign program is gone: %+v", got)
	}
}

// gswitchd's own program left through netlink is replaced, in either mode;
// once attached through its bpf_link, a second Attach is refused as
// "another gswitchd".
func TestAttachReplacesStaleOwn(t *testing.T) {
	for _, m := range []Mode{ModeNative, ModeGeneric} {
		t.Run(m.String(), func(t *testing.T) {
			name, ifindex := newVeth(t)
			stale := load(t)
			attachNetlink(t, ifindex, stale.objs.XdpRedirectXsk, m)
			staleID := progID(t, stale.objs.XdpRedirectXsk)
			if a := only(t, ifindex); a.ID != staleID || !a.Ours() || !replaceable(a) || a.Mode != m {
				t.Fatalf("the stale program looks like %+v", a)
			}
			stale.Close() // as its process would have, exiting

			p := load(t)
			if err := p.Attach(ifindex, ModeAuto); err != nil {
				t.Fatalf("Attach over a stale program in %s mode: %v", m, err)
			}
			a := only(t, ifindex)
			if a.ID != progID(t, p.objs.XdpRedirectXsk) || a.Mode != p.Mode || a.Link == 0 || !a.Ours() || replaceable(a) {
				t.Fatalf("after Attach the interface has %+v", a)
			}

			err := load(t).Attach(ifindex, ModeAuto)
			var inUse *InUseError
			if !errors.As(err, &inUse) || !inUse.Prog.Ours() || inUse.Prog.Link != a.Link {
				t.Fatalf("a second Attach: %v, want an InUseError for our link %d", err, a.Link)
			}
			me := fmt.Sprintf("pid %d ", os.Getpid())
			for _, s := range []string{name, "is another gswitchd running?", fmt.Sprintf("bpf_link %d", a.Link), me} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q is missing from %q", s, err)
				}
			}
			if got := only(t, ifindex); got.ID != a.ID {
				t.Fatalf("the first Port's program was replaced: %+v", got)
			}

			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			if progs, err := AttachedPrograms(ifindex); err != nil || len(progs) != 0 {
				t.Fatalf("after Close: %+v, %v", progs, err)
			}
		})
	}
}
