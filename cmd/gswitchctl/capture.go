package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/gswitch/gswitch/control"
	"github.com/gswitch/gswitch/control/capfilter"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/wire"
	"github.com/gswitch/gswitch/wire/gsperf"
)

const captureUsage = `capture PORT [-w FILE.pcapng] [-c N] [-dir rx|tx|both] [-snap BYTES] [-ring BYTES] [-s SWITCH] [FILTER...]

Mirrors the frames the port receives and sends (the frames the switch
emits on it too) through a bounded ring in gswitchd that never slows
forwarding; when the ring is full, copies are dropped and counted, and the
count is printed at the end. Without -w, one line per frame; with -w, a
pcapng file (- for standard output: gswitchctl capture p1 -w - | wireshark -k -i -).
Ctrl-C stops.

FILTER (see docs/operations.md):
  rx, tx, arp, ip, ip6, tcp, udp, icmp, icmp6, vlan [ID], gc [TYPE], bfc, sfc, xp,
  tag [Q], gsperf, [src|dst] host ADDR, [src|dst] net PREFIX, [src|dst] port N,
  ether src|dst|host MAC, ether proto N, proto N|NAME, dscp N, len OP N, malformed
  combined with and, or, not and parentheses: udp and not port 53`

func captureMain(args []string) int {
	f := newCtlFlags("capture", captureUsage)
	out := f.fs.String("w", "", "write pcapng to this file (- for standard output) instead of printing frames")
	n := f.fs.Int("c", 0, "stop after this many frames (0: until Ctrl-C)")
	dir := f.fs.String("dir", "both", "rx (received on the port), tx (sent on it) or both")
	snap := f.fs.Int("snap", 0, "keep at most this many bytes of each frame (0: all)")
	ring := f.fs.Int("ring", 0, "bytes of mirror ring per worker in gswitchd (default 4 MiB, at most 64 MiB)")
	quiet := f.fs.Bool("q", false, "with -w: no progress line")
	pos, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if len(pos) < 1 {
		fmt.Fprintf(os.Stderr, "usage: gswitchctl %s\n", captureUsage)
		return 2
	}
	filter := strings.Join(pos[1:], " ")
	if _, err := capfilter.Compile(filter); err != nil {
		fmt.Fprintf(os.Stderr, "gswitchctl capture: %v\n", err)
		return 2
	}
	cl, err := f.dial()
	if err != nil {
		return fail(err)
	}
	cl.Timeout = 0
	cs, err := cl.Capture(control.Request{Port: pos[0], Dir: *dir, Snap: *snap, Count: *n, Filter: filter, Ring: *ring})
	if err != nil {
		cl.Close()
		return fail(err)
	}
	defer cs.Close()

	var sink frameSink
	switch *out {
	case "":
		sink = &printSink{w: bufio.NewWriter(os.Stdout)}
	default:
		var w io.Writer = os.Stdout
		var file *os.File
		if *out != "-" {
			if file, err = os.Create(*out); err != nil {
				return fail(err)
			}
			defer file.Close()
			w = file
		}
		ps, err := newPcapSink(w, cs.Start)
		if err != nil {
			return fail(err)
		}
		sink = ps
	}
	progress := *out != "" && *out != "-" && !*quiet && isTerminal(os.Stderr)
	fmt.Fprintf(os.Stderr, "capturing on %s (%s)%s\n", cs.Start.Port, orDash(cs.Start.Interface), map[bool]string{true: ", filter: " + filter, false: ""}[filter != ""])

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); cs.Stop() }()
	var frames uint64
	var final control.CaptureStats
	for {
		r, err := cs.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			sink.close(final)
			return fail(err)
		}
		switch r.Kind {
		case control.RecFrame:
			frames++
			if err := sink.frame(r); err != nil {
				cs.Stop()
				return fail(err)
			}
		case control.RecStats:
			if progress {
				fmt.Fprintf(os.Stderr, "\r%d frames, %d mirror copies dropped", r.Stats.Matched, r.Stats.Dropped)
			}
		case control.RecEnd:
			final = r.Stats
		}
	}
	if err := sink.close(final); err != nil {
		return fail(err)
	}
	if progress {
		fmt.Fprintln(os.Stderr)
	}
	fmt.Fprintf(os.Stderr, "%d frames captured (%d seen by the mirror, %d matched the filter); %d mirror copies dropped (ring full)%s\n",
		frames, final.Seen, final.Matched, final.Dropped, map[bool]string{true: ": rerun with a larger -ring or a narrower filter", false: ""}[final.Dropped > 0])
	return 0
}

type frameSink interface {
	frame(*control.Record) error
	close(control.CaptureStats) error
}

// pcapSink writes pcapng: one interface (the port), each frame with its
// direction (epb_flags inbound or outbound), and at the end the interface
// statistics with the mirror's drops (isb_ifdrop).
type pcapSink struct {
	w     *pcapgo.NgWriter
	start time.Time
}

func newPcapSink(w io.Writer, st control.CaptureStart) (*pcapSink, error) {
	intf := pcapgo.NgInterface{
		Name:                st.Port,
		Description:         fmt.Sprintf("gswitch port %s (interface %s)", st.Port, orDash(st.Interface)),
		Filter:              st.Filter,
		OS:                  "Linux",
		LinkType:            layers.LinkTypeEthernet,
		SnapLength:          uint32(st.Snap),
		TimestampResolution: 9,
	}
	nw, err := pcapgo.NewNgWriterInterface(w, intf, pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: "gswitchctl capture"}})
	if err != nil {
		return nil, err
	}
	return &pcapSink{w: nw, start: time.Now()}, nil
}

func (p *pcapSink) frame(r *control.Record) error {
	d := pcapgo.NgEpbFlagDirectionInbound
	if r.Dir == capfilter.Tx {
		d = pcapgo.NgEpbFlagDirectionOutbound
	}
	ci := gopacket.CaptureInfo{Timestamp: r.Time, CaptureLength: len(r.Data), Length: r.OrigLen}
	return p.w.WritePacketWithOptions(ci, r.Data, pcapgo.NgPacketOptions{Flags: &pcapgo.NgEpbFlags{Direction: d}})
}

func (p *pcapSink) close(st control.CaptureStats) error {
	if err := p.w.WriteInterfaceStats(0, pcapgo.NgInterfaceStatistics{LastUpdate: time.Now(), StartTime: p.start, EndTime: time.Now(),
		PacketsReceived: st.Seen, PacketsDropped: st.Dropped}); err != nil {
		return err
	}
	return p.w.Flush()
}

// printSink prints one line per frame.
type printSink struct{ w *bufio.Writer }

func (p *printSink) frame(r *control.Record) error {
	dir := "rx"
	if r.Dir == capfilter.Tx {
		dir = "tx"
	}
	fmt.Fprintf(p.w, "%s %s %4d %s\n", r.Time.Format("15:04:05.000000"), dir, r.OrigLen, summary(r.Data))
	return p.w.Flush()
}

func (p *printSink) close(control.CaptureStats) error { return p.w.Flush() }

// summary describes a frame in one line, from the headers the switch's
// parser finds and gswitch's own messages.
func summary(d []byte) string {
	var p pkt.Packet
	if e := pkt.Parse(d, &p); e != pkt.OK {
		return fmt.Sprintf("malformed (%s)", e)
	}
	var b strings.Builder
	if p.Flags&pkt.FlagUpQ != 0 {
		fmt.Fprintf(&b, "[bfc tag q%d] ", p.UpQ)
	}
	if p.Flags&pkt.FlagTagged != 0 {
		fmt.Fprintf(&b, "[vlan %d pcp %d] ", p.VLAN, p.PCP)
	}
	eth := fmt.Sprintf("%x > %x", d[6:12], d[0:6])
	switch {
	case p.EthType == wire.EtherType:
		b.WriteString(macStr(d[6:12]) + " > " + macStr(d[0:6]) + " " + gcSummary(d[l2Len(d):]))
	case p.EthType == 0x0806 && p.L3Off != 0:
		a := d[p.L3Off:]
		if binary.BigEndian.Uint16(a[6:]) == 1 {
			fmt.Fprintf(&b, "ARP who-has %s tell %s", ip4(a[24:28]), ip4(a[14:18]))
		} else {
			fmt.Fprintf(&b, "ARP %s is-at %s", ip4(a[14:18]), macStr(a[8:14]))
		}
	case p.Flags&(pkt.FlagIPv4|pkt.FlagIPv6) != 0:
		var src, dst netip.Addr
		o := int(p.L3Off)
		if p.Flags&pkt.FlagIPv4 != 0 {
			src, dst = netip.AddrFrom4([4]byte(d[o+12:o+16])), netip.AddrFrom4([4]byte(d[o+16:o+20]))
		} else {
			src, dst = netip.AddrFrom16([16]byte(d[o+8:o+24])), netip.AddrFrom16([16]byte(d[o+24:o+40]))
		}
		if p.L4Off != 0 && (p.Proto == pkt.ProtoTCP || p.Proto == pkt.ProtoUDP) {
			l4 := d[p.L4Off:]
			proto := map[uint8]string{6: "TCP", 17: "UDP"}[p.Proto]
			fmt.Fprintf(&b, "%s %s > %s", proto, netip.AddrPortFrom(src, binary.BigEndian.Uint16(l4)), netip.AddrPortFrom(dst, binary.BigEndian.Uint16(l4[2:])))
			if p.Proto == pkt.ProtoUDP && len(l4) >= 8 {
				pl := l4[8:]
				switch {
				case len(pl) >= wire.HeaderLen && pl[0] == 'G' && pl[1] == 'C' && pl[2] == wire.Version:
					b.WriteString(" " + gcSummary(pl))
				case len(pl) >= gsperf.OffWindow && gsperf.Header(pl).Known(): // up to the priority
					h := gsperf.Header(pl)
					fmt.Fprintf(&b, " gsperf %s flow %d offset %d", gsperf.TypeName(h.Type()), h.Flow(), h.Seq())
				}
			}
		} else {
			proto := map[uint8]string{1: "ICMP", 58: "ICMPv6"}[p.Proto]
			if proto == "" {
				proto = fmt.Sprintf("proto %d", p.Proto)
			}
			fmt.Fprintf(&b, "%s > %s %s", src, dst, proto)
			if p.Proto == 1 && o+24 <= len(d) {
				ih := o + int(d[o]&0xf)*4
				if ih+8 <= len(d) {
					fmt.Fprintf(&b, " %s id %d seq %d", map[byte]string{0: "echo reply", 8: "echo request"}[d[ih]], binary.BigEndian.Uint16(d[ih+4:]), binary.BigEndian.Uint16(d[ih+6:]))
				}
			}
		}
		if p.TOS != 0 {
			fmt.Fprintf(&b, " dscp %d ecn %d", p.TOS>>2, p.TOS&3)
		}
	default:
		fmt.Fprintf(&b, "%s ethertype 0x%04x", eth, p.EthType)
	}
	return b.String()
}

func gcSummary(m []byte) string {
	h, err := wire.ParseHeader(m)
	if err != nil {
		return "GC (" + err.Error() + ")"
	}
	switch h.Type {
	case wire.TypeBFCPause, wire.TypeBFCResume, wire.TypeBFCBitmap:
		v, err := wire.ParseBFC(m)
		if err != nil {
			return h.Type.Name() + " (" + err.Error() + ")"
		}
		if h.Type == wire.TypeBFCBitmap {
			paused := 0
			for q := 0; q < int(v.NQueues); q++ {
				if wire.BitmapGet(v.Bitmap, q) {
					paused++
				}
			}
			return fmt.Sprintf("%s seq %d switch %d port %d: %d of %d queues paused", h.Type.Name(), v.Seq, v.Switch, v.Port, paused, v.NQueues)
		}
		return fmt.Sprintf("%s seq %d switch %d port %d queue %d", h.Type.Name(), v.Seq, v.Switch, v.Port, v.Queue)
	case wire.TypeSFCBTS:
		v, err := wire.ParseBTS(m)
		if err != nil {
			return "SFC_BTS (" + err.Error() + ")"
		}
		return fmt.Sprintf("SFC_BTS pause %dus switch %d port %d queue %d depth %d flags %#x", v.Pause, v.Switch, v.Port, v.Queue, v.Depth, v.Flags)
	case wire.TypeXPCredit:
		v, err := wire.ParseCredit(m)
		if err != nil {
			return "XP_CREDIT (" + err.Error() + ")"
		}
		return fmt.Sprintf("XP_CREDIT seq %d sent %dus", v.Seq, v.SentTime)
	case wire.TypeXPRequest:
		v, err := wire.ParseXPRequest(m)
		if err != nil {
			return "XP_REQUEST (" + err.Error() + ")"
		}
		return fmt.Sprintf("XP_REQUEST flow %d size %d", v.FlowID, v.Size)
	case wire.TypeXPStop:
		v, err := wire.ParseXPStop(m)
		if err != nil {
			return "XP_STOP (" + err.Error() + ")"
		}
		return fmt.Sprintf("XP_STOP flow %d", v.FlowID)
	}
	return h.Type.Name()
}

func macStr(b []byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4], b[5])
}

func ip4(b []byte) string { return netip.AddrFrom4([4]byte(b)).String() }

// l2Len is the length of the Ethernet header and its tags.
func l2Len(d []byte) int {
	off := 12
	et := binary.BigEndian.Uint16(d[off:])
	for i := 0; i < 3 && (et == wire.TagTPID || et == 0x8100 || et == 0x88a8); i++ {
		off += 4
		et = binary.BigEndian.Uint16(d[off:])
	}
	return off + 2
}
