package control

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/pkt"
	"github.com/gswitch/gswitch/sched"
)

// port finds a port by name, or by index.
func (s *Server) port(name string) (*dataplane.Port, error) {
	ports := s.sw.Ports()
	for _, p := range ports {
		if p.Name == name {
			return p, nil
		}
	}
	if i, err := strconv.Atoi(name); err == nil && i >= 0 && i < len(ports) {
		return ports[i], nil
	}
	names := make([]string, len(ports))
	for i, p := range ports {
		names[i] = p.Name
	}
	if name == "" {
		return nil, fmt.Errorf("name a port (one of %v)", names)
	}
	return nil, fmt.Errorf("no port %q (ports: %v)", name, names)
}

func (s *Server) info() Info {
	var ms []string
	for n := range s.sw.Mechanisms() {
		ms = append(ms, n)
	}
	slices.Sort(ms)
	l3 := false
	for _, p := range s.sw.Ports() {
		l3 = l3 || p.L3()
	}
	return Info{SwitchID: s.sw.ID(), PID: os.Getpid(), Config: s.opt.ConfigPath, Started: s.started,
		Workers: s.sw.Workers(), Ports: s.sw.NumPorts(), Mechanisms: ms, L3: l3}
}

// Health reports whether the switch forwards and what is wrong.
func (s *Server) Health() Health {
	h := Health{Status: "ok", UptimeSec: time.Since(s.started).Seconds(), Workers: s.sw.Workers()}
	for _, p := range s.sw.Ports() {
		if p.Down() {
			h.PortsDown = append(h.PortsDown, p.Name)
			h.Problems = append(h.Problems, fmt.Sprintf("port %s is down", p.Name))
		} else {
			h.PortsUp++
		}
	}
	f := s.sw.Frames()
	h.Frames = Frames{Total: f.Total, Free: f.Free, Fill: f.Fill, Handoff: f.Handoff, Queued: f.Queued, Tx: f.Tx, Delayed: f.Delayed, Returning: f.Returning}
	if f.Free+f.Fill == 0 {
		h.Problems = append(h.Problems, "no UMEM frame is free or on a fill ring: the switch cannot receive")
	}
	s.lnMu.Lock()
	stopping := s.stopping
	s.lnMu.Unlock()
	switch {
	case stopping:
		h.Status = "stopping"
	case len(h.Problems) > 0:
		h.Status = "degraded"
	}
	return h
}

func counters(k dataplane.PortCounters) Counters {
	c := Counters{RxPackets: k.RxPackets, RxBytes: k.RxBytes, TxPackets: k.TxPackets, TxBytes: k.TxBytes, Flooded: k.Flooded}
	for _, d := range k.Drops {
		c.Drops += d
	}
	return c
}

func (s *Server) ports() []PortView {
	s.mu.Lock()
	cfg := s.cfg
	s.mu.Unlock()
	var out []PortView
	for i, p := range s.sw.Ports() {
		v := PortView{Index: i, Name: p.Name, Up: !p.Down(), Role: p.Role.String(), MAC: p.MAC.String(),
			RateBits: p.RateBits(), Scheduler: schedName(cfg, i), Queues: p.Scheduler().NumQueues(),
			Mechanisms: p.Mechanisms(), RxQueues: len(p.Links()), Counters: counters(s.sw.Counters(i))}
		if i < len(cfg.Ports) {
			v.Interface = cfg.Ports[i].Interface
			for _, a := range cfg.Ports[i].Addrs {
				v.Addrs = append(v.Addrs, a.String())
			}
		}
		if i < len(s.opt.Info) {
			v.XDPMode, v.ZeroCopy = s.opt.Info[i].XDPMode, s.opt.Info[i].ZeroCopy
			if v.Interface == "" {
				v.Interface = s.opt.Info[i].Interface
			}
		}
		out = append(out, v)
	}
	return out
}

// schedName is port i's scheduler as the config names it.
func schedName(cfg *config.Config, i int) string {
	if i < len(cfg.Ports) {
		if n := cfg.Ports[i].Scheduler; n != "" {
			return n
		}
	}
	return sched.DefaultScheduler
}

func (s *Server) queues(name string) (*QueuesView, error) {
	p, err := s.port(name)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	cfg := s.cfg
	s.mu.Unlock()
	sc := p.Scheduler()
	v := &QueuesView{Port: p.Name, Scheduler: schedName(cfg, p.Index), Quantum: p.Quantum(), RateBits: p.RateBits(),
		Up: !p.Down(), Drops: map[string]uint64{}}
	if vw, ok := sc.(sched.Viewer); ok {
		v.Round = vw.View().Round
	}
	for q := 0; q < sc.NumQueues(); q++ {
		b, n := sc.Depth(q)
		v.Queues = append(v.Queues, QueueView{Queue: q, Bytes: b, Packets: n, Paused: sc.Paused(q)})
	}
	v.Control.Bytes, v.Control.Packets = p.ControlDepth()
	if b, n, ok := p.CreditDepth(); ok {
		v.Credit = &Lane{Bytes: b, Packets: n}
	}
	k := s.sw.Counters(p.Index)
	for r := 1; r < pkt.NumReasons(); r++ {
		if k.Drops[r] != 0 {
			v.Drops[pkt.Reason(r).String()] = k.Drops[r]
		}
	}
	for _, m := range p.Mechanisms() {
		if vw, ok := s.sw.Mechanisms()[m].(mech.Viewer); ok {
			if st := vw.View(p.Index); st != nil {
				if v.Mechanisms == nil {
					v.Mechanisms = map[string]map[string]any{}
				}
				v.Mechanisms[m] = st
			}
		}
	}
	return v, nil
}

// DefaultMACLimit is how many MAC entries "mac" lists unless told.
const DefaultMACLimit = 10000

func (s *Server) mac(limit int) MACView {
	if limit <= 0 {
		limit = DefaultMACLimit
	}
	now := s.sw.Now()
	t := s.sw.MACTable()
	st := t.Stats(now)
	v := MACView{Total: st.Entries, Learned: st.Learned, Moves: st.Moves, TableFull: st.TableFull, Entries: []MACEntry{}}
	ports := s.sw.Ports()
	for _, e := range t.Entries(now, limit) {
		var b [8]byte
		for i := 0; i < 6; i++ {
			b[i] = byte(e.MAC >> (40 - 8*i))
		}
		pn := strconv.Itoa(int(e.Port))
		if int(e.Port) < len(ports) {
			pn = ports[e.Port].Name
		}
		v.Entries = append(v.Entries, MACEntry{MAC: net.HardwareAddr(b[:6]).String(), Port: pn, AgeSec: float64(e.Age) / 1e9})
	}
	slices.SortFunc(v.Entries, func(a, b MACEntry) int {
		if a.Port != b.Port {
			return cmpStr(a.Port, b.Port)
		}
		return cmpStr(a.MAC, b.MAC)
	})
	return v
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (s *Server) portName(i int) string {
	if ps := s.sw.Ports(); i >= 0 && i < len(ps) {
		return ps[i].Name
	}
	return strconv.Itoa(i)
}

func (s *Server) routes() RoutesView {
	t := s.sw.Routes()
	v := RoutesView{Routes: []RouteView{}}
	if t == nil {
		return v
	}
	v.L3 = true
	for _, r := range t.Routes() {
		rv := RouteView{Prefix: r.Prefix.String()}
		for _, nh := range r.NextHops {
			h := NextHop{Port: s.portName(int(nh.Port))}
			if nh.IP.IsValid() {
				h.Via = nh.IP.String()
			}
			rv.NextHops = append(rv.NextHops, h)
		}
		v.Routes = append(v.Routes, rv)
	}
	return v
}

func (s *Server) neighbors() NeighborsView {
	n := s.sw.Neighbors()
	v := NeighborsView{Entries: []NeighborEntry{}}
	if n == nil {
		return v
	}
	v.L3 = true
	a := n.Counters()
	v.ARP = ARPCounts{Learnt: a.Learnt, MoveRefused: a.MoveRefused, Unsolicited: a.Unsolicited, RateLimited: a.RateLimited, Full: a.Full}
	now := s.sw.Now()
	for _, e := range n.Entries(now) {
		ne := NeighborEntry{IP: e.IP.String(), MAC: net.HardwareAddr(e.MAC[:]).String(), Port: s.portName(int(e.Port)), Static: e.Static}
		if !e.Static {
			ne.AgeSec = float64(now-e.Seen) / 1e9
		}
		v.Entries = append(v.Entries, ne)
	}
	return v
}

// DefaultFlowLimit is how many flows per mechanism and port "flows" lists unless told.
const DefaultFlowLimit = 100

func (s *Server) flows(port string, limit int) ([]MechView, error) {
	if limit <= 0 {
		limit = DefaultFlowLimit
	}
	var ports []*dataplane.Port
	if port != "" {
		p, err := s.port(port)
		if err != nil {
			return nil, err
		}
		ports = []*dataplane.Port{p}
	} else {
		ports = s.sw.Ports()
	}
	out := []MechView{}
	insts := s.sw.Mechanisms()
	for _, p := range ports {
		for _, m := range p.Mechanisms() {
			mv := MechView{Mechanism: m, Port: p.Name}
			if vw, ok := insts[m].(mech.Viewer); ok {
				mv.State = vw.View(p.Index)
			}
			if fl, ok := insts[m].(mech.FlowLister); ok {
				mv.Lists = true
				mv.Flows = fl.Flows(p.Index, limit)
			}
			out = append(out, mv)
		}
	}
	return out, nil
}

func (s *Server) stats() Stats {
	st := Stats{Time: time.Now()}
	for i, p := range s.sw.Ports() {
		ps := PortStats{Name: p.Name, Up: !p.Down(), Counters: counters(s.sw.Counters(i)), RateBits: p.RateBits()}
		sc := p.Scheduler()
		for q := 0; q < sc.NumQueues(); q++ {
			b, n := sc.Depth(q)
			ps.QueueBytes += b
			ps.QueuePackets += uint64(n)
			if sc.Paused(q) {
				ps.Paused++
			}
		}
		st.Ports = append(st.Ports, ps)
	}
	return st
}
