// Package linkwatch reports whether named network interfaces exist and are
// up, so that gswitchd can take a port down when its interface is deleted or
// goes down and bring it back when the interface returns.
//
// # Model
//
// Watch reads rtnetlink link messages (RTM_NEWLINK, RTM_DELLINK of family
// AF_UNSPEC; the bridge's AF_BRIDGE port messages are not about the
// interface's existence and are ignored) from one socket subscribed to
// RTNLGRP_LINK. It asks for a dump of all links on the same socket, so dump
// replies and change notifications arrive in the order the kernel made them
// and each message carries a newer state than the ones before it. Its state
// per watched name is the last message about it; the callback runs when that
// state (existence, ifindex, admin state, operational state) differs from
// what it reported last, so the kernel's many other link messages (counters,
// XDP attach, MTU) do not reach it.
//
// An interface is known by its ifindex: deleting one and creating another
// with the same name gives a new ifindex, and Watch reports the old one gone
// before the new one exists, even when the delete message was lost. A
// rename counts as the old name going away and the new name appearing. When
// the socket's receive buffer overflows (ENOBUFS: messages were lost), Watch
// dumps the links again and reports only what changed.
//
// # Goroutines
//
// Watch runs on the caller's goroutine and calls fn on it, one call at a
// time. It watches the network namespace of the thread that calls it.
package linkwatch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Event is the state of one watched interface.
type Event struct {
	Name string
	// Index is the interface's ifindex; a re-created interface has a new
	// one. When Exists is false it is the index the name had last (0 if it
	// never existed while watched).
	Index  int
	Exists bool
	// AdminUp is IFF_UP: the interface was set up (ip link set NAME up).
	AdminUp bool
	// Up is AdminUp and operationally up (IFF_RUNNING): the carrier is on,
	// e.g. the peer of a veth is up too. A port can carry frames only when
	// Up.
	Up bool
}

func (e Event) String() string {
	switch {
	case !e.Exists:
		return fmt.Sprintf("%s: gone", e.Name)
	case e.Up:
		return fmt.Sprintf("%s (ifindex %d): up", e.Name, e.Index)
	case e.AdminUp:
		return fmt.Sprintf("%s (ifindex %d): down (no carrier)", e.Name, e.Index)
	}
	return fmt.Sprintf("%s (ifindex %d): down (admin)", e.Name, e.Index)
}

// Watch calls fn once for each name with its current state (in the order of
// names), then again on every change of a named interface's existence,
// ifindex, admin or operational state, until ctx ends; then it returns nil.
// It returns an error if it cannot open or read the rtnetlink socket.
func Watch(ctx context.Context, names []string, fn func(Event)) error {
	s, err := nl.Subscribe(unix.NETLINK_ROUTE, unix.RTNLGRP_LINK)
	if err != nil {
		return fmt.Errorf("linkwatch: subscribing to rtnetlink link messages: %w", err)
	}
	// Room for bursts (an interface going away sends several messages);
	// an overflow costs a new dump, not a wrong state.
	_ = s.SetReceiveBufferSize(1<<20, false)
	stop := context.AfterFunc(ctx, s.Close)
	defer func() {
		if stop() {
			s.Close()
		}
	}()

	w := newWatcher(names, fn)
	if err := w.requestDump(s); err != nil {
		return err
	}
	for {
		msgs, from, err := s.Receive()
		if ctx.Err() != nil {
			return nil
		}
		switch {
		case err == nil:
		case errors.Is(err, unix.ENOBUFS):
			// Change messages were dropped: read every link again (after
			// the dump in progress, if any: a socket runs one at a time).
			w.redump = true
			if w.dumpSeq == 0 {
				if err := w.requestDump(s); err != nil {
					return err
				}
			}
			continue
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, os.ErrClosed):
			return nil
		default:
			return fmt.Errorf("linkwatch: receiving rtnetlink messages: %w", err)
		}
		if from.Pid != nl.PidKernel {
			continue
		}
		for _, m := range msgs {
			if err := w.handle(m); err != nil {
				return err
			}
			if w.redump && w.dumpSeq == 0 {
				if err := w.requestDump(s); err != nil {
					return err
				}
			}
		}
	}
}

// watcher is Watch's state; it belongs to Watch's goroutine.
type watcher struct {
	names    []string
	watched  map[string]bool
	state    map[string]Event // the last message's view of each watched name
	reported map[string]Event // what fn was last told
	byIndex  map[int]string   // ifindex -> watched name it had in the last message
	fn       func(Event)

	started bool   // the first dump is complete: changes go to fn as they come
	dumpSeq uint32 // sequence number of the dump in progress, 0 if none
	seen    map[string]bool
	redump  bool
}

func newWatcher(names []string, fn func(Event)) *watcher {
	w := &watcher{
		names: names, watched: map[string]bool{}, state: map[string]Event{}, reported: map[string]Event{},
		byIndex: map[int]string{}, seen: map[string]bool{}, fn: fn,
	}
	for _, n := range names {
		w.watched[n] = true
		w.state[n] = Event{Name: n}
	}
	return w
}

func (w *watcher) requestDump(s *nl.NetlinkSocket) error {
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, unix.NLM_F_DUMP)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	if err := s.Send(req); err != nil {
		return fmt.Errorf("linkwatch: asking for the list of links: %w", err)
	}
	w.dumpSeq = req.Seq
	w.redump = false
	clear(w.seen)
	return nil
}

func (w *watcher) handle(m syscall.NetlinkMessage) error {
	h := m.Header
	ours := w.dumpSeq != 0 && h.Seq == w.dumpSeq
	if ours && h.Flags&unix.NLM_F_DUMP_INTR != 0 {
		// The link list changed during the dump, which may have skipped
		// a link: dump again once this one is done.
		w.redump = true
	}
	switch h.Type {
	case unix.NLMSG_DONE:
		if ours {
			w.dumpDone()
		}
		return nil
	case unix.NLMSG_ERROR:
		if ours && len(m.Data) >= 4 {
			if code := int32(nl.NativeEndian().Uint32(m.Data[:4])); code != 0 {
				return fmt.Errorf("linkwatch: listing links: %w", unix.Errno(-code))
			}
		}
		return nil
	case unix.RTM_NEWLINK, unix.RTM_DELLINK:
	default:
		return nil
	}
	if len(m.Data) < unix.SizeofIfInfomsg {
		return nil
	}
	ifi := nl.DeserializeIfInfomsg(m.Data)
	if ifi.Family != unix.AF_UNSPEC {
		return nil // AF_BRIDGE port messages
	}
	name := ifName(m.Data[unix.SizeofIfInfomsg:])
	index := int(ifi.Index)
	if h.Type == unix.RTM_DELLINK {
		w.delLink(index)
	} else {
		w.newLink(index, name, ifi.Flags)
	}
	if w.dumpSeq != 0 && w.watched[name] {
		w.seen[name] = true
	}
	return nil
}

func (w *watcher) newLink(index int, name string, flags uint32) {
	if old, ok := w.byIndex[index]; ok && old != name {
		// Renamed: the old name is gone.
		delete(w.byIndex, index)
		w.set(Event{Name: old, Index: index})
	}
	if !w.watched[name] {
		return
	}
	if st := w.state[name]; st.Exists && st.Index != index {
		// Another interface holds the name: the one we knew is gone
		// (its delete message was lost in an overflow).
		delete(w.byIndex, st.Index)
		w.set(Event{Name: name, Index: st.Index})
	}
	w.byIndex[index] = name
	w.set(Event{
		Name: name, Index: index, Exists: true,
		AdminUp: flags&unix.IFF_UP != 0,
		Up:      flags&(unix.IFF_UP|unix.IFF_RUNNING) == unix.IFF_UP|unix.IFF_RUNNING,
	})
}

func (w *watcher) delLink(index int) {
	name, ok := w.byIndex[index]
	if !ok {
		return
	}
	delete(w.byIndex, index)
	w.set(Event{Name: name, Index: index})
}

// dumpDone: watched names no message mentioned since the dump began do not
// exist. If messages were lost or the dump was interrupted, that conclusion
// waits for the next dump.
func (w *watcher) dumpDone() {
	w.dumpSeq = 0
	if w.redump {
		return
	}
	for _, n := range w.names {
		if st := w.state[n]; st.Exists && !w.seen[n] {
			delete(w.byIndex, st.Index)
			w.set(Event{Name: n, Index: st.Index})
		}
	}
	if !w.started {
		w.started = true
		for _, n := range w.names {
			w.report(n)
		}
	}
}

// set records a name's state and reports it once the first dump is complete.
func (w *watcher) set(e Event) {
	w.state[e.Name] = e
	if w.started {
		w.report(e.Name)
	}
}

func (w *watcher) report(name string) {
	e := w.state[name]
	if last, ok := w.reported[name]; ok && last == e {
		return
	}
	w.reported[name] = e
	w.fn(e)
}

// ifName finds IFLA_IFNAME in a link message's attributes.
func ifName(b []byte) string {
	attrs, err := nl.ParseRouteAttr(b)
	if err != nil {
		return ""
	}
	for _, a := range attrs {
		if a.Attr.Type == unix.IFLA_IFNAME {
			return string(bytes.TrimRight(a.Value, "\x00"))
		}
	}
	return ""
}
