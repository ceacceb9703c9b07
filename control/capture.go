package control

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gswitch/gswitch/control/capfilter"
	"github.com/gswitch/gswitch/dataplane"
)

// A capture's records follow its response line on the connection, each a
// 20-byte header and a payload:
//
//	off size field
//	0   1    kind: 'F' a frame, 'S' statistics (every second), 'E' the end
//	1   1    direction of a frame: 1 received on the port, 2 sent on it
//	2   2    reserved (0)
//	4   4    payload length (frame: the bytes kept, at most the snap length)
//	8   4    frame: the frame's length on the wire (without FCS)
//	12  8    frame: when the switch saw it, Unix time in ns
//
// The payload of 'S' and 'E' is a CaptureStats in JSON. 'E' is the last
// record; then the server closes the connection. All integers big-endian.
const recHeader = 20

// Record kinds.
const (
	RecFrame = 'F'
	RecStats = 'S'
	RecEnd   = 'E'
)

// Record is one capture record as the client reads it. Data is valid until
// the next Next.
type Record struct {
	Kind    byte
	Dir     int // capfilter.Rx or capfilter.Tx
	OrigLen int
	Time    time.Time
	Data    []byte
	Stats   CaptureStats // of 'S' and 'E' records
}

// Defaults and bounds of a capture.
const (
	DefaultCaptureRing = 4 << 20
	MaxCaptureRing     = 64 << 20
	maxPayload         = 1 << 20
)

func (s *Server) capture(c net.Conn, r *bufio.Reader, w *bufio.Writer, req *Request, who *peer) {
	fail := func(err error) {
		s.opt.Logf("control: %s: %s: error: %v", who, describeRequest(req), err)
		writeResp(w, Response{Error: err.Error()})
	}
	p, err := s.port(req.Port)
	if err != nil {
		fail(err)
		return
	}
	dirs := 0
	switch strings.ToLower(req.Dir) {
	case "", "both":
		dirs = dataplane.CaptureRx | dataplane.CaptureTx
	case "rx", "in":
		dirs = dataplane.CaptureRx
	case "tx", "out":
		dirs = dataplane.CaptureTx
	default:
		fail(fmt.Errorf("capture: direction %q (write rx, tx or both)", req.Dir))
		return
	}
	flt, err := capfilter.Compile(req.Filter)
	if err != nil {
		fail(err)
		return
	}
	ring := req.Ring
	if ring <= 0 {
		ring = DefaultCaptureRing
	}
	if ring > MaxCaptureRing {
		fail(fmt.Errorf("capture: ring of %d bytes per worker is more than %d", ring, MaxCaptureRing))
		return
	}
	if req.Snap < 0 || req.Count < 0 {
		fail(errors.New("capture: snap and count may not be negative"))
		return
	}
	snap := req.Snap
	if snap <= 0 || snap > 65535 {
		snap = 65535
	}
	// The filter needs whole frames (the parser refuses an IPv4 header
	// whose length runs past the bytes it has): the mirror keeps them
	// whole when there is a filter, and the snap length applies on output.
	mirrorSnap := snap
	if req.Filter != "" {
		mirrorSnap = 0
	}
	// The limits are checked, and the memory reserved, before the switch
	// allocates the rings.
	release, err := s.reserveCapture(p, ring, who)
	if err != nil {
		s.logRefusal(fmt.Sprintf("control: refused %s: %s: %v", who, describeRequest(req), err))
		writeResp(w, Response{Error: err.Error()})
		return
	}
	defer release()
	cp, err := s.sw.Capture(p.Index, dirs, mirrorSnap, ring)
	if err != nil {
		fail(err)
		return
	}
	defer cp.Stop()
	s.opt.Logf("control: %s: %s: capturing", who, describeRequest(req))
	start := CaptureStart{Port: p.Name, Snap: snap, Filter: req.Filter}
	if i := p.Index; i < len(s.opt.Info) {
		start.Interface = s.opt.Info[i].Interface
	}
	b, _ := json.Marshal(start)
	if writeResp(w, Response{OK: true, Result: b}) != nil {
		return
	}
	// The client may send {"cmd":"stop"} (or close the connection) to end it.
	var stop atomic.Bool
	go func() {
		for {
			line, err := readLine(r)
			if err != nil || strings.Contains(string(line), `"stop"`) {
				stop.Store(true)
				return
			}
		}
	}()
	var st CaptureStats
	var hdr [recHeader]byte
	lastStats := time.Now()
	reason := "stopped by the client"
	writeErr := error(nil)
	for {
		done := stop.Load()
		n := cp.Read(func(rec *dataplane.CaptureRecord) {
			st.Seen++
			if writeErr != nil || (req.Count > 0 && st.Matched >= uint64(req.Count)) {
				return
			}
			dir := capfilter.Rx
			if rec.Dir == dataplane.CaptureTx {
				dir = capfilter.Tx
			}
			if !flt.Match(rec.Data, dir) {
				return
			}
			st.Matched++
			data := rec.Data
			if len(data) > snap {
				data = data[:snap]
			}
			hdr = [recHeader]byte{RecFrame, byte(dir)}
			binary.BigEndian.PutUint32(hdr[4:], uint32(len(data)))
			binary.BigEndian.PutUint32(hdr[8:], uint32(rec.OrigLen))
			binary.BigEndian.PutUint64(hdr[12:], uint64(rec.Time.UnixNano()))
			if _, writeErr = w.Write(hdr[:]); writeErr == nil {
				_, writeErr = w.Write(data)
			}
		})
		if writeErr != nil {
			return // the client is gone
		}
		if req.Count > 0 && st.Matched >= uint64(req.Count) {
			reason = fmt.Sprintf("%d frames captured", req.Count)
			break
		}
		if done {
			break
		}
		if time.Since(lastStats) >= time.Second {
			lastStats = time.Now()
			st.Dropped = cp.Drops()
			if writeStats(w, RecStats, st) != nil {
				return
			}
		}
		if n == 0 {
			if w.Flush() != nil {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	cp.Stop()
	st.Dropped = cp.Drops()
	st.Reason = reason
	release() // before the end record: a client may start the next capture as soon as it has it
	s.opt.Logf("control: %s: capture on %s ended: %s; %d frames sent of %d seen", who, p.Name, reason, st.Matched, st.Seen)
	writeStats(w, RecEnd, st)
}

// captureRingBytes is what the switch allocates for a capture with rings of
// ring bytes per worker: each worker's ring is rounded up to a power of two
// of at least 64 KiB (dataplane.Switch.Capture).
func captureRingBytes(ring, workers int) int64 {
	n := int64(1 << 16)
	for n < int64(ring) {
		n <<= 1
	}
	return n * int64(workers)
}

// bytesText writes n in the largest binary unit that divides it.
func bytesText(n int64) string {
	switch {
	case n != 0 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + "GiB"
	case n != 0 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "MiB"
	case n != 0 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "KiB"
	}
	return strconv.FormatInt(n, 10) + "B"
}

// reserveCapture checks, before anything is allocated, that port p is not
// being captured and that the capture's rings fit in what
// control.capture_memory leaves, and reserves both; release gives them back.
func (s *Server) reserveCapture(p *dataplane.Port, ring int, who *peer) (release func(), err error) {
	if s.opt.CaptureMemory < 0 {
		return nil, errors.New("capture: capture is off on this switch (control.capture_memory: 0 in gswitchd's config)")
	}
	need := captureRingBytes(ring, s.sw.Workers())
	s.capMu.Lock()
	defer s.capMu.Unlock()
	if by := s.captures[p.Index]; by != nil {
		return nil, fmt.Errorf("capture: port %s is already being captured (by %s): one capture per port at a time, stop that one first", p.Name, by)
	}
	if s.capBytes+need > s.opt.CaptureMemory {
		return nil, fmt.Errorf("capture: its rings need %s (%d worker(s) x %s), and %s of the %s that control.capture_memory allows are in use by other captures: give a smaller -ring, stop another capture, or raise control.capture_memory",
			bytesText(need), s.sw.Workers(), bytesText(captureRingBytes(ring, 1)), bytesText(s.capBytes), bytesText(s.opt.CaptureMemory))
	}
	s.captures[p.Index] = who
	s.capBytes += need
	var once sync.Once
	return func() {
		once.Do(func() {
			s.capMu.Lock()
			delete(s.captures, p.Index)
			s.capBytes -= need
			s.capMu.Unlock()
		})
	}, nil
}

func writeStats(w *bufio.Writer, kind byte, st CaptureStats) error {
	b, _ := json.Marshal(st)
	var hdr [recHeader]byte
	hdr[0] = kind
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(b)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return err
	}
	return w.Flush()
}

// CaptureStream reads a capture's records.
type CaptureStream struct {
	Start CaptureStart
	c     net.Conn
	r     *bufio.Reader
	buf   []byte
	rec   Record
}

// Next returns the next record; after the 'E' record it returns io.EOF.
func (cs *CaptureStream) Next() (*Record, error) {
	if cs.rec.Kind == RecEnd {
		return nil, io.EOF
	}
	var hdr [recHeader]byte
	if _, err := io.ReadFull(cs.r, hdr[:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // the server always ends with an 'E' record
		}
		return nil, fmt.Errorf("capture: the stream ended early: %w", err)
	}
	n := binary.BigEndian.Uint32(hdr[4:])
	if n > maxPayload {
		return nil, fmt.Errorf("capture: record of %d bytes", n)
	}
	if cap(cs.buf) < int(n) {
		cs.buf = make([]byte, n)
	}
	data := cs.buf[:n]
	if _, err := io.ReadFull(cs.r, data); err != nil {
		return nil, fmt.Errorf("capture: the stream ended early: %w", err)
	}
	cs.rec = Record{Kind: hdr[0]}
	switch hdr[0] {
	case RecFrame:
		cs.rec.Dir = int(hdr[1])
		cs.rec.OrigLen = int(binary.BigEndian.Uint32(hdr[8:]))
		cs.rec.Time = time.Unix(0, int64(binary.BigEndian.Uint64(hdr[12:])))
		cs.rec.Data = data
	case RecStats, RecEnd:
		if err := json.Unmarshal(data, &cs.rec.Stats); err != nil {
			return nil, fmt.Errorf("capture: bad statistics record: %v", err)
		}
	default:
		return nil, fmt.Errorf("capture: unknown record kind %q", hdr[0])
	}
	return &cs.rec, nil
}

// Stop asks the server to end the capture; Next then returns what is left
// and the end record.
func (cs *CaptureStream) Stop() error {
	_, err := cs.c.Write([]byte(`{"cmd":"stop"}` + "\n"))
	return err
}

// Close closes the connection (the server stops the capture).
func (cs *CaptureStream) Close() error { return cs.c.Close() }
