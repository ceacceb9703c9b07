package bfc

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/gswitch/gswitch/wire"
	"github.com/gswitch/gswitch/wire/wiretest"
)

// TestHostRefuses: frames not addressed to the link-local group, from
// another source than the switch, on another interface, or naming ids the
// host does not hand out change nothing and are counted; the switch's own
// frames still work.
func TestHostRefuses(t *testing.T) {
	h, _ := New(Config{Queues: 8})
	now := int64(1e9)
	other := [6]byte{0x02, 0, 0, 0, 0, 0x66}
	unicast := frame(wire.TypeBFCPause, 1, 3)
	copy(unicast[0:6], []byte{0x02, 0, 0, 0, 0, 0x10}) // to the host's own MAC, as a forwarded frame would be
	h.handle(unicast, 2, now)
	h.handle(frame(wire.TypeBFCPause, 1, 3), 2, now) // the switch: pinned, with its interface
	if !h.Paused(3) {
		t.Fatal("the switch's PAUSE was not applied")
	}
	h.handle(wiretest.BFC(other, 9, 9, wire.TypeBFCResume, 2, 3), 2, now) // another source on the link
	h.handle(frame(wire.TypeBFCResume, 3, 3), 5, now)                     // the switch's MAC on another interface
	if !h.Paused(3) {
		t.Fatal("a refused RESUME resumed the queue")
	}
	h.handle(frame(wire.TypeBFCPause, 4, 9), 2, now)    // id 9: beyond Queues
	h.handle(frame(wire.TypeBFCPause, 5, 4000), 2, now) // far beyond
	h.handle(bitmap(6, 64, 3, 5, 40), 2, now)           // 40 ignored, 3 and 5 applied
	if h.Paused(9) || h.Paused(40) || !h.Paused(5) || !h.Paused(3) {
		t.Fatal("an id beyond Queues was paused, or the bitmap's own ids were not")
	}
	want := Stats{Pauses: 3, Resumes: 0, Bitmaps: 1, Foreign: 3, BadQueue: 3}
	st := h.Stats()
	st.Held, st.MostPaused = 0, 0
	if st != want || st.Refused() != 6 || !strings.Contains(st.String(), "3 not from the switch, 3 naming ids not ours") {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
}

// TestHostPinsTheSwitch: a configured switch MAC, or the gateway's, is
// the only source taken, even for the first frame.
func TestHostPinsTheSwitch(t *testing.T) {
	for _, c := range []Config{{Queues: 8, Switch: sw}, {Queues: 8, Gateway: func() ([6]byte, bool) { return sw, true }}} {
		h, _ := New(c)
		h.Handle(wiretest.BFC([6]byte{0x02, 0, 0, 0, 0, 0x66}, 1, 2, wire.TypeBFCPause, 1, 3), 1)
		if h.Paused(3) || h.Stats().Foreign != 1 {
			t.Fatalf("config %+v: a first frame from another source was taken: %v", c, h.Stats())
		}
		h.Handle(frame(wire.TypeBFCPause, 2, 3), 1)
		if !h.Paused(3) {
			t.Fatalf("config %+v: the switch's frame was refused: %v", c, h.Stats())
		}
	}
	// No gateway known: the first frame's source.
	h, _ := New(Config{Queues: 8, Gateway: func() ([6]byte, bool) { return [6]byte{}, false }})
	h.Handle(frame(wire.TypeBFCPause, 1, 3), 1)
	if !h.Paused(3) {
		t.Fatal("without a gateway the first frame was refused")
	}
}

// TestGatewayTables: the default route's gateway and its ARP entry, in
// the kernel's formats.
func TestGatewayTables(t *testing.T) {
	route := "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n" +
		"h1-eth0\t0001010A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n" +
		"h1-eth0\t00000000\tFE01010A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
	gw, ok := defaultGateway(strings.NewReader(route))
	if !ok || gw != netip.MustParseAddr("10.1.1.254") {
		t.Fatalf("gateway %v %v", gw, ok)
	}
	arp := "IP address       HW type     Flags       HW address            Mask     Device\n" +
		"10.1.1.7         0x1         0x2         02:00:00:00:00:07     *        h1-eth0\n" +
		"10.1.1.254       0x1         0x2         02:67:73:00:01:02     *        h1-eth0\n"
	if mac, ok := arpEntry(strings.NewReader(arp), gw); !ok || mac != sw {
		t.Fatalf("gateway MAC %x %v", mac, ok)
	}
	if _, ok := arpEntry(strings.NewReader(strings.Replace(arp, "0x2         02:67", "0x0         02:67", 1)), gw); ok {
		t.Fatal("an incomplete entry taken")
	}
	if _, ok := defaultGateway(strings.NewReader(route[:strings.LastIndex(route[:len(route)-1], "\n")+1])); ok {
		t.Fatal("a gateway without a default route")
	}
}

// FuzzHostHandle feeds the host any frame on any interface, after frames
// of its switch. It never panics, never pauses an id it does not hand
// out, and changes its state only for a frame of its switch that parses.
func FuzzHostHandle(f *testing.F) {
	f.Add(frame(wire.TypeBFCPause, 5, 3), uint8(2))
	f.Add(frame(wire.TypeBFCResume, 5, 1), uint8(2))
	f.Add(frame(wire.TypeBFCPause, 5, 4095), uint8(2))
	f.Add(bitmap(5, 4096, 1, 2, 4095), uint8(2))
	f.Add(wiretest.BFC([6]byte{0x02, 0, 0, 0, 0, 0x66}, 1, 2, wire.TypeBFCResume, 5, 1), uint8(2))
	f.Add(frame(wire.TypeBFCResume, 5, 1), uint8(7))
	f.Add([]byte("short"), uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, ifindex uint8) {
		h, _ := New(Config{Queues: 8})
		h.handle(frame(wire.TypeBFCPause, 1, 1), 2, 1)
		h.handle(frame(wire.TypeBFCPause, 2, 2), 2, 1)
		var before [len(h.paused)]uint64
		for i := range before {
			before[i] = h.paused[i].Load()
		}
		st := h.Stats()
		h.handle(b, int(ifindex), 2)
		for q := 9; q < wire.MaxQueues; q++ {
			if h.Paused(uint16(q)) && !h.Paused(0) {
				t.Fatalf("id %d paused", q)
			}
		}
		changed := false
		for i := range before {
			changed = changed || before[i] != h.paused[i].Load()
		}
		if !changed {
			return
		}
		_, err := wire.ParseBFCFrame(b)
		if err != nil || [6]byte(b[6:12]) != sw || ifindex != 0 && ifindex != 2 || h.Stats().Foreign != st.Foreign {
			t.Fatalf("a frame the rules refuse changed the pauses: %v (% x)", err, b)
		}
	})
}
