package linklocal

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestSource: the listener takes frames that arrived, with their
// interface, and not the host's own outgoing ones.
func TestSource(t *testing.T) {
	if i, sent := source(&unix.SockaddrLinklayer{Ifindex: 4, Pkttype: unix.PACKET_MULTICAST}); sent || i != 4 {
		t.Fatal("a received frame refused")
	}
	if _, sent := source(&unix.SockaddrLinklayer{Ifindex: 4, Pkttype: unix.PACKET_OUTGOING}); !sent {
		t.Fatal("an outgoing frame taken")
	}
	if _, sent := source(&unix.SockaddrInet4{}); !sent {
		t.Fatal("a frame without a link-layer address taken")
	}
}

var (
	dst = [6]byte{0x01, 0x80, 0xc2, 0, 0, 0x0e}
	sw  = [6]byte{2, 0, 0, 0, 0, 1}
	sw2 = [6]byte{2, 0, 0, 0, 0, 2}
)

func frame(to, from [6]byte) []byte {
	b := make([]byte, 14)
	copy(b, to[:])
	copy(b[6:], from[:])
	return b
}

// TestPeer: frames to another group are foreign; the first frame taken
// names the switch (the gateway's MAC when known) and its interface;
// later frames from another source or interface are foreign.
func TestPeer(t *testing.T) {
	p := NewPeer(dst, [6]byte{}, nil)
	if p.Addressed(frame(sw, sw), 3) {
		t.Fatal("a frame to another address taken")
	}
	if !p.Addressed(frame(dst, sw), 3) || !p.Accept(frame(dst, sw), 3) {
		t.Fatal("the first frame refused")
	}
	if p.Addressed(frame(dst, sw2), 3) || p.Addressed(frame(dst, sw), 4) || !p.Addressed(frame(dst, sw), 3) || !p.Addressed(frame(dst, sw), 0) {
		t.Fatal("the learned switch and interface are not what is taken")
	}
	gw := NewPeer(dst, [6]byte{}, func() ([6]byte, bool) { return sw, true })
	if gw.Accept(frame(dst, sw2), 1) || gw.Addressed(frame(dst, sw2), 1) || !gw.Addressed(frame(dst, sw), 1) {
		t.Fatal("the gateway's MAC did not name the switch")
	}
	given := NewPeer(dst, sw2, func() ([6]byte, bool) { return sw, true })
	if given.Addressed(frame(dst, sw), 1) || !given.Addressed(frame(dst, sw2), 1) {
		t.Fatal("a given MAC did not win over the gateway's")
	}
}
