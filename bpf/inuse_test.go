package bpf

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestReplaceable(t *testing.T) {
	ours := AttachedProgram{Name: ProgramName, XSKMap: true}
	for _, c := range []struct {
		name string
		a    AttachedProgram
		ours bool
		repl bool
	}{
		{"ours through netlink (stale)", ours, true, true},
		{"ours held by a bpf_link (running gswitchd)", AttachedProgram{Name: ProgramName, XSKMap: true, Link: 3}, true, false},
		{"other name through netlink", AttachedProgram{Name: "xdp_prog", XSKMap: true}, false, false},
		{"other name held by a link", AttachedProgram{Name: "xdp_prog", Link: 3}, false, false},
		{"our name but no xsks XSKMAP", AttachedProgram{Name: ProgramName}, false, false},
		{"no name recorded", AttachedProgram{XSKMap: true}, false, false},
		{"name cut by the kernel (no BTF)", AttachedProgram{Name: "xdp_redirect_xs", XSKMap: true}, true, true},
		{"a longer name with our first 15 characters", AttachedProgram{Name: "xdp_redirect_xsk2", XSKMap: true}, false, false},
		{"a shorter name", AttachedProgram{Name: "xdp_redirect_x", XSKMap: true}, false, false},
	} {
		if got := c.a.Ours(); got != c.ours {
			t.Errorf("%s: Ours() = %v, want %v", c.name, got, c.ours)
		}
		if got := replaceable(c.a); got != c.repl {
			t.Errorf("%s: replaceable = %v, want %v", c.name, got, c.repl)
		}
	}
}

// ProgramName must be the name of xdp.c's program function.
func TestProgramNameMatchesSource(t *testing.T) {
	src, err := os.ReadFile("xdp.c")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`SEC\("xdp"\)\s*int\s+(\w+)\s*\(`).FindSubmatch(src)
	if m == nil {
		t.Fatal(`no SEC("xdp") function in xdp.c`)
	}
	if name := string(m[1]); name != ProgramName {
		t.Fatalf("xdp.c's program is %q, ProgramName is %q", name, ProgramName)
	}
}

func TestInUseErrorText(t *testing.T) {
	for _, c := range []struct {
		name    string
		a       AttachedProgram
		want    []string
		notWant []string
	}{
		{"foreign generic through netlink",
			AttachedProgram{Interface: "veth-x", Ifindex: 7, Mode: ModeGeneric, ID: 42, Name: "xdp_pass", Tag: "0123456789abcdef"},
			[]string{"veth-x", "ifindex 7", "id 42", `"xdp_pass"`, "tag 0123456789abcdef", "generic mode", "attached through netlink",
				"`ip link set dev veth-x xdpgeneric off`", "`bpftool net detach xdpgeneric dev veth-x`", "not gswitchd's"},
			[]string{"another gswitchd"}},
		{"foreign native through netlink",
			AttachedProgram{Interface: "eth1", Ifindex: 2, Mode: ModeNative, ID: 5, Name: "fw", Tag: "aa"},
			[]string{"eth1", "id 5", `"fw"`, "native mode", "`ip link set dev eth1 xdpdrv off`", "`bpftool net detach xdpdrv dev eth1`"},
			[]string{"xdpgeneric"}},
		{"foreign held by a link",
			AttachedProgram{Interface: "eth1", Ifindex: 2, Mode: ModeNative, ID: 5, Name: "fw", Tag: "aa", Link: 9, Holders: []string{"pid 77 (fwd)"}},
			[]string{"eth1", "id 5", `"fw"`, "bpf_link 9", "pid 77 (fwd)", "not gswitchd's"},
			[]string{"ip link set", "another gswitchd"}},
		{"foreign link pinned",
			AttachedProgram{Interface: "eth1", Ifindex: 2, Mode: ModeNative, ID: 5, Name: "fw", Tag: "aa", Link: 9},
			[]string{"bpf_link 9", "pinned", "bpftool link show id 9"},
			nil},
		{"ours held by a link",
			AttachedProgram{Interface: "veth-x", Ifindex: 7, Mode: ModeNative, ID: 43, Name: ProgramName, Tag: "bb", XSKMap: true, Link: 4, Holders: []string{"pid 99 (gswitchd)"}},
			[]string{"veth-x", "id 43", "bpf_link 4", "pid 99 (gswitchd)", "is another gswitchd running?"},
			[]string{"ip link set", "not gswitchd's"}},
	} {
		msg := (&InUseError{Prog: c.a}).Error()
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %q is missing from\n%s", c.name, w, msg)
			}
		}
		for _, w := range c.notWant {
			if strings.Contains(msg, w) {
				t.Errorf("%s: %q should not be in\n%s", c.name, w, msg)
			}
		}
	}
}

// linkMsg builds the payload of an RTM_NEWLINK message: ifinfomsg, the
// name and an IFLA_XDP nest of the given attributes.
func linkMsg(name string, xdp ...[]byte) []byte {
	var nest []byte
	for _, a := range xdp {
		nest = append(nest, a...)
	}
	b := ifinfomsg(7)
	b = nlAttr(b, unix.IFLA_MTU, le.AppendUint32(nil, 1500))
	b = nlAttr(b, unix.IFLA_IFNAME, append([]byte(name), 0))
	return nlAttr(b, unix.IFLA_XDP|unix.NLA_F_NESTED, nest)
}

func u8Attr(typ uint16, v uint8) []byte   { return nlAttr(nil, typ, []byte{v}) }
func u32Attr(typ uint16, v uint32) []byte { return nlAttr(nil, typ, le.AppendUint32(nil, v)) }

func TestParseLinkXDP(t *testing.T) {
	for _, c := range []struct {
		name string
		msg  []byte
		want xdpState
	}{
		{"none", linkMsg("veth0", u8Attr(unix.IFLA_XDP_ATTACHED, 0)), xdpState{Ifname: "veth0"}},
		{"generic", linkMsg("veth0", u8Attr(unix.IFLA_XDP_ATTACHED, xdpAttachedSkb), u32Attr(unix.IFLA_XDP_PROG_ID, 9), u32Attr(unix.IFLA_XDP_SKB_PROG_ID, 9)),
			xdpState{Ifname: "veth0", Skb: 9}},
		{"native", linkMsg("eth1", u8Attr(unix.IFLA_XDP_ATTACHED, xdpAttachedDrv), u32Attr(unix.IFLA_XDP_DRV_PROG_ID, 11), u32Attr(unix.IFLA_XDP_PROG_ID, 11)),
			xdpState{Ifname: "eth1", Drv: 11}},
		{"native and offloaded", linkMsg("eth1", u32Attr(unix.IFLA_XDP_DRV_PROG_ID, 11), u32Attr(unix.IFLA_XDP_HW_PROG_ID, 12), u8Attr(unix.IFLA_XDP_ATTACHED, 4)),
			xdpState{Ifname: "eth1", Drv: 11, HW: 12}},
		{"old kernel: PROG_ID only", linkMsg("eth1", u8Attr(unix.IFLA_XDP_ATTACHED, xdpAttachedDrv), u32Attr(unix.IFLA_XDP_PROG_ID, 5)),
			xdpState{Ifname: "eth1", Drv: 5}},
		{"old kernel generic", linkMsg("eth1", u32Attr(unix.IFLA_XDP_PROG_ID, 6), u8Attr(unix.IFLA_XDP_ATTACHED, xdpAttachedSkb)),
			xdpState{Ifname: "eth1", Skb: 6}},
		{"short id attribute", linkMsg("eth1", nlAttr(nil, unix.IFLA_XDP_SKB_PROG_ID, []byte{1, 2})), xdpState{Ifname: "eth1"}},
	} {
		got, err := parseLinkXDP(c.msg)
		if err != nil || got != c.want {
			t.Errorf("%s: got %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
	if _, err := parseLinkXDP(make([]byte, 15)); err == nil {
		t.Error("a reply shorter than ifinfomsg parsed without error")
	}
}

// nlMsg frames a payload as a netlink message.
func nlMsg(typ, flags uint16, seq uint32, payload []byte) []byte {
	b := le.AppendUint32(nil, uint32(unix.NLMSG_HDRLEN+len(payload)))
	b = le.AppendUint16(b, typ)
	b = le.AppendUint16(b, flags)
	b = le.AppendUint32(b, seq)
	b = le.AppendUint32(b, 0)
	b = append(b, payload...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func TestParseReply(t *testing.T) {
	// An error with the kernel's message, request capped (NETLINK_CAP_ACK).
	e := le.AppendUint32(nil, errCode(unix.EBUSY))
	e = append(e, nlMsg(unix.RTM_SETLINK, unix.NLM_F_REQUEST, 1, nil)...)
	e = nlAttr(e, unix.NLMSGERR_ATTR_MSG, append([]byte("Can't replace active BPF XDP link"), 0))
	_, done, err := parseReply(nlMsg(unix.NLMSG_ERROR, unix.NLM_F_ACK_TLVS|unix.NLM_F_CAPPED, 1, e), 1)
	if !done || !errors.Is(err, unix.EBUSY) || !strings.Contains(err.Error(), "Can't replace active BPF XDP link") {
		t.Errorf("capped error: done %v, err %v", done, err)
	}

	// The same, the request not capped: its payload comes before the message.
	req := nlMsg(unix.RTM_SETLINK, unix.NLM_F_REQUEST, 1, ifinfomsg(3))
	e = le.AppendUint32(nil, errCode(unix.EEXIST))
	e = append(e, req...)
	e = nlAttr(e, unix.NLMSGERR_ATTR_MSG, append([]byte("Active program does not match expected"), 0))
	_, done, err = parseReply(nlMsg(unix.NLMSG_ERROR, unix.NLM_F_ACK_TLVS, 1, e), 1)
	if !done || !errors.Is(err, unix.EEXIST) || !strings.Contains(err.Error(), "does not match expected") {
		t.Errorf("uncapped error: done %v, err %v", done, err)
	}

	// An ack.
	ack := append(le.AppendUint32(nil, 0), nlMsg(unix.RTM_SETLINK, 0, 1, nil)...)
	if p, done, err := parseReply(nlMsg(unix.NLMSG_ERROR, unix.NLM_F_CAPPED, 1, ack), 1); !done || err != nil || p != nil {
		t.Errorf("ack: %v %v %v", p, done, err)
	}

	// A reply to another request is skipped; ours after it is found.
	two := append(nlMsg(unix.RTM_NEWLINK, 0, 5, []byte("other...")), nlMsg(unix.RTM_NEWLINK, 0, 1, []byte("ours....."))...)
	if p, done, err := parseReply(two, 1); !done || err != nil || string(p[:5]) != "ours." {
		t.Errorf("two replies: %q %v %v", p, done, err)
	}
	if _, done, _ := parseReply(nlMsg(unix.RTM_NEWLINK, 0, 5, nil), 1); done {
		t.Error("a reply to another request was taken for ours")
	}

	// Malformed: a length beyond the datagram.
	bad := nlMsg(unix.RTM_NEWLINK, 0, 1, []byte("x"))
	le.PutUint32(bad, 200)
	if _, done, err := parseReply(bad, 1); !done || err == nil {
		t.Errorf("malformed: done %v err %v", done, err)
	}
}

// The parsers read what the kernel sends; no input may make them panic.
func FuzzParseLinkXDP(f *testing.F) {
	f.Add(linkMsg("veth0", u8Attr(unix.IFLA_XDP_ATTACHED, xdpAttachedSkb), u32Attr(unix.IFLA_XDP_SKB_PROG_ID, 9)))
	f.Add(linkMsg("eth1", u32Attr(unix.IFLA_XDP_PROG_ID, 6)))
	f.Fuzz(func(t *testing.T, b []byte) { parseLinkXDP(b) })
}

func FuzzParseReply(f *testing.F) {
	e := le.AppendUint32(nil, errCode(unix.EBUSY))
	e = append(e, nlMsg(unix.RTM_SETLINK, unix.NLM_F_REQUEST, 1, ifinfomsg(3))...)
	e = nlAttr(e, unix.NLMSGERR_ATTR_MSG, []byte("msg\x00"))
	f.Add(nlMsg(unix.NLMSG_ERROR, unix.NLM_F_ACK_TLVS, 1, e))
	f.Add(nlMsg(unix.RTM_NEWLINK, 0, 1, linkMsg("a")))
	f.Fuzz(func(t *testing.T, b []byte) { parseReply(b, 1) })
}

// errCode is nlmsgerr.error for errno e: the negative errno.
func errCode(e unix.Errno) uint32 { return uint32(-int32(e)) }
