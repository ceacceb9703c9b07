#!/usr/bin/env bash
# latency.sh — the latency a switch adds, beside bench.sh (issue 16): ping
# RTT percentiles at low load between two hosts in network namespaces, in
# one run, through
#
#   direct   one veth between the two hosts (no switch: the floor)
#   bridge   the Linux bridge on the two switch ports
#   gswitchd gswitchd with its default sleeping workers
#   busy     gswitchd with busy_poll: true (a core spins even when idle)
#   pinned   gswitchd with its worker pinned to CPU 0 (cpus: [0]) and ping
#            under taskset -c 0, so no wake-up has to rouse the other CPU
#   nice     gswitchd with its workers at nice NICE (default -10) and a
#            scheduler slice of SLICE (default 100us), so a woken worker
#            runs before busy threads of other programs
#   other    the gswitchd binary OTHER (another build), as the gswitchd case
#   xsk      the C reference forwarder (xsk_fwd from BENCH_DIR, default
#            ../shared/bench; it spins on its rings and forwards port to
#            port without a lookup): what an AF_XDP forwarder on these
#            veths costs at best, beside busy (needs libxdp-dev)
#
# ROUNDS=N runs the list of cases N times in turn (rows CASE-ROUND): a
# change measured against OTHER in alternation, as single runs here move
# by tens of microseconds.
#
# TRACE=1 runs `perf trace -s` over the pings of each gswitchd case and
# keeps its per-thread table of system calls in OUT/CASE.trace.txt.
# SCHED=1 runs `perf sched record` instead and keeps, in OUT/CASE.sched.txt,
# how long woken gswitchd threads waited for a CPU and what ran on the CPUs
# for more than half a millisecond at a time.
#
# LOAD=N runs N busy loops (nice 0, outside the namespaces) during every
# case: the latency of a switch that shares its CPUs with other work.
#
# Each case sends COUNT pings (default 3000) every INTERVAL (default 2 ms)
# and reports p50, p99, p99.9 and the largest RTT in µs, from ping's own
# per-reply times. Offloads are off on every veth. Results and every RTT in
# OUT (default results-latency-DATE).
#
#   sudo scripts/latency.sh                  # about 40 s
#   COUNT=1000 CASES="bridge gswitchd" sudo -E scripts/latency.sh
#   LOAD=2 CASES="bridge gswitchd nice" sudo -E scripts/latency.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
. scripts/lib/topo.sh
. scripts/lib/env.sh
COUNT=${COUNT:-3000} INTERVAL=${INTERVAL:-0.002} CASES=${CASES:-"direct bridge gswitchd busy pinned nice"} LOAD=${LOAD:-0}
OUT=${OUT:-results-latency-$(date +%Y%m%d-%H%M%S)}
if [ -n "${TRACE:-}" ] && [ -n "${SCHED:-}" ]; then
	echo "latency.sh: TRACE and SCHED each run perf over the pings; set one" >&2
	exit 1
fi
if { [ -n "${TRACE:-}" ] || [ -n "${SCHED:-}" ]; } && ! command -v perf >/dev/null; then
	echo "latency.sh: TRACE and SCHED need perf (apt-get install linux-perf)" >&2
	exit 1
fi
case " $CASES " in *" other "*) [ -x "${OTHER:-}" ] || { echo "latency.sh: case other needs OTHER=path of another gswitchd binary" >&2; exit 1; } ;; esac
BENCH_DIR=${BENCH_DIR:-$(pwd)/../shared/bench}
case " $CASES " in *" xsk "*)
	[ -f "$BENCH_DIR/xsk_fwd.c" ] || { echo "latency.sh: case xsk needs BENCH_DIR with xsk_fwd.c (the reference forwarder)" >&2; exit 1; }
	[ -f /usr/include/xdp/xsk.h ] || { echo "latency.sh: case xsk needs libxdp-dev and libbpf-dev (apt-get install libxdp-dev libbpf-dev)" >&2; exit 1; }
	;;
esac
ID=$(topo_id lt)
BR=${ID}br
exp_begin "$ID" 2 10.203.0
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
DNS=${ID}d
LOADPIDS=()
cleanup_extra() {
	for p in "${LOADPIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	ip link del "$BR" 2>/dev/null || true
	ip netns del "$DNS-a" 2>/dev/null || true
	ip netns del "$DNS-b" 2>/dev/null || true
}
trap 'cleanup_extra; exp_end' EXIT
env_header "COUNT=$COUNT INTERVAL=$INTERVAL LOAD=$LOAD NICE=${NICE:--10} SLICE=${SLICE:-100us}" >"$OUT/env.txt"
for ((i = 0; i < LOAD; i++)); do
	bash -c 'while :; do :; done' &
	LOADPIDS+=($!)
done

# pings NS ADDR NAME: COUNT pings, every RTT into OUT/NAME.txt, one row
# (PING_PREFIX runs ping under a command, such as taskset).
pings() {
	ip netns exec "$1" ping -c 5 -i 0.01 -q "$2" >/dev/null || true # ARP, caches
	ip netns exec "$1" ${PING_PREFIX:-} ping -c "$COUNT" -i "$INTERVAL" "$2" | sed -n 's/.*time=\([0-9.]*\) ms.*/\1/p' >"$OUT/$3.txt"
	python3 - "$OUT/$3.txt" "$3" "$COUNT" <<'PY'
import sys
v = sorted(float(x) * 1000 for x in open(sys.argv[1]) if x.strip())
if not v:
    print(f"| {sys.argv[2]} | 0 of {sys.argv[3]} answered | | | | |"); sys.exit()
q = lambda p: v[min(len(v) - 1, int(p * len(v)))]
print(f"| {sys.argv[2]} | {len(v)} of {sys.argv[3]} | {q(0.5):.0f} | {q(0.99):.0f} | {q(0.999):.0f} | {v[-1]:.0f} |")
PY
}

offloads() { ethtool -K "$1" tx off tso off gso off gro off >/dev/null 2>&1 || true; }

echo "| path | replies | p50 µs | p99 µs | p99.9 µs | max µs |" | tee "$OUT/table.md"
echo "|---|---|---|---|---|---|" | tee -a "$OUT/table.md"
P1=$(topo_port "$ID" 1) P2=$(topo_port "$ID" 2)
for ((round = 1; round <= ${ROUNDS:-1}; round++)); do
for c in $CASES; do
	# The row's name: the case, and the round when there are several.
	name=$c
	[ "${ROUNDS:-1}" = 1 ] || name=$c-$round
	case $c in
	direct)
		ip netns add "$DNS-a"
		ip netns add "$DNS-b"
		ip link add "${ID}va" netns "$DNS-a" type veth peer name "${ID}vb" netns "$DNS-b"
		for s in a b; do
			ip -n "$DNS-$s" link set lo up
			ip -n "$DNS-$s" link set "${ID}v$s" up
			ip netns exec "$DNS-$s" ethtool -K "${ID}v$s" tx off tso off gso off gro off >/dev/null 2>&1 || true
		done
		ip -n "$DNS-a" addr add 10.204.0.1/24 dev "${ID}va"
		ip -n "$DNS-b" addr add 10.204.0.2/24 dev "${ID}vb"
		pings "$DNS-a" 10.204.0.2 "$name" | tee -a "$OUT/table.md"
		ip netns del "$DNS-a"
		ip netns del "$DNS-b"
		;;
	bridge)
		ip link add "$BR" type bridge
		ip link set "$BR" up
		for p in "$P1" "$P2"; do ip link set "$p" master "$BR"; done
		pings "$ID-h1" 10.203.0.2 "$name" | tee -a "$OUT/table.md"
		ip link del "$BR"
		;;
	gswitchd | busy | pinned | nice | other)
		# One gswitchd per case; the cases differ in a key or two and in
		# where ping runs.
		extra="busy_poll: false" prefix=""
		case $c in
		busy) extra="busy_poll: true" ;;
		pinned) extra="cpus: [0]" prefix="taskset -c 0" ;;
		nice) extra="nice: ${NICE:--10}\nslice: ${SLICE:-100us}" ;;
		other) cp "$WORK/gswitchd" "$WORK/gswitchd.this" && cp "$OTHER" "$WORK/gswitchd" ;;
		esac
		printf 'ports:\n  - {name: p1, interface: %s}\n  - {name: p2, interface: %s}\n%b\nmetrics: "off"\ncontrol: {socket: off}\n' \
			"$P1" "$P2" "$extra" >"$WORK/gswitchd.yaml"
		switch_start "$OUT/$name.log"
		tracer=
		if [ -n "${TRACE:-}" ]; then
			# Every system call of the machine during the pings, summed per
			# thread (perf trace -s): what a wake-up of the switch costs.
			perf trace -s -a --comm -o "$OUT/$name.trace.txt" -- sleep "$(python3 -c "print($COUNT * $INTERVAL + 2)")" >/dev/null 2>&1 &
			tracer=$!
			sleep 1
		fi
		if [ -n "${SCHED:-}" ]; then
			# The scheduler's view of the pings: how long each woken
			# gswitchd thread waited for a CPU, and what held the CPUs.
			perf sched record -a -o "$WORK/sched.data" -- sleep "$(python3 -c "print($COUNT * $INTERVAL)")" >/dev/null 2>&1 &
			tracer=$!
			sleep 0.5
		fi
		PING_PREFIX=$prefix pings "$ID-h1" 10.203.0.2 "$name" | tee -a "$OUT/table.md"
		[ -z "$tracer" ] || wait "$tracer" || true
		if [ -n "${SCHED:-}" ]; then
			perf sched timehist -i "$WORK/sched.data" 2>/dev/null | python3 scripts/lib/schedsum.py >"$OUT/$name.sched.txt"
			rm -f "$WORK/sched.data"
		fi
		switch_stop
		[ "$c" != other ] || mv "$WORK/gswitchd.this" "$WORK/gswitchd"
		;;
	xsk)
		[ -x "$WORK/xsk_fwd" ] || cc -O2 -o "$WORK/xsk_fwd" "$BENCH_DIR/xsk_fwd.c" -lxdp -lbpf -lpthread
		# Started and stopped as a switch is (PID: stopped on exit too;
		# SIGTERM detaches its XDP programs).
		"$WORK/xsk_fwd" -b 64 "$P1" "$P2" 2>"$OUT/$name.log" &
		PID=$!
		sleep 1
		kill -0 "$PID" 2>/dev/null || { cat "$OUT/$name.log" >&2; echo "latency.sh: xsk_fwd did not start" >&2; exit 1; }
		pings "$ID-h1" 10.203.0.2 "$name" | tee -a "$OUT/table.md"
		switch_stop
		;;
	*) echo "latency.sh: unknown case $c (direct, bridge, gswitchd, busy, pinned, nice, other, xsk)" >&2; exit 1 ;;
	esac
done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/env.txt"
echo "results in $OUT"
