package afxdp

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Desc is an rx or tx descriptor, laid out as struct xdp_desc.
type Desc struct {
	Addr    uint64 // offset of the frame's first byte in the UMEM
	Len     uint32
	Options uint32
}

// ring holds the shared words of one AF_XDP ring and the cached indices.
//
// For a ring we produce into (fill, tx): local is our producer index and
// other is the last consumer index we read plus size, so other-local is the
// free space we know of. For a ring we consume (rx, completion): local is our
// consumer index and other is the last producer index we read.
type ring struct {
	producer *uint32
	consumer *uint32
	flags    *uint32
	mask     uint32
	size     uint32
	local    uint32
	other    uint32
	mem      []byte
}

// free returns how many entries can be produced, reading the consumer index
// only when the cached view shows fewer than want.
func (r *ring) free(want uint32) uint32 {
	n := r.other - r.local
	if n >= want {
		return n
	}
	r.other = atomic.LoadUint32(r.consumer) + r.size
	return r.other - r.local
}

// avail returns how many entries can be consumed (at most want), reading the
// producer index only when the cached view is short.
func (r *ring) avail(want uint32) uint32 {
	n := r.other - r.local
	if n < want {
		r.other = atomic.LoadUint32(r.producer)
		n = r.other - r.local
	}
	if n > want {
		n = want
	}
	return n
}

// publishProducer makes produced entries visible to the kernel.
func (r *ring) publishProducer() { atomic.StoreUint32(r.producer, r.local) }

// publishConsumer hands consumed entries back to the kernel.
func (r *ring) publishConsumer() { atomic.StoreUint32(r.consumer, r.local) }

// needWakeup reports the ring's XDP_RING_NEED_WAKEUP flag.
func (r *ring) needWakeup() bool { return atomic.LoadUint32(r.flags)&unix.XDP_RING_NEED_WAKEUP != 0 }

// pending is what we produced that the kernel has not consumed yet (producer rings).
func (r *ring) pending() uint32 { return r.local - atomic.LoadUint32(r.consumer) }

// addrRing is a fill or completion ring (entries are u64 frame addresses).
type addrRing struct {
	ring
	addrs []uint64
}

// descRing is an rx or tx ring (entries are struct xdp_desc).
type descRing struct {
	ring
	descs []Desc
}

func mapRing(fd int, off unix.XDPRingOffset, pgoff int64, n uint32, entrySize uintptr) (ring, unsafe.Pointer, error) {
	length := int(off.Desc) + int(n)*int(entrySize)
	mem, err := unix.Mmap(fd, pgoff, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return ring{}, nil, err
	}
	base := unsafe.Pointer(&mem[0])
	r := ring{
		producer: (*uint32)(unsafe.Add(base, off.Producer)),
		consumer: (*uint32)(unsafe.Add(base, off.Consumer)),
		flags:    (*uint32)(unsafe.Add(base, off.Flags)),
		mask:     n - 1,
		size:     n,
		mem:      mem,
	}
	return r, unsafe.Add(base, off.Desc), nil
}

func (r *ring) unmap() error {
	if r.mem == nil {
		return nil
	}
	err := unix.Munmap(r.mem)
	r.mem = nil
	return err
}
