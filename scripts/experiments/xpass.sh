#!/usr/bin/env bash
# xpass.sh — ExpressPass on gswitch (docs/results.md, "ExpressPass"): the
# topologies of topologies/expresspass/, the paper's fabric in its own units
# (10 Gbit/s links, 1 us delays, 250-packet buffers, 8-credit queues), run at
# the timescale each file gives (timescale: 1000, so 10 Mbit/s and 1 ms on
# this machine). gsperf runs at the same -timescale with every rate and time
# flag in the fabric's units. Every time and rate below is the fabric's
# unless it says wall.
#
#   1. N-to-1 (N in NS, default "8 16 32"): N senders on sw1, one receiver
#      on sw2. Four runs: gsperf -mode xpass with the feedback loop, the same
#      with naive credits (-xp-naive), iperf3 TCP (cubic) through FIFO ports,
#      and iperf3 TCP through SFQ ports. Each xpass sender sends its fair
#      share of INCAST (default 6ms) paced to its link, as its NIC would.
#      Kernel TCP cannot be scaled (its minimum RTO and delayed ACKs are wall
#      time): it runs TCP_SECS wall seconds, as the contrast of where its
#      queue goes.
#   2. Parking lot (Fig. 4b) and multi-bottleneck (Fig. 4a): naive credits
#      for NAIVE (default 6ms) against the feedback loop for FEEDBACK
#      (default 10ms), each flow's share of a link over the steady window.
#   3. Convergence (the paper's Fig. 2 kind; PARTS=converge): naive credits
#      (the paper's Fig. 2 scheme), then the feedback loop: CONVERGE_N
#      (default 4) senders to one receiver on incast.yaml, sender i joining
#      (i-1) x JOIN (default 2ms) after the first, all running until HOLD
#      (default 4ms) after the last joined: each flow's goodput over time,
#      and after each join how long until every running flow is within 20%
#      of its fair share (over 200us) and stays there for 1ms.
#
#   4. DCTCP, the baseline the paper compares with (DCTCP=1, the default;
#      DCTCP=0 leaves it out): in the N-to-1 and the convergence runs, the
#      same fabric with ECN step marking at the DCTCP paper's K for 10
#      Gbit/s (ECN, default "ecn: {k_packets: 65}") instead of ExpressPass
#      on every port, and gsperf -mode dctcp on the hosts; each sender sends
#      its fair share of what the line carries as payload.
#
# PARTS (default "incast two") picks the parts: incast, two, converge.
# JITTER=J gives the receivers' credit pacing -xp-jitter J (the paper's
# jitter; 0 is the no-jitter ablation; default gsperf's own).
#
# Every run prints the switches' fidelity verdict over it (gsperf fidelity:
# VALID or INVALID with the figures); summary.md repeats them.
#
#   sudo scripts/experiments/xpass.sh                 # about 5 minutes
#   NS=8 INCAST=3ms NAIVE=3ms FEEDBACK=4ms TCP_SECS=1 scripts/experiments/xpass.sh   # a quick check
#   CQ=4 ...          credit_queue instead of the files' 8
#   DROP=tail ...     every credit lane drops at the tail (or DROP=random) instead of the files' credit_drop
#   K=2000 ...        another timescale than the files'
#   PARTS=converge ...                                  only the convergence runs
#   JITTER=0 PARTS=incast NS=16 ...                     the 16-to-1 without credit jitter
#   REPORT=1s ...     each receiver prints its credits, losses and rate every REPORT (wall; RUN/server-HOST.log)
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/go/bin
NS=${NS:-"8 16 32"} INCAST=${INCAST:-6ms} NAIVE=${NAIVE:-6ms} FEEDBACK=${FEEDBACK:-10ms} TCP_SECS=${TCP_SECS:-3}
CQ=${CQ:-} DROP=${DROP:-} K=${K:-} DCTCP=${DCTCP:-1} ECN=${ECN:-"ecn: {k_packets: 65}"}
PARTS=${PARTS:-incast two} JITTER=${JITTER:-} CONVERGE_N=${CONVERGE_N:-4} JOIN=${JOIN:-2ms} HOLD=${HOLD:-4ms}
for p in $PARTS; do case "$p" in incast | two | converge) ;; *) echo "$0: PARTS: $p: give incast, two or converge" >&2; exit 1 ;; esac; done
has() { [[ " $PARTS " == *" $1 "* ]]; }
case "$DROP" in "" | tail | random) ;; *) echo "$0: DROP=$DROP: give tail or random" >&2; exit 1 ;; esac
OUT=${OUT:-results-xpass-$(date +%Y%m%d-%H%M%S)}
[ "$(id -u)" = 0 ] || { echo "$0: run as root (namespaces, veths, XDP)" >&2; exit 1; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d)
STATE=$WORK/state
UP=
down() {
	if [ -n "$UP" ]; then
		"$WORK/gswitchctl" topo down -state "$STATE" "$UP" >/dev/null 2>&1 || true
		UP=
	fi
}
trap 'down; rm -rf "$WORK"' EXIT
go build -o "$WORK/gswitchd" ./cmd/gswitchd
go build -o "$WORK/gswitchctl" ./cmd/gswitchctl
go build -o "$WORK/gsperf" ./cmd/gsperf
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$OUT/load.txt"

# fabric-time arithmetic: ns FABRIC-DURATION
ns() { python3 -c "
import re,sys
m=re.fullmatch(r'([0-9.]+)(ns|us|µs|ms|s)','$1')
if not m: sys.exit('$0: $1: write a duration such as 500us or 6ms')
print(int(float(m[1])*{'ns':1,'us':1e3,'µs':1e3,'ms':1e6,'s':1e9}[m[2]]))"; }

# up FILE [SCHED [MECHS]]: a copy of topologies/expresspass/FILE (with SCHED
# on every port if given, MECHS instead of ExpressPass on every port if
# given, and the CQ, DROP and K knobs), brought up; sets
# NAME, BASE, TS (the timescale), RATE (every link's, fabric) and RATEBITS.
up() {
	local src=topologies/expresspass/$1 f=$WORK/$1
	cp "$src" "$f"
	if [ -n "$CQ" ]; then
		sed -i "s/credit_queue: [0-9]*/credit_queue: $CQ/" "$f"
	fi
	if [ -n "$DROP" ]; then
		sed -i -e "s/, credit_drop: [a-z]*//" -e "s/credit_queue: \([0-9]*\)/credit_queue: \1, credit_drop: $DROP/" "$f"
	fi
	if [ -n "$K" ]; then
		sed -i "s/^timescale: .*/timescale: $K/" "$f"
	fi
	if [ -n "${2:-}" ]; then
		sed -i "s/  port: {buffer: \([0-9A-Za-z]*\), /  port: {buffer: \1, scheduler: $2, /" "$f"
	fi
	if [ -n "${3:-}" ]; then
		sed -i "s/mechanisms: {expresspass: {[^}]*}}/mechanisms: {$3}/" "$f"
	fi
	NAME=$(sed -n 's/^name: *//p' "$f") BASE=$(sed -n 's/^metrics_base: *\([0-9]*\).*/\1/p' "$f")
	TS=$(sed -n 's/^timescale: *\([0-9.]*\).*/\1/p' "$f")
	TS=${TS:-1}
	RATE=$(sed -n 's/^  link: {rate: \([0-9A-Za-z.]*\),.*/\1/p' "$f")
	RATEBITS=$(python3 -c "r='$RATE'.lower().replace('bit',''); print(int(float(r[:-1])*{'k':1e3,'m':1e6,'g':1e9}[r[-1]]))")
	"$WORK/gswitchctl" topo up -gswitchd "$WORK/gswitchd" -state "$STATE" "$f" >/dev/null
	UP=$f
	echo "$1: every link $RATE at timescale $TS"
}
nsx() { local h=$1; shift; ip netns exec "$NAME-$h" "$@"; }
addr() { ip -n "$NAME-$1" -4 -o addr show dev eth0 | awk '{print $4}' | cut -d/ -f1; }
urls() { # NSWITCHES: the switches' metrics endpoints for gsperf fidelity
	local i u=""
	for i in $(seq 1 "$1"); do u="$u${u:+,}sw$i=http://127.0.0.1:$((BASE + i))/metrics"; done
	echo "$u"
}
scrape() { # TAG NSWITCHES
	local i
	for i in $(seq 1 "$2"); do curl -s "127.0.0.1:$((BASE + i))/metrics" >"$RUN/$1-sw$i.prom"; done
}
# watch FABRIC-DURATION: sw1's queues every 100us of fabric time (100 ms
# wall at K 1000, about 80 frame times). Not more often: a scrape costs the
# switch more than CPU time, its realtime worker waits for the Go runtime
# meanwhile (scraping sw1 every 20 ms made the switches' lateness p99 0.6 to
# 0.8 frame times and their delay error 1.3 to 1.9, INVALID, against 0.05
# to 0.09 and 0.05 to 0.1 in the same runs without).
watch() {
	"$WORK/gsperf" watch -timescale "$TS" -metrics "http://127.0.0.1:$((BASE + 1))/metrics" -interval 100us -duration "$1" -out "$RUN/queues-sw1.json" >/dev/null 2>&1 &
	WATCH=$!
}
# fidelity_begin NSWITCHES / fidelity_end NSWITCHES: the switches' verdict over the run, printed and kept (fidelity.txt, fidelity.json).
fidelity_begin() { "$WORK/gsperf" fidelity -metrics "$(urls "$1")" -save "$RUN/fidelity-before.json" >/dev/null; }
fidelity_end() {
	"$WORK/gsperf" fidelity -metrics "$(urls "$1")" -before "$RUN/fidelity-before.json" -json "$RUN/fidelity.json" >"$RUN/fidelity.txt" || true
	echo "  $(basename "$RUN"): $(cat "$RUN/fidelity.txt")"
}

# xp_run DIR NSWITCHES NAIVE "src:dst ..." SIZE TIMEOUT: gsperf -mode xpass, one flow per pair; TIMEOUT is fabric time.
# With MODE=dctcp: gsperf -mode dctcp against a plain server instead (NAIVE unused).
# With STAGGER_NS (fabric ns) set, flow i starts (i-1) x STAGGER_NS after the
# first and its timeout is that much shorter, so that all end together.
xp_run() {
	RUN=$1
	mkdir -p "$RUN"
	local nsw=$2 naive=$3 pairs=$4 size=$5 timeout=$6 servers=() clients=() i=0 p
	for p in $pairs; do
		local dst=${p#*:}
		if [ ! -e "$RUN/server-$dst.log" ]; then
			: >"$RUN/server-$dst.log" # now: the background redirect below may come later than the next pair's check
			# ip netns exec, not nsx: $! must be gsperf itself (it execs), so that SIGINT reaches it
			if [ "${MODE:-xpass}" = xpass ]; then
				ip netns exec "$NAME-$dst" "$WORK/gsperf" server -mode xpass -bind "$(addr "$dst"):5500" -timescale "$TS" -xp-link "$RATE" $naive ${JITTER:+-xp-jitter "$JITTER"} -report "${REPORT:-0}" >"$RUN/server-$dst.log" 2>&1 &
			else
				ip netns exec "$NAME-$dst" "$WORK/gsperf" server -bind "$(addr "$dst"):5500" -timescale "$TS" -report "${REPORT:-0}" >"$RUN/server-$dst.log" 2>&1 &
			fi
			servers+=($!)
		fi
	done
	sleep 0.5
	scrape before "$nsw"
	local at=$(($(date +%s%N) + 2000000000))
	local stagger=${STAGGER_NS:-0} to_ns
	to_ns=$(ns "$timeout")
	for p in $pairs; do
		i=$((i + 1))
		nsx "${p%:*}" "$WORK/gsperf" client -mode "${MODE:-xpass}" -src "${p%:*}" -to "$(addr "${p#*:}"):5500" -size "$size" -flows 1 -arrivals burst \
			-timescale "$TS" -rate "$RATE" -pace "$RATE" -at $((at + (i - 1) * stagger * ${TS%.*})) -timeline 100us \
			-timeout "$((to_ns - (i - 1) * stagger))ns" -id-base $((i * 1000)) -out "$RUN/flow-$i.json" >"$RUN/client-$i.log" 2>&1 &
		clients+=($!)
	done
	sleep 1.5
	fidelity_begin "$nsw"
	# The watch writes its file when its time is up (a killed one writes
	# nothing): WATCH_FOR (fabric) is how long the flows are expected to run.
	watch "${WATCH_FOR:-$timeout}"
	wait "${clients[@]}" || true
	fidelity_end "$nsw"
	sleep 0.3
	scrape after "$nsw"
	kill -INT "${servers[@]}" 2>/dev/null || true
	wait "${servers[@]}" 2>/dev/null || true
	wait "$WATCH" 2>/dev/null || true
	"$WORK/gsperf" merge -name "${MODE:-xpass}" -out "$RUN/flows.json" "$RUN"/flow-*.json >/dev/null
}

# tcp_run DIR NSWITCHES "src:dst ...": iperf3 (cubic) for TCP_SECS wall seconds, one flow per pair.
tcp_run() {
	RUN=$1
	mkdir -p "$RUN"
	local nsw=$2 pairs=$3 clients=() i=0 p
	for p in $pairs; do
		i=$((i + 1))
		nsx "${p#*:}" iperf3 -s -D -B "$(addr "${p#*:}")" -p $((5200 + i))
	done
	sleep 0.5
	scrape before "$nsw"
	fidelity_begin "$nsw"
	watch "$(python3 -c "print(f'{($TCP_SECS + 1) * 1e6 / $TS:.0f}us')")"
	i=0
	for p in $pairs; do
		i=$((i + 1))
		nsx "${p%:*}" iperf3 -c "$(addr "${p#*:}")" -p $((5200 + i)) -t "$TCP_SECS" -i 0.1 -J >"$RUN/iperf-$i.json" 2>&1 &
		clients+=($!)
	done
	wait "${clients[@]}" || true
	fidelity_end "$nsw"
	scrape after "$nsw"
	wait "$WATCH" 2>/dev/null || true
	for i in $(seq 1 "$i"); do nsx "${p#*:}" pkill -f "iperf3 -s -D -B $(addr "${p#*:}") -p $((5200 + i))" 2>/dev/null || true; done
}

incast_ns=$(ns "$INCAST") naive_ns=$(ns "$NAIVE") feedback_ns=$(ns "$FEEDBACK") join_ns=$(ns "$JOIN") hold_ns=$(ns "$HOLD")
has incast || NS=""
for n in $NS; do
	pairs=""
	for i in $(seq 1 "$n"); do pairs="$pairs s$i:r1"; done
	echo "== $n-to-1"
	up incast.yaml
	# Each sender's fair share of INCAST: payload 1408 of the 1622 bytes of line a credit and its data frame take.
	size=$(python3 -c "print(int($RATEBITS / 8 * 1408 / 1622 * $incast_ns / 1e9 / $n))")
	timeout=$(python3 -c "print(f'{3 * $incast_ns / 1e3:.0f}us')")
	WATCH_FOR="$((incast_ns / 1000 + 1500))us" xp_run "$OUT/incast$n-xpass" 2 "" "$pairs" "$size" "$timeout"
	WATCH_FOR="$((incast_ns / 1000 + 1500))us" xp_run "$OUT/incast$n-naive" 2 -xp-naive "$pairs" "$size" "$timeout"
	tcp_run "$OUT/incast$n-tcp-fifo" 2 "$pairs"
	down
	up incast.yaml sfq
	tcp_run "$OUT/incast$n-tcp-sfq" 2 "$pairs"
	down
	if [ "$DCTCP" = 1 ]; then
		up incast.yaml "" "$ECN"
		# DCTCP's flows carry no credits: each sends its fair share of what the line carries as payload (1408 of 1538 bytes).
		dsize=$(python3 -c "print(int($RATEBITS / 8 * 1408 / 1538 * $incast_ns / 1e9 / $n))")
		MODE=dctcp WATCH_FOR="$((incast_ns / 1000 + 1500))us" xp_run "$OUT/incast$n-dctcp" 2 "" "$pairs" "$dsize" "$timeout"
		down
	fi
done

# Two bottlenecks: each flow sends more than it can in its run.
two() { # FILE NSWITCHES TAG "pairs"
	up "$1"
	local size
	size=$(python3 -c "print(int($RATEBITS / 8 * 1408 / 1622 * $feedback_ns / 1e9 * 2))")
	xp_run "$OUT/$3-naive" "$2" -xp-naive "$4" "$size" "$NAIVE"
	xp_run "$OUT/$3-xpass" "$2" "" "$4" "$size" "$FEEDBACK"
	down
}
if has two; then
	echo "== parking lot"
	two parking-lot.yaml 3 parking "long_s:long_r p1_s:p1_r p2_s:p2_r"
	echo "== multi-bottleneck"
	two multi-bottleneck.yaml 2 multi "snd:r0 snd:r1 snd:r2"
fi
if has converge; then
	echo "== convergence: $CONVERGE_N flows joining every $JOIN"
	up incast.yaml
	pairs=""
	for i in $(seq 1 "$CONVERGE_N"); do pairs="$pairs s$i:r1"; done
	total=$(((CONVERGE_N - 1) * join_ns + hold_ns))
	# More than a flow can send in the run: they all run to its end.
	size=$(python3 -c "print(int($RATEBITS / 8 * $total / 1e9))")
	# Naive credits first: the paper's Fig. 2 is the naive scheme.
	STAGGER_NS=$join_ns xp_run "$OUT/converge-naive" 2 -xp-naive "$pairs" "$size" "${total}ns"
	STAGGER_NS=$join_ns xp_run "$OUT/converge-xpass" 2 "" "$pairs" "$size" "${total}ns"
	down
	if [ "$DCTCP" = 1 ]; then
		up incast.yaml "" "$ECN"
		MODE=dctcp STAGGER_NS=$join_ns xp_run "$OUT/converge-dctcp" 2 "" "$pairs" "$size" "${total}ns"
		down
	fi
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/load.txt"

CONVERGE_N=$CONVERGE_N JOIN_NS=$join_ns HOLD_NS=$hold_ns JITTER=$JITTER \
	python3 scripts/experiments/xpass_report.py "$OUT" "$RATEBITS" "$TS" "$NS" "$incast_ns" "$naive_ns" "$feedback_ns" "$TCP_SECS" | tee "$OUT/summary.md"
for n in $NS; do
	"$WORK/gsperf" plot -kind queue -title "$n-to-1: data queue sw1 -> sw2" -out "$OUT/incast$n-queue.png" "$OUT/incast$n-queue.json"
	"$WORK/gsperf" plot -kind throughput -title "$n-to-1, ExpressPass: goodput per flow" -out "$OUT/incast$n-xpass-throughput.png" "$OUT/incast$n-xpass/flows.json"
done
for m in naive xpass; do
	if [ -d "$OUT/converge-$m" ]; then
		"$WORK/gsperf" plot -kind throughput -title "convergence, $m credits: $CONVERGE_N flows joining every $JOIN" -out "$OUT/converge-$m-throughput.png" "$OUT/converge-$m/flows.json"
	fi
done
has two && for m in naive xpass; do
	"$WORK/gsperf" plot -kind throughput -title "parking lot, $m" -out "$OUT/parking-$m-throughput.png" "$OUT/parking-$m/flows.json"
	"$WORK/gsperf" plot -kind throughput -title "multi-bottleneck, $m" -out "$OUT/multi-$m-throughput.png" "$OUT/multi-$m/flows.json"
done
echo "results in $OUT"
