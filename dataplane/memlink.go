package dataplane

import (
	"github.com/gswitch/gswitch/dataplane/afxdp"
	"golang.org/x/sys/unix"
)

// MemLink is an in-memory Link over a UMEM byte slice, for tests and
// benchmarks: Inject plays the wire delivering a frame, and Sent holds what
// the switch transmitted. It mimics AF_XDP's rings: Inject needs a frame on
// the fill ring (and is dropped and counted otherwise), transmitted frames
// appear on the completion ring after Kick.
//
// A MemLink is not safe for concurrent use: drive the switch with
// Switch.Step from the goroutine that calls Inject.
type MemLink struct {
	mem       []byte
	frameSize uint64
	fill      []uint64
	fillCap   int
	rx        []afxdp.Desc
	rxCap     int
	tx        []afxdp.Desc
	txCap     int
	comp      []uint64

	// Sent collects transmitted frames when Record is true; SentCount counts them always.
	Record    bool
	Sent      [][]byte
	SentCount int
	// Dropped counts frames Inject could not deliver (empty fill ring or full rx ring).
	Dropped int
	// SG makes the link deliver and take frames longer than a UMEM frame
	// as multi-buffer chains, as a socket bound with XDP_USE_SG does.
	SG bool
	// Invalid counts tx descriptors the kernel would refuse (a buffer that
	// crosses its UMEM frame, or a chain on a link without SG); like the
	// kernel, the link neither sends nor completes them.
	Invalid int
	chain   []byte // a tx chain being gathered by Kick
}

// NewMemLink returns a link over mem with the given ring sizes.
func NewMemLink(mem []byte, frameSize uint32, ringSize int) *MemLink {
	return &MemLink{mem: mem, frameSize: uint64(frameSize), fillCap: 2 * ringSize, rxCap: ringSize, txCap: ringSize,
		fill: make([]uint64, 0, 2*ringSize), rx: make([]afxdp.Desc, 0, ringSize), tx: make([]afxdp.Desc, 0, ringSize),
		comp: make([]uint64, 0, 2*ringSize)}
}

// Inject delivers frame as if it arrived on the wire. It reports false (and
// counts a drop) when the switch has given the link no frame to receive into.
//
// With SG, a frame longer than a UMEM frame holds after the headroom
// arrives as a chain of buffers, each as long as a UMEM frame holds, all
// but the last flagged XDP_PKT_CONTD (the kernel's copy mode); it needs a
// fill-ring frame and an rx slot per buffer.
func (l *MemLink) Inject(frame []byte) bool {
	room := l.frameSize - 256 // XDP_PACKET_HEADROOM, as the kernel leaves it in copy mode
	nb := max(1, (len(frame)+int(room)-1)/int(room))
	if len(frame) == 0 || len(l.fill) < nb || len(l.rx)+nb > l.rxCap || (nb > 1 && !l.SG) {
		l.Dropped++
		return false
	}
	for i := 0; i < nb; i++ {
		base := l.fill[0] &^ (l.frameSize - 1)
		l.fill = l.fill[:copy(l.fill, l.fill[1:])]
		addr := base + 256
		part := frame[min(len(frame), i*int(room)):min(len(frame), (i+1)*int(room))]
		copy(l.mem[addr:], part)
		d := afxdp.Desc{Addr: addr, Len: uint32(len(part))}
		if i < nb-1 {
			d.Options = unix.XDP_PKT_CONTD
		}
		l.rx = append(l.rx, d)
	}
	return true
}

// FillLen is how many frames the switch has given the link to receive into.
func (l *MemLink) FillLen() int { return len(l.fill) }

func (l *MemLink) Fill(addrs []uint64) int {
	n := min(len(addrs), l.fillCap-len(l.fill))
	l.fill = append(l.fill, addrs[:n]...)
	return n
}

func (l *MemLink) Receive(descs []afxdp.Desc) int {
	n := copy(descs, l.rx)
	l.rx = l.rx[:copy(l.rx, l.rx[n:])]
	return n
}

func (l *MemLink) TxFree() int { return l.txCap - len(l.tx) }

func (l *MemLink) Transmit(descs []afxdp.Desc) int {
	n := min(len(descs), l.txCap-len(l.tx))
	l.tx = append(l.tx, descs[:n]...)
	return n
}

func (l *MemLink) Kick() {
	for _, d := range l.tx {
		more := d.Options&unix.XDP_PKT_CONTD != 0
		if d.Len == 0 || d.Addr+uint64(d.Len) > (d.Addr|(l.frameSize-1))+1 || (more && !l.SG) {
			l.Invalid++
			continue
		}
		if l.Record {
			l.chain = append(l.chain, l.mem[d.Addr:d.Addr+uint64(d.Len)]...)
		}
		l.comp = append(l.comp, d.Addr)
		if more {
			continue
		}
		if l.Record {
			l.Sent = append(l.Sent, append([]byte(nil), l.chain...))
		}
		l.SentCount++
		l.chain = l.chain[:0]
	}
	l.tx = l.tx[:0]
}

func (l *MemLink) Complete(addrs []uint64) int {
	n := copy(addrs, l.comp)
	l.comp = l.comp[:copy(l.comp, l.comp[n:])]
	return n
}

func (l *MemLink) WakeFill() {}
func (l *MemLink) FD() int   { return -1 }

// Reclaim hands back every frame the link holds (fill ring, received and
// not yet taken, queued for transmission, completed), as if the device went
// away, and empties its rings.
func (l *MemLink) Reclaim(dst []uint64) []uint64 {
	dst = append(dst, l.fill...)
	for _, d := range l.rx {
		dst = append(dst, d.Addr&^(l.frameSize-1))
	}
	for _, d := range l.tx {
		dst = append(dst, d.Addr&^(l.frameSize-1))
	}
	dst = append(dst, l.comp...)
	l.fill, l.rx, l.tx, l.comp = l.fill[:0], l.rx[:0], l.tx[:0], l.comp[:0]
	return dst
}

// Outstanding is always 0: an in-memory link hands every frame back.
func (l *MemLink) Outstanding() (rx, tx int) { return 0, 0 }
