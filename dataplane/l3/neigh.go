package l3

import (
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"net/netip"
	"sync/atomic"
)

// MaxNeighbors is the largest size NewNeighbors takes.
const MaxNeighbors = 1 << 22

const (
	neighProbe  = 16 // slots on each of an address's two probe paths
	maxAttempts = 4  // tries of one ARP4 or Lookup4 that met a concurrent write

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
// be called from any goroutine at once; Lookup4, Lookup6, ARP4, Learn4 and
// ShouldRequest4 take no lock and allocate nothing. Times are in the
// caller's clock units (gswitchd: nanoseconds); the table reads no clock.
//
// IPv4 entries live in a fixed array of slots (open addressing, linear
// probing over at most 16 slots from each of two homes the keyed hash of
// the address gives). A slot is three words: key (address, state,
// generation), value (MAC << 16 | port) and seen (time of the last learn).
// A writer that sets or changes an entry first moves the key to the busy
// state with a compare-and-swap (bumping the generation), stores the value
// and seen, then stores the key again with its final state. A reader loads
// key, value, seen, then the key again, and uses what it read only if both
// keys are equal: since every write of a value passes through busy and a
// new generation, a reader can never pair a MAC or port with another
// address's key.
type Neighbors struct {
	slots   []nslot
	mask    uint64
	probe   uint64
	span    uint64    // places the second path may start, after the first; 0: one path (under 2*neighProbe slots)
	sub     [4]uint64 // subkeys of the hash, from the key
	ttl     int64
	refresh int64 // a refresh re-stores seen only when it is older than this
	static6 atomic.Pointer[map[[16]byte]uint64]

	req    []reqSlot // outstanding ARP requests, by hash of the address
	window int64     // a reply within this long of the request answers it

	rate    []bucket // per port (modulo its length): the next time a binding is free
	rateT   int64    // time one binding costs; 0: no limit
	rateTol int64    // how far ahead of now a port's budget may run (the burst)

	learnt, moveRefused, unsolicited, rateLimited, full counter
}

type nslot struct {
	key  atomic.Uint64
	val  atomic.Uint64
	seen atomic.Int64
	_    uint64 // 32 bytes: two slots per cache line, none straddles one
}

// reqSlot is an outstanding request: the time the switch last asked for an
// address of this hash, and which address that was.
type reqSlot struct {
	t  atomic.Int64
	ip atomic.Uint32
}

type bucket struct {
	next atomic.Int64
	_    [56]byte
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

// Option sets a property of the cache NewNeighbors makes.
type Option func(*options)

type options struct {
	key     [2]uint64
	ports   int
	rateN   int
	ratePer int64
	window  int64
}

// HashKey sets the secret key of the slot hash. Without it (or with a
// zero key) NewNeighbors draws one from the system's secure random source,
// which is what a switch wants: hosts cannot compute which addresses share
// a probe path. Tests set a fixed key to place addresses on purpose.
func HashKey(k [2]uint64) Option { return func(o *options) { o.key = k } }

// Ports sets the number of switch ports the ARP rate limit keeps apart
// (default 256: ports further up share a budget with port%256).
func Ports(n int) Option { return func(o *options) { o.ports = n } }

// ARPRate limits the bindings ARP may make through one port to n per per
// time units, with bursts of up to n (default 100 per 1e9, i.e. 100 a
// second with a nanosecond clock). n = 0 lifts the limit.
func ARPRate(n int, per int64) Option {
	return func(o *options) { o.rateN, o.ratePer = n, per }
}

// SolicitWindow sets how long after the switch asked for an address (see
// ShouldRequest4) a reply from it binds it (default 1e9: a second with a
// nanosecond clock).
func SolicitWindow(d int64) Option { return func(o *options) { o.window = d } }

// NewNeighbors returns an empty cache of size IPv4 slots (a power of two,
// 1 to MaxNeighbors; 32 bytes each, plus 16 for the outstanding requests)
// whose learnt entries expire ttl (> 0) after they were last learnt.
func NewNeighbors(size int, ttl int64, opts ...Option) (*Neighbors, error) {
	if size <= 0 || size > MaxNeighbors || size&(size-1) != 0 {
		return nil, fmt.Errorf("neighbour table size: %d is not a power of two from 1 to %d (set e.g. 4096)", size, MaxNeighbors)
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("neighbour ttl: %d is not positive (set how long a learnt entry lives, in ns, e.g. 300e9 for 300 s)", ttl)
	}
	o := options{ports: 256, rateN: 100, ratePer: 1e9, window: 1e9}
	for _, f := range opts {
		f(&o)
	}
	if o.ports < 1 || o.ports > 1<<16 {
		return nil, fmt.Errorf("neighbour ports: %d is out of range (give the switch's port count, 1 to 65536)", o.ports)
	}
	if o.rateN < 0 || o.rateN > 0 && o.ratePer <= 0 {
		return nil, fmt.Errorf("neighbour ARP rate: %d per %d is not a rate (give a count >= 0, 0 for no limit, per a positive time, e.g. 100 per 1e9 ns)", o.rateN, o.ratePer)
	}
	if o.window <= 0 {
		return nil, fmt.Errorf("neighbour solicit window: %d is not positive (set how long after a request its reply is taken, e.g. 1e9 ns)", o.window)
	}
	if o.key == [2]uint64{} {
		o.key = randomKey()
	}
	n := &Neighbors{
		slots:   make([]nslot, size),
		mask:    uint64(size - 1),
		probe:   uint64(min(neighProbe, size)),
		sub:     subkeys(o.key),
		ttl:     ttl,
		refresh: ttl / 8,
		req:     make([]reqSlot, size),
		window:  o.window,
		rate:    make([]bucket, o.ports),
	}
	if size >= 2*neighProbe {
		n.span = uint64(size) - 2*neighProbe + 1
	}
	if o.rateN > 0 {
		n.rateT = max(o.ratePer/int64(o.rateN), 1)
		n.rateTol = n.rateT * int64(o.rateN-1)
	}
	for i := range n.req {
		n.req[i].t.Store(never)
	}
	for i := range n.rate {
		n.rate[i].next.Store(never)
	}
	m := map[[16]byte]uint64{}
	n.static6.Store(&m)
	return n, nil
}

// homes returns the first slots of ip's two probe paths. The second path
// starts anywhere from just after the first one's end to where it would
// run into the first one's start again, so the two never share a slot:
// any place on the first path ranks before any on the second, which the
// writers' walks rely on. With one path (span 0) both are the same.
func (n *Neighbors) homes(ip uint32) (a, b uint64) {
	h := mix(&n.sub, uint64(ip))
	if n.span == 0 {
		return h & n.mask, h & n.mask
	}
	return h & n.mask, n.second(h)
}

// second is the first slot of the second path of an address whose hash
// is h (with two paths). Lookup4 computes it only when it needs it.
func (n *Neighbors) second(h uint64) uint64 {
	return (h + neighProbe + (h>>32)*n.span>>32) & n.mask
}

// reqIndex is the slot of ip in the table of outstanding requests.
func (n *Neighbors) reqIndex(ip uint32) uint64 {
	return mix(&n.sub, uint64(ip)) & n.mask
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
// ARP never changes it and it never expires. Meant for start-up (it is
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
	a, b := n.homes(ip)
	var cand *nslot
	var ck uint64
	for path := range n.paths() {
		home := a
		if path == 1 {
			home = b
		}
		for p := uint64(0); p < n.probe; p++ {
			s := &n.slots[(home+p)&n.mask]
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
				if !n.write(s, k, ip, val, 0, stStatic) {
					return nil, true
				}
				return nil, false
			}
			if cand == nil && st == stFree {
				cand, ck = s, k
			}
		}
	}
	if cand == nil {
		return fmt.Errorf("no room: the %d slots where it may go hold other static or learnt entries (raise the table size)", n.probe*uint64(n.paths())), false
	}
	if !n.write(cand, ck, ip, val, 0, stStatic) {
		return nil, true
	}
	return nil, false
}

// paths is the number of probe paths: 2, or 1 in a table under 32 slots.
func (n *Neighbors) paths() int {
	if n.span == 0 {
		return 1
	}
	return 2
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

// Lookup4 returns the MAC and port of ip (IPv4 as a big-endian uint32) if
// it has a static entry or a learnt one that has not expired at now. It
// writes nothing, takes no lock and allocates nothing. An entry being
// rewritten at that instant may read as absent (after a few tries).
func (n *Neighbors) Lookup4(ip uint32, now int64) (mac [6]byte, port uint16, ok bool) {
	h := mix(&n.sub, uint64(ip))
	for range maxAttempts {
		v, found, hit, again := n.lookup(ip, h, now)
		if !hit && !again && n.span != 0 {
			v, found, _, again = n.lookup(ip, n.second(h), now)
		}
		if !again {
			if found {
				mac, port = unpack(v)
			}
			return mac, port, found
		}
	}
	return mac, 0, false
}

// lookup looks for ip on the path from slot h (masked here); hit says it
// found the address (live or expired), so that the other path need not be
// looked at.
func (n *Neighbors) lookup(ip uint32, h uint64, now int64) (val uint64, ok, hit, again bool) {
	for p := uint64(0); p < n.probe; p++ {
		s := &n.slots[(h+p)&n.mask]
		k := s.key.Load()
		if k == 0 {
			return 0, false, false, false
		}
		if uint32(k) != ip {
			continue
		}
		switch k & stMask {
		case stFree:
			continue
		case stBusy:
			return 0, false, true, true
		}
		if lookupHook != nil {
			lookupHook()
		}
		v := s.val.Load()
		seen := s.seen.Load()
		if s.key.Load() != k {
			return 0, false, true, true
		}
		if k&stMask == stStatic || now-seen <= n.ttl {
			return v, true, true, false
		}
		return 0, false, true, false // expired
	}
	return 0, false, false, false
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
