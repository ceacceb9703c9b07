package capfilter

import (
	"strings"
	"testing"

	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/wire"
)

var (
	ip1, ip2 = [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}
	m1, m2   = pkttest.MAC(1), pkttest.MAC(2)
)

func frames(t *testing.T) map[string][]byte {
	t.Helper()
	fr := map[string][]byte{
		"udp":    pkttest.UDP4(m2, m1, ip1, ip2, 1000, 2000, make([]byte, 20)),
		"tcp":    pkttest.TCP4(m2, m1, ip2, ip1, 80, 3000, 46<<2, make([]byte, 100)),
		"ping":   pkttest.Ping(m2, m1, ip1, ip2, 1, 1, 56),
		"arp":    pkttest.ARP(m1, ip1, ip2),
		"udp6":   pkttest.UDP6(m2, m1, [16]byte{0xfd, 15: 1}, [16]byte{0xfd, 15: 2}, 5, 6, nil),
		"short":  {1, 2, 3},
		"gsperf": pkttest.UDP4(m2, m1, ip1, ip2, 5500, 5500, append([]byte("GS\x01\x01"), make([]byte, 60)...)),
	}
	b := make([]byte, 256)
	n, err := wire.BuildBFC(b, m1, wire.BFC{Type: wire.TypeBFCPause, Seq: 7, Switch: 1, Port: 2, Queue: 3})
	if err != nil {
		t.Fatal(err)
	}
	fr["pause"] = append([]byte(nil), b[:n]...)
	n, err = wire.BuildCredit(b, wire.MACs{Dst: m2, Src: m1}, 10, wire.FiveTuple{Src: ip1, Dst: ip2, SrcPort: 7, DstPort: 8, Proto: 17}, wire.Credit{Seq: 1})
	if err != nil {
		t.Fatal(err)
	}
	fr["credit"] = append([]byte(nil), b[:n]...)
	tagged := make([]byte, 4+len(fr["udp"]))
	copy(tagged[4:], fr["udp"])
	if _, err := wire.InsertTag(tagged, 9); err != nil {
		t.Fatal(err)
	}
	fr["tagged"] = tagged
	v := pkttest.Eth(m2, m1, 0x0800, 42, 0)
	ip := pkttest.IPv4(ip1, ip2, 17, 0, 8)
	fr["vlan"] = append(append(v, ip...), pkttest.UDP(1, 2, nil)...)
	return fr
}

// TestMatch: each expression matches exactly the frames listed.
func TestMatch(t *testing.T) {
	fr := frames(t)
	cases := map[string]string{
		"":                                   "udp tcp ping arp udp6 short gsperf pause credit tagged vlan",
		"udp":                                "udp udp6 gsperf credit tagged vlan",
		"ip and udp":                         "udp gsperf credit tagged vlan",
		"tcp or icmp":                        "tcp ping",
		"not ip":                             "arp udp6 short pause",
		"ip6":                                "udp6",
		"arp":                                "arp",
		"host 10.0.0.2":                      "udp tcp ping arp gsperf credit tagged vlan",
		"src host 10.0.0.2":                  "tcp credit",
		"dst host 10.0.0.1":                  "tcp credit",
		"dst net 10.0.0.0/24 && !tcp":        "udp ping arp gsperf credit tagged vlan",
		"host fd00::2":                       "udp6",
		"port 80":                            "tcp",
		"dst port 80":                        "",
		"src port 80":                        "tcp",
		"port 5500 and gsperf":               "gsperf",
		"gc":                                 "pause credit",
		"gc bfc_pause":                       "pause",
		"gc 32":                              "credit",
		"bfc":                                "pause",
		"xp or sfc":                          "credit",
		"tag":                                "tagged",
		"tag 9":                              "tagged",
		"tag 8":                              "",
		"vlan 42":                            "vlan",
		"vlan":                               "vlan",
		"ether proto 0x88b6":                 "pause",
		"ether src 02:00:00:00:00:01":        "udp tcp ping arp udp6 gsperf pause credit tagged vlan",
		"ether dst 01:80:c2:00:00:0e":        "pause",
		"dscp 46":                            "tcp",
		"dscp 10":                            "credit",
		"proto udp and not port 5500":        "udp udp6 credit tagged vlan",
		"len < 60":                           "arp short vlan",
		"len == 60":                          "pause credit",
		"len >= 100":                         "tcp gsperf",
		"malformed":                          "short",
		"(udp or tcp) and src host 10.0.0.2": "tcp credit",
	}
	for expr, want := range cases {
		f, err := Compile(expr)
		if err != nil {
			t.Errorf("%q: %v", expr, err)
			continue
		}
		var got []string
		for _, name := range strings.Fields("udp tcp ping arp udp6 short gsperf pause credit tagged vlan") {
			if f.Match(fr[name], Rx) {
				got = append(got, name)
			}
		}
		if g, w := strings.Join(got, " "), strings.Join(strings.Fields(want), " "); !sameSet(g, w) {
			t.Errorf("%q matched [%s], want [%s]", expr, g, w)
		}
	}
}

func sameSet(a, b string) bool {
	m := map[string]int{}
	for _, x := range strings.Fields(a) {
		m[x]++
	}
	for _, x := range strings.Fields(b) {
		m[x]--
	}
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return true
}

func TestDirection(t *testing.T) {
	f, err := Compile("tx and udp")
	if err != nil {
		t.Fatal(err)
	}
	u := frames(t)["udp"]
	if f.Match(u, Rx) || !f.Match(u, Tx) {
		t.Fatal("tx and udp")
	}
	var nf *Filter
	if !nf.Match(u, Rx) {
		t.Fatal("a nil filter must match")
	}
}

func TestCompileErrors(t *testing.T) {
	for expr, want := range map[string]string{
		"udp tcp":      `unexpected "tcp"`,
		"host":         "host needs an IPv4 or IPv6 address",
		"port x":       "port needs a number",
		"port 70000":   "not a number from 0 to 65535",
		"(udp":         "missing )",
		"udp and":      "ends where a primitive",
		"frobnicate":   `unknown primitive "frobnicate"`,
		"src udp":      "src/dst goes with host, net or port",
		"ether src zz": "needs a MAC address",
		"len ~ 3":      `not "~"`,
		"len 3":        "len takes",
		"udp & tcp":    "write && or and",
		"net 10.0.0.1": "net needs a prefix",
		"ether frob":   "ether takes",
	} {
		if _, err := Compile(expr); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to contain %q", expr, err, want)
		}
	}
}

// FuzzFilter: no expression crashes the compiler, and no frame crashes a
// compiled filter.
func FuzzFilter(f *testing.F) {
	f.Add("gc bfc_pause or (tag 3 and not udp)", []byte{1, 2})
	f.Add("host 10.0.0.1 and port 80", pkttest.UDP4(m2, m1, ip1, ip2, 1, 80, nil))
	f.Add("arp or gsperf or len > 3", pkttest.ARP(m1, ip1, ip2))
	f.Fuzz(func(t *testing.T, expr string, frame []byte) {
		fl, err := Compile(expr)
		if err != nil {
			return
		}
		fl.Match(frame, Rx)
		fl.Match(frame, Tx)
	})
}
