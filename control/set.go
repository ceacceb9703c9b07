package control

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gswitch/gswitch/config"
	"github.com/gswitch/gswitch/dataplane"
	"github.com/gswitch/gswitch/mech"
	"github.com/gswitch/gswitch/units"
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
	"uplink":       "mechanisms built their pause tables from it when gswitchd started",
	"source_guard": "the guard of every host port is built into its forwarding stage when gswitchd starts",
}

// liveKey is a port key that may change while gswitchd runs: set reads
// the operator's value with the key's parser and applies it with the
// key's typed setter.
type liveKey interface {
	set(s *Server, p *dataplane.Port, pc *config.Port, req *Request, res *SetResult) error
}

// live is a liveKey whose value is a T: parse reads it (errors name the
// key), apply makes the change and fills in the result's old and new.
type live[T any] struct {
	parse func(req *Request) (T, error)
	apply func(s *Server, p *dataplane.Port, pc *config.Port, req *Request, v T, res *SetResult) error
}

func (k live[T]) set(s *Server, p *dataplane.Port, pc *config.Port, req *Request, res *SetResult) error {
	v, err := k.parse(req)
	if err != nil {
		return fmt.Errorf("%s: %v", p.Name, err)
	}
	return k.apply(s, p, pc, req, v, res)
}

// liveKeys are the keys "set" changes, in the order SetKeys lists them:
// rate and burst (the shaper), quantum (drr, sfq) and queue (pause or
// resume one egress queue).
var liveKeys = []struct {
	name string
	key  liveKey
}{
	{"rate", live[units.Rate]{parseRate, (*Server).setRateKey}},
	{"burst", live[units.Size]{parseBurst, (*Server).setBurstKey}},
	{"quantum", live[int]{parseQuantum, (*Server).setQuantumKey}},
	{"queue", live[bool]{parsePause, (*Server).setQueueKey}},
}

// SetKeys are what "set" changes: rate and burst (the shaper), quantum
// (drr, sfq) and queue (pause or resume one egress queue).
var SetKeys = func() []string {
	var names []string
	for _, k := range liveKeys {
		names = append(names, k.name)
	}
	return names
}()

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
	if key == "" {
		return nil, fmt.Errorf("set needs a key: one of %s", strings.Join(SetKeys, ", "))
	}
	for _, k := range liveKeys {
		if k.name == key {
			s.mu.Lock()
			defer s.mu.Unlock()
			res := &SetResult{Port: p.Name, Key: key, Applied: true}
			if err := k.key.set(s, p, &s.cfg.Ports[p.Index], req, res); err != nil {
				return nil, err
			}
			return res, nil
		}
	}
	return nil, fmt.Errorf("%s: unknown key %q (set changes %s)", p.Name, req.Key, strings.Join(SetKeys, ", "))
}

// The keys' parsers: each error names the key.

func parseRate(req *Request) (units.Rate, error) {
	v, err := units.ParseRate(strings.TrimSpace(req.Value)) // "", 0 and unlimited: unlimited
	if err != nil {
		return 0, fmt.Errorf("rate: %v", err)
	}
	return units.Rate(v), nil
}

func parseBurst(req *Request) (units.Size, error) {
	v := strings.TrimSpace(req.Value)
	if v == "default" {
		return 0, nil
	}
	b, err := units.ParseSize(v) // "" and 0: the default
	if err != nil {
		return 0, fmt.Errorf("burst: %v", err)
	}
	return units.Size(b), nil
}

func parseQuantum(req *Request) (int, error) {
	q, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(req.Value, "B")))
	if err != nil {
		return 0, fmt.Errorf("quantum: %q is not a number of bytes", req.Value)
	}
	return q, nil
}

func parsePause(req *Request) (bool, error) {
	switch strings.ToLower(req.Value) {
	case "pause", "paused":
		return true, nil
	case "resume", "resumed":
		return false, nil
	}
	return false, fmt.Errorf("queue %d: %q (write pause or resume)", req.Queue, req.Value)
}

// The keys' setters.

// setRateKey takes the rate in the fabric's units, as the config file
// gives it: on a switch with a timescale K the port runs rate / K, and
// the result shows both clocks.
func (s *Server) setRateKey(p *dataplane.Port, pc *config.Port, _ *Request, rate units.Rate, res *SetResult) error {
	k := s.cfg.Timescale
	rate = units.Rate(k.WallBits(uint64(rate)))
	res.Old, res.New = rateText(k, pc.Rate), rateText(k, rate)
	return s.applyShaper(p, pc, rate, pc.Burst, res)
}

// rateText shows a port's rate (this machine's): as the config writes it,
// and on a scaled switch with the fabric's rate first (1Gbit fabric = 1Mbit
// wall).
func rateText(k units.Timescale, wall units.Rate) string {
	if k.One() || wall == 0 {
		return wall.String()
	}
	return units.Rate(k.FabricBits(uint64(wall))).String() + " fabric = " + wall.String() + " wall"
}

func (s *Server) setBurstKey(p *dataplane.Port, pc *config.Port, _ *Request, burst units.Size, res *SetResult) error {
	res.Old, res.New = sizeString(pc.Burst), sizeString(burst)
	return s.applyShaper(p, pc, pc.Rate, burst, res)
}

// applyShaper gives the port's shaper a new rate and burst (after asking
// its mechanisms) and records them in the running config.
func (s *Server) applyShaper(p *dataplane.Port, pc *config.Port, rate units.Rate, burst units.Size, res *SetResult) error {
	if err := s.setRate(p, uint64(rate), int64(burst)); err != nil {
		return err
	}
	pc.Rate, pc.Burst = rate, burst
	res.Applied = s.waitApplied(p.Index)
	return nil
}

func (s *Server) setQuantumKey(p *dataplane.Port, pc *config.Port, _ *Request, q int, res *SetResult) error {
	if p.Quantum() == 0 {
		return fmt.Errorf("%s: scheduler %s has no quantum (only drr and sfq have one)", p.Name, schedName(s.cfg, p.Index))
	}
	res.Old = strconv.Itoa(p.Quantum())
	if err := s.sw.SetQuantum(p.Index, q); err != nil {
		return fmt.Errorf("%s: %v", p.Name, err)
	}
	res.New = strconv.Itoa(q)
	pc.Quantum = q
	res.Applied = s.waitApplied(p.Index)
	return nil
}

func (s *Server) setQueueKey(p *dataplane.Port, _ *config.Port, req *Request, pause bool, res *SetResult) error {
	sc := p.Scheduler()
	if req.Queue < 0 || req.Queue >= sc.NumQueues() {
		return fmt.Errorf("%s: no queue %d (the port has queues 0 to %d)", p.Name, req.Queue, sc.NumQueues()-1)
	}
	if len(p.Mechanisms()) > 0 {
		return fmt.Errorf("%s: the pause state of its queues belongs to the mechanisms on the port (%s): pausing by hand would fight them", p.Name, strings.Join(p.Mechanisms(), ", "))
	}
	if n := schedName(s.cfg, p.Index); n == "rsp" {
		return fmt.Errorf("%s: the rsp scheduler's queues are rounds of a calendar: pausing one would stop the calendar", p.Name)
	}
	res.Key = fmt.Sprintf("queue %d", req.Queue)
	res.Old = pauseString(sc.Paused(req.Queue))
	if pause {
		p.PauseQueue(req.Queue)
	} else {
		p.ResumeQueue(req.Queue)
	}
	res.New = pauseString(sc.Paused(req.Queue))
	return nil
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

// sizeString shows a burst: 0 is the shaper's default.
func sizeString(b units.Size) string {
	if b == 0 {
		return "default"
	}
	return strconv.FormatUint(uint64(b), 10) + "B"
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
	if oc.Timescale != nc.Timescale {
		// Every rate and time the file gives would run at another value:
		// nothing of the new file is applied.
		refuse("timescale", fmt.Sprintf("%s instead of %s: every rate and time of the switch would change", nc.Timescale, oc.Timescale))
		return res
	}
	for _, f := range oc.Changes(nc) {
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
		for _, f := range op.Changes(np, "rate", "burst", "quantum") {
			why := refusedKeys[f]
			if why == "" {
				why = "it is set when gswitchd starts"
			}
			refuse(field+"."+f, why)
		}
		p := s.sw.Ports()[i]
		if op.Rate != np.Rate || op.Burst != np.Burst {
			if err := s.setRate(p, uint64(np.Rate), int64(np.Burst)); err != nil {
				res.Refused = append(res.Refused, fmt.Sprintf("%s.rate: %v", field, err))
			} else {
				res.Applied = append(res.Applied, fmt.Sprintf("%s.rate: %s -> %s (burst %s -> %s)", field, rateText(oc.Timescale, op.Rate), rateText(oc.Timescale, np.Rate), sizeString(op.Burst), sizeString(np.Burst)))
				op.Rate, op.Burst = np.Rate, np.Burst
			}
		}
		if oq, nq := op.Quantum, np.Quantum; oq != nq {
			if p.Quantum() == 0 {
				refuse(field+".quantum", "the port's scheduler has no quantum")
			} else if err := s.sw.SetQuantum(i, nq); err != nil {
				res.Refused = append(res.Refused, fmt.Sprintf("%s.quantum: %v", field, err))
			} else {
				res.Applied = append(res.Applied, fmt.Sprintf("%s.quantum: %d -> %d", field, oq, nq))
				op.Quantum = nq
			}
		}
		s.waitApplied(i)
	}
	return res
}
