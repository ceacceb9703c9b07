// Package control is gswitchd's control socket: the server that answers
// gswitchctl, and the client gswitchctl uses.
//
// # Model
//
// gswitchd listens on a unix stream socket (default
// /run/gswitch/NAME.sock; config key control: {socket, group, admin_group,
// max_connections, capture_memory}). Nothing listens on the network. The
// socket is made without following a symlink or removing anything but a
// stale socket (socket.go). The file is mode 0600 (root only), or 0660 and
// owned by the configured group; the server also checks each peer's
// credentials (SO_PEERCRED, SO_PEERGROUPS) and gives it a tier (access.go):
// admin (root, gswitchd's own user, control.admin_group) may do
// everything; read (control.group) may ask what changes nothing and shows
// no frame. Kinds classifies every request. Admin actions and refusals are
// logged with the peer's uid and pid; connections and the memory of
// captures are bounded.
//
// The protocol is JSON lines. The client writes one request per line, the
// server answers each with one response line, in order; a connection may
// carry any number of requests (gswitchctl top reuses one).
//
//	-> {"cmd":"queues","port":"p2"}
//	<- {"ok":true,"result":{"port":"p2","scheduler":"drr",...}}
//	-> {"cmd":"set","port":"p2","key":"scheduler","value":"fifo"}
//	<- {"ok":false,"error":"p2: scheduler cannot change while gswitchd runs: ..."}
//
// Commands (docs/operations.md has every field): info, health, ports,
// queues, mac, routes, neighbors, flows, stats, fidelity, set, reload,
// capture.
// capture is the one that streams: after its response line the connection
// carries binary capture records (see Record) until the capture ends; the
// client may end it early by writing {"cmd":"stop"}.
//
// # Goroutines
//
// The server runs one goroutine per connection. Views read the switch
// through what any goroutine may read (atomic counters and gauges, the
// lock-free tables, mechanisms' Viewer and FlowLister); changes go through
// the dataplane's run-time setters, which the egress workers apply. No
// request ever blocks a forwarding worker. Set and Reload are serialised by
// the server's mutex, which also guards the running config.
package control
