#!/usr/bin/env bash
# xpass.sh — ExpressPass on gswitch (docs/results.md, "ExpressPass"): the
# topologies of topologies/expresspass/ with every link at RATE.
#
#   1. N-to-1 (N in NS, default "8 16"): N senders on sw1, one receiver on
#      sw2. Four runs on the same fabric: gsperf -mode xpass with the
#      feedback loop, the same with naive credits (-xp-naive), iperf3 TCP
#      (cubic) through FIFO ports, and iperf3 TCP through SFQ ports. Each
#      xpass sender sends its fair share of SECS seconds, paced to RATE as
#      its NIC would; TCP runs SECS seconds. Reported: goodput and Jain's
#      index over the senders in [0.5 s, 1.5 s] and over whole flows, data
#      drops, credit drops, the data-queue depth each data packet found at
#      the shared port sw1 -> sw2 and at the receiver's port (p50, p99,
#      largest bucket), queue depth over time (gsperf watch, 10 ms), and
#      how late a thread of this machine woke up meanwhile.
#   2. Parking lot (Fig. 4b) and multi-bottleneck (Fig. 4a): naive against
#      feedback, each flow's share of a link over [0.5 s, SECS-0.5 s].
#
#   sudo scripts/experiments/xpass.sh        # about 5 minutes
#   RATE=200Mbit NS=8 CQ=8 scripts/experiments/xpass.sh
#   REPORT=100ms ...                        # each receiver prints its credits, losses and rate every 100 ms (RUN/server-HOST.log)
#   DROP=tail ...                           # every credit lane drops at the tail (or DROP=random) instead of the files' credit_drop
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/go/bin
RATE=${RATE:-100Mbit} SECS=${SECS:-3} NS=${NS:-"8 16"} CQ=${CQ:-} # CQ: credit_queue instead of the files' 32
DROP=${DROP:-} # credit_drop instead of the files' (tail unless a file says random)
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
go build -o "$WORK/latency" ./scripts/experiments/latency
RATEBITS=$(python3 -c "r='$RATE'.lower().replace('bit',''); print(int(float(r[:-1])*{'k':1e3,'m':1e6,'g':1e9}[r[-1]]))")
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$OUT/load.txt"

# up FILE [SCHED]: a copy of topologies/expresspass/FILE at RATE (with
# SCHED on every port if given), brought up; sets NAME, BASE.
up() {
	local src=topologies/expresspass/$1 f=$WORK/$1
	sed -e "s/rate: [0-9A-Za-z.]*/rate: $RATE/" "$src" >"$f"
	if [ -n "$CQ" ]; then
		sed -i "s/credit_queue: [0-9]*/credit_queue: $CQ/" "$f"
	fi
	if [ -n "$DROP" ]; then
		sed -i -e "s/, credit_drop: [a-z]*//" -e "s/credit_queue: \([0-9]*\)/credit_queue: \1, credit_drop: $DROP/" "$f"
	fi
	if [ -n "${2:-}" ]; then
		sed -i "s/  port: {buffer: \([0-9A-Za-z]*\), /  port: {buffer: \1, scheduler: $2, /" "$f"
	fi
	NAME=$(sed -n 's/^name: *//p' "$f") BASE=$(sed -n 's/^metrics_base: *\([0-9]*\).*/\1/p' "$f")
	"$WORK/gswitchctl" topo up -gswitchd "$WORK/gswitchd" -state "$STATE" "$f" >/dev/null
	UP=$f
}
nsx() { local h=$1; shift; ip netns exec "$NAME-$h" "$@"; }
addr() { ip -n "$NAME-$1" -4 -o addr show dev eth0 | awk '{print $4}' | cut -d/ -f1; }
scrape() { # TAG NSWITCHES
	local i
	for i in $(seq 1 "$2"); do curl -s "127.0.0.1:$((BASE + i))/metrics" >"$RUN/$1-sw$i.prom"; done
}
watch() { # SECONDS: sw1's queues (every scrape costs the switch CPU time: one switch, every 10 ms)
	WATCH=()
	"$WORK/gsperf" watch -metrics "http://127.0.0.1:$((BASE + 1))/metrics" -interval 10ms -duration "$1s" -out "$RUN/queues-sw1.json" >/dev/null 2>&1 &
	WATCH+=($!)
	"$WORK/latency" $(($1 * 1000)) >"$RUN/latency.txt" &
	WATCH+=($!)
}

# xp_run DIR NSWITCHES NAIVE "src:dst ..." SIZE TIMEOUT: gsperf -mode xpass, one flow per pair.
xp_run() {
	RUN=$1
	mkdir -p "$RUN"
	local nsw=$2 naive=$3 pairs=$4 size=$5 timeout=$6 servers=() clients=() i=0 p
	for p in $pairs; do
		local dst=${p#*:}
		if [ ! -e "$RUN/server-$dst.log" ]; then
			# ip netns exec, not nsx: $! must be gsperf itself (it execs), so that SIGINT reaches it
			ip netns exec "$NAME-$dst" "$WORK/gsperf" server -mode xpass -bind "$(addr "$dst"):5500" -xp-link "$RATE" $naive -report "${REPORT:-0}" >"$RUN/server-$dst.log" 2>&1 &
			servers+=($!)
		fi
	done
	sleep 0.5
	scrape before "$nsw"
	watch $((SECS + 6))
	local at=$(($(date +%s%N) + 2000000000))
	for p in $pairs; do
		i=$((i + 1))
		nsx "${p%:*}" "$WORK/gsperf" client -mode xpass -src "${p%:*}" -to "$(addr "${p#*:}"):5500" -size "$size" -flows 1 -arrivals burst \
			-rate "$RATE" -pace "$RATE" -at $at -timeline 100ms -timeout "$timeout" -id-base $((i * 1000)) -out "$RUN/flow-$i.json" >"$RUN/client-$i.log" 2>&1 &
		clients+=($!)
	done
	wait "${clients[@]}" || true
	sleep 0.3
	scrape after "$nsw"
	kill -INT "${servers[@]}" 2>/dev/null || true
	wait "${servers[@]}" 2>/dev/null || true
	wait "${WATCH[@]}" 2>/dev/null || true
	"$WORK/gsperf" merge -name xpass -out "$RUN/flows.json" "$RUN"/flow-*.json >/dev/null
}

# tcp_run DIR NSWITCHES "src:dst ...": iperf3 (cubic) for SECS, one flow per pair.
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
	watch $((SECS + 3))
	i=0
	for p in $pairs; do
		i=$((i + 1))
		nsx "${p%:*}" iperf3 -c "$(addr "${p#*:}")" -p $((5200 + i)) -t "$SECS" -i 0.1 -J >"$RUN/iperf-$i.json" 2>&1 &
		clients+=($!)
	done
	wait "${clients[@]}" || true
	scrape after "$nsw"
	wait "${WATCH[@]}" 2>/dev/null || true
	for i in $(seq 1 "$i"); do nsx "${p#*:}" pkill -f "iperf3 -s -D -B $(addr "${p#*:}") -p $((5200 + i))" 2>/dev/null || true; done
}

for n in $NS; do
	pairs=""
	for i in $(seq 1 "$n"); do pairs="$pairs s$i:r1"; done
	# Each sender's fair share of SECS seconds: payload 1408 of 1538 bytes, 95% of the line (84/1622 carries credits).
	size=$(python3 -c "print(int($RATEBITS / 8 * 1408 / 1538 * 0.95 * $SECS / $n))")
	echo "== $n-to-1 at $RATE"
	up incast.yaml
	xp_run "$OUT/incast$n-xpass" 2 "" "$pairs" "$size" 30s
	xp_run "$OUT/incast$n-naive" 2 -xp-naive "$pairs" "$size" 30s
	tcp_run "$OUT/incast$n-tcp-fifo" 2 "$pairs"
	down
	up incast.yaml sfq
	tcp_run "$OUT/incast$n-tcp-sfq" 2 "$pairs"
	down
done

line=$(python3 -c "print($RATEBITS / 8 * 1408 / 1538 * 1538 / 1622)") # payload bytes/s of a link whose credits take 84/1622
echo "== parking lot at $RATE"
up parking-lot.yaml
for m in naive xpass; do
	flag=""
	[ $m = naive ] && flag=-xp-naive
	xp_run "$OUT/parking-$m" 3 "$flag" "long_s:long_r p1_s:p1_r p2_s:p2_r" "$(python3 -c "print(int($line * ($SECS + 1)))")" "${SECS}s"
done
down
echo "== multi-bottleneck at $RATE"
up multi-bottleneck.yaml
for m in naive xpass; do
	flag=""
	[ $m = naive ] && flag=-xp-naive
	xp_run "$OUT/multi-$m" 2 "$flag" "snd:r0 snd:r1 snd:r2" "$(python3 -c "print(int($line * ($SECS + 1) / 2))")" "${SECS}s"
done
down
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/load.txt"

python3 scripts/experiments/xpass_report.py "$OUT" "$RATEBITS" "$SECS" "$NS" | tee "$OUT/summary.md"
for n in $NS; do
	"$WORK/gsperf" plot -kind queue -title "$n-to-1 at $RATE: data queue sw1 -> sw2" -out "$OUT/incast$n-queue.png" "$OUT/incast$n-queue.json"
	"$WORK/gsperf" plot -kind throughput -title "$n-to-1 at $RATE, ExpressPass: goodput per flow" -out "$OUT/incast$n-xpass-throughput.png" "$OUT/incast$n-xpass/flows.json"
done
for m in naive xpass; do
	"$WORK/gsperf" plot -kind throughput -title "parking lot, $m" -out "$OUT/parking-$m-throughput.png" "$OUT/parking-$m/flows.json"
	"$WORK/gsperf" plot -kind throughput -title "multi-bottleneck, $m" -out "$OUT/multi-$m-throughput.png" "$OUT/multi-$m/flows.json"
done
echo "results in $OUT"
