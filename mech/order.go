package mech

import (
	"fmt"
	"sort"
	"strings"
)

// Names for Spec.After and Spec.Before that stand for a role rather than a
// mechanism, as a coarser declaration: a mechanism that reads the queue a
// packet takes runs after QueueSetter, whichever mechanism assigns the
// queues on the port (if any does).
const (
	// QueueSetter is the mechanism that assigns the packets' queue on the
	// port (Spec.SetsQueue: BFC).
	QueueSetter = "<queue setter>"
	// RankSetter is the mechanism that sets the packets' rank on the port
	// (Spec.SetsRank: AFQ, pFabric).
	RankSetter = "<rank setter>"
)

// roleName says what a role stands for, in errors.
func roleName(n string) string {
	switch n {
	case QueueSetter:
		return "the mechanism that assigns the queues"
	case RankSetter:
		return "the mechanism that sets the ranks"
	}
	return n
}

// plays reports whether the mechanism of spec s is what n names: its own
// name or a role it plays.
func plays(s Spec, n string) bool {
	return n == s.Name || (n == QueueSetter && s.SetsQueue) || (n == RankSetter && s.SetsRank)
}

// precedes says why a must run before b on a port where both run, or ""
// if neither declares it: a's Before names b (or a role b plays), or b's
// After names a (or a role a plays).
func precedes(a, b Spec) string {
	for _, n := range a.Before {
		if plays(b, n) {
			return fmt.Sprintf("%s runs before %s", a.Name, roleName(n))
		}
	}
	for _, n := range b.After {
		if plays(a, n) {
			return fmt.Sprintf("%s runs after %s", b.Name, roleName(n))
		}
	}
	return ""
}

// Order returns names, the mechanisms enabled on one port, in the order
// their hooks run there: every mechanism after those it declares it runs
// after (Spec.After) and before those it declares it runs before
// (Spec.Before), with either side's declaration enough; mechanisms whose
// order nobody declares run in the order of their names. The order of
// names does not matter. Declarations that contradict each other are an
// error naming the mechanisms, what each declares, and the fix. Names not
// registered are an error too (Check says which).
func Order(names []string) ([]string, error) {
	specs := make([]Spec, len(names))
	for i, n := range names {
		s, ok := registry[n]
		if !ok {
			return nil, fmt.Errorf("unknown mechanism %q (known: %v)", n, Names())
		}
		specs[i] = s
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })
	n := len(specs)
	why := make([][]string, n) // why[i][j]: why i runs before j ("" if it need not)
	for i := range specs {
		why[i] = make([]string, n)
		for j := range specs {
			if i != j {
				why[i][j] = precedes(specs[i], specs[j])
			}
		}
	}
	for i := range specs {
		for j := i + 1; j < n; j++ {
			if why[i][j] != "" && why[j][i] != "" {
				return nil, orderError([]Spec{specs[i], specs[j]}, []string{why[i][j], why[j][i]})
			}
		}
	}
	// Kahn's algorithm, taking the first ready name each time.
	done := make([]bool, n)
	out := make([]string, 0, n)
	for len(out) < n {
		next := -1
		for j := 0; j < n && next < 0; j++ {
			if done[j] {
				continue
			}
			ready := true
			for i := 0; i < n; i++ {
				if !done[i] && i != j && why[i][j] != "" {
					ready = false
					break
				}
			}
			if ready {
				next = j
			}
		}
		if next < 0 {
			return nil, cycleError(specs, why, done)
		}
		done[next] = true
		out = append(out, specs[next].Name)
	}
	return out, nil
}

// cycleError describes a cycle among the mechanisms not yet placed (each
// has a predecessor among them, so walking back from any finds a cycle).
func cycleError(specs []Spec, why [][]string, done []bool) error {
	start := -1
	for j := range specs {
		if !done[j] {
			start = j
			break
		}
	}
	var path []int
	seen := map[int]int{}
	for j := start; ; {
		if k, ok := seen[j]; ok {
			path = path[k:]
			break
		}
		seen[j] = len(path)
		path = append(path, j)
		for i := range specs {
			if !done[i] && i != j && why[i][j] != "" {
				j = i
				break
			}
		}
	}
	// path runs backwards: path[k+1] runs before path[k].
	var cyc []Spec
	var reasons []string
	for k := len(path) - 1; k >= 0; k-- {
		a, b := path[k], path[(k+len(path)-1)%len(path)]
		cyc = append(cyc, specs[a])
		reasons = append(reasons, why[a][b])
	}
	// Start from the first name, so the error reads the same every time.
	first := 0
	for k := range cyc {
		if cyc[k].Name < cyc[first].Name {
			first = k
		}
	}
	ms, rs := make([]Spec, 0, len(cyc)), make([]string, 0, len(cyc))
	for k := range cyc {
		ms = append(ms, cyc[(first+k)%len(cyc)])
		rs = append(rs, reasons[(first+k)%len(cyc)])
	}
	return orderError(ms, rs)
}

// orderError is the error of mechanisms ms whose declarations contradict
// each other: ms[k] must run before ms[k+1] (and the last before the
// first), reasons[k] says who declared it.
func orderError(ms []Spec, reasons []string) error {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name
	}
	var steps []string
	for k := range ms {
		steps = append(steps, fmt.Sprintf("%s before %s (%s)", ms[k].Name, ms[(k+1)%len(ms)].Name, reasons[k]))
	}
	list := strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	return fmt.Errorf("mechanisms %s cannot run on the same port: their hooks would have to run %s; enable only some of them on the port (the order is what the mechanisms declare, Spec.After and Spec.Before, not the order of the config)",
		list, strings.Join(steps, ", "))
}
