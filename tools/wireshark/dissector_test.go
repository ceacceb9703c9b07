// Package wireshark holds the test of gswitch.lua, the Wireshark dissector
// of gswitch's frames: frames written by package wire and emitted by the
// switch go into a pcapng file, tshark decodes it with the dissector, and
// every field must read back the value written.
package wireshark

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/dataplane/dptest"
	"github.com/gswitch/gswitch/perf/proto"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/wire"
)

// frame is a frame and what the dissector must find in it: field -> value
// (numbers compare as numbers whatever base tshark prints them in).
type frame struct {
	name   string
	data   []byte
	fields map[string]string
}

var (
	macA, macB = pkttest.MAC(0xa), pkttest.MAC(0xb)
	ipA, ipB   = [4]byte{10, 1, 0, 1}, [4]byte{10, 2, 0, 2}
)

func build(t *testing.T, n int, err error, b []byte) []byte {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), b[:n]...)
}

func gsperfSegment(h proto.Header, payload int) []byte {
	b := make([]byte, proto.HeaderLen+payload)
	h.Encode(b)
	return pkttest.UDP4(macB, macA, ipA, ipB, 40000, 5500, b)
}

// wireFrames are frames package wire builds, one of each format.
func wireFrames(t *testing.T) []frame {
	b := make([]byte, 2048)
	var fr []frame
	n, err := wire.BuildBFC(b, macA, wire.BFC{Type: wire.TypeBFCPause, Seq: 0xfffffff0, Switch: 7, Port: 3, Queue: 4095})
	fr = append(fr, frame{"bfc pause", build(t, n, err, b), map[string]string{
		"gswitch.gc.magic": "GC", "gswitch.gc.version": "1", "gswitch.gc.type": "1", "gswitch.gc.length": "12", "gswitch.gc.flags": "0",
		"gswitch.bfc.seq": "4294967280", "gswitch.bfc.switch": "7", "gswitch.bfc.port": "3", "gswitch.bfc.queue": "4095", "gswitch.bfc.nqueues": "0"}})
	n, err = wire.BuildBFC(b, macA, wire.BFC{Type: wire.TypeBFCResume, Seq: 9, Switch: 65535, Port: 1000, Queue: 17})
	fr = append(fr, frame{"bfc resume", build(t, n, err, b), map[string]string{
		"gswitch.gc.type": "2", "gswitch.bfc.seq": "9", "gswitch.bfc.switch": "65535", "gswitch.bfc.port": "1000", "gswitch.bfc.queue": "17"}})
	bm := make([]byte, wire.BitmapLen(20))
	for _, q := range []int{1, 5, 19} {
		wire.BitmapSet(bm, q, true)
	}
	n, err = wire.BuildBFC(b, macA, wire.BFC{Type: wire.TypeBFCBitmap, Seq: 77, Switch: 2, Port: 5, NQueues: 20, Bitmap: bm})
	fr = append(fr, frame{"bfc bitmap", build(t, n, err, b), map[string]string{
		"gswitch.gc.type": "3", "gswitch.gc.length": "15", "gswitch.bfc.seq": "77", "gswitch.bfc.nqueues": "20", "gswitch.bfc.queue": "0",
		"gswitch.bfc.bitmap": "220008", "gswitch.bfc.paused_count": "3", "gswitch.bfc.paused": "1,5,19"}})

	// A data frame between BFC ports: the tag after the source MAC.
	data := pkttest.UDP4(macB, macA, ipA, ipB, 1111, 2222, make([]byte, 30))
	tagged := append(make([]byte, wire.TagLen), data...)
	if _, err := wire.InsertTag(tagged, 0x123); err != nil {
		t.Fatal(err)
	}
	fr = append(fr, frame{"bfc tag", tagged, map[string]string{
		"gswitch.tag.upstream_queue": "291", "gswitch.tag.flags": "0", "gswitch.tag.ethertype": "2048", "udp.srcport": "1111", "udp.dstport": "2222"}})

	// An SFC BTS back to the sender of a gsperf segment.
	orig := gsperfSegment(proto.Header{Type: proto.TypeData, Flow: 0xabcdef0123, Seq: 3000, Size: 90000, Priority: 87000}, 1000)
	orig[15] = 0x0a << 2 // DSCP 10
	n, err = wire.BuildBTS(b, wire.MACs{Dst: macA, Src: macB}, wire.DefaultBTSDSCP, orig, 14, 34,
		wire.BTS{Flags: wire.BTSCacheable | wire.BTSFromEstimator, Pause: 150, Switch: 9, Port: 2, Queue: 4, Depth: 123456})
	fr = append(fr, frame{"sfc bts", build(t, n, err, b), map[string]string{
		"gswitch.gc.type": "16", "gswitch.gc.length": "60", "gswitch.gc.flags": "5", "gswitch.bts.flags": "5",
		"gswitch.bts.flags.cacheable": "1", "gswitch.bts.flags.from_cache": "0", "gswitch.bts.flags.from_estimator": "1",
		"gswitch.bts.pause": "150", "gswitch.bts.switch": "9", "gswitch.bts.port": "2", "gswitch.bts.queue": "4", "gswitch.bts.reserved": "0",
		"gswitch.bts.depth": "123456", "gswitch.bts.quote.version": "4", "gswitch.bts.quote.ihl": "5", "gswitch.bts.quote.tos": "40",
		"gswitch.bts.quote.total_length": "1092", "gswitch.bts.quote.ttl": "64", "gswitch.bts.quote.proto": "17",
		"gswitch.bts.quote.src": "10.1.0.1", "gswitch.bts.quote.dst": "10.2.0.2", "gswitch.bts.quote.sport": "40000",
		"gswitch.bts.quote.dport": "5500", "gswitch.bts.quote.gsperf_flow": "737894400291", "udp.srcport": "19020", "ip.dsfield.dscp": "48"}})

	flow := wire.FiveTuple{Src: ipA, Dst: ipB, SrcPort: 40000, DstPort: 5500, Proto: wire.ProtoUDP}
	n, err = wire.BuildCredit(b, wire.MACs{Dst: macA, Src: macB}, 10, flow, wire.Credit{Seq: 0xdeadbeef, SentTime: 12345})
	fr = append(fr, frame{"xp credit", build(t, n, err, b), map[string]string{
		"gswitch.gc.type": "32", "gswitch.gc.length": "8", "gswitch.xp.credit_seq": "3735928559", "gswitch.xp.sent_time": "12345",
		"udp.srcport": "5500", "udp.dstport": "40000"}})
	n, err = wire.BuildXPRequest(b, wire.MACs{Dst: macB, Src: macA}, flow, wire.XPRequest{FlowID: 1<<63 + 5, Size: 1e9})
	fr = append(fr, frame{"xp request", build(t, n, err, b), map[string]string{
		"gswitch.gc.type": "33", "gswitch.gc.length": "16", "gswitch.xp.flow_id": "9223372036854775813", "gswitch.xp.size": "1000000000"}})
	n, err = wire.BuildXPStop(b, wire.MACs{Dst: macB, Src: macA}, flow, wire.XPStop{FlowID: 78})
	fr = append(fr, frame{"xp stop", build(t, n, err, b), map[string]string{"gswitch.gc.type": "34", "gswitch.xp.flow_id": "78"}})

	mx := wire.MechXP(0x01020304, 0x0a0b0c0d)
	fr = append(fr, frame{"gsperf xp", gsperfSegment(proto.Header{Type: proto.TypeData, Flags: proto.FlagFIN | proto.FlagRetx, Flow: 42,
		Seq: 1000, Ack: 0, Size: 5000, Priority: 4000, Window: 7, Timestamp: 1 << 40, Mech: mx}, 100), map[string]string{
		"gswitch.gsperf.magic": "GS", "gswitch.gsperf.version": "1", "gswitch.gsperf.type": "1", "gswitch.gsperf.flags": "3",
		"gswitch.gsperf.flags.fin": "1", "gswitch.gsperf.flags.retx": "1", "gswitch.gsperf.hdrlen": "64", "gswitch.gsperf.flow_id": "42",
		"gswitch.gsperf.offset": "1000", "gswitch.gsperf.acked": "0", "gswitch.gsperf.size": "5000", "gswitch.gsperf.priority": "4000",
		"gswitch.gsperf.window": "7", "gswitch.gsperf.timestamp": "1099511627776", "gswitch.gsperf.mech": strconv.FormatUint(mx, 10),
		"gswitch.gsperf.mech.xp_credit_seq": "16909060", "gswitch.gsperf.mech.xp_sent_time": "168496141"}})
	mb, _ := wire.MechBFC(0xab)
	fr = append(fr, frame{"gsperf bfc ack", gsperfSegment(proto.Header{Type: proto.TypeAck, Flow: 43, Seq: 1, Ack: 99, Mech: mb}, 0), map[string]string{
		"gswitch.gsperf.type": "2", "gswitch.gsperf.flags.fin": "0", "gswitch.gsperf.acked": "99", "gswitch.gsperf.mech.bfc_upstream_queue": "171"}})
	return fr
}

// emittedFrames are frames the switch emits on a port (the emit path, the
// control lane, the tx ring), as the port's capture mirror saw them.
func emittedFrames(t *testing.T) []frame {
	h := dptest.New(t, dataplane.Config{Config: config.Config{Workers: 1, SwitchID: 12, Ports: []config.Port{{Name: "a"}, {Name: "b", Role: 1}}}}, 2048)
	c, err := h.SW.Capture(1, dataplane.CaptureTx, 0, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	em := h.SW.Emitter(0)
	src := [6]byte(h.SW.Ports()[1].MAC)
	buf := em.Frame(1, uint8(wire.TypeBFCPause))
	n, err := wire.BuildBFC(buf, src, wire.BFC{Type: wire.TypeBFCPause, Seq: 1, Switch: 12, Port: 1, Queue: 6})
	if err != nil {
		t.Fatal(err)
	}
	em.Send(n, pkt.LaneControl)
	buf = em.Frame(1, uint8(wire.TypeXPCredit))
	n, err = wire.BuildCredit(buf, wire.MACs{Dst: macA, Src: src}, 10, wire.FiveTuple{Src: ipA, Dst: ipB, SrcPort: 7000, DstPort: 7001, Proto: 17}, wire.Credit{Seq: 5, SentTime: 6})
	if err != nil {
		t.Fatal(err)
	}
	em.Send(n, pkt.LaneControl)
	h.Settle()
	var got [][]byte
	c.Read(func(r *dataplane.CaptureRecord) { got = append(got, append([]byte(nil), r.Data...)) })
	if len(got) != 2 {
		t.Fatalf("captured %d emitted frames, want 2", len(got))
	}
	return []frame{
		{"emitted pause", got[0], map[string]string{"gswitch.gc.type": "1", "gswitch.bfc.seq": "1", "gswitch.bfc.switch": "12", "gswitch.bfc.port": "1", "gswitch.bfc.queue": "6",
			"eth.dst": "01:80:c2:00:00:0e", "eth.src": h.SW.Ports()[1].MAC.String()}},
		{"emitted credit", got[1], map[string]string{"gswitch.gc.type": "32", "gswitch.xp.credit_seq": "5", "gswitch.xp.sent_time": "6", "udp.srcport": "7001"}},
	}
}

func TestDissectorDecodesEveryField(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark is not installed (apt-get install tshark; scripts/install-deps.sh does it): the dissector is not tested")
	}
	frames := append(wireFrames(t), emittedFrames(t)...)
	dir := t.TempDir()
	file := filepath.Join(dir, "frames.pcapng")
	fh, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pcapgo.NewNgWriter(fh, layers.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if err := w.WritePacket(gopacket.CaptureInfo{CaptureLength: len(f.data), Length: len(f.data)}, f.data); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	fh.Close()

	var names []string
	seen := map[string]bool{}
	for _, f := range frames {
		for k := range f.fields {
			if !seen[k] {
				seen[k] = true
				names = append(names, k)
			}
		}
	}
	lua, _ := filepath.Abs("gswitch.lua")
	args := []string{"-n", "-X", "lua_script:" + lua, "-o", "udp.try_heuristic_first:TRUE", "-r", file, "-T", "fields", "-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=;"}
	for _, n := range names {
		args = append(args, "-e", n)
	}
	cmd := exec.Command(tshark, args...)
	cmd.Env = append(os.Environ(), "HOME="+dir) // no personal preferences or plugins
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("tshark: %v\n%s", err, msg)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != len(frames) {
		t.Fatalf("tshark printed %d lines for %d frames:\n%s", len(lines), len(frames), out)
	}
	for i, f := range frames {
		cols := strings.Split(lines[i], "\t")
		for j, n := range names {
			want, ok := f.fields[n]
			if !ok {
				continue
			}
			got := ""
			if j < len(cols) {
				got = cols[j]
			}
			if strings.Contains(got, ";") && (n == "udp.srcport" || n == "udp.dstport" || strings.HasPrefix(n, "ip.")) {
				got = strings.Split(got, ";")[0] // the outer header's, not the one quoted in a BTS
			}
			if !same(got, want) {
				t.Errorf("%s: %s = %q, want %q", f.name, n, got, want)
			}
		}
	}
}

// same compares a value tshark printed with the value written: numbers by
// value (tshark prints hex fields as 0x...), booleans as 1/0.
func same(got, want string) bool {
	if got == want {
		return true
	}
	switch strings.ToLower(got) {
	case "true":
		got = "1"
	case "false":
		got = "0"
	}
	g, err1 := strconv.ParseUint(got, 0, 64)
	w, err2 := strconv.ParseUint(want, 0, 64)
	if err1 == nil && err2 == nil {
		return g == w
	}
	return strings.EqualFold(strings.ReplaceAll(got, ":", ""), strings.ReplaceAll(want, ":", ""))
}
