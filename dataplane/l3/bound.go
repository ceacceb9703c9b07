package l3

// Binding is how an address stands in the neighbour table, for a source
// guard that asks whether a packet's source belongs to where it came from.
type Binding uint8

// Bindings.
const (
	Unbound        Binding = iota // no live entry: none, or a learnt one that expired
	BoundHere                     // bound (learnt and live, or static) to the MAC and port asked about
	BoundElsewhere                // bound to another MAC or port
)

var bindingNames = [...]string{"unbound", "bound_here", "bound_elsewhere"}

func (b Binding) String() string {
	if int(b) < len(bindingNames) {
		return bindingNames[b]
	}
	return "unknown"
}

// Bound4 says whether ip (IPv4 as a big-endian uint32) is bound to mac
// behind port at now. A learnt binding it agrees with is refreshed, as an
// ARP packet that agrees with it would be (ARP4): a binding then lasts
// while its owner keeps sending, and expires ttl after it fell silent, so
// that a host that really moved is reachable again. It binds nothing and
// counts nothing; it takes no lock and allocates nothing. An entry being
// rewritten at that instant may read as unbound (after a few tries).
func (n *Neighbors) Bound4(ip uint32, mac [6]byte, port uint16, now int64) Binding {
	val := pack(mac, port)
	h := mix(&n.sub, uint64(ip))
	for range maxAttempts {
		b, hit, again := n.bound(ip, val, h, now)
		if !hit && !again && n.span != 0 {
			b, _, again = n.bound(ip, val, n.second(h), now)
		}
		if !again {
			return b
		}
	}
	return Unbound
}

// bound looks for ip on the path from slot h (masked here) as lookup
// does; hit says it found the address (live or expired).
func (n *Neighbors) bound(ip uint32, val, h uint64, now int64) (b Binding, hit, again bool) {
	for p := uint64(0); p < n.probe; p++ {
		s := &n.slots[(h+p)&n.mask]
		k := s.key.Load()
		if k == 0 {
			return Unbound, false, false
		}
		if uint32(k) != ip {
			continue
		}
		switch k & stMask {
		case stFree:
			continue
		case stBusy:
			return Unbound, true, true
		}
		v := s.val.Load()
		seen := s.seen.Load()
		if s.key.Load() != k {
			return Unbound, true, true
		}
		learnt := k&stMask == stLearnt
		if learnt && now-seen > n.ttl {
			return Unbound, true, false // expired
		}
		if v != val {
			return BoundElsewhere, true, false
		}
		if learnt && now-seen > n.refresh {
			// As ARP4's refresh: a compare-and-swap, and should the slot
			// have gone to another address meanwhile, look again.
			s.seen.CompareAndSwap(seen, now)
			if s.key.Load() != k {
				return Unbound, true, true
			}
		}
		return BoundHere, true, false
	}
	return Unbound, false, false
}

// Bound6 says whether the IPv6 address ip (16 bytes in network order) is
// a static neighbour at mac behind port (IPv6 neighbours are static only:
// there is no ND). It allocates nothing.
func (n *Neighbors) Bound6(ip *[16]byte, mac [6]byte, port uint16) Binding {
	v, ok := (*n.static6.Load())[*ip]
	switch {
	case !ok:
		return Unbound
	case v != pack(mac, port):
		return BoundElsewhere
	}
	return BoundHere
}
