#!/usr/bin/env bash
# sfc-incast.sh — SFC's comparison (seed 003: Fig. 1, Table 2; the spec's
# section 2.3 "most diagnostic on our testbed") in one run: the same
# 16-to-1 incast (NS below for other N) on the dumbbell of
# topologies/sfc-dumbbell.yaml (the paper's 100 Gbit/s links with 1 us of
# propagation, SFC's rtt 10 us, run at the file's timescale, 10000) under
# every ablation, side by side.
#
#   tcp            no SFC: kernel TCP (iperf3, one transfer per sender, hosts held to the line rate by a tbf qdisc)
#   off            no SFC: gsperf flows; the switches only measure
#   egress         BTS from the dequeue side of the congested queue ("Egress BTS")
#   ingress        BTS from the arrival side ("Ingress BTS")
#   ingress_cache  SFC: ingress BTS + the near-source cache at sw1
#   estimator      SFC + the incast estimator at sw1 (destination r1)
#   dcqcn          no SFC: DCQCN+W hosts (gsperf -mode dcqcn with a static BDP window, CNPs from r1 and r2), ECN at one BDP (the paper's baseline)
#   hpcc           no SFC: HPCC hosts (gsperf -mode hpcc) over INT on every port (the other Table 2 baseline)
#
# gsperf runs without congestion control, as the paper's Fig. 1: each
# sender paced at its line rate, a window larger than its flow, so only a
# BTS slows it down (-mode sfc) or nothing does (-mode plain); it runs at
# the topology's timescale (-timescale K) with every flag in the fabric's
# units. Kernel TCP (mode tcp) keeps its own timers on this machine's clock
# (docs/topology.md, Timescale): a baseline of what a host stack does, not
# the paper's.
#
# Each mode brings the topology up afresh (gswitchd's counters and peak
# start at zero), starts a background sender (b1 -> r2: BG_FLOWS flows of
# BG_SIZE at BG_LOAD of the line rate, sharing the sw1 -> sw2 link) and,
# 300 us of the fabric later, the incast: 16 senders (N), one SIZE flow each,
# starting one by one over WINDOW_US (the paper's 50 us synchronisation
# window), to r1. It samples r1's queue every WATCH_US of the fabric around
# the incast (the peak and p99 come from the switch:
# gswitch_sfc_queue_peak_bytes and the depth histogram), keeps the
# switches' metrics at the end, every flow, and the run's fidelity verdict
# (gsperf fidelity: were the switches on time?). Then
# scripts/experiments/sfc-report writes table.md and the plots into OUT,
# times in the fabric's units.
#
# Every mode runs REPEAT times (default 3), the modes taking turns; the
# table gives the median peak with its range, pools the flows of the runs
# and counts the valid runs.
#
#   sudo scripts/experiments/sfc-incast.sh          # 18 runs of about 25 s
#   MODES="off ingress_cache" sudo -E scripts/experiments/sfc-incast.sh
#
# Sweeps (the spec's "N = 8, 16, 32"; the paper's Bloom reset of half an
# RTT, which it compared with 1 and 2 RTTs, section 3.2):
#
#   NS="8 16 32"   the incast's senders, each N a run of every mode per
#                  repeat (the first N senders, starting over WINDOW_US);
#                  N > 16 runs every N on topologies/sfc-dumbbell32.yaml
#                  (32 senders; TOPOLOGY= picks a file)
#   BLOOM="5us 10us 20us"   SFC (mode ingress_cache) once per Bloom reset
#                  (bloom_reset, fabric time) in place of its default rtt/2
#                  (5us here: list it to have it), as the cases
#                  ingress_cache-bloomD beside the other modes
#
# With one N and no BLOOM (the default, NS=16) the runs and the report are
# as above: OUT/MODE/RUN, OUT/table.md. Otherwise each N is a directory
# (OUT/nN/CASE/RUN, OUT/nN/table.md and plots) and sfc-report sweep writes
# OUT/summary.md: the peak buffer of every case against off per N, a row
# per N and case (peak and p99 against off, slowdowns, BTS, Bloom, valid
# runs), and the Bloom resets side by side.
#
#   NS="8 16 32" REPEAT=5 sudo -E scripts/experiments/sfc-incast.sh      # 90 runs of 25-45 s: about an hour
#   NS=16 BLOOM="5us 10us 20us" MODES="off ingress_cache" REPEAT=5 sudo -E scripts/experiments/sfc-incast.sh   # 20 runs, 10 minutes
#   MODES="off ingress_cache dcqcn hpcc" sudo -E scripts/experiments/sfc-incast.sh   # SFC against its baselines
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/go/bin
[ "$(id -u)" = 0 ] || { echo "$0: run as root (namespaces, veths, XDP)" >&2; exit 1; }
MODES=${MODES:-"tcp off egress ingress ingress_cache estimator"}
NS=${NS:-16} BLOOM=${BLOOM:-} SIZE=${SIZE:-400000} WINDOW_US=${WINDOW_US:-50} SFC_RTT=${SFC_RTT:-10us} BASE_RTT=${BASE_RTT:-10us} WATCH_US=${WATCH_US:-5}
BG_FLOWS=${BG_FLOWS:-40} BG_SIZE=${BG_SIZE:-20000} BG_LOAD=${BG_LOAD:-0.3} LEAD_S=${LEAD_S:-15} REPEAT=${REPEAT:-3} PACE_BURST=${PACE_BURST:-4}
NMAX=0
for n in $NS; do
	[[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 2 ] && [ "$n" -le 32 ] || { echo "$0: NS: $n is not 2 to 32" >&2; exit 1; }
	[ "$n" -le "$NMAX" ] || NMAX=$n
done
[ "$NMAX" -gt 0 ] || { echo "$0: NS is empty" >&2; exit 1; }
for b in $BLOOM; do
	[[ $b =~ ^[0-9.]+(ns|us|µs|ms)$ ]] || { echo "$0: BLOOM: $b is not a time of the fabric such as 5us" >&2; exit 1; }
done
# The cases: the modes, SFC once per Bloom reset in place of ingress_cache.
CASES=
for mode in $MODES; do
	if [ "$mode" = ingress_cache ] && [ -n "$BLOOM" ]; then
		for b in $BLOOM; do CASES="$CASES ingress_cache-bloom$b"; done
	else
		CASES="$CASES $mode"
	fi
done
CASES=${CASES# }
# One N and no BLOOM: the layout and report of a single comparison.
SWEEP=1
[ "$(echo $NS | wc -w)" -gt 1 ] || [ -n "$BLOOM" ] || SWEEP=
TOPOLOGY=${TOPOLOGY:-topologies/sfc-dumbbell.yaml}
if [ "$NMAX" -gt 16 ] && [ "$TOPOLOGY" = topologies/sfc-dumbbell.yaml ]; then TOPOLOGY=topologies/sfc-dumbbell32.yaml; fi
SENDERS=$(grep -c '^  s[0-9]*: {addr:' "$TOPOLOGY")
[ "$NMAX" -le "$SENDERS" ] || { echo "$0: NS asks for $NMAX senders; $TOPOLOGY has $SENDERS" >&2; exit 1; }
TNAME=$(sed -n 's/^name: *\([a-z0-9]*\).*/\1/p' "$TOPOLOGY")
MBASE=$(sed -n 's/^metrics_base: *\([0-9]*\).*/\1/p' "$TOPOLOGY")
K=${TIMESCALE:-$(sed -n 's/^timescale: *\([0-9.e+]*\).*/\1/p' "$TOPOLOGY")}
K=${K:-1}
OUT=${OUT:-results-sfc-incast-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d)
TOPO=$WORK/topo.yaml
cleanup() {
	[ -f "$TOPO" ] && "$WORK/gswitchctl" topo down -state "$WORK/state" "$TOPO" >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT
go build -o "$WORK/gswitchctl" ./cmd/gswitchctl
go build -o "$WORK/gswitchd" ./cmd/gswitchd
go build -o "$WORK/gsperf" ./cmd/gsperf
go build -o "$WORK/sfc-report" ./scripts/experiments/sfc-report
G=$WORK/gsperf
ns() { echo "$TNAME-$1"; }
SW=sw1=http://127.0.0.1:$((MBASE + 1))/metrics,sw2=http://127.0.0.1:$((MBASE + 2))/metrics
# This machine's side of the fabric's figures: the line rate for tbf (mode
# tcp), the watch's step and span (for N senders).
WALL_RATE=$(python3 -c "print(f'{100e9/$K/1e6:g}mbit')")
WATCH_WALL=$(python3 -c "print(f'{$WATCH_US*$K/1e3:g}ms')")
watch_span() { python3 -c "print(f'{($1*$SIZE*8/100e9 + ($WINDOW_US + 300)*1e-6)*$K + 2:.1f}s')"; }

{
	echo "date: $(date -u +%FT%TZ)"
	echo "kernel: $(uname -r); cpus: $(nproc)"
	echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "timescale: $K (fabric times; this machine runs them $K times longer)"
	if [ -n "$SWEEP" ]; then
		echo "sweep: NS=$NS BLOOM=$BLOOM cases: $CASES; topology $TOPOLOGY"
		echo "params: SIZE=$SIZE WINDOW_US=$WINDOW_US SFC_RTT=$SFC_RTT BASE_RTT=$BASE_RTT WATCH_US=$WATCH_US BG_FLOWS=$BG_FLOWS BG_SIZE=$BG_SIZE BG_LOAD=$BG_LOAD LEAD_S=$LEAD_S REPEAT=$REPEAT PACE_BURST=$PACE_BURST"
	else
		echo "params: N=$NS SIZE=$SIZE WINDOW_US=$WINDOW_US SFC_RTT=$SFC_RTT BASE_RTT=$BASE_RTT WATCH_US=$WATCH_US BG_FLOWS=$BG_FLOWS BG_SIZE=$BG_SIZE BG_LOAD=$BG_LOAD LEAD_S=$LEAD_S REPEAT=$REPEAT PACE_BURST=$PACE_BURST"
	fi
} >"$OUT/env.txt"

# prune keeps a run's directory small: of the metrics, the families the
# report reads (SFC's, drops, the kernel's socket counters, control frames;
# the depth histogram of r1 only); of the client logs, their last lines.
prune() {
	local d=$1 f
	for f in "$d"/sw1.prom "$d"/sw2.prom; do
		grep -E '^(# (HELP|TYPE) )?gswitch_(sfc_|drops_total|xsk_kernel_total|control_|emitted_total|emit_failed_total)' "$f" |
			grep -v -E '^gswitch_(sfc_queue_depth_bytes_bucket\{port="[^r]|drops_total.* 0$|xsk_kernel_total.* 0$)' >"$f.tmp" || true
		mv "$f.tmp" "$f"
	done
	for f in "$d"/client-*.log; do
		[ -f "$f" ] && { echo "== ${f##*/}"; tail -n 6 "$f"; }
	done >"$d/clients.txt" 2>/dev/null || true
	rm -f "$d"/client-*.log "$d/up.log"
}

# run CASE REP N: a mode (or ingress_cache-bloomD) with the first N senders.
run() {
	local what=$1 rep=$2 N=$3 mode=${1%%-bloom*}
	if [ -n "$SWEEP" ]; then
		echo "== N=$N $what, run $rep"
		d=$OUT/n$N/$what/$rep
	else
		echo "== $mode, run $rep"
		d=$OUT/$mode/$rep
	fi
	mkdir -p "$d"
	case $what in
	tcp | off | dcqcn | hpcc) keys="{mode: off, rtt: $SFC_RTT}" ;;
	estimator) keys="{mode: ingress_cache, rtt: $SFC_RTT, estimator: true, estimator_destinations: [10.2.1.1], estimator_rate: 100Gbit}" ;;
	ingress_cache-bloom*) keys="{mode: ingress_cache, rtt: $SFC_RTT, bloom_reset: ${what#ingress_cache-bloom}}" ;;
	*) keys="{mode: $mode, rtt: $SFC_RTT}" ;;
	esac
	# The baselines' switch side beside SFC's measuring, as the paper runs
	# them (section 4.1, "Underlying congestion control"): DCQCN+W with the
	# ECN threshold at one BDP (100 Gbit/s x 10 us = 125 KB; marked as a
	# step) or HPCC over INT.
	local extra=
	case $mode in dcqcn) extra=", ecn: {mode: step, k: 125KB}" ;; hpcc) extra=", int: {}" ;; esac
	sed -e "s|mechanisms: {sfc: {.*}}|mechanisms: {sfc: $keys$extra}|" -e "s|^timescale: .*|timescale: $K|" "$TOPOLOGY" >"$TOPO"
	"$WORK/gswitchctl" topo up -gswitchd "$WORK/gswitchd" -state "$WORK/state" "$TOPO" >"$d/up.log"
	# Every sender reaches r1 (and the switches have resolved everything) before the clock starts.
	for i in $(seq 1 $N); do ip netns exec "$(ns s$i)" ping -c 1 -W 1 10.2.1.1 >/dev/null; done
	ip netns exec "$(ns b1)" ping -c 1 -W 1 10.2.2.1 >/dev/null
	ip netns exec "$(ns s1)" ping -c 20 -i 0.01 -q 10.2.1.1 | tail -1 >"$d/ping.txt"
	local pids=() clients=() watch at start gmode keys i p smode=plain
	[ "$mode" = dcqcn ] && smode=dcqcn # DCQCN's receivers send CNPs
	if [ "$mode" = tcp ]; then
		for i in $(seq 1 $N); do
			ip netns exec "$(ns r1)" iperf3 -s -1 -p $((5200 + i)) >/dev/null 2>&1 &
			ip netns exec "$(ns s$i)" tc qdisc replace dev eth0 root tbf rate "$WALL_RATE" burst 4kb latency 50ms
		done
	else
		ip netns exec "$(ns r1)" "$G" server -bind 10.2.1.1:5500 -mode "$smode" -timescale "$K" >"$d/server-r1.log" 2>&1 &
		pids+=($!)
	fi
	ip netns exec "$(ns r2)" "$G" server -bind 10.2.2.1:5500 -mode "$smode" -timescale "$K" >"$d/server-r2.log" 2>&1 &
	pids+=($!)
	sleep 0.5
	gmode=sfc
	case $mode in tcp | off) gmode=plain ;; dcqcn | hpcc) gmode=$mode ;; esac
	# No congestion control (Fig. 1 is "without CC"): a window larger than any flow, so the senders run at
	# their line rate (the pacer) unless a BTS pauses them; no loss is expected, so a long timeout.
	# DCQCN and HPCC (the paper's Table 2 baselines) keep their own windows:
	# DCQCN+W a static window of one BDP (125 KB), HPCC W_init = one BDP.
	local win=(-init-window 4MB)
	case $mode in dcqcn) win=(-init-window 125KB) ;; hpcc) win=() ;; esac
	common=(-timescale "$K" -rate 100Gbit -pace 100Gbit -pace-burst $PACE_BURST -base-rtt $BASE_RTT "${win[@]}" -rto 1ms -timeout 5ms)
	# Every client waits for its instant: starting 17 processes takes seconds on a loaded machine.
	at=$(($(date +%s%N) + LEAD_S * 1000000000))
	echo "incast_at_ns=$at" >"$d/meta.txt"
	"$G" fidelity -metrics "$SW" -save "$d/fidelity-before.json" 2>/dev/null
	(
		sleep $((LEAD_S - 1))
		# Every WATCH_US of the fabric, sw2 only: a scrape costs the switch CPU (sw1's metrics are 120 KB of
		# text). Peak and p99 come from the switch itself.
		exec "$WORK/sfc-report" watch -duration "$(watch_span "$N")" -interval "$WATCH_WALL" -out "$d/queues.json" "127.0.0.1:$((MBASE + 2))=r1"
	) &
	watch=$!
	ip netns exec "$(ns b1)" "$G" client -src b1 -to 10.2.2.1:5500 -size $BG_SIZE -flows $BG_FLOWS -load $BG_LOAD -arrivals poisson \
		-mode $gmode "${common[@]}" -at $((at - 300 * K * 1000)) -id-base 900000 -out "$d/bg.json" >"$d/client-b1.log" 2>&1 &
	clients=($!)
	for i in $(seq 1 $N); do
		start=$(python3 -c "print($at + int(($i - 1) * $WINDOW_US / ($N - 1) * $K * 1000))")
		if [ "$mode" = tcp ]; then
			# iperf3 has no start time: sleep until the sender's instant, then connect.
			ip netns exec "$(ns s$i)" bash -c "w=\$(($start - \$(date +%s%N))); [ \$w -gt 0 ] && sleep \$(printf %d.%09d \$((w / 1000000000)) \$((w % 1000000000))); exec iperf3 -c 10.2.1.1 -p $((5200 + i)) -n $SIZE -J" >"$d/tcp-$i.json" 2>&1 &
		else
			ip netns exec "$(ns s$i)" "$G" client -src s$i -to 10.2.1.1:5500 -size $SIZE -flows 1 -arrivals burst -mode $gmode "${common[@]}" \
				-at $start -id-base $((i * 1000)) -out "$WORK/s$i.json" >"$d/client-s$i.log" 2>&1 &
		fi
		clients+=($!)
	done
	wait "${clients[@]}" || echo "a client failed (see $d)"
	wait $watch || true
	"$G" fidelity -metrics "$SW" -before "$d/fidelity-before.json" -json "$d/fidelity.json" >"$d/verdict.txt" || true
	echo "  $(cut -c1-100 "$d/verdict.txt")"
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	curl -s "http://127.0.0.1:$((MBASE + 1))/metrics" >"$d/sw1.prom"
	curl -s "http://127.0.0.1:$((MBASE + 2))/metrics" >"$d/sw2.prom"
	if [ "$mode" != tcp ]; then
		"$G" merge -name "$what" -out "$d/incast.json" "$WORK"/s*.json >"$d/incast.txt"
		rm -f "$WORK"/s*.json
	fi
	"$WORK/gswitchctl" topo down -state "$WORK/state" "$TOPO" >/dev/null
	prune "$d"
	echo "load average after ${SWEEP:+N=$N }$what run $rep: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/env.txt"
}

# The runs of the modes alternate, so a spell of load from elsewhere falls on all of them alike.
for rep in $(seq 1 "$REPEAT"); do
	for n in $NS; do
		for c in $CASES; do
			run "$c" "$rep" "$n"
		done
	done
done
if [ -z "$SWEEP" ]; then
	"$WORK/sfc-report" -dir "$OUT" -modes "$MODES" -base-rtt "$BASE_RTT" -rate 100e9 -timescale "$K"
	echo "table: $OUT/table.md; plots: $OUT/sfc-queue.png $OUT/sfc-buffer.png $OUT/sfc-slowdown.png"
	exit 0
fi
for n in $NS; do
	echo "== N=$n"
	"$WORK/sfc-report" -dir "$OUT/n$n" -modes "$CASES" -base-rtt "$BASE_RTT" -rate 100e9 -timescale "$K" || echo "sfc-report: N=$n failed"
done
"$WORK/sfc-report" sweep -dir "$OUT" -ns "$NS" -modes "$CASES" -base-rtt "$BASE_RTT" -rate 100e9 -timescale "$K"
echo "summary: $OUT/summary.md; per N: $OUT/nN/table.md and plots"
