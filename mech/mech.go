package mech

import (
	"fmt"
	"sort"

	"github.com/gswitch/gswitch/sched"
)

// Spec describes a mechanism to the switch and its config loader.
type Spec struct {
	// Name is the key under a port's mechanisms: and the prefix of its
	// metrics: lower case letters, digits, '-' and '_'.
	Name string
	// Summary is one line for docs and error messages.
	Summary string
	// Config returns a pointer to a new config value for one port, with its
	// defaults set. The port's YAML is decoded into it (unknown keys are
	// refused); if it implements Validator, Validate runs after decoding.
	Config func() any
	// Schedulers lists the schedulers the mechanism works with on its ports
	// (nil: any).
	Schedulers []string
	// SetsRank says the mechanism sets p.Rank for a rank scheduler (it
	// plays RankSetter).
	SetsRank bool
	// SetsQueue says the mechanism assigns each packet's queue (p.Queue) at
	// admission: the port's scheduler classifies by it (classify: queue),
	// and a port may have only one such mechanism (it plays QueueSetter).
	SetsQueue bool
	// After and Before place the mechanism's hooks among those of the
	// other mechanisms enabled on the same port, as VPP's runs-after and
	// runs-before do for features: each names mechanisms (or QueueSetter,
	// RankSetter) whose hooks run before (After) or after (Before) this
	// one's wherever both are enabled. Names of mechanisms not enabled on
	// the port, or not linked in, constrain nothing. Order resolves the
	// declarations of a port's mechanisms, and Check refuses ones that
	// contradict each other; the order of the config does not matter.
	After, Before []string
	// Conflicts lists mechanisms that cannot be enabled on the same port.
	Conflicts []string
	// Controls lists the gswitch control message types (the GC header's type)
	// the mechanism handles in Control.
	Controls []uint8
	// New builds the mechanism's instance for a switch. ports holds every
	// port of the switch; Port.Config is nil where the mechanism is not
	// enabled.
	New func(sw Switch, ports []Port) (Instance, error)
}

var registry = map[string]Spec{}

// validName reports whether n may name a mechanism.
func validName(n string) bool {
	if n == "" {
		return false
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Register makes a mechanism available by name. Call it from init.
func Register(s Spec) {
	if s.Name == "" || s.New == nil || s.Config == nil {
		panic("mech: Register needs Name, Config and New")
	}
	if !validName(s.Name) {
		panic(fmt.Sprintf("mech: %q is not a mechanism name (lower case letters, digits, '-' and '_')", s.Name))
	}
	if _, dup := registry[s.Name]; dup {
		panic("mech: duplicate registration of " + s.Name)
	}
	for _, n := range append(append([]string(nil), s.After...), s.Before...) {
		if n == s.Name || (n != QueueSetter && n != RankSetter && !validName(n)) {
			panic(fmt.Sprintf("mech: %s cannot run before or after %q", s.Name, n))
		}
	}
	for _, t := range s.Controls {
		for n, o := range registry {
			for _, u := range o.Controls {
				if u == t {
					panic(fmt.Sprintf("mech: %s and %s both claim control type %d", s.Name, n, t))
				}
			}
		}
	}
	registry[s.Name] = s
}

// Lookup returns the mechanism registered as name.
func Lookup(name string) (Spec, bool) {
	s, ok := registry[name]
	return s, ok
}

// Names lists the registered mechanisms.
func Names() []string {
	var n []string
	for k := range registry {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// SetsQueue reports whether any of the mechanisms assigns packets' queues.
func SetsQueue(names []string) bool {
	for _, n := range names {
		if registry[n].SetsQueue {
			return true
		}
	}
	return false
}

// Check says why mechanisms names cannot run together on a port with
// scheduler sched, or nil. Errors name both sides of a conflict, and
// declarations of order that contradict each other (Order).
func Check(names []string, scheduler string) error {
	for _, a := range names {
		sa, ok := registry[a]
		if !ok {
			return fmt.Errorf("unknown mechanism %q (known: %v)", a, Names())
		}
		if len(sa.Schedulers) > 0 && !contains(sa.Schedulers, scheduler) {
			return fmt.Errorf("mechanism %s works with scheduler %v, not with scheduler %s", a, sa.Schedulers, scheduler)
		}
	}
	for i, a := range names {
		sa := registry[a]
		for _, b := range names[i+1:] {
			sb := registry[b]
			if contains(sa.Conflicts, b) || contains(sb.Conflicts, a) {
				return fmt.Errorf("mechanisms %s and %s cannot run on the same port", a, b)
			}
			if sa.SetsRank && sb.SetsRank {
				return fmt.Errorf("mechanisms %s and %s both set the packets' rank: enable one", a, b)
			}
			if sa.SetsQueue && sb.SetsQueue {
				return fmt.Errorf("mechanisms %s and %s both assign the packets' queue: enable one", a, b)
			}
		}
	}
	if _, err := Order(names); err != nil {
		return err
	}
	if spec, ok := sched.Lookup(scheduler); ok && spec.Rank {
		for _, a := range names {
			if registry[a].SetsRank {
				return nil
			}
		}
		var setters []string
		for _, n := range Names() {
			if registry[n].SetsRank && (len(registry[n].Schedulers) == 0 || contains(registry[n].Schedulers, scheduler)) {
				setters = append(setters, n)
			}
		}
		return fmt.Errorf("scheduler %s orders packets by a rank that a mechanism sets: enable one of %v", scheduler, setters)
	}
	return nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
