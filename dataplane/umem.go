package dataplane

// umem is the shared UMEM and how it is split: one contiguous range of
// frames per worker, the jumbo slots at the top of each range when the
// switch carries frames longer than a UMEM frame (jumbo.go). It is fixed
// in New; any goroutine reads it.
type umem struct {
	mem        []byte
	frameSize  uint64
	numFrames  uint32
	perWorker  uint32 // frames per worker's range (the last range takes the rest)
	ranges     int    // the workers' ranges
	sg         bool   // frames longer than a UMEM frame arrive and leave as multi-buffer chains (Config.MaxFrame)
	slotChunks uint64 // UMEM frames per jumbo slot (sg only)
	slotBytes  uint64 // slotChunks x frameSize
	slotsPer   uint64 // jumbo slots per worker
}

// rangeOf is worker w's range of the UMEM, [lo, hi), its jumbo slots
// being [jlo, hi) (jlo = hi without them).
func (u *umem) rangeOf(w int) (lo, hi, jlo uint64) {
	lo = uint64(w) * uint64(u.perWorker) * u.frameSize
	hi = lo + uint64(u.perWorker)*u.frameSize
	if w == u.ranges-1 {
		hi = uint64(u.numFrames) * u.frameSize
	}
	return lo, hi, hi - u.slotsPer*u.slotBytes
}

// owner returns the worker whose range holds the frame at addr.
func (u *umem) owner(addr uint64) int {
	w := int(uint32(addr/u.frameSize) / u.perWorker)
	if w >= u.ranges {
		w = u.ranges - 1
	}
	return w
}

// slotBase returns the jumbo slot that holds addr, if addr is in one.
func (u *umem) slotBase(addr uint64) (uint64, bool) {
	if !u.sg {
		return 0, false
	}
	_, hi, jlo := u.rangeOf(u.owner(addr))
	if addr < jlo || addr >= hi {
		return 0, false
	}
	return jlo + (addr-jlo)/u.slotBytes*u.slotBytes, true
}

// frameEnd is the end of the UMEM memory the frame at addr may use: its
// UMEM frame's, or its jumbo slot's.
func (u *umem) frameEnd(addr uint64) uint64 {
	if u.sg {
		return u.slotEnd(addr)
	}
	return (addr | (u.frameSize - 1)) + 1 // kept small enough to inline
}

func (u *umem) slotEnd(addr uint64) uint64 {
	if b, ok := u.slotBase(addr); ok {
		return b + u.slotBytes
	}
	return (addr | (u.frameSize - 1)) + 1
}

// chainTail reports whether addr, a completed or reclaimed tx address, is
// a later buffer of a chain: a jumbo slot's UMEM frame other than its first.
// The first buffer stands for the frame.
func (u *umem) chainTail(addr uint64) bool {
	b, ok := u.slotBase(addr)
	return ok && addr-b >= u.frameSize
}

// nextPow2 is the least power of two of at least n.
func nextPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}
