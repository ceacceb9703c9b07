#!/usr/bin/env bash
# leafspine.sh — the web-search workload all-to-all across a leaf-spine:
# topologies/leaf-spine.yaml (2 spines, 4 leaves, 2 hosts per leaf, each host
# a subnet of its own, ECMP over both spines by a symmetric flow hash) with
# every link at RATE and every port buffer BUFFER, brought up by gswitchctl
# topo. Every host sends FLOWS web-search flows (gsperf, plain transport) at
# LOAD of RATE to the six hosts of the other leaves, so every flow crosses a
# spine. Once per load in LOADS, on the same fabric. Prints and writes, per
# load:
#   - the load on each spine: bytes each spine sent, from its port counters,
#     and the split of each leaf's uplink bytes between the two spines;
#   - drops by where (leaf host ports, leaf uplinks, spine ports) and reason;
#   - each switch's worker: time on a CPU and waiting for one (schedstat),
#     since the switches share the machine's cores with the hosts;
#   - FCT slowdown per flow-size bucket (gsperf merge); the base RTT of the
#     slowdown is the idle ping RTT between leaves, measured first.
# Plots: slowdown.png (the loads side by side), queues-leaf1-<load>.png.
#
#   sudo scripts/experiments/leafspine.sh                    # 100Mbit links, 32KB buffers, loads 0.3 and 0.6, 100 flows per host: ~3 min
#   LOADS=0.5 FLOWS=300 RATE=200Mbit sudo -E scripts/experiments/leafspine.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/go/bin
[ "$(id -u)" = 0 ] || { echo "$0: run as root (namespaces, veths, XDP)" >&2; exit 1; }
RATE=${RATE:-100Mbit} LOADS=${LOADS:-"0.3 0.6"} FLOWS=${FLOWS:-100} PACE=${PACE-}
# 32KB is 2.6 ms at 100 Mbit/s: three full queues on a path stay under
# gsperf's 10 ms initial timeout. With 256KB (20 ms a hop) most flows timed
# out at least once and an eighth did not complete within gsperf's 60 s.
BUFFER=${BUFFER:-32KB}
NAME=${NAME:-lsx} METRICS_BASE=${METRICS_BASE:-9540}
OUT=${OUT:-results-leafspine-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d)
TOPO=$OUT/leaf-spine.yaml
# The shipped leaf-spine under a name and metrics ports of its own (so the
# shipped one may be up at the same time), every link at RATE, every port
# BUFFER.
sed -e "s/^name: ls\$/name: $NAME/" -e "s/^metrics_base: 9530 /metrics_base: $METRICS_BASE /" \
	-e "s/rate: 1Gbit/rate: $RATE/" -e "s/buffer: 1MB/buffer: $BUFFER/" topologies/leaf-spine.yaml >"$TOPO"
grep -q "^name: $NAME\$" "$TOPO" && grep -q "^metrics_base: $METRICS_BASE " "$TOPO" && grep -q "rate: $RATE" "$TOPO" && grep -q "buffer: $BUFFER" "$TOPO" ||
	{ echo "$0: topologies/leaf-spine.yaml changed: name, metrics_base, rate or buffer not found" >&2; exit 1; }
cleanup() {
	[ -x "$WORK/gswitchctl" ] && "$WORK/gswitchctl" topo down "$TOPO" >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

go build -o "$WORK/gswitchd" ./cmd/gswitchd
go build -o "$WORK/gswitchctl" ./cmd/gswitchctl
go build -o "$WORK/gsperf" ./cmd/gsperf
"$WORK/gswitchctl" topo up -log "$OUT/logs" "$TOPO" | sed 's/^/  /'

# Host hN: leaf (N+1)/2, its k-th host (k = 1 or 2), address 10.<leaf>.<k>.1.
leaf() { echo $((($1 + 1) / 2)); }
addr() { echo "10.$(leaf "$1").$((2 - $1 % 2)).1"; }
hx() { local h=$1; shift; ip netns exec "$NAME-h$h" "$@"; }
SWITCHES=(leaf1 leaf2 leaf3 leaf4 spine1 spine2)

# snap FILE: the port counters and drops of every switch, and per gswitchd
# its threads' time on a CPU and waiting for one (ns), to find the worker
# (the busiest thread) in the difference.
snap() {
	local i pid t run wait a b c
	for i in "${!SWITCHES[@]}"; do
		curl -sf "http://127.0.0.1:$((METRICS_BASE + i + 1))/metrics" |
			grep -E '^gswitch_port_(tx|rx)_(bytes|packets)_total|^gswitch_drops_total' | sed "s/^/${SWITCHES[$i]} /"
		pid=$(pgrep -f "^$WORK/gswitchd -config .*/$NAME/${SWITCHES[$i]}.yaml\$")
		for t in /proc/"$pid"/task/*; do
			read -r a b c <"$t/schedstat" || continue
			echo "${SWITCHES[$i]} cpu_run_ns{tid=\"${t##*/}\"} $a"
			echo "${SWITCHES[$i]} cpu_wait_ns{tid=\"${t##*/}\"} $b"
		done
	done >"$1"
}

for h in 1 2 3 4 5 6 7 8; do hx $h ping -c 1 -W 2 "$(addr $(((h % 8) + 1)))" >/dev/null; done
BASE_RTT=${BASE_RTT:-$(hx 1 ping -c 30 -i 0.05 "$(addr 8)" | grep -o 'time=[0-9.]*' | cut -d= -f2 | sort -n | awk '{a[NR]=$1} END {printf "%dus", a[int((NR+1)/2)]*1000}')}
echo "== idle RTT h1 -> h8 (p50 of 30 pings, three switches each way): $BASE_RTT, the base RTT of the slowdown"

runs=()
for load in $LOADS; do
	echo "== load $load: $FLOWS web-search flows per host to the hosts of the other leaves, $RATE links, $BUFFER port buffers, hosts ${PACE:+paced to }${PACE:-unpaced}"
	for h in 1 2 3 4 5 6 7 8; do
		hx $h "$WORK/gsperf" server -bind "$(addr $h):5500" -report 0 >"$OUT/server-$load-h$h.log" 2>&1 &
	done
	sleep 0.5
	snap "$WORK/before"
	t0=$(date +%s.%N)
	# Queue depths of leaf1 (its host ports and uplinks) while the flows
	# arrive: FLOWS flows of 1.7 MB on average at LOAD of RATE.
	dur=$(python3 -c "print(int($FLOWS * 1711250 * 8 / ($load * $(echo "$RATE" | sed 's/Mbit/e6/; s/Gbit/e9/'))) + 5)")
	"$WORK/gsperf" watch -metrics "http://127.0.0.1:$((METRICS_BASE + 1))/metrics" -interval 50ms -duration "${dur}s" -out "$WORK/queues-$load.json" 2>/dev/null &
	watcher=$!
	clients=()
	for h in 1 2 3 4 5 6 7 8; do
		to=""
		for d in 1 2 3 4 5 6 7 8; do [ "$(leaf $d)" = "$(leaf $h)" ] || to="$to,$(addr $d):5500"; done
		hx $h "$WORK/gsperf" client -src h$h -to "${to#,}" -workload WebSearch_distribution -flows "$FLOWS" -load "$load" -rate "$RATE" \
			-base-rtt "$BASE_RTT" -pace "$PACE" -seed $h -id-base $((h * 1000000)) -out "$WORK/$load-h$h.json" >"$OUT/client-$load-h$h.log" 2>&1 &
		clients+=($!)
	done
	wait "${clients[@]}"
	snap "$WORK/after"
	echo "run took $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s; load average $(cut -d' ' -f1-3 /proc/loadavg) (the machine's, other work included)"
	wait "$watcher" || true
	for h in 1 2 3 4 5 6 7 8; do for p in $(ip netns pids "$NAME-h$h"); do kill "$p" 2>/dev/null || true; done; done
	"$WORK/gsperf" merge -name "load $load" -out "$OUT/load-$load.json" -csv "$OUT/load-$load.csv" "$WORK/$load"-h?.json | tee "$OUT/slowdown-$load.txt"
	runs+=("$OUT/load-$load.json")
	python3 - "$WORK/before" "$WORK/after" "$load" <<'PY' | tee "$OUT/spines-$load.txt"
import collections, re, sys
def read(p):
    d = collections.defaultdict(float)
    for line in open(p):
        sw, rest = line.split(" ", 1)
        key, val = rest.rsplit(" ", 1)
        d[(sw, key)] = float(val)
    return d
a, b = read(sys.argv[1]), read(sys.argv[2])
delta = {k: b[k] - a.get(k, 0) for k in b}
def port(key):
    m = re.search(r'port="([^"]*)"', key)
    return m.group(1) if m else ""
spines = ["spine1", "spine2"]
through = {s: sum(v for (sw, k), v in delta.items() if sw == s and k.startswith("gswitch_port_tx_bytes_total")) for s in spines}
total = sum(through.values()) or 1
print(f"load {sys.argv[3]}: bytes each spine sent (the traffic between leaves)")
print("| spine | MB | share |")
print("|---|---:|---:|")
for s in spines:
    print(f"| {s} | {through[s] / 1e6:.1f} | {100 * through[s] / total:.1f}% |")
print()
print("| leaf | uplink MB to spine1 | to spine2 | spine1 share |")
print("|---|---:|---:|---:|")
for l in ["leaf1", "leaf2", "leaf3", "leaf4"]:
    up = [sum(v for (sw, k), v in delta.items() if sw == l and k.startswith("gswitch_port_tx_bytes_total") and port(k) == s) for s in spines]
    print(f"| {l} | {up[0] / 1e6:.1f} | {up[1] / 1e6:.1f} | {100 * up[0] / (sum(up) or 1):.1f}% |")
# Drops by where: leaves' host ports (toward the receivers), leaves' uplinks, spines' ports (down to the leaves).
drops = collections.defaultdict(float)
sent = collections.defaultdict(float)
for (sw, k), v in delta.items():
    where = ("spine ports" if sw.startswith("spine") else "leaf uplinks" if port(k).startswith("spine") else "leaf host ports")
    if k.startswith("gswitch_drops_total") and v:
        drops[(where, re.search(r'reason="([^"]*)"', k).group(1))] += v
    if k.startswith("gswitch_port_tx_packets_total"):
        sent[where] += v
print()
print("| drops at | reason | packets | of the packets sent there |")
print("|---|---|---:|---:|")
for (where, r), v in sorted(drops.items()):
    print(f"| {where} | {r} | {int(v)} | {100 * v / (sent[where] or 1):.2f}% |")
if not drops:
    print("| nowhere | | 0 | |")
# CPU: a worker that waits for a CPU holds its packets meanwhile.
print()
print("| switch | worker on a CPU | worker waiting for a CPU |")
print("|---|---:|---:|")
for sw in ["leaf1", "leaf2", "leaf3", "leaf4", "spine1", "spine2"]:
    runs = {k[len("cpu_run_ns"):]: v for (s, k), v in delta.items() if s == sw and k.startswith("cpu_run_ns")}
    if not runs:
        continue
    tid = max(runs, key=runs.get)
    print(f"| {sw} | {runs[tid] / 1e9:.2f} s | {delta.get((sw, 'cpu_wait_ns' + tid), 0) / 1e9:.2f} s |")
PY
	if [ -s "$WORK/queues-$load.json" ]; then
		"$WORK/gsperf" plot -kind queue -title "leaf1 queues, load $load" -out "$OUT/queues-leaf1-$load.png" "$WORK/queues-$load.json"
	fi
	sleep 0.5
done
"$WORK/gsperf" plot -title "web search all-to-all across the leaf-spine, $RATE links" -out "$OUT/slowdown.png" "${runs[@]}"
echo "results in $OUT: per-load JSON, CSV, slowdown and spine tables, slowdown.png, queue plots, switch logs"
