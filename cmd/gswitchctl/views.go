package main

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gswitch/gswitch/control"
)

func infoMain(args []string) int {
	f := newCtlFlags("info", "info [-s SWITCH] [-o json]")
	if _, code, ok := f.parse(args); !ok {
		return code
	}
	var v control.Info
	return f.call(control.Request{Cmd: "info"}, &v, func() {
		fmt.Printf("switch %d (pid %d), config %s\nup %s, %d worker(s), %d port(s), L3 %v, mechanisms %s\n",
			v.SwitchID, v.PID, v.Config, time.Since(v.Started).Round(time.Second), v.Workers, v.Ports, v.L3, orDash(strings.Join(v.Mechanisms, ", ")))
	})
}

// healthMain exits 0 when the switch forwards with every port up, 1 when
// it forwards with problems (a port down), 2 when it does not answer or
// is stopping: fit for a monitoring check or systemd's ExecStartPost.
func healthMain(args []string) int {
	f := newCtlFlags("health", "health [-s SWITCH] [-o json] [-wait DURATION]")
	wait := f.fs.Duration("wait", 0, "keep trying to reach gswitchd this long (e.g. at start)")
	if _, code, ok := f.parse(args); !ok {
		return code
	}
	deadline := time.Now().Add(*wait)
	var h control.Health
	for {
		cl, err := f.dial()
		if err == nil {
			err = cl.Call(control.Request{Cmd: "health"}, &h)
			cl.Close()
		}
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "gswitchctl health: %v\n", err)
			if f.json() {
				fmt.Printf("{\"status\":\"unreachable\",\"problems\":[%q]}\n", err.Error())
			}
			return 2
		}
		time.Sleep(200 * time.Millisecond)
	}
	if f.json() {
		printJSONValue(h)
	} else {
		fmt.Printf("%s: %d of %d ports up, %d worker(s), up %s\n", h.Status, h.PortsUp, h.PortsUp+len(h.PortsDown), h.Workers, (time.Duration(h.UptimeSec) * time.Second).String())
		for _, p := range h.Problems {
			fmt.Printf("  %s\n", p)
		}
	}
	switch h.Status {
	case "ok":
		return 0
	case "degraded":
		return 1
	}
	return 2
}

func portsMain(args []string) int {
	f := newCtlFlags("ports", "ports [-s SWITCH] [-o json]")
	if _, code, ok := f.parse(args); !ok {
		return code
	}
	var ps []control.PortView
	return f.call(control.Request{Cmd: "ports"}, &ps, func() {
		t := newTable("PORT", "INTERFACE", "STATE", "ROLE", "RATE", "SCHED", "QUEUES", "RX PKTS", "RX BYTES", "TX PKTS", "TX BYTES", "DROPS", "MECHANISMS", "MAC", "ADDR")
		for _, p := range ps {
			t.row(p.Name, p.Interface, upDown(p.Up), p.Role, lineRate(p.RateBits), p.Scheduler, strconv.Itoa(p.Queues),
				count(p.RxPackets), count(p.RxBytes), count(p.TxPackets), count(p.TxBytes), count(p.Drops),
				orDash(strings.Join(p.Mechanisms, ",")), p.MAC, orDash(strings.Join(p.Addrs, ",")))
		}
		t.flush()
	})
}

func queuesMain(args []string) int {
	f := newCtlFlags("queues", "queues [PORT] [-a] [-s SWITCH] [-o json]")
	all := f.fs.Bool("a", false, "list every queue, empty ones too")
	pos, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if !wantArgs(f, pos, 0, 1) {
		return 2
	}
	cl, err := f.dial()
	if err != nil {
		return fail(err)
	}
	defer cl.Close()
	ports := pos
	if len(ports) == 0 {
		var ps []control.PortView
		if err := cl.Call(control.Request{Cmd: "ports"}, &ps); err != nil {
			return fail(err)
		}
		for _, p := range ps {
			ports = append(ports, p.Name)
		}
	}
	var js []string
	for i, name := range ports {
		raw, err := cl.Raw(control.Request{Cmd: "queues", Port: name})
		if err != nil {
			return fail(err)
		}
		if f.json() {
			js = append(js, string(raw))
			continue
		}
		var q control.QueuesView
		if err := jsonUnmarshal(raw, &q); err != nil {
			return fail(err)
		}
		if i > 0 {
			fmt.Println()
		}
		printQueues(&q, *all)
	}
	if f.json() {
		if len(pos) == 1 {
			printJSON([]byte(js[0]))
		} else {
			printJSON([]byte("[" + strings.Join(js, ",") + "]"))
		}
	}
	return 0
}

func printQueues(q *control.QueuesView, all bool) {
	head := fmt.Sprintf("%s: %s, scheduler %s", q.Port, upDown(q.Up), q.Scheduler)
	if q.Quantum > 0 {
		head += fmt.Sprintf(" (quantum %d B)", q.Quantum)
	}
	if q.Round != nil {
		head += fmt.Sprintf(" (round %d)", *q.Round)
	}
	head += ", rate " + lineRate(q.RateBits)
	fmt.Println(head)
	t := newTable("  QUEUE", "BYTES", "PACKETS", "STATE")
	shown := 0
	for _, x := range q.Queues {
		if !all && x.Packets == 0 && !x.Paused {
			continue
		}
		state := "running"
		if x.Paused {
			state = "PAUSED"
		}
		t.row("  "+strconv.Itoa(x.Queue), strconv.FormatUint(x.Bytes, 10), strconv.FormatUint(uint64(x.Packets), 10), state)
		shown++
	}
	t.row("  control", strconv.FormatUint(q.Control.Bytes, 10), strconv.FormatUint(uint64(q.Control.Packets), 10), "lane")
	if q.Credit != nil {
		t.row("  credit", strconv.FormatUint(q.Credit.Bytes, 10), strconv.FormatUint(uint64(q.Credit.Packets), 10), "lane")
	}
	t.flush()
	if !all && shown < len(q.Queues) {
		fmt.Printf("  (%d of %d queues empty and running; -a lists them)\n", len(q.Queues)-shown, len(q.Queues))
	}
	if len(q.Drops) > 0 {
		var keys []string
		for k := range q.Drops {
			keys = append(keys, k)
		}
		sortStrings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %d", k, q.Drops[k]))
		}
		fmt.Printf("  drops: %s\n", strings.Join(parts, ", "))
	} else {
		fmt.Println("  drops: none")
	}
	for m, st := range q.Mechanisms {
		fmt.Printf("  %s: %s\n", m, kv(st))
	}
}

func macMain(args []string) int {
	f := newCtlFlags("mac", "mac [-n MAX] [-s SWITCH] [-o json]")
	limit := f.fs.Int("n", 0, "list at most this many entries (default 10000)")
	if _, code, ok := f.parse(args); !ok {
		return code
	}
	var v control.MACView
	return f.call(control.Request{Cmd: "mac", Limit: *limit}, &v, func() {
		t := newTable("MAC", "PORT", "AGE")
		for _, e := range v.Entries {
			t.row(e.MAC, e.Port, fmt.Sprintf("%.1fs", e.AgeSec))
		}
		t.flush()
		more := ""
		if v.Total > len(v.Entries) {
			more = fmt.Sprintf(" (%d listed)", len(v.Entries))
		}
		fmt.Printf("%d entries%s; learned %d, moved %d, table full %d\n", v.Total, more, v.Learned, v.Moves, v.TableFull)
	})
}

func routesMain(args []string) int {
	f := newCtlFlags("routes", "routes [-s SWITCH] [-o json]")
	if _, code, ok := f.parse(args); !ok {
		return code
	}
	var v control.RoutesView
	return f.call(control.Request{Cmd: "routes"}, &v, func() {
		if !v.L3 {
			fmt.Println("an L2 switch: no port has addresses, frames are switched by MAC (gswitchctl mac)")
			return
		}
		t := newTable("PREFIX", "VIA", "PORT")
		for _, r := range v.Routes {
			for i, nh := range r.NextHops {
				p := r.Prefix
				if i > 0 {
					p = "" // more next hops of an ECMP group
				}
				via := nh.Via
				if via == "" {
					via = "connected"
				}
				t.row(p, via, nh.Port)
			}
		}
		t.flush()
	})
}

func neighborsMain(args []string) int {
	f := newCtlFlags("neighbors", "neighbors [-s SWITCH] [-o json]")
	if _, code, ok := f.parse(args); !ok {
		return code
	}
	var v control.NeighborsView
	return f.call(control.Request{Cmd: "neighbors"}, &v, func() {
		if !v.L3 {
			fmt.Println("an L2 switch: it keeps no neighbour cache (gswitchctl mac)")
			return
		}
		t := newTable("IP", "MAC", "PORT", "TYPE", "AGE")
		for _, e := range v.Entries {
			typ, age := "learnt", fmt.Sprintf("%.1fs", e.AgeSec)
			if e.Static {
				typ, age = "static", "-"
			}
			t.row(e.IP, e.MAC, e.Port, typ, age)
		}
		t.flush()
		a := v.ARP
		fmt.Printf("arp: learnt %d, move_refused %d, unsolicited %d, rate_limited %d, full %d\n", a.Learnt, a.MoveRefused, a.Unsolicited, a.RateLimited, a.Full)
	})
}

func flowsMain(args []string) int {
	f := newCtlFlags("flows", "flows [PORT] [-n MAX] [-s SWITCH] [-o json]")
	limit := f.fs.Int("n", 0, "list at most this many flows per mechanism and port (default 100)")
	pos, code, ok := f.parse(args)
	if !ok {
		return code
	}
	if !wantArgs(f, pos, 0, 1) {
		return 2
	}
	req := control.Request{Cmd: "flows", Limit: *limit}
	if len(pos) == 1 {
		req.Port = pos[0]
	}
	var v []control.MechView
	return f.call(req, &v, func() {
		if len(v) == 0 {
			fmt.Println("no mechanism is enabled on these ports")
			return
		}
		for _, m := range v {
			fmt.Printf("%s on %s: %s\n", m.Mechanism, m.Port, orDash(kv(m.State)))
			if !m.Lists {
				fmt.Println("  (keeps no per-flow state it can list)")
				continue
			}
			if len(m.Flows) == 0 {
				fmt.Println("  no flows")
				continue
			}
			t := newTable("  SRC", "DST", "PROTO", "HASH", "ID", "STATE")
			for _, fl := range m.Flows {
				t.row("  "+addrPort(fl.Src), addrPort(fl.Dst), strconv.Itoa(int(fl.Proto)), fmt.Sprintf("%08x", fl.Hash), strconv.FormatUint(fl.ID, 10), kv(fl.State))
			}
			t.flush()
		}
	})
}

func addrPort(a netip.AddrPort) string {
	if !a.IsValid() {
		return "-"
	}
	return a.String()
}
