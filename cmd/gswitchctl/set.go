package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/gswitch/gswitch/control"
)

const setUsage = `set PORT KEY VALUE [-s SWITCH] [-o json]

  set PORT rate RATE          egress line rate: 200Mbit, 1.5Gbit, unlimited
  set PORT burst SIZE         the shaper's bucket: 64KB, default
  set PORT quantum BYTES      DRR/SFQ quantum (drr and sfq ports)
  set PORT queue N pause      stop serving egress queue N (ports without mechanisms)
  set PORT queue N resume

Anything else (scheduler, queues, buffer, mechanisms, delay, role, ...) is
set when gswitchd starts: change the config and restart gswitchd.`

func setMain(args []string) int {
	f := newCtlFlags("set", setUsage)
	pos, code, ok := f.parse(args)
	if !ok {
		return code
	}
	req := control.Request{Cmd: "set"}
	switch {
	case len(pos) == 4 && pos[1] == "queue":
		q, err := strconv.Atoi(pos[2])
		if err != nil {
			fmt.Fprintf(os.Stderr, "gswitchctl set: queue %q is not a number\n", pos[2])
			return 2
		}
		req.Port, req.Key, req.Queue, req.Value = pos[0], "queue", q, pos[3]
	case len(pos) == 3:
		req.Port, req.Key, req.Value = pos[0], pos[1], pos[2]
	default:
		fmt.Fprintf(os.Stderr, "usage: gswitchctl %s\n", setUsage)
		return 2
	}
	var r control.SetResult
	return f.call(req, &r, func() {
		fmt.Printf("%s %s: %s -> %s", r.Port, r.Key, r.Old, r.New)
		if !r.Applied {
			fmt.Print(" (posted; the port's worker had not taken it within a second)")
		}
		fmt.Println()
	})
}

func reloadMain(args []string) int {
	f := newCtlFlags("reload", "reload [-s SWITCH] [-o json]   (as kill -HUP: re-read the config, apply rate, burst and quantum changes, refuse the rest)")
	if _, code, ok := f.parse(args); !ok {
		return code
	}
	var r control.ReloadResult
	code := f.call(control.Request{Cmd: "reload"}, &r, func() {
		if len(r.Applied)+len(r.Refused) == 0 {
			fmt.Println("no change")
		}
		for _, a := range r.Applied {
			fmt.Println("applied:", a)
		}
		for _, x := range r.Refused {
			fmt.Println("refused:", x)
		}
	})
	if code == 0 && len(r.Refused) > 0 && !strings.EqualFold(*f.output, "json") {
		return 1
	}
	return code
}
