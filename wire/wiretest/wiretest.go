// Package wiretest builds gswitch frames for tests: BFC frames from a
// neighbour, with the fields a test cares about and the rest fixed. Test
// helpers only; they panic on values the builders refuse.
package wiretest

import "github.com/gswitch/gswitch/wire"

// BFC is a PAUSE or RESUME frame (type t) from src, sent by port of switch
// sw with sequence number seq, about queue q.
func BFC(src [6]byte, sw, port uint16, t wire.Type, seq uint32, q uint16) []byte {
	return build(src, wire.BFC{Type: t, Seq: seq, Switch: sw, Port: port, Queue: q})
}

// Bitmap is a BITMAP frame from src (switch sw, port port, sequence number
// seq) over nq queues, with the queues in set paused.
func Bitmap(src [6]byte, sw, port uint16, seq uint32, nq int, set ...int) []byte {
	bm := make([]byte, wire.BitmapLen(nq))
	for _, q := range set {
		wire.BitmapSet(bm, q, true)
	}
	return build(src, wire.BFC{Type: wire.TypeBFCBitmap, Seq: seq, Switch: sw, Port: port, NQueues: uint16(nq), Bitmap: bm})
}

func build(src [6]byte, m wire.BFC) []byte {
	b := make([]byte, wire.MaxBFCFrameLen)
	n, err := wire.BuildBFC(b, src, m)
	if err != nil {
		panic(err)
	}
	return b[:n]
}
