package netns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// xdpProg is the XDP program `ip -d -j link show` reports on an interface.
type xdpProg struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
	Tag  string `json:"tag"`
}

// attachedXDP returns the XDP program on dev (nil if none), as iproute2 sees it.
func attachedXDP(t *testing.T, dev string) *xdpProg {
	t.Helper()
	var links []struct {
		XDP *struct {
			Prog *xdpProg `json:"prog"`
		} `json:"xdp"`
	}
	if err := json.Unmarshal([]byte(run(t, "ip", "-d", "-j", "link", "show", "dev", dev)), &links); err != nil || len(links) != 1 {
		t.Fatalf("ip -d -j link show dev %s: %v (%d links)", dev, err, len(links))
	}
	if links[0].XDP == nil {
		return nil
	}
	return links[0].XDP.Prog
}

// plantForeign attaches a minimal XDP_PASS program, which is not
// gswitchd's, to dev through netlink (`ip link set dev X <mode> pinned`,
// as tools without bpf_link do), in mode xdpdrv or xdpgeneric. t.Cleanup
// removes it if it is still there.
func plantForeign(t *testing.T, dev, mode string) *xdpProg {
	t.Helper()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "foreign_pass", Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2 /* XDP_PASS */), asm.Return()},
	})
	if err != nil {
		t.Fatalf("loading the foreign XDP program: %v", err)
	}
	defer prog.Close() // the attachment keeps it alive
	pin := filepath.Join(bpffs(t), "gswitch-foreign-"+randID())
	if err := prog.Pin(pin); err != nil {
		t.Fatalf("pinning the foreign XDP program: %v", err)
	}
	defer prog.Unpin()
	run(t, "ip", "link", "set", "dev", dev, mode, "pinned", pin)
	p := attachedXDP(t, dev)
	if p == nil || p.Name != "foreign_pass" {
		t.Fatalf("the foreign program is not on %s: %+v", dev, p)
	}
	t.Cleanup(func() {
		if now := attachedXDP(t, dev); now != nil && now.ID == p.ID {
			exec.Command("ip", "link", "set", "dev", dev, mode, "off").Run()
		}
	})
	return p
}

// bpffs returns a BPF file system to pin in: /sys/fs/bpf if it is one,
// else a private mount that t.Cleanup removes.
func bpffs(t *testing.T) string {
	t.Helper()
	const bpfFSMagic = 0xcafe4a11
	var st unix.Statfs_t
	if unix.Statfs("/sys/fs/bpf", &st) == nil && st.Type == bpfFSMagic {
		return "/sys/fs/bpf"
	}
	dir := t.TempDir()
	run(t, "mount", "-t", "bpf", "bpf", dir)
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir
}

// runGswitchdToExit runs gswitchd with one port per host and metrics off,
// and returns its output once it exits (it is killed after 5 s).
func runGswitchdToExit(t *testing.T, tp *Topo) (string, error) {
	t.Helper()
	var b strings.Builder
	b.WriteString("metrics: \"off\"\nports:\n")
	for i, h := range tp.Hosts {
		fmt.Fprintf(&b, "  - name: p%d\n    interface: %s\n", i+1, h.Port)
	}
	cfg := filepath.Join(t.TempDir(), "gswitchd.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, gswitchdBin, "-config", cfg).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("gswitchd did not exit within 5 s with a foreign XDP program on a port:\n%s", out)
	}
	return string(out), err
}

// TestRefusesForeignProgram puts an XDP program that is not gswitchd's on
// a switch port, in native and in generic mode, and checks that gswitchd
// refuses to start, names the program in its error, and leaves it there
// (and nothing of its own on the other port).
func TestRefusesForeignProgram(t *testing.T) {
	for _, mode := range []struct{ ip, word string }{{"xdpdrv", "native"}, {"xdpgeneric", "generic"}} {
		t.Run(mode.word, func(t *testing.T) {
			tp := NewTopo(t, 2)
			dev := tp.Hosts[1].Port // the second port: the first is set up by then
			foreign := plantForeign(t, dev, mode.ip)

			out, err := runGswitchdToExit(t, tp)
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("gswitchd with a foreign XDP program on %s: %v, want a failed exit\n%s", dev, err, out)
			}
			t.Logf("gswitchd: %v\n%s", err, out)
			for _, want := range []string{
				dev, fmt.Sprintf("id %d", foreign.ID), `"foreign_pass"`, "tag " + foreign.Tag, mode.word + " mode",
				fmt.Sprintf("ip link set dev %s %s off", dev, mode.ip),
			} {
				if !strings.Contains(out, want) {
					t.Errorf("%q is missing from gswitchd's error:\n%s", want, out)
				}
			}
			if now := attachedXDP(t, dev); now == nil || now.ID != foreign.ID {
				t.Errorf("the foreign program %d is no longer on %s: %+v", foreign.ID, dev, now)
			}
			if p := attachedXDP(t, tp.Hosts[0].Port); p != nil {
				t.Errorf("gswitchd left a program on %s after failing: %+v", tp.Hosts[0].Port, p)
			}
		})
	}
}
