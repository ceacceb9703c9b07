package control

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/mech"
)

// What may change while gswitchd runs, and why the rest may not. Changing
// a port's scheduler, its queues or buffer, its mechanisms or its link
// delay would have to move or drop the packets the port holds and rebuild
// state the workers own; gswitchd refuses rather than drop traffic.
var refusedKeys = map[string]string{
	"scheduler":    "its queues hold packets in the order of the running scheduler, which would have to be dropped",
	"queues":       "the scheduler's queues are built when gswitchd starts and hold packets",
	"buffer":       "the buffer limits are built into the scheduler's queues when gswitchd starts",
	"queue_buffer": "the buffer limits are built into the scheduler's queues when gswitchd starts",
	"mechanisms":   "mechanisms keep per-port state from the start (sketches, counters, pause state)",
	"delay":        "the delay line is sized for the delay when gswitchd starts",
	"rtt":          "the rtt only sizes a pfabric buffer, which is built when gswitchd starts",
	"role":         "the role decides which control frames the port accepts; mechanisms were built for it",
	"mac":          "frames the switch emitted and neighbours' tables already carry the port's MAC",
	"addr":         "the routing table is built from the port addresses when gswitchd starts",
	"interface":    "the port's sockets and XDP program are bound to the interface",
	"name":         "the port's name labels its metrics",
	"classify":     "classification tables are built into the scheduler when gswitchd starts",
	"dscp_map":     "classification tables are built into the scheduler when gswitchd starts",
	"pcp_map":      "classification tables are built into the scheduler when gswitchd starts",
	"rx_queues":    "the port's sockets are bound to its rx queues",
}

// SetKeys are what "set" changes: rate and burst (the shaper), quantum
// (drr, sfq) and queue (pause or resume one egress queue).
var SetKeys = []string{"rate", "burst", "quantum", "queue"}

// Set makes one run-time change (request keys port, key, value; queue for
// "queue"), or says why it cannot be made while gswitchd runs.
func (s *Server) Set(req *Request) (*SetResult, error) {
	p, err := s.port(req.Port)
	if err != nil {
		return nil, err
	}
	key := strings.ToLower(strings.TrimSpace(req.Key))
	if why, ok := refusedKeys[key]; ok {
		return nil, fmt.Errorf("%s: %s cannot change while gswitchd runs: %s (change ports[%d].%s in the config and restart gswitchd)", p.Name, key, why, p.Index, key)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pc := &s.cfg.Ports[p.Index]
	res := &SetResult{Port: p.Name, Key: key, Applied: true}
	switch key {
	case "rate", "burst":
		rate, burst := pc.RateBits, pc.BurstBytes
		rateStr, burstStr := pc.Rate, pc.Burst
		v := strings.TrimSpace(req.Value)
		if key == "rate" {
			res.Old = rateString(pc.RateBits)
			if v == "unlimited" || v == "0" || v == "" {
				rate, rateStr = 0, ""
			} else if rate, err = config.ParseRate(v); err != nil {
				return nil, fmt.Errorf("%s: rate: %v", p.Name, err)
			} else {
				rateStr = v
			}
			res.New = rateString(rate)
		} else {
			res.Old = sizeString(uint64(pc.BurstBytes))
			if v == "default" || v == "0" || v == "" {
				burst, burstStr = 0, ""
			} else {
				b, err := config.ParseSize(v)
				if err != nil {
					return nil, fmt.Errorf("%s: burst: %v", p.Name, err)
				}
				burst, burstStr = int64(b), v
			}
			res.New = sizeString(uint64(burst))
		}
		if err := s.setRate(p, rate, burst); err != nil {
			return nil, err
		}
		pc.Rate, pc.RateBits, pc.Burst, pc.BurstBytes = rateStr, rate, burstStr, burst
	case "quantum":
		q, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(req.Value, "B")))
		if err != nil {
			return nil, fmt.Errorf("%s: quantum: %q is not a number of bytes", p.Name, req.Value)
		}
		if p.Quantum() == 0 {
			return nil, fmt.Errorf("%s: scheduler %s has no quantum (only drr and sfq have one)", p.Name, schedName(s.cfg, p.Index))
		}
		res.Old = strconv.Itoa(p.Quantum())
		if err := s.sw.SetQuantum(p.Index, q); err != nil {
			return nil, fmt.Errorf("%s: %v", p.Name, err)
		}
		res.New = strconv.Itoa(q)
		pc.Quantum = q
	case "queue":
		sc := p.Scheduler()
		if req.Queue < 0 || req.Queue >= sc.NumQueues() {
			return nil, fmt.Errorf("%s: no queue %d (the port has queues 0 to %d)", p.Name, req.Queue, sc.NumQueues()-1)
		}
		if len(p.Mechanisms()) > 0 {
			return nil, fmt.Errorf("%s: the pause state of its queues belongs to the mechanisms on the port (%s): pausing by hand would fight them", p.Name, strings.Join(p.Mechanisms(), ", "))
		}
		if n := schedName(s.cfg, p.Index); n == "rsp" {
			return nil, fmt.Errorf("%s: the rsp scheduler's queues are rounds of a calendar: pausing one would stop the calendar", p.Name)
		}
		res.Key = fmt.Sprintf("queue %d", req.Queue)
		res.Old = pauseString(sc.Paused(req.Queue))
		switch strings.ToLower(req.Value) {
		case "pause", "paused":
			p.PauseQueue(req.Queue)
		case "resume", "resumed":
			p.ResumeQueue(req.Queue)
		default:
			return nil, fmt.Errorf("%s: queue %d: %q (write pause or resume)", p.Name, req.Queue, req.Value)
		}
		res.New = pauseString(sc.Paused(req.Queue))
		return res, nil
	case "":
		return nil, fmt.Errorf("set needs a key: one of %s", strings.Join(SetKeys, ", "))
	default:
		return nil, fmt.Errorf("%s: unknown key %q (set changes %s)", p.Name, req.Key, strings.Join(SetKeys, ", "))
	}
	res.Applied = s.waitApplied(p.Index)
	return res, nil
}

// setRate changes a port's shaper after asking its mechanisms.
func (s *Server) setRate(p *dataplane.Port, rate uint64, burst int64) error {
	insts := s.sw.Mechanisms()
	for _, m := range p.Mechanisms() {
		f, ok := insts[m].(mech.RateFollower)
		if !ok {
			return fmt.Errorf("%s: mechanism %s was built for the port's rate and does not follow a change (it does not implement mech.RateFollower): change ports[%d].rate in the config and restart gswitchd", p.Name, m, p.Index)
		}
		if err := f.RateChanged(p.Index, rate); err != nil {
			return fmt.Errorf("%s: mechanism %s refuses the rate: %v", p.Name, m, err)
		}
	}
	if err := s.sw.SetPortRate(p.Index, rate, burst); err != nil {
		return fmt.Errorf("%s: %v", p.Name, err)
	}
	return nil
}

// waitApplied waits up to a second for the port's egress worker to take a
// posted change.
func (s *Server) waitApplied(port int) bool {
	for t := time.Now(); s.sw.Pending(port); time.Sleep(time.Millisecond) {
		if time.Since(t) > time.Second {
			return false
		}
	}
	return true
}

func rateString(bits uint64) string {
	if bits == 0 {
		return "unlimited"
	}
	for _, u := range []struct {
		d uint64
		n string
	}{{1e12, "Tbit"}, {1e9, "Gbit"}, {1e6, "Mbit"}, {1e3, "kbit"}} {
		if bits >= u.d {
			return strconv.FormatFloat(float64(bits)/float64(u.d), 'f', -1, 64) + u.n
		}
	}
	return strconv.FormatUint(bits, 10) + "bit"
}

func sizeString(b uint64) string {
	if b == 0 {
		return "default"
	}
	return strconv.FormatUint(b, 10) + "B"
}

func pauseString(p bool) string {
	if p {
		return "paused"
	}
	return "running"
}

// Reload reads the config file again and applies what may change while
// gswitchd runs (ports' rate, burst and quantum); every other difference
// is refused, each with the reason, and the running switch keeps its
// value. A file that does not load or check changes nothing (error).
func (s *Server) Reload() (*ReloadResult, error) {
	if s.opt.ConfigPath == "" {
		return nil, errors.New("gswitchd was started without a config file path")
	}
	nc, err := config.Load(s.opt.ConfigPath)
	if err == nil && s.opt.CheckConfig != nil {
		err = s.opt.CheckConfig(nc)
	}
	if err != nil {
		return nil, fmt.Errorf("reload: nothing changed: %v", err)
	}
	return s.Apply(nc), nil
}

// Apply applies nc as Reload does.
func (s *Server) Apply(nc *config.Config) *ReloadResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	res := &ReloadResult{Applied: []string{}, Refused: []string{}}
	oc := s.cfg
	refuse := func(field, why string) {
		res.Refused = append(res.Refused, fmt.Sprintf("%s: %s (restart gswitchd to change it)", field, why))
	}
	for _, f := range diffFields(reflect.ValueOf(*oc), reflect.ValueOf(*nc), topDerived, "ports") {
		refuse(f, "only ports' rate, burst and quantum change while gswitchd runs")
	}
	if len(nc.Ports) != len(oc.Ports) {
		refuse("ports", fmt.Sprintf("%d ports instead of %d: ports are bound when gswitchd starts", len(nc.Ports), len(oc.Ports)))
		return res
	}
	for i := range nc.Ports {
		op, np := &oc.Ports[i], &nc.Ports[i]
		field := fmt.Sprintf("ports[%d]", i)
		if op.Name != np.Name || op.Interface != np.Interface {
			refuse(field, fmt.Sprintf("port %s (%s) became %s (%s): ports are bound when gswitchd starts", op.Name, op.Interface, np.Name, np.Interface))
			continue
		}
		for _, f := range diffFields(reflect.ValueOf(*op), reflect.ValueOf(*np), portDerived, "rate", "burst", "quantum") {
			why := refusedKeys[f]
			if why == "" {
				why = "it is set when gswitchd starts"
			}
			refuse(field+"."+f, why)
		}
		p := s.sw.Ports()[i]
		if op.RateBits != np.RateBits || op.BurstBytes != np.BurstBytes {
			if err := s.setRate(p, np.RateBits, np.BurstBytes); err != nil {
				res.Refused = append(res.Refused, fmt.Sprintf("%s.rate: %v", field, err))
			} else {
				res.Applied = append(res.Applied, fmt.Sprintf("%s.rate: %s -> %s (burst %s -> %s)", field, rateString(op.RateBits), rateString(np.RateBits), sizeString(uint64(op.BurstBytes)), sizeString(uint64(np.BurstBytes))))
				op.Rate, op.RateBits, op.Burst, op.BurstBytes = np.Rate, np.RateBits, np.Burst, np.BurstBytes
			}
		}
		oq, nq := effQuantum(op.Quantum), effQuantum(np.Quantum)
		if oq != nq {
			if p.Quantum() == 0 {
				refuse(field+".quantum", "the port's scheduler has no quantum")
			} else if err := s.sw.SetQuantum(i, nq); err != nil {
				res.Refused = append(res.Refused, fmt.Sprintf("%s.quantum: %v", field, err))
			} else {
				res.Applied = append(res.Applied, fmt.Sprintf("%s.quantum: %d -> %d", field, oq, nq))
				op.Quantum = np.Quantum
			}
		}
		s.waitApplied(i)
	}
	return res
}

func effQuantum(q int) int {
	if q == 0 {
		return 1514
	}
	return q
}

// Derived fields compared in place of the YAML string they come from (so
// 1MB and 1000KB are no change).
var (
	topDerived  = map[string]string{"spin": "SpinDur", "slice": "SliceDur", "catchup": "CatchUpDur", "buffer": "BufferBytes", "alpha": "AlphaValue", "routes": "RouteTable", "neighbors": "NeighborTab"}
	portDerived = map[string]string{"rtt": "RTTDur", "delay": "DelayDur", "addr": "Addrs", "role": "RoleValue", "mac": "MACAddr",
		"mechanisms": "Mechs", "rate": "RateBits", "burst": "BurstBytes", "buffer": "BufferBytes", "queue_buffer": "QueueBufferBytes"}
)

// diffFields returns the YAML names of the fields of two structs of the
// same type that differ, comparing the derived field where one is named,
// and skipping the names in skip.
func diffFields(a, b reflect.Value, derived map[string]string, skip ...string) []string {
	var out []string
	t := a.Type()
	for i := 0; i < t.NumField(); i++ {
		name := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if name == "" || name == "-" || contains(skip, name) {
			continue
		}
		fa, fb := a.Field(i), b.Field(i)
		if d, ok := derived[name]; ok {
			fa, fb = a.FieldByName(d), b.FieldByName(d)
		}
		if name == "mac_table" {
			fa, fb = reflect.ValueOf([4]any{fa.FieldByName("Size").Interface(), fa.FieldByName("PortLimit").Interface(), fa.FieldByName("AgingDur").Interface(), fa.FieldByName("MoveHoldDur").Interface()}),
				reflect.ValueOf([4]any{fb.FieldByName("Size").Interface(), fb.FieldByName("PortLimit").Interface(), fb.FieldByName("AgingDur").Interface(), fb.FieldByName("MoveHoldDur").Interface()})
		}
		if !reflect.DeepEqual(fa.Interface(), fb.Interface()) {
			out = append(out, name)
		}
	}
	return out
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
