package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gswitch/gswitch/mech"
)

// Request is one line a client sends. Fields a command does not use are
// left out.
type Request struct {
	Cmd    string `json:"cmd"`
	Port   string `json:"port,omitempty"`   // a port's name (or index)
	Key    string `json:"key,omitempty"`    // set: what to change (rate, burst, quantum, queue)
	Value  string `json:"value,omitempty"`  // set: the new value
	Queue  int    `json:"queue,omitempty"`  // set queue: the queue
	Limit  int    `json:"limit,omitempty"`  // mac, flows: most entries (0: the server's default)
	Dir    string `json:"dir,omitempty"`    // capture: rx, tx or both (default)
	Snap   int    `json:"snap,omitempty"`   // capture: bytes kept of each frame (0: all)
	Count  int    `json:"count,omitempty"`  // capture: stop after this many frames (0: until stopped)
	Filter string `json:"filter,omitempty"` // capture: a filter expression (package capfilter)
	Ring   int    `json:"ring,omitempty"`   // capture: bytes of mirror ring per worker (0: 4 MiB)
}

// ErrEmptyRequest is ParseRequest's error for a line with nothing but
// white space, which the server skips.
var ErrEmptyRequest = errors.New("empty request")

// ParseRequest reads one request line (what a client writes, without or
// with its newline). Fields it does not know are ignored; whether the
// command exists and may be used is for the server to say.
func ParseRequest(line []byte) (*Request, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, ErrEmptyRequest
	}
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		return nil, fmt.Errorf("not a JSON request: %v", err)
	}
	return &req, nil
}

// describeRequest says what req asks for, for gswitchd's log: one line,
// every string quoted (a peer's values cannot start a log line of their
// own), fields left out when not set.
func describeRequest(r *Request) string {
	var b strings.Builder
	if isKind(r.Cmd) {
		b.WriteString(r.Cmd)
	} else {
		b.WriteString(strconv.Quote(r.Cmd))
	}
	str := func(name, v string) {
		if v != "" {
			fmt.Fprintf(&b, " %s %s", name, strconv.Quote(v))
		}
	}
	num := func(name string, v int) {
		if v != 0 {
			fmt.Fprintf(&b, " %s %d", name, v)
		}
	}
	str("port", r.Port)
	str("key", r.Key)
	num("queue", r.Queue)
	str("value", r.Value)
	num("limit", r.Limit)
	str("dir", r.Dir)
	num("snap", r.Snap)
	num("count", r.Count)
	str("filter", r.Filter)
	num("ring", r.Ring)
	return b.String()
}

// Response is one line the server sends.
type Response struct {
	OK     bool            `json:"ok"`
	Error  string          `json:"error,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
}

// Info is the result of "info".
type Info struct {
	SwitchID   uint16    `json:"switch_id"`
	PID        int       `json:"pid"`
	Config     string    `json:"config"`
	Started    time.Time `json:"started"`
	Workers    int       `json:"workers"`
	Ports      int       `json:"ports"`
	Mechanisms []string  `json:"mechanisms"`
	L3         bool      `json:"l3"`
}

// Health is the result of "health": Status is ok (forwarding, every port
// up), degraded (forwarding, with Problems) or stopping.
type Health struct {
	Status    string   `json:"status"`
	Problems  []string `json:"problems,omitempty"`
	UptimeSec float64  `json:"uptime_seconds"`
	Workers   int      `json:"workers"`
	PortsUp   int      `json:"ports_up"`
	PortsDown []string `json:"ports_down,omitempty"`
	Frames    Frames   `json:"frames"`
}

// Frames says where the UMEM frames are.
type Frames struct {
	Total, Free, Fill, Handoff, Queued, Tx, Delayed, Returning uint64
}

// PortView is one port in "ports".
type PortView struct {
	Index      int      `json:"index"`
	Name       string   `json:"name"`
	Interface  string   `json:"interface"`
	Up         bool     `json:"up"`
	Role       string   `json:"role"`
	MAC        string   `json:"mac"`
	Addrs      []string `json:"addrs,omitempty"`
	RateBits   uint64   `json:"rate_bits"` // bit/s, 0: unlimited
	Scheduler  string   `json:"scheduler"`
	Queues     int      `json:"queues"`
	Mechanisms []string `json:"mechanisms,omitempty"`
	XDPMode    string   `json:"xdp_mode,omitempty"`
	ZeroCopy   bool     `json:"zerocopy"`
	RxQueues   int      `json:"rx_queues"`
	Counters
}

// Counters are a port's cumulative counters.
type Counters struct {
	RxPackets uint64 `json:"rx_packets"`
	RxBytes   uint64 `json:"rx_bytes"`
	TxPackets uint64 `json:"tx_packets"`
	TxBytes   uint64 `json:"tx_bytes"`
	Flooded   uint64 `json:"flooded"`
	Drops     uint64 `json:"drops"` // every reason
}

// QueuesView is the result of "queues" for one port.
type QueuesView struct {
	Port       string                    `json:"port"`
	Scheduler  string                    `json:"scheduler"`
	Quantum    int                       `json:"quantum,omitempty"` // drr, sfq
	Round      *uint64                   `json:"round,omitempty"`   // rsp
	RateBits   uint64                    `json:"rate_bits"`
	Up         bool                      `json:"up"`
	Queues     []QueueView               `json:"queues"`
	Control    Lane                      `json:"control_lane"`
	Credit     *Lane                     `json:"credit_lane,omitempty"`
	Drops      map[string]uint64         `json:"drops"` // by reason, those not zero
	Mechanisms map[string]map[string]any `json:"mechanisms,omitempty"`
}

// QueueView is one egress queue.
type QueueView struct {
	Queue   int    `json:"queue"`
	Bytes   uint64 `json:"bytes"`
	Packets uint32 `json:"packets"`
	Paused  bool   `json:"paused"`
}

// Lane is the depth of a port's control or credit lane.
type Lane struct {
	Bytes   uint64 `json:"bytes"`
	Packets uint32 `json:"packets"`
}

// MACView is the result of "mac".
type MACView struct {
	Entries   []MACEntry `json:"entries"`
	Total     int        `json:"total"` // live entries (Entries may stop at the limit)
	Learned   uint64     `json:"learned"`
	Moves     uint64     `json:"moves"`
	TableFull uint64     `json:"table_full"`
}

// MACEntry is one learnt address.
type MACEntry struct {
	MAC    string  `json:"mac"`
	Port   string  `json:"port"`
	AgeSec float64 `json:"age_seconds"`
}

// RoutesView is the result of "routes".
type RoutesView struct {
	L3     bool        `json:"l3"` // false: an L2 switch, which has no routes
	Routes []RouteView `json:"routes"`
}

// RouteView is one route (connected subnets included).
type RouteView struct {
	Prefix   string    `json:"prefix"`
	NextHops []NextHop `json:"next_hops"`
}

// NextHop is a way out of a route; Via is empty for a connected subnet.
type NextHop struct {
	Via  string `json:"via,omitempty"`
	Port string `json:"port"`
}

// NeighborsView is the result of "neighbors".
type NeighborsView struct {
	L3      bool            `json:"l3"`
	Entries []NeighborEntry `json:"entries"`
	ARP     ARPCounts       `json:"arp"` // what the table did with ARP since the switch started (gswitch_arp_total)
}

// ARPCounts are the neighbour table's ARP counters, by result.
type ARPCounts struct {
	Learnt      uint64 `json:"learnt"`
	MoveRefused uint64 `json:"move_refused"`
	Unsolicited uint64 `json:"unsolicited"`
	RateLimited uint64 `json:"rate_limited"`
	Full        uint64 `json:"full"`
}

// NeighborEntry is one neighbour.
type NeighborEntry struct {
	IP     string  `json:"ip"`
	MAC    string  `json:"mac"`
	Port   string  `json:"port"`
	Static bool    `json:"static"`
	AgeSec float64 `json:"age_seconds,omitempty"`
}

// MechView is what one mechanism reports on one port, in "flows".
type MechView struct {
	Mechanism string          `json:"mechanism"`
	Port      string          `json:"port"`
	State     map[string]any  `json:"state,omitempty"`
	Flows     []mech.FlowInfo `json:"flows,omitempty"`
	Lists     bool            `json:"lists_flows"` // the mechanism implements mech.FlowLister
}

// Stats is the result of "stats": a snapshot of every port's counters and
// queues, which gswitchctl top turns into rates.
type Stats struct {
	Time  time.Time   `json:"time"`
	Ports []PortStats `json:"ports"`
}

// PortStats is one port in Stats.
type PortStats struct {
	Name string `json:"name"`
	Up   bool   `json:"up"`
	Counters
	RateBits     uint64 `json:"rate_bits"`
	QueueBytes   uint64 `json:"queue_bytes"`
	QueuePackets uint64 `json:"queue_packets"`
	Paused       int    `json:"paused_queues"`
}

// SetResult is the result of "set".
type SetResult struct {
	Port    string `json:"port"`
	Key     string `json:"key"`
	Old     string `json:"old"`
	New     string `json:"new"`
	Applied bool   `json:"applied"` // false: posted, the egress worker had not taken it within a second
}

// ReloadResult is the result of "reload" (and of SIGHUP, in the log).
type ReloadResult struct {
	Applied []string `json:"applied"` // changes made, e.g. "ports[1].rate: 100Mbit -> 200Mbit"
	Refused []string `json:"refused"` // changes that need a restart, each with why
}

// CaptureStart is the result of "capture", sent before the records.
type CaptureStart struct {
	Port      string `json:"port"`
	Interface string `json:"interface"`
	Snap      int    `json:"snap"`
	Filter    string `json:"filter,omitempty"`
}

// CaptureStats is the payload of the stats and end records of a capture.
type CaptureStats struct {
	Seen    uint64 `json:"seen"`    // frames the mirror delivered
	Matched uint64 `json:"matched"` // of those, frames the filter kept (all sent to the client)
	Dropped uint64 `json:"dropped"` // copies the mirror rings had no room for (never seen)
	Reason  string `json:"reason,omitempty"`
}
