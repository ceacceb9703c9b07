package telemetry_test

import (
	"encoding/binary"
	"testing"

	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/mech/telemetry"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/pkt/pkttest"
	"github.com/gswitch/gswitch/queues"
	"github.com/gswitch/gswitch/sched"
	"github.com/gswitch/gswitch/wire/gsperf"
)

var (
	mac1, mac2 = pkttest.MAC(1), pkttest.MAC(2)
	ip1, ip2   = [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}
	ip61, ip62 = [16]byte{0xfd, 15: 1}, [16]byte{0xfd, 15: 2}
)

// seg is a gsperf header of type typ with an INT option of slots slots,
// the first hops of them written (hop i: 100+i, 200+i, 300+i, 400+i Mbit/s),
// and n bytes of payload.
func seg(typ uint8, slots, hops, n int) []byte {
	b := make([]byte, gsperf.Len+gsperf.INTLen(slots)+n)
	h := gsperf.Header(b)
	h.Init(typ)
	h.SetFlow(7)
	h.SetSeq(1 << 20)
	h.SetTimestamp(123456789)
	l := gsperf.InitINT(b[gsperf.Len:], slots)
	h.SetHdrLen(uint16(gsperf.Len + l))
	for i := 0; i < hops; i++ {
		h.INT().Push(uint64(100+i), uint64(200+i), uint64(300+i), uint64(400+i)*1e6)
	}
	for i := range n {
		b[gsperf.Len+l+i] = byte(7 * i)
	}
	return b
}

// v4 is an Ethernet/IPv4/UDP frame carrying payload, its UDP checksum set
// (0 if !sum: none, as IPv4 allows).
func v4(payload []byte, sum bool) []byte {
	f := pkttest.UDP4(mac2, mac1, ip1, ip2, 4000, 5000, payload)
	if sum {
		setUDPSum(f)
	}
	return f
}

// v6 is an Ethernet/IPv6/UDP frame carrying payload, its UDP checksum set.
func v6(payload []byte) []byte {
	f := pkttest.UDP6(mac2, mac1, ip61, ip62, 4000, 5000, payload)
	setUDPSum(f)
	return f
}

// udpOff is where f's UDP header starts (IPv4 without options, or IPv6
// without extension headers).
func udpOff(f []byte) int {
	if binary.BigEndian.Uint16(f[12:]) == 0x86dd {
		return 14 + 40
	}
	return 14 + int(f[14]&0xf)*4
}

// udpSum is the Internet checksum, from scratch, of f's UDP datagram
// (as long as its UDP length says) and its pseudo-header: 0 when the
// datagram's checksum field is right.
func udpSum(f []byte) uint16 {
	o := udpOff(f)
	udp := f[o:]
	var ps []byte
	if binary.BigEndian.Uint16(f[12:]) == 0x86dd {
		ps = append(ps, f[22:54]...) // source, destination
		ps = append(ps, 0, 0, udp[4], udp[5], 0, 0, 0, 17)
	} else {
		ps = append(ps, f[26:34]...)
		ps = append(ps, 0, 17, udp[4], udp[5])
	}
	return pkttest.Checksum(append(ps, udp[:binary.BigEndian.Uint16(udp[4:])]...))
}

// setUDPSum computes f's UDP checksum from scratch (0 sent as 0xffff).
func setUDPSum(f []byte) {
	o := udpOff(f)
	f[o+6], f[o+7] = 0, 0
	c := udpSum(f)
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(f[o+6:], c)
}

// udpCk is f's UDP checksum field.
func udpCk(f []byte) uint16 { return binary.BigEndian.Uint16(f[udpOff(f)+6:]) }

// optionOf is the INT option of f's gsperf header (nil if none).
func optionOf(f []byte) gsperf.INT {
	return gsperf.Header(f[udpOff(f)+gsperf.UDPHeaderLen:]).INT()
}

// wire is what a frame of n bytes takes on the line.
func wire(n int) uint64 { return uint64(max(n, 60) + 24) }

// slotSize is the UMEM room of each of the rig's frames; frames start
// headroom bytes into it.
const (
	slotSize = 2048
	headroom = 256
)

// rig is one port with a fifo scheduler and int on it, whose Egress a
// test calls as the traffic manager would, batch by batch.
type rig struct {
	t    testing.TB
	in   *telemetry.INT
	s    sched.Scheduler
	v    *mech.PortView
	mem  []byte
	pkts []pkt.Packet
	b    mech.Batch
}

func newRig(t testing.TB, rateBits uint64) *rig {
	t.Helper()
	s, err := sched.New("fifo", sched.Params{PortBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	v := mech.NewPortView(0, s, 1<<20, 0)
	v.SetRate(rateBits)
	r := &rig{t: t, s: s, v: &v, mem: make([]byte, 64*slotSize), pkts: make([]pkt.Packet, 0, 64)}
	inst, err := telemetry.New(nil, []mech.Port{{Name: "p", RateBits: rateBits, Queues: 1, Scheduler: "fifo",
		BufferBytes: 1 << 20, View: r.v, Config: &telemetry.Config{}}})
	if err != nil {
		t.Fatal(err)
	}
	r.in = inst.(*telemetry.INT)
	return r
}

// load makes frames the next batch: each copied to a slot of its own and
// parsed, as the pipeline hands them to the egress hooks.
func (r *rig) load(frames ...[]byte) {
	r.t.Helper()
	r.pkts = r.pkts[:0]
	for i, f := range frames {
		addr := uint64(i*slotSize + headroom)
		copy(r.mem[addr:], f)
		p := pkt.Packet{Addr: addr}
		pkt.Parse(r.mem[addr:addr+uint64(len(f))], &p)
		p.Len, p.Verdict = uint32(len(f)), pkt.Forward
		r.pkts = append(r.pkts, p)
	}
}

// egress runs the batch loaded through int's Egress at now.
func (r *rig) egress(now int64) {
	r.b = mech.Batch{Pkts: r.pkts, Mem: r.mem, Now: now}
	r.in.Egress(r.v, &r.b)
}

// frame is the bytes of the batch's frame i as they are now.
func (r *rig) frame(i int) []byte { return r.b.Frame(&r.pkts[i]) }

// fill queues n packets of size bytes (descriptors only: the depth the
// batch leaves behind).
func (r *rig) fill(n int, size uint32) {
	for i := 0; i < n; i++ {
		p := pkt.Packet{Addr: 63 * slotSize, Len: size}
		if r.s.Enqueue(&p) != queues.Accepted {
			r.t.Fatal("the rig's queue is full")
		}
	}
}
