#!/usr/bin/env bash
# demo.sh — the main job: a fabric of three gswitchd switches in network
# namespaces, BFC (Backpressure Flow Control) at work between them. Run as
# root; about a minute. It builds gswitchd, gswitchctl and
# gsperf, brings up BFC's testbed (the paper's Fig. 6) from a topology file
# with `gswitchctl topo up`, and runs the same incast four times, one per
# design of its topology file (each design sets the ports' mechanisms and
# the hosts' gsperf transport, `gswitchctl topo up -design` and `topo
# transport`): with no mechanism, with BFC, with PFC, the baseline BFC's
# paper argues against, and with HPCC (hosts that pace by the in-band
# telemetry every switch port writes into their packets):
#
#   s1 --\
#         sw1 ----> sw2 <---- sw3 -- s3        routed (L3), every link 100 Gbit/s, 1 us (the paper's)
#   s2 --/         /   \
#                r1     r2                     sw2's port toward r2: 50 Gbit/s, 512 KB of buffer
#
# The fabric is the paper's, run 10,000 times slower (timescale: 10000): its
# 100 Gbit/s links are 10 Mbit/s on this machine and its 1 us delays 10 ms,
# so that the switches' timing, on a machine they share with the hosts,
# stays well inside a frame time. Every run ends with its fidelity verdict
# (gsperf fidelity: how late the switches' timers fired, in frame times,
# and the line time they lost): a run that is not VALID says nothing of
# the design. Times below are the fabric's unless they say wall.
#
# Six 256 KB flows (two from each of s1, s2 and s3, each with 256 KB in flight,
# hosts that ignore pauses) burst into r2. Without BFC, sw2's port toward r2
# overflows and drops; with BFC, sw2 counts its packets per upstream queue
# and sends PAUSE and RESUME frames to sw1 and sw3, whose queues toward sw2
# hold the excess: no drops at the congested switch. Along the way it shows
# the operator's views (gswitchctl routes, queues with paused ones, a
# capture of the pause frames on the wire) and the metrics. With PFC
# (IEEE 802.1Qbb: a switch pauses a whole priority of its upstream's port,
# and hosts' NICs honour it: gsperf -pfc) the congested port drops
# nothing either (sw1 may drop a few at its headroom cap, pfc_headroom:
# the hosts are processes, slower to stop than a NIC), but a
# victim flow from s2 to r1, whose port is idle, waits behind the incast
# at sw1: head-of-line blocking, which BFC's per-flow queues avoid (its
# completion time is printed for each run). HPCC's hosts pace by what the
# switches report, without pauses, so the victim is not held; their first
# round trip, one BDP each, may overflow the congested port before any
# report arrives. Everything it made is removed at the end, also on
# Ctrl-C.
#
# scripts/demo-switch.sh is the one-switch demo (iperf3 through a shaped
# port, DRR against FIFO).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
[ "$(id -u)" = 0 ] || { echo "demo.sh: run as root (namespaces, veths, XDP)" >&2; exit 1; }
for t in ip ethtool ping curl python3; do
	command -v $t >/dev/null || { echo "demo.sh: $t missing: run scripts/install-deps.sh" >&2; exit 1; }
done

NAME=d$(printf %05d $(($$ % 100000)))
NAME=${NAME:0:6}
BASE=${DEMO_METRICS_BASE:-9590}
WORK=$(mktemp -d)
TOPO=$WORK/fabric.yaml
UP=
SRV=
cleanup() {
	[ -n "$SRV" ] && kill $SRV 2>/dev/null && wait $SRV 2>/dev/null
	[ -n "$UP" ] && "$WORK/gswitchctl" topo down -state "$WORK/state" "$TOPO" >/dev/null 2>&1
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== building gswitchd, gswitchctl and gsperf"
go build -o "$WORK/gswitchd" ./cmd/gswitchd
go build -o "$WORK/gswitchctl" ./cmd/gswitchctl
go build -o "$WORK/gsperf" ./cmd/gsperf
ctl() { "$WORK/gswitchctl" "$@"; }

# topology: BFC's testbed, every port running DRR over 16 queues, with a
# design per run: the ports' mechanisms and the hosts' gsperf transport.
# The incast's hosts ignore BFC's pauses (plain), honour PFC's as a NIC
# would (-pfc, paced at their line rate) or run HPCC.
topology() {
	cat >"$TOPO" <<YAML
name: $NAME
mode: l3
timescale: 10000
metrics_base: $BASE
defaults:
  link: {rate: 100Gbit, delay: 1us, mtu: 1500}
  switch: {workers: 1, realtime: 10}
  port: {scheduler: drr, queues: 16, buffer: 8MB}
transport: {mode: plain}
designs:
  none: {port: {mechanisms: {}}}
  bfc: {port: {mechanisms: {bfc: {}}}}
  pfc: {port: {mechanisms: {pfc: {response: 15ms}}}, transport: {mode: plain, pfc: true, args: [-pace, 100Gbit]}}
  hpcc: {port: {mechanisms: {int: {}}}, transport: {mode: hpcc, args: [-pace, 100Gbit]}}
switches: {sw1: {}, sw2: {}, sw3: {}}
hosts:
  s1: {addr: 10.71.1.1/24}
  s2: {addr: 10.71.2.1/24}
  s3: {addr: 10.71.3.1/24}
  r1: {addr: 10.71.4.1/24}
  r2: {addr: 10.71.5.1/24}
links:
  - {a: s1, b: sw1}
  - {a: s2, b: sw1}
  - {a: s3, b: sw3}
  - {a: r1, b: sw2}
  - {a: r2, b: sw2, rate: 50Gbit, b_port: {buffer: 512KB}}
  - {a: sw1, b: sw2}
  - {a: sw3, b: sw2}
YAML
}

up() { # DESIGN
	topology
	ctl topo up -design "$1" -gswitchd "$WORK/gswitchd" -state "$WORK/state" "$TOPO" | sed 's/^/   /'
	UP=1
	mapfile -t HOSTARGS < <(ctl topo transport "$TOPO" s1 -design "$1")
	echo "   the hosts' gsperf under design $1 (gswitchctl topo transport): ${HOSTARGS[*]}"
}
down() {
	ctl topo down -state "$WORK/state" "$TOPO" >/dev/null
	UP=
}
hx() { local h=$1; shift; ip netns exec "$NAME-$h" "$@"; } # a host's namespace: <topology>-<host>
metric() { # switch metric-regex: the sum of the matching samples
	curl -s "http://127.0.0.1:$((BASE + $1))/metrics" | python3 -c '
import re,sys
pat=re.compile(sys.argv[1]); t=0.0
for l in sys.stdin:
    if not l.startswith("#") and pat.match(l.split(" ")[0]): t+=float(l.split()[-1])
print("%d" % t)' "$2"
}
DROPS='gswitch_drops_total\{port="r2",reason="(buffer_full|frame_limit|port_limit|queue_limit|evicted|handoff_full|no_frames)"\}'
ALLDROPS='gswitch_drops_total\{port="[a-z0-9]*",reason="(buffer_full|frame_limit|port_limit|queue_limit|evicted|handoff_full|no_frames|pfc_headroom|pfc_watchdog)"\}'

URLS="sw1=http://127.0.0.1:$((BASE + 1))/metrics,sw2=http://127.0.0.1:$((BASE + 2))/metrics,sw3=http://127.0.0.1:$((BASE + 3))/metrics"

# incast LABEL TIMEOUT: with the design's gsperf flags (HOSTARGS), two 256 KB flows from each of s1, s2
# and s3 to r2, all at once (gsperf at the fabric's timescale: its rates
# and times are the fabric's), and with them the victim: one 1 MB flow
# from s2 to r1, whose port is idle; then the fidelity verdict of the
# switches over the run.
incast() {
	hx r2 "$WORK/gsperf" server -bind 10.71.5.1:5500 -timescale 10000 -report 0 >/dev/null 2>&1 &
	SRV=$!
	hx r1 "$WORK/gsperf" server -bind 10.71.4.1:5500 -timescale 10000 -report 0 >/dev/null 2>&1 &
	SRV="$SRV $!"
	sleep 0.3
	"$WORK/gsperf" fidelity -metrics "$URLS" -save "$WORK/$1-before.json" >/dev/null
	local at=$(($(date +%s%N) + 3000000000)) pids=() h i=0
	for h in s1 s2 s3; do
		i=$((i + 1))
		hx $h timeout 40 "$WORK/gsperf" client -timescale 10000 -src $h -to 10.71.5.1:5500 -size 256KB -flows 2 -arrivals burst -at $at \
			-rate 50Gbit -base-rtt 10us -init-window 256KB -rto 300us -timeout "$2" -id-base $((i * 1000)) -out "$WORK/$1-$h.json" "${HOSTARGS[@]}" >"$WORK/$1-$h.log" 2>&1 &
		pids+=($!)
	done
	hx s2 timeout 40 "$WORK/gsperf" client -timescale 10000 -src s2 -to 10.71.4.1:5500 -size 1MB -flows 1 -arrivals burst -at $at \
		-rate 100Gbit -base-rtt 10us -init-window 256KB -rto 300us -timeout "$2" -id-base 9000 -out "$WORK/$1-victim.json" "${HOSTARGS[@]}" >"$WORK/$1-victim.log" 2>&1 &
	pids+=($!)
	if [ "$1" = bfc ]; then # in the middle of the incast: sw2's congested port, and the queues sw1 holds for sw2, paused by sw2
		sleep 3.6
		ctl queues r2 -s "$NAME-sw2" >"$WORK/q2.txt" 2>&1 || true
		ctl queues sw2 -s "$NAME-sw1" >"$WORK/q1.txt" 2>&1 || true
		echo "   sw2's port toward r2 during the incast (gswitchctl queues r2 -s $NAME-sw2): flows spread over its queues"
		sed 's/^/     /' "$WORK/q2.txt" | head -14
		echo "   sw1's queues toward sw2 at the same time (gswitchctl queues sw2 -s $NAME-sw1): paused by sw2"
		sed 's/^/     /' "$WORK/q1.txt" | head -10
	fi
	wait "${pids[@]}" || true
	"$WORK/gsperf" fidelity -metrics "$URLS" -before "$WORK/$1-before.json" | sed 's/^/   /'
	kill $SRV 2>/dev/null || true; wait $SRV 2>/dev/null || true
	SRV=
	python3 - "$WORK"/"$1"-s?.json <<'PY'
import json,sys
fl=[f for p in sys.argv[1:] for f in json.load(open(p))["flows"]]
done=[f for f in fl if f["complete"]]
fct=sorted(f["fct_fabric_ns"]/1e3 for f in done)
print("   incast flows completed: %d of %d; FCT (fabric) %s; segments retransmitted: %d" % (len(done), len(fl),
  ("min %.0f us, max %.0f us" % (fct[0], fct[-1])) if fct else "-", sum(f["retransmits"] for f in fl)))
PY
	VICTIM=$(python3 -c '
import json,sys
f=json.load(open(sys.argv[1]))["flows"][0]
print("%.0f us" % (f["fct_fabric_ns"]/1e3) if f["complete"] else "incomplete")' "$WORK/$1-victim.json" 2>/dev/null || echo "-")
	echo "   the victim, 1 MB from s2 to r1's idle port: FCT $VICTIM (fabric; 84 us on an empty line)"
}

echo "== 1. the fabric without BFC: gswitchctl topo up (namespaces, veths, routes, one gswitchd per switch)"
up none
echo "== ping s1 -> r2 across sw1 and sw2, and sw1's routing table (gswitchctl routes -s $NAME-sw1)"
hx s1 ping -c 3 -i 0.2 -W 2 10.71.5.1 | tail -2 | sed 's/^/   /'
ctl routes -s "$NAME-sw1" | sed 's/^/   /'
echo "== incast: six 256 KB flows from s1, s2, s3 into r2's 50 Gbit/s port (512 KB of buffer), 1.5 MB in flight"
incast nobfc 500us
nobfc=$(metric 2 "$DROPS") victim_none=$VICTIM
echo "   drops at sw2's port toward r2: $nobfc"
down

echo
echo "== 2. the same fabric and incast with BFC on every port (design bfc: mechanisms: {bfc: {}})"
up bfc
hx s1 ping -c 1 -W 2 10.71.5.1 >/dev/null
# The pause frames on the wire, as sw1 receives them from sw2 (in the background, the first four).
ctl capture sw2 -s "$NAME-sw1" -dir rx -c 4 bfc >"$WORK/capture.txt" 2>&1 &
CAP=$!
incast bfc 3ms
bfc=$(metric 2 "$DROPS") victim_bfc=$VICTIM
kill $CAP 2>/dev/null || true; wait $CAP 2>/dev/null || true
echo "   drops at sw2's port toward r2: $bfc"
echo "   sw2 sent $(metric 2 'gswitch_bfc_pauses_sent_total.*') pauses, $(metric 2 'gswitch_bfc_resumes_sent_total.*') resumes, $(metric 2 'gswitch_bfc_bitmaps_sent_total.*') pause bitmaps;" \
	"sw1 received $(metric 1 'gswitch_bfc_pauses_received_total.*'), sw3 $(metric 3 'gswitch_bfc_pauses_received_total.*') pauses"
echo "   pause frames captured on sw1's port toward sw2 (gswitchctl capture sw2 -s $NAME-sw1 -dir rx bfc):"
sed 's/^/     /' "$WORK/capture.txt" | head -6
echo "   how well sw2 kept time since it started (gswitchctl fidelity -s $NAME-sw2):"
ctl fidelity -s "$NAME-sw2" 2>&1 | sed 's/^/     /' || true
down

echo
echo "== 3. the baseline BFC replaces: PFC (IEEE 802.1Qbb) on every port (design pfc: mechanisms: {pfc: {}}), the hosts' NICs honouring it (gsperf -pfc)"
# The hosts pace at their links' rate, as a NIC sends (unpaced, a client
# puts its whole window on the veth at once, before any pause can act),
# and react to a pause as late as an ordinary process wakes: the headroom
# allows it (response, wall time; a NIC's is microseconds).
up pfc
hx s1 ping -c 1 -W 2 10.71.5.1 >/dev/null
incast pfc 3ms
pfc=$(metric 2 "$DROPS") victim_pfc=$VICTIM
echo "   drops at sw2's port toward r2: $pfc; anywhere in the fabric: $(($(metric 1 "$ALLDROPS") + $(metric 2 "$ALLDROPS") + $(metric 3 "$ALLDROPS")))" \
	"$(for i in 1 2 3; do curl -s "http://127.0.0.1:$((BASE + i))/metrics" | grep '^gswitch_drops_total' | grep -v 'link_local' | grep -v ' 0$' | sed "s/^gswitch_drops_total/sw$i/"; done | tr '\n' ' ')"
echo "   sw2 sent $(metric 2 'gswitch_pfc_pauses_sent_total.*') PFC pauses, sw1 sent its hosts $(metric 1 'gswitch_pfc_pauses_sent_total.*');" \
	"sw1's port toward sw2 paused $(curl -s "http://127.0.0.1:$((BASE + 1))/metrics" | python3 -c '
import sys
t=sum(float(l.split()[-1]) for l in sys.stdin if l.startswith("gswitch_pfc_paused_seconds_total{port=\"sw2\""))
print("%.0f us (fabric)" % (t / 10000 * 1e6))')"
down

echo
echo "== 4. another baseline of BFC's paper: HPCC, hosts that pace by in-band telemetry (design hpcc: mechanisms: {int: {}}, gsperf -mode hpcc)"
echo "   every port writes its queue, bytes sent, time and rate into slots the senders reserved in their packets; the receivers echo them"
up hpcc
hx s1 ping -c 1 -W 2 10.71.5.1 >/dev/null
incast hpcc 3ms
hpcc=$(metric 2 "$DROPS") victim_hpcc=$VICTIM
echo "   drops at sw2's port toward r2: $hpcc; INT records written by sw2's port toward r2: $(metric 2 'gswitch_int_hops_written_total\{port="r2"\}');" \
	"BFC or PFC pauses: none (no pause mechanism runs)"
down

echo
echo "== summary: drops at the congested port: $nobfc with no mechanism, $bfc with BFC, $pfc with PFC, $hpcc with HPCC"
echo "   the victim (s2 -> r1, an idle port): FCT $victim_none with no mechanism, $victim_bfc with BFC, $victim_pfc with PFC, $victim_hpcc with HPCC"
[ "$bfc" = 0 ] && [ "$nobfc" != 0 ] && echo "   BFC pushed the backlog upstream, hop by hop, and the congested switch dropped nothing." ||
	echo "   (not as the design promises: look at the fidelity verdicts above)"
echo "   PFC keeps the congested port lossless too, but it pauses sw1's whole priority toward sw2: the victim waits behind the"
echo "   incast (head-of-line blocking, the congestion spreading BFC's paper starts from); BFC pauses only the incast's queues."
echo "   (Drops elsewhere with PFC, listed above by reason, are sw1's headroom cap, pfc_headroom: s2 runs two gsperf clients,"
echo "   each paced to the line, and a process reacts to a pause later than a NIC.)"
echo "   HPCC needs no pause, and the victim on another port is not held; but each sender starts with one BDP in flight"
echo "   (HPCC's W_init, 125 KB): six at once are 750 KB for a 512 KB port, so the first round trip can drop, before the"
echo "   switches' reports reach the senders. BFC's paper runs HPCC with PFC, or with a perfect retransmission, for that."
echo "== done: everything made is removed"
