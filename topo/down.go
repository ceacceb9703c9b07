package topo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Down removes everything of the topology: the gswitchd processes (only
// those whose /proc/<pid>/cmdline is the command Up started), the processes
// in the hosts' namespaces, the switch-port veths and the namespaces, and
// the state directory. It finds them in the state file and by the names the
// topology implies (a link or namespace without a state record is removed
// only if it carries the topology's mark), so it also works after gswitchctl
// or the machine's processes crashed. Removing what is not there is not an
// error. On a fabric over several machines it removes o.Machine's part
// (its tunnels' VXLAN devices and stitches included).
func Down(t *Topology, o UpOptions) error {
	o = o.withDefaults(t)
	p, err := t.PlanFor(o.Machine)
	if err != nil {
		return err
	}
	dir := o.Dir(t)
	st, err := readState(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w (move it away and run down again: the names the file implies are enough)", err)
		}
		st = &state{}
	}
	var errs []error
	// 1. gswitchd: recorded processes, and any process running one of this topology's configs.
	configs := map[string]bool{}
	for _, s := range p.Switches {
		configs[filepath.Join(dir, s.Name+".yaml")] = true
	}
	pids := map[int]bool{}
	for _, pr := range st.Processes {
		if procMatches(pr) {
			pids[pr.PID] = true
		}
	}
	for _, pid := range procsRunningConfigs(configs) {
		pids[pid] = true
	}
	errs = append(errs, stopProcesses(pids))
	// 2. Namespaces: state, and the file's names when they carry the mark.
	nsSet := map[string]bool{}
	for _, ns := range st.Namespaces {
		nsSet[ns] = true
	}
	for _, ns := range p.Namespaces {
		if !nsSet[ns] && nsOwned(ns, t.Name) {
			nsSet[ns] = true
		}
	}
	var nss []string
	for _, ns := range append(st.Namespaces, p.Namespaces...) {
		if nsSet[ns] {
			nss = append(nss, ns)
			delete(nsSet, ns)
		}
	}
	for _, ns := range nss {
		errs = append(errs, killInNamespace(ns))
	}
	// 3. Links: recorded ones, and the file's names when they carry the mark.
	recorded := map[string]bool{}
	for _, l := range st.Links {
		recorded[l] = true
	}
	var links []string
	links = append(links, st.Links...)
	for _, s := range p.Switches {
		for _, port := range s.Ports {
			if !recorded[port.Interface] {
				links = append(links, port.Interface)
			}
		}
	}
	for _, tp := range p.Tunnels {
		here, _ := tp.Ends(p.Machine)
		for _, name := range []string{here.Device, here.Stitch} {
			if !recorded[name] {
				links = append(links, name)
			}
		}
	}
	for _, name := range links {
		l, err := netlink.LinkByName(name)
		if err != nil {
			continue // gone already (a veth pair goes with either end)
		}
		if !recorded[name] && l.Attrs().Alias != alias(t.Name) {
			continue // not ours
		}
		if err := netlink.LinkDel(l); err != nil && !errors.As(err, new(netlink.LinkNotFoundError)) {
			errs = append(errs, fmt.Errorf("deleting interface %s: %w", name, err))
		}
	}
	for _, ns := range nss {
		if err := netns.DeleteNamed(ns); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("deleting namespace %s: %w", ns, err))
		} else if err != nil {
			os.Remove(nsPath(ns)) // not mounted: a file left by an interrupted creation
		}
	}
	// 4. The state directory (and the logs in it).
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return nil
}
