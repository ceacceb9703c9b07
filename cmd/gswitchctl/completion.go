package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/gswitch/gswitch/control"
)

// completionMain prints the bash completion script. Port names come from
// the running switch (gswitchctl __ports), switch names from the sockets
// in /run/gswitch.
func completionMain(args []string) int {
	if len(args) != 1 || args[0] != "bash" {
		fmt.Fprintln(os.Stderr, "usage: gswitchctl completion bash   (then: source <(gswitchctl completion bash), or save it as /etc/bash_completion.d/gswitchctl)")
		return 2
	}
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	fmt.Printf(bashCompletion, strings.Join(names, " "), strings.Join(control.SetKeys, " "), captureWords)
	return 0
}

const captureWords = "rx tx arp ip ip6 tcp udp icmp icmp6 vlan gc bfc sfc xp tag gsperf host net port src dst ether proto dscp len malformed and or not"

const bashCompletion = `# bash completion for gswitchctl (gswitchctl completion bash)
_gswitchctl_switch() {
	local i
	for ((i = 1; i < COMP_CWORD; i++)); do
		if [[ ${COMP_WORDS[i]} == -s ]]; then echo "-s ${COMP_WORDS[i+1]}"; return; fi
	done
}
_gswitchctl() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local cmds="%s"
	if ((COMP_CWORD == 1)); then
		COMPREPLY=($(compgen -W "$cmds help" -- "$cur")); return
	fi
	local cmd=${COMP_WORDS[1]}
	case $prev in
	-s) COMPREPLY=($(compgen -W "$(ls /run/gswitch/ 2>/dev/null | sed -n 's/\.sock$//p')" -- "$cur")); return ;;
	-o) COMPREPLY=($(compgen -W "table json" -- "$cur")); return ;;
	-dir) COMPREPLY=($(compgen -W "rx tx both" -- "$cur")); return ;;
	-w) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "-s -o -timeout $(case $cmd in capture) echo -w -c -dir -snap -ring -q ;; top) echo -i -n ;; queues) echo -a ;; mac|flows) echo -n ;; health) echo -wait ;; fidelity) echo -interval -bounds ;; esac)" -- "$cur"))
		return
	fi
	# the first positional argument after the command
	local i n=0
	for ((i = 2; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-s|-o|-w|-c|-dir|-snap|-ring|-i|-n|-timeout|-wait|-interval|-bounds) ((i++)) ;;
		-*) ;;
		*) ((n++)) ;;
		esac
	done
	case $cmd in
	queues|flows|set|capture)
		if ((n == 0)); then
			COMPREPLY=($(compgen -W "$(gswitchctl __ports $(_gswitchctl_switch) 2>/dev/null)" -- "$cur")); return
		fi ;;
	esac
	case $cmd in
	set)
		if ((n == 1)); then COMPREPLY=($(compgen -W "%s" -- "$cur")); fi
		if ((n == 2)) && [[ $prev == rate ]]; then COMPREPLY=($(compgen -W "100Mbit 1Gbit 10Gbit unlimited" -- "$cur")); fi
		if ((n == 3)) && [[ ${COMP_WORDS[COMP_CWORD-2]} == queue ]]; then COMPREPLY=($(compgen -W "pause resume" -- "$cur")); fi ;;
	capture) COMPREPLY=($(compgen -W "%s" -- "$cur")) ;;
	completion) COMPREPLY=($(compgen -W "bash" -- "$cur")) ;;
	topo) COMPREPLY=($(compgen -W "up down show check designs transport exec targets export" -- "$cur")) ;;
	esac
}
complete -F _gswitchctl gswitchctl
`

// portsForCompletion prints the port names of the switch, one per line,
// and nothing when it cannot reach one (gswitchctl __ports [-s SWITCH]).
func portsForCompletion(args []string) int {
	f := newCtlFlags("__ports", "__ports [-s SWITCH]")
	if _, code, ok := f.parse(args); !ok {
		return code
	}
	cl, err := f.dial()
	if err != nil {
		return 1
	}
	defer cl.Close()
	var ps []control.PortView
	if cl.Call(control.Request{Cmd: "ports"}, &ps) != nil {
		return 1
	}
	for _, p := range ps {
		fmt.Println(p.Name)
	}
	return 0
}
