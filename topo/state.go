package topo

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// state is <dir>/state.json: what Up made, written after every step.
type state struct {
	Topology   string        `json:"topology"`
	File       string        `json:"file,omitempty"`
	Started    time.Time     `json:"started"`
	Complete   bool          `json:"complete"`
	NoSwitches bool          `json:"no_switches,omitempty"`
	Namespaces []string      `json:"namespaces"`
	Links      []string      `json:"links"` // root-namespace interfaces
	Processes  []process     `json:"processes"`
	Hosts      []RunningHost `json:"hosts"`
	Switches   []stateSwitch `json:"switches"`
	// Timescale is K (absent: 1); TimescaleWhy auto's reasons.
	Timescale    float64 `json:"timescale,omitempty"`
	TimescaleWhy string  `json:"timescale_why,omitempty"`
	// Design is the design the fabric runs under (absent: the file's defaults).
	Design string `json:"design,omitempty"`
	// Machine is the machine whose part this is (absent: the whole fabric).
	Machine string `json:"machine,omitempty"`
}

type stateSwitch struct {
	Name    string `json:"name"`
	Metrics string `json:"metrics"`
	Config  string `json:"config"`
	Log     string `json:"log,omitempty"`
}

// process is a gswitchd Up started. Down signals it only if
// /proc/<pid>/cmdline is still Argv and its start time is Start.
type process struct {
	Switch string   `json:"switch"`
	PID    int      `json:"pid"`
	Start  uint64   `json:"start"` // field 22 of /proc/<pid>/stat
	Argv   []string `json:"argv"`
}

func statePath(dir string) string { return filepath.Join(dir, "state.json") }

// UpDesign says whether topology t is up (its state file exists in
// o.StateDir, complete or not) and under which design ("": the file's
// defaults): what gswitchctl topo transport answers for without -design.
func UpDesign(t *Topology, o UpOptions) (design string, up bool, err error) {
	o = o.withDefaults(t)
	st, err := readState(o.Dir(t))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return st.Design, true, nil
}

func (s *state) save(dir string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(statePath(dir), b)
}

func readState(dir string) (*state, error) {
	b, err := os.ReadFile(statePath(dir))
	if err != nil {
		return nil, err
	}
	var s state
	if len(b) == 0 { // created, not yet written: Up stopped right at the start
		return &s, nil
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", statePath(dir), err)
	}
	return &s, nil
}

func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// alias marks the links and the namespaces' interfaces Up makes, so that
// Down can tell them from others of the same name.
func alias(name string) string { return "gswitch-topo:" + name }

const netnsDir = "/run/netns"

func nsPath(ns string) string { return filepath.Join(netnsDir, ns) }
