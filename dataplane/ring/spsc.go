// Package ring provides the lock-free single-producer single-consumer ring
// that carries batches of packets and frame addresses between workers.
//
// Like an AF_XDP ring, each side keeps a cached copy of the other side's
// index and reads the shared word only when the cached view runs out, and
// each side publishes its own index once per batch. Exactly one goroutine may
// call the producer methods (Push) and exactly one the consumer methods
// (Pop); Len may be called from anywhere (for metrics).
package ring

import (
	"fmt"
	"sync/atomic"
)

// SPSC is a bounded ring of T. Its zero value is not usable; call New.
type SPSC[T any] struct {
	_    [64]byte
	prod atomic.Uint32 // written by the producer
	_    [60]byte
	cons atomic.Uint32 // written by the consumer
	_    [60]byte
	// producer-private
	pLocal, pCachedCons uint32
	_                   [56]byte
	// consumer-private
	cLocal, cCachedProd uint32
	_                   [56]byte
	mask                uint32
	buf                 []T
}

// New returns a ring of size slots; size must be a power of two.
func New[T any](size int) (*SPSC[T], error) {
	if size <= 0 || size&(size-1) != 0 || size > 1<<30 {
		return nil, fmt.Errorf("ring size %d is not a power of two in [1, 2^30]", size)
	}
	return &SPSC[T]{mask: uint32(size - 1), buf: make([]T, size)}, nil
}

// Cap is the number of slots.
func (r *SPSC[T]) Cap() int { return len(r.buf) }

// Push appends as many of items as fit and returns how many did. Producer only.
func (r *SPSC[T]) Push(items []T) int {
	size := uint32(len(r.buf))
	free := r.pCachedCons + size - r.pLocal
	if free < uint32(len(items)) {
		r.pCachedCons = r.cons.Load()
		free = r.pCachedCons + size - r.pLocal
	}
	n := uint32(len(items))
	if n > free {
		n = free
	}
	for i := uint32(0); i < n; i++ {
		r.buf[(r.pLocal+i)&r.mask] = items[i]
	}
	if n > 0 {
		r.pLocal += n
		r.prod.Store(r.pLocal)
	}
	return int(n)
}

// Pop moves up to len(out) items into out and returns how many. Consumer only.
func (r *SPSC[T]) Pop(out []T) int {
	avail := r.cCachedProd - r.cLocal
	if avail < uint32(len(out)) {
		r.cCachedProd = r.prod.Load()
		avail = r.cCachedProd - r.cLocal
	}
	n := uint32(len(out))
	if n > avail {
		n = avail
	}
	for i := uint32(0); i < n; i++ {
		out[i] = r.buf[(r.cLocal+i)&r.mask]
	}
	if n > 0 {
		r.cLocal += n
		r.cons.Store(r.cLocal)
	}
	return int(n)
}

// Len is the number of items in the ring as seen from any goroutine.
func (r *SPSC[T]) Len() int { return int(r.prod.Load() - r.cons.Load()) }
