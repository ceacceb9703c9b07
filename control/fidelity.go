package control

import (
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gswitch/gswitch/fidelity"
)

// FidelityView is the result of "fidelity": what the switch's fidelity
// counters hold now, as package fidelity holds a scrape of its metrics
// (Switch: each worker's wake-up lateness and pass gaps, each port's lost
// line time, delay-line error and rate, the timescale), plus what a scrape
// would not say. gswitchctl fidelity takes one (the window since Started)
// or two (the window between them), and judges the window with
// fidelity.Evaluate.
type FidelityView struct {
	Switch   fidelity.Switch               `json:"switch"`
	Started  time.Time                     `json:"started"`             // when the server started (a window since start begins here)
	TickLate map[string]fidelity.Histogram `json:"tick_late,omitempty"` // by worker: how late mechanisms' ticks ran
	Workers  []string                      `json:"workers"`             // the workers' labels, in order
	Ports    []FidelityPort                `json:"ports"`               // in the switch's order
}

// FidelityPort says what of a port's fidelity counters apply to it.
type FidelityPort struct {
	Name     string `json:"name"`
	RateBits uint64 `json:"rate_bits"` // the shaper's rate (0: unlimited, no line time to lose)
	Credit   bool   `json:"credit"`    // it has a credit lane
	Delay    bool   `json:"delay"`     // it has a delay line (delay or rx_delay)
}

// fidelityView reads the switch's fidelity counters. Every histogram is in
// fidelity's buckets; times are this machine's (wall) time.
func (s *Server) fidelityView() FidelityView {
	n := s.sw.Workers()
	sw := fidelity.Switch{Name: s.switchName(), Timescale: s.sw.Timescale(),
		WakeLate: make(map[string]fidelity.Histogram, n), PassGap: make(map[string]fidelity.Histogram, n),
		TxLate: map[string]float64{}, CreditLate: map[string]float64{}, Rate: map[string]float64{}}
	v := FidelityView{Started: s.started, TickLate: make(map[string]fidelity.Histogram, n)}
	for w := 0; w < n; w++ {
		st := s.sw.WorkerStats(w)
		l := strconv.Itoa(w) // the worker label of the metrics
		v.Workers = append(v.Workers, l)
		sw.WakeLate[l] = st.WakeLate.Histogram()
		sw.PassGap[l] = st.PassGap.Histogram()
		v.TickLate[l] = st.TickLate.Histogram()
	}
	for i, p := range s.sw.Ports() {
		k := s.sw.Counters(i)
		sw.TxLate[p.Name] = float64(k.TxLateNs) / 1e9
		sw.CreditLate[p.Name] = float64(k.CreditLateNs) / 1e9
		fp := FidelityPort{Name: p.Name, RateBits: p.RateBits()}
		sw.Rate[p.Name] = float64(fp.RateBits) / 8
		_, _, fp.Credit = p.CreditDepth()
		if c, ok := s.sw.DelayErrors(i); ok {
			if sw.DelayError == nil {
				sw.DelayError = map[string]fidelity.Histogram{}
			}
			sw.DelayError[p.Name] = c.Histogram()
			fp.Delay = true
		}
		v.Ports = append(v.Ports, fp)
	}
	sw.Time = time.Now()
	v.Switch = sw
	return v
}

// switchName is how the fidelity view names the switch: its socket's name
// (NAME of /run/gswitch/NAME.sock, what gswitchctl -s takes), else its id.
func (s *Server) switchName() string {
	s.lnMu.Lock()
	path := s.path
	s.lnMu.Unlock()
	if name := strings.TrimSuffix(filepath.Base(path), ".sock"); path != "" && name != "" {
		return name
	}
	return "switch" + strconv.Itoa(int(s.sw.ID()))
}
