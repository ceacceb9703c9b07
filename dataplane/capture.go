package dataplane

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"
)

// Direction of a mirrored frame.
const (
	CaptureRx = 1 << iota // frames received on the port (before parsing: malformed ones too)
	CaptureTx             // frames sent on the port (forwarded, flooded and emitted), as they go on the wire
)

// Capture mirrors one port's frames into bounded rings, one per worker, that
// a reader drains from its own goroutine. A worker copies a frame (up to the
// snap length) only while a capture is on, and when its ring has no room it
// drops the copy and counts it: mirroring never slows or stops forwarding.
type Capture struct {
	slot  *atomic.Pointer[Capture] // the port's: the capture is on while it points here
	port  int
	dirs  uint32
	snap  int
	rings []*mirrorRing
	wall  time.Time // wall-clock time at switch clock 0
	once  sync.Once
}

// CaptureRecord is one mirrored frame. Data is valid only during the
// callback of Read.
type CaptureRecord struct {
	Port    int
	Dir     int       // CaptureRx or CaptureTx
	Time    time.Time // when the worker saw the frame
	OrigLen int       // the frame's length; Data may be shorter (snap length)
	Data    []byte
}

// Stop ends the capture: workers stop copying (what they copied stays readable).
func (c *Capture) Stop() {
	c.once.Do(func() { c.slot.CompareAndSwap(c, nil) })
}

// Drops is the number of frames the workers could not mirror (ring full).
func (c *Capture) Drops() uint64 {
	var n uint64
	for _, r := range c.rings {
		n += r.drops.Load()
	}
	return n
}

// Read calls fn for every mirrored frame waiting in the rings (ordered
// within a worker, not across workers) and returns how many it read. One
// goroutine at a time.
func (c *Capture) Read(fn func(*CaptureRecord)) int {
	n := 0
	var rec CaptureRecord
	for _, r := range c.rings {
		n += r.read(func(hdr []byte, data []byte) {
			rec.Port = int(binary.LittleEndian.Uint16(hdr[4:]))
			rec.Dir = int(hdr[6])
			rec.Time = c.wall.Add(time.Duration(int64(binary.LittleEndian.Uint64(hdr[8:]))))
			rec.OrigLen = int(binary.LittleEndian.Uint32(hdr[16:]))
			rec.Data = data
			fn(&rec)
		})
	}
	return n
}

// record copies frame into worker w's ring, if the capture is on for dir
// (worker w's goroutine).
func (c *Capture) record(w, dir int, frame []byte, now int64) {
	if c.dirs&uint32(dir) == 0 {
		return
	}
	c.rings[w].write(c.port, dir, frame, c.snap, now)
}

// mirrorRing is a single-producer single-consumer byte ring of records:
// a 24-byte header (length of data, port, direction, time, original
// length) and the data, padded to 8 bytes. A record that would not fit
// before the end of the buffer is preceded by a wrap marker.
type mirrorRing struct {
	buf   []byte
	mask  uint64
	prod  atomic.Uint64 // written by the worker
	cons  atomic.Uint64 // written by the reader
	drops atomic.Uint64
}

const mirrorHdr = 24

func newMirrorRing(size int) *mirrorRing {
	return &mirrorRing{buf: make([]byte, size), mask: uint64(size - 1)}
}

func (r *mirrorRing) write(port, dir int, frame []byte, snap int, now int64) {
	n := min(len(frame), snap)
	need := uint64(mirrorHdr + (n+7)&^7)
	prod, cons := r.prod.Load(), r.cons.Load()
	size := uint64(len(r.buf))
	off := prod & r.mask
	if off+need > size { // not enough room before the end: mark and wrap
		if prod+(size-off)+need-cons > size {
			r.drops.Add(1)
			return
		}
		binary.LittleEndian.PutUint32(r.buf[off:], 0xffffffff)
		prod += size - off
		off = 0
	}
	if prod+need-cons > size {
		r.drops.Add(1)
		return
	}
	h := r.buf[off : off+mirrorHdr]
	binary.LittleEndian.PutUint32(h[0:], uint32(n))
	binary.LittleEndian.PutUint16(h[4:], uint16(port))
	h[6] = byte(dir)
	binary.LittleEndian.PutUint64(h[8:], uint64(now))
	binary.LittleEndian.PutUint32(h[16:], uint32(len(frame)))
	copy(r.buf[off+mirrorHdr:], frame[:n])
	r.prod.Store(prod + need)
}

func (r *mirrorRing) read(fn func(hdr, data []byte)) int {
	k := 0
	prod := r.prod.Load()
	for cons := r.cons.Load(); cons != prod; {
		off := cons & r.mask
		if uint64(len(r.buf))-off < 4 || binary.LittleEndian.Uint32(r.buf[off:]) == 0xffffffff {
			cons += uint64(len(r.buf)) - off
			r.cons.Store(cons)
			continue
		}
		n := int(binary.LittleEndian.Uint32(r.buf[off:]))
		fn(r.buf[off:off+mirrorHdr], r.buf[off+mirrorHdr:off+mirrorHdr+uint64(n)])
		cons += uint64(mirrorHdr + (n+7)&^7)
		r.cons.Store(cons)
		k++
	}
	return k
}
