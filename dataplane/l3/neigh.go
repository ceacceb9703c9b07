package l3

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"net/netip"
	"slices"
	"sync/atomic"
)

// MaxNeighbors is the largest size NewNeighbors takes.
const MaxNeighbors = 1 << 22

const (
	neighProbe  = 16 // slots on an address's probe path
	maxAttempts = 4  // tries of one Learn4 or Lookup4 that met a concurrent write

	// A slot's key word: IPv4 address (bits 0-31), state (bits 32-33),
	// generation (bits 34-63). A key of 0 is an empty slot (nothing
	// further on the probe path); a free slot with a generation is a
	// reusable one.
	stFree   = 0 << 32
	stLearnt = 1 << 32
	stStatic = 2 << 32
	stBusy   = 3 << 32 // being written: the value and seen words are not to be trusted
	stMask   = 3 << 32
	genShift = 34
	genOne   = 1 << genShift

	never = math.MinInt64 // last request time of a slot that never asked
)

// Neighbors is the neighbour cache: IPv4 address -> (MAC, port), learnt
// from ARP or set statically, plus static IPv6 entries. Every method may
// be called from any goroutine at once; Lookup4, Lookup6, Learn4 and
// ShouldRequest4 take no lock and allocate nothing. Times are in the
// caller's clock units (gswitchd: nanoseconds); the table reads no clock.
//
// IPv4 entries live in a fixed array of slots (open addressing, linear
// probing over at most 16 slots from the address's home). A slot is three
// words: key (address, state, generation), value (MAC << 16 | port) and
// seen (time of the last learn). A writer that sets or changes an entry
// first moves the key to the busy state with a compare-and-swap (bumping
// the generation), stores the value and seen, then stores the key again
// with its final state. A reader loads key, value, seen, then the key
// again, and uses what it read only if both keys are equal: since every
// write of a value passes through busy and a new generation, a reader can
// never pair a MAC or port with another address's key.
type Neighbors struct {
	slots    []nslot
	mask     uint64
	shift    uint8
	probe    uint64
	ttl      int64
	refresh  int64 // Learn4 re-stores seen only when it is older than this
	req      []atomic.Int64
	reqShift uint8
	static6  atomic.Pointer[map[[16]byte]uint64]

	full counter
}

type nslot struct {
	key  atomic.Uint64
	val  atomic.Uint64
	seen atomic.Int64
	_    uint64 // 32 bytes: two slots per cache line, none straddles one
}

type counter struct {
	atomic.Uint64
	_ [56]byte
}

// Entry is a neighbour as Entries reports it.
type Entry struct {
	IP     netip.Addr
	MAC    [6]byte
	Port   uint16
	Static bool
	Seen   int64 // time of the last learn (learnt entries)
}

// NewNeighbors returns an empty cache of size IPv4 slots (a power of two,
// 1 to MaxNeighbors; 32 bytes each, plus 8 for the request limiter) whose
// learnt entries expire ttl (> 0) after they were last learnt.
func NewNeighbors(size int, ttl int64) (*Neighbors, error) {
	if size <= 0 || size > MaxNeighbors || size&(size-1) != 0 {
		return nil, fmt.Errorf("neighbour table size: %d is not a power of two from 1 to %d (set e.g. 4096)", size, MaxNeighbors)
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("neighbour ttl: %d is not positive (set how long a learnt entry lives, in ns, e.g. 300e9 for 300 s)", ttl)
	}
	log := uint8(0)
	for 1<<log < size {
		log++
	}
	n := &Neighbors{
		slots:    make([]nslot, size),
		mask:     uint64(size - 1),
		shift:    64 - log,
		probe:    uint64(min(neighProbe, size)),
		ttl:      ttl,
		refresh:  ttl / 8,
		req:      make([]atomic.Int64, size),
		reqShift: 64 - log,
	}
	for i := range n.req {
		n.req[i].Store(never)
	}
	m := map[[16]byte]uint64{}
	n.static6.Store(&m)
	return n, nil
}

// home is the first slot of ip's probe path (Fibonacci hashing: the top
// bits of ip times 2^64/phi).
func home(ip uint32, shift uint8) uint64 {
	return uint64(ip) * k0 >> shift // a shift by 64 (one slot) gives 0
}

func pack(mac [6]byte, port uint16) uint64 {
	return uint64(mac[0])<<56 | uint64(mac[1])<<48 | uint64(mac[2])<<40 |
		uint64(mac[3])<<32 | uint64(mac[4])<<24 | uint64(mac[5])<<16 | uint64(port)
}

func unpack(v uint64) (mac [6]byte, port uint16) {
	mac = [6]byte{byte(v >> 56), byte(v >> 48), byte(v >> 40), byte(v >> 32), byte(v >> 24), byte(v >> 16)}
	return mac, uint16(v)
}

// Static sets a permanent entry: ip (IPv4, or IPv6) is at mac behind port.
// Learn4 never changes it and it never expires. Meant for start-up (it is
// safe at any time, but IPv6 entries are copied on each call). Setting an
// address again to the same MAC and port is no error; to another is. An
// IPv4-mapped IPv6 address is taken as its IPv4 address.
func (n *Neighbors) Static(ip netip.Addr, mac [6]byte, port uint16) error {
	if !ip.IsValid() || ip.IsUnspecified() {
		return fmt.Errorf("static neighbour %v: not an address (give the neighbour's IPv4 or IPv6 address)", ip)
	}
	if ip.Zone() != "" {
		return fmt.Errorf("static neighbour %s: has a zone (remove it; port %d names the link)", ip, port)
	}
	ip = ip.Unmap()
	val := pack(mac, port)
	if ip.Is6() {
		return n.static6Set(ip, val)
	}
	b := ip.As4()
	a := binary.BigEndian.Uint32(b[:])
	for range 64 {
		err, again := n.static4(a, val)
		if !again {
			if err != nil {
				return fmt.Errorf("static neighbour %s: %w", ip, err)
			}
			return nil
		}
	}
	return fmt.Errorf("static neighbour %s: the table is being changed by others without end (set static entries at start)", ip)
}

func (n *Neighbors) static6Set(ip netip.Addr, val uint64) error {
	key := ip.As16()
	for {
		old := n.static6.Load()
		if v, ok := (*old)[key]; ok {
			if v == val {
				return nil
			}
			mac, port := unpack(v)
			return fmt.Errorf("static neighbour %s: already set to %s on port %d (give each address once)", ip, net.HardwareAddr(mac[:]), port)
		}
		m := make(map[[16]byte]uint64, len(*old)+1)
		for k, v := range *old {
			m[k] = v
		}
		m[key] = val
		if n.static6.CompareAndSwap(old, &m) {
			return nil
		}
	}
}

func (n *Neighbors) static4(ip uint32, val uint64) (err error, again bool) {
	h := home(ip, n.shift)
	var cand *nslot
	var ck uint64
	for p := uint64(0); p < n.probe; p++ {
		s := &n.slots[(h+p)&n.mask]
		k := s.key.Load()
		if k == 0 {
			if cand == nil {
				cand, ck = s, k
			}
			break
		}
		st := k & stMask
		if uint32(k) == ip && st != stFree {
			switch st {
			case stBusy:
				return nil, true
			case stStatic:
				v := s.val.Load()
				if s.key.Load() != k {
					return nil, true
				}
				if v == val {
					return nil, false
				}
				mac, port := unpack(v)
				return fmt.Errorf("already set to %s on port %d (give each address once)", net.HardwareAddr(mac[:]), port), false
			}
			// A learnt entry becomes static in place.
			cand, ck = s, k
			break
		}
		if cand == nil && st == stFree {
			cand, ck = s, k
		}
	}
	if cand == nil {
		return fmt.Errorf("no room: the %d slots where it may go hold other static or learnt entries (raise the table size)", n.probe), false
	}
	if !n.write(cand, ck, ip, val, 0, stStatic) {
		return nil, true
	}
	return nil, false
}

// write sets slot s, whose key was k, to ip's entry: busy (by
// compare-and-swap, which fails if anyone changed the key meanwhile),
// then value and seen, then the final key.
func (n *Neighbors) write(s *nslot, k uint64, ip uint32, val uint64, seen int64, state uint64) bool {
	g := (k &^ (genOne - 1)) + genOne
	if !s.key.CompareAndSwap(k, g|stBusy|uint64(ip)) {
		return false
	}
	s.val.Store(val)
	s.seen.Store(seen)
	s.key.Store(g | state | uint64(ip))
	return true
}

// Learn4 records that ip (IPv4 as a big-endian uint32) is at mac behind
// port, as an ARP packet said at now, and reports whether the cache now
// holds that: a new entry, a refreshed one, or one whose MAC or port
// changed (a host that changed NIC or moved). It returns false without
// changing anything for address 0 (ARP probes), for an address with a
// static entry (true if the static entry says the same), when the 16
// slots where ip may go hold live entries of other addresses (counted in
// Stats as full), and in the rare case that it lost every race with other
// writers of the same slots (the next ARP packet tries again). An entry
// not learnt for ttl expires; its slot goes to the next address that
// needs one. It allocates nothing and takes no lock.
func (n *Neighbors) Learn4(ip uint32, mac [6]byte, port uint16, now int64) bool {
	if ip == 0 {
		return false
	}
	val := pack(mac, port)
	for range maxAttempts {
		if ok, again := n.learn(ip, val, now); !again {
			return ok
		}
	}
	return false
}

func (n *Neighbors) learn(ip uint32, val uint64, now int64) (ok, again bool) {
	h := home(ip, n.shift)
	var cand *nslot
	var ck uint64
	cp := uint64(0)
	for p := uint64(0); p < n.probe; p++ {
		s := &n.slots[(h+p)&n.mask]
		k := s.key.Load()
		if k == 0 {
			if cand == nil {
				cand, ck, cp = s, k, p
			}
			break
		}
		st := k & stMask
		if uint32(k) == ip && st != stFree {
			switch st {
			case stBusy:
				return false, true
			case stStatic:
				v := s.val.Load()
				if s.key.Load() != k {
					return false, true
				}
				return v == val, false
			}
			return n.known(s, k, ip, val, now)
		}
		if cand == nil && (st == stFree || st == stLearnt && now-s.seen.Load() > n.ttl) {
			// A reusable slot, or a dead entry of another address. If that
			// entry is learnt again before our compare-and-swap below, its
			// learner sees the key change and learns it elsewhere.
			cand, ck, cp = s, k, p
		}
	}
	if cand == nil {
		n.full.Add(1)
		return false, false
	}
	if !n.write(cand, ck, ip, val, now, stLearnt) {
		return false, true
	}
	// Another writer may have put ip on the path at the same time. The
	// copy nearest the path's start stays: ours yields to an earlier one,
	// and later ones yield to ours. (The writer of an earlier copy that
	// passed our slot before we wrote it removes ours on its own walk
	// forward.)
	for p := uint64(0); p < cp; p++ {
		k := n.slots[(h+p)&n.mask].key.Load()
		if uint32(k) == ip && k&stMask != stFree {
			n.free(cand, ip)
			return false, true // the next attempt finds the other copy
		}
	}
	for p := cp + 1; p < n.probe; p++ {
		s := &n.slots[(h+p)&n.mask]
		k := s.key.Load()
		if k == 0 {
			break
		}
		if uint32(k) == ip && k&stMask == stLearnt {
			n.free(s, ip)
		}
	}
	return true, false
}

// free makes slot s reusable if it holds a learnt entry of ip. It tries a
// few times when other writers change the slot meanwhile, then leaves it:
// a copy of an address further along its path than another is never
// found by lookups, and its slot is reused once it expires.
func (n *Neighbors) free(s *nslot, ip uint32) {
	for range maxAttempts {
		k := s.key.Load()
		switch {
		case uint32(k) != ip || k&stMask == stFree || k&stMask == stStatic:
			return
		case k&stMask == stBusy:
			continue
		}
		if s.key.CompareAndSwap(k, (k&^(genOne-1))+genOne|stFree) {
			return
		}
	}
}

// known handles ip found learnt in slot s with key k.
func (n *Neighbors) known(s *nslot, k uint64, ip uint32, val uint64, now int64) (ok, again bool) {
	v := s.val.Load()
	seen := s.seen.Load()
	if s.key.Load() != k {
		return false, true
	}
	if knownHook != nil {
		knownHook()
	}
	if v == val && now-seen <= n.ttl {
		if now-seen > n.refresh {
			// A compare-and-swap, not a store: should the slot have gone
			// to another address since we read it, its new seen is left
			// alone and the key check below sends us round again.
			s.seen.CompareAndSwap(seen, now)
			if s.key.Load() != k {
				return false, true
			}
		}
		return true, false
	}
	// A new MAC or port, or a dead entry revived: through busy, so that no
	// reader pairs the old key with the new value.
	if !n.write(s, k, ip, val, now, stLearnt) {
		return false, true
	}
	return true, false
}

// knownHook and lookupHook, if set (by tests only), run in Learn4 after
// it read an existing entry and before it writes it, and in Lookup4 after
// it matched a key and before it reads the value: tests use them to play
// another worker rewriting the slot at that instant.
var knownHook, lookupHook func()

// Lookup4 returns the MAC and port of ip (IPv4 as a big-endian uint32) if
// it has a static entry or a learnt one that has not expired at now. It
// writes nothing, takes no lock and allocates nothing. An entry being
// rewritten at that instant may read as absent (after a few tries).
func (n *Neighbors) Lookup4(ip uint32, now int64) (mac [6]byte, port uint16, ok bool) {
	h := home(ip, n.shift)
	for range maxAttempts {
		v, found, again := n.lookup(ip, h, now)
		if !again {
			if found {
				mac, port = unpack(v)
			}
			return mac, port, found
		}
	}
	return mac, 0, false
}

func (n *Neighbors) lookup(ip uint32, h uint64, now int64) (val uint64, ok, again bool) {
	for p := uint64(0); p < n.probe; p++ {
		s := &n.slots[(h+p)&n.mask]
		k := s.key.Load()
		if k == 0 {
			return 0, false, false
		}
		if uint32(k) != ip {
			continue
		}
		switch k & stMask {
		case stFree:
			continue
		case stBusy:
			return 0, false, true
		}
		if lookupHook != nil {
			lookupHook()
		}
		v := s.val.Load()
		seen := s.seen.Load()
		if s.key.Load() != k {
			return 0, false, true
		}
		if k&stMask == stStatic || now-seen <= n.ttl {
			return v, true, false
		}
		return 0, false, false // expired
	}
	return 0, false, false
}

// Lookup6 returns the MAC and port of a static IPv6 neighbour (ip is 16
// bytes in network order). It allocates nothing.
func (n *Neighbors) Lookup6(ip *[16]byte, now int64) (mac [6]byte, port uint16, ok bool) {
	v, ok := (*n.static6.Load())[*ip]
	if !ok {
		return mac, 0, false
	}
	mac, port = unpack(v)
	return mac, port, true
}

// ShouldRequest4 reports whether the caller should send an ARP request for
// ip (IPv4 as a big-endian uint32) at now: true at most once per interval
// for each address. It allocates nothing and takes no lock.
//
// The limiter is a table of size last-request times, one per hash of the
// address, claimed by compare-and-swap, so of several callers at once only
// one gets true. Addresses that share a slot share its limit: a second
// unresolved address in the same slot within an interval waits for the
// next one. So whatever the number of unresolved addresses (a scan of a
// connected subnet, say), the switch sends at most size ARP requests per
// interval.
func (n *Neighbors) ShouldRequest4(ip uint32, now, interval int64) bool {
	s := &n.req[home(ip, n.reqShift)]
	l := s.Load()
	if l != never && now-l < interval {
		return false
	}
	return s.CompareAndSwap(l, now)
}

// Stats returns the number of entries live at now (static ones included),
// how many of them are static (IPv4 and IPv6), and how many times Learn4
// found no room for an address.
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
