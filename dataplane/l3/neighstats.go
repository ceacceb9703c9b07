package l3

import (
	"cmp"
	"encoding/binary"
	"net/netip"
	"slices"
)

// Stats returns the number of entries live at now (static ones included),
// how many of them are static (IPv4 and IPv6), and how many times ARP4 (or
// Learn4) found no room for an address (Counters' Full).
func (n *Neighbors) Stats(now int64) (entries, static int, full uint64) {
	for i := range n.slots {
		if _, st, ok := n.read(&n.slots[i], now); ok {
			entries++
			if st == stStatic {
				static++
			}
		}
	}
	s6 := len(*n.static6.Load())
	return entries + s6, static + s6, n.full.Load()
}

// read returns the entry in slot s if it is live at now.
func (n *Neighbors) read(s *nslot, now int64) (e Entry, state uint64, ok bool) {
	for range maxAttempts {
		k := s.key.Load()
		st := k & stMask
		if st == stFree {
			return e, 0, false
		}
		if st == stBusy {
			continue
		}
		v := s.val.Load()
		seen := s.seen.Load()
		if s.key.Load() != k {
			continue
		}
		if st == stLearnt && now-seen > n.ttl {
			return e, 0, false
		}
		mac, port := unpack(v)
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(k))
		e = Entry{IP: netip.AddrFrom4(b), MAC: mac, Port: port, Static: st == stStatic}
		if st == stLearnt {
			e.Seen = seen
		}
		return e, st, true
	}
	return e, 0, false
}

// Entries returns the entries live at now, IPv4 then IPv6, each sorted by
// address (for operator tools; it allocates).
func (n *Neighbors) Entries(now int64) []Entry {
	var out []Entry
	for i := range n.slots {
		if e, _, ok := n.read(&n.slots[i], now); ok {
			out = append(out, e)
		}
	}
	for k, v := range *n.static6.Load() {
		mac, port := unpack(v)
		out = append(out, Entry{IP: netip.AddrFrom16(k), MAC: mac, Port: port, Static: true})
	}
	slices.SortFunc(out, func(a, b Entry) int {
		if c := a.IP.Compare(b.IP); c != 0 {
			return c
		}
		return cmp.Compare(a.Port, b.Port)
	})
	return out
}
