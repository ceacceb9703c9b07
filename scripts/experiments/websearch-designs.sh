#!/usr/bin/env bash
# websearch-designs.sh — pFabric's Figure 7 and AFQ's section 6 on this
# machine: the web-search workload among the four hosts of
# topologies/websearch.yaml (10 Gbit/s, timescale 1000), run once per
# design of that file with the same flows (the same seeds): TCP-DropTail,
# DCTCP, pFabric and DCTCP over AFQ's switches, each with its paper's
# parameters (the file says which). Each host sends FLOWS flows of the
# web-search sizes, Poisson arrivals at LOAD of its link, to the three
# others, and serves theirs.
#
# Each design brings the topology up afresh, runs the flows, keeps the
# switch's metrics, every flow (DESIGN.json, .csv), the slowdown table by
# flow size (DESIGN.txt: FCT over the ideal of the flow alone on the
# fabric, gsperf's slowdown) and the run's fidelity verdict
# (fidelity-DESIGN.txt: were the switch's workers on time?). summary.md
# puts the designs side by side with drops and marks; slowdown.png plots
# them. Times are the fabric's.
#
#   sudo scripts/experiments/websearch-designs.sh                  # FLOWS=100 LOAD=0.6: about 4 minutes per design
#   DESIGNS="dctcp pfabric" LOAD=0.8 sudo -E scripts/experiments/websearch-designs.sh
#
# FLOWS=100 (per host), LOAD=0.6, DESIGNS="droptail dctcp pfabric
# afq-dctcp", BASE_RTT=8us (the slowdown's ideal and pFabric's BDP: the
# fabric's propagation, 2 links of 2 us each way), TIMEOUT=300ms (fabric: a flow
# gives up this long after the last start), TOPOLOGY=topologies/websearch.yaml,
# OUT=results-websearch-designs-DATE.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/go/bin
[ "$(id -u)" = 0 ] || { echo "$0: run as root (namespaces, veths, XDP)" >&2; exit 1; }
FLOWS=${FLOWS:-100} LOAD=${LOAD:-0.6} DESIGNS=${DESIGNS:-"droptail dctcp pfabric afq-dctcp"}
BASE_RTT=${BASE_RTT:-8us} TIMEOUT=${TIMEOUT:-300ms} TOPOLOGY=${TOPOLOGY:-topologies/websearch.yaml}
OUT=${OUT:-results-websearch-designs-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d)
go build -o "$WORK/gswitchd" ./cmd/gswitchd
go build -o "$WORK/gswitchctl" ./cmd/gswitchctl
go build -o "$WORK/gsperf" ./cmd/gsperf
for d in $DESIGNS; do
	"$WORK/gswitchctl" topo designs "$TOPOLOGY" | grep -x "$d" >/dev/null || { echo "$0: DESIGNS: $d is not a design of $TOPOLOGY" >&2; exit 1; }
done
NAME=wsd$((RANDOM % 1000))
BASE=$((20000 + RANDOM % 20000))
sed -e "s/^name: .*/name: $NAME/" -e "s/^metrics_base: .*/metrics_base: $BASE/" "$TOPOLOGY" >"$WORK/topology.yaml"
TOPO="$WORK/topology.yaml"
K=$(sed -n 's/^timescale: *\([0-9.e+]*\).*/\1/p' "$TOPO")
UP=
down() {
	[ -n "$UP" ] && "$WORK/gswitchctl" topo down -state "$WORK/state" "$TOPO" >/dev/null 2>&1 || true
	UP=
}
trap 'down; rm -rf "$WORK"' EXIT
{
	echo "date: $(date -u +%FT%TZ)"
	echo "kernel: $(uname -r); cpus: $(nproc)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "timescale: $K (fabric times; this machine runs them $K times longer)"
	echo "params: DESIGNS=$DESIGNS FLOWS=$FLOWS LOAD=$LOAD BASE_RTT=$BASE_RTT TIMEOUT=$TIMEOUT TOPOLOGY=$TOPOLOGY"
	echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/env.txt"
addr() { echo "10.91.$1.1"; }
for d in $DESIGNS; do
	echo "== $d"
	"$WORK/gswitchctl" topo up -design "$d" -gswitchd "$WORK/gswitchd" -state "$WORK/state" -log "$WORK" "$TOPO" >"$OUT/up-$d.txt"
	UP=1
	pids=() clients=()
	for i in 1 2 3 4; do
		mapfile -t sargs < <("$WORK/gswitchctl" topo transport "$TOPO" "h$i" -design "$d" -server)
		ip netns exec "$NAME-h$i" "$WORK/gsperf" server -bind "$(addr $i):5500" "${sargs[@]}" -timescale "$K" -report 0 >"$OUT/server-$d-h$i.log" 2>&1 &
		pids+=($!)
	done
	for i in 1 2 3 4; do ip netns exec "$NAME-h$i" ping -c 1 -W 2 "$(addr $((i % 4 + 1)))" >/dev/null || true; done
	sleep 0.5
	sw="sw=http://127.0.0.1:$((BASE + 1))/metrics"
	"$WORK/gsperf" fidelity -metrics "$sw" -save "$WORK/fidelity-before.json" 2>/dev/null
	for i in 1 2 3 4; do
		to=""
		for j in 1 2 3 4; do [ "$i" = "$j" ] || to="$to,$(addr $j):5500"; done
		mapfile -t cargs < <("$WORK/gswitchctl" topo transport "$TOPO" "h$i" -design "$d")
		ip netns exec "$NAME-h$i" "$WORK/gsperf" client -src "h$i" -to "${to#,}" -workload WebSearch_distribution -flows "$FLOWS" \
			-load "$LOAD" -rate 10Gbit -base-rtt "$BASE_RTT" -timescale "$K" -timeout "$TIMEOUT" "${cargs[@]}" -seed "$i" -id-base $((i * 1000000)) \
			-out "$WORK/$d-h$i.json" >"$OUT/client-$d-h$i.log" 2>&1 &
		clients+=($!)
	done
	wait "${clients[@]}" || echo "  a client failed (see $OUT/client-$d-*.log)"
	"$WORK/gsperf" fidelity -metrics "$sw" -before "$WORK/fidelity-before.json" -json "$OUT/fidelity-$d.json" >"$OUT/fidelity-$d.txt" || true
	curl -s "http://127.0.0.1:$((BASE + 1))/metrics" | grep -E '^gswitch_(drops_total|ecn_marked_total|port_tx_packets_total|queue_depth)' >"$OUT/metrics-$d.txt" || true
	kill "${pids[@]}" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
	down
	"$WORK/gsperf" merge -name "$d" -out "$OUT/$d.json" -csv "$OUT/$d.csv" "$WORK/$d"-h?.json >"$OUT/$d.txt"
	cat "$OUT/$d.txt"
	echo "  $(cut -c1-100 "$OUT/fidelity-$d.txt")"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/env.txt"
"$WORK/gsperf" plot -title "web search among 4 hosts, $LOAD load, 10 Gbit/s (timescale $K)" -out "$OUT/slowdown.png" $(for d in $DESIGNS; do echo "$OUT/$d.json"; done)
python3 - "$OUT" "$DESIGNS" "$FLOWS" "$LOAD" "$K" <<'PY'
import json, sys
out, designs, flows, load, k = sys.argv[1], sys.argv[2].split(), sys.argv[3], sys.argv[4], sys.argv[5]
def metric(d, name):
    t = 0.0
    try:
        for line in open(f"{out}/metrics-{d}.txt"):
            if line.startswith(name) and 'reason="link_local"' not in line:
                t += float(line.rsplit(" ", 1)[1])
    except OSError:
        pass
    return t
rows = ["| design | size | flows | lost | mean slowdown | median | p95 | p99 |", "|---|---|---|---|---|---|---|---|"]
for d in designs:
    try:
        lines = open(f"{out}/{d}.txt").read().splitlines()[1:]
    except OSError:
        rows.append(f"| {d} | no flows |||||||")
        continue
    for line in lines:
        if line.startswith("completion times"):
            break  # the slowdown table ends; the completion times follow
        f = line.split()
        if len(f) == 7:
            rows.append(f"| {d} | {f[0]} | {f[1]} | {f[2]} | {f[3]} | {f[4]} | {f[5]} | {f[6]} |")
extra = ["", "| design | drops | ECN marks | fidelity |", "|---|---|---|---|"]
for d in designs:
    try:
        v = open(f"{out}/fidelity-{d}.txt").read().strip().split("\n")[0][:90]
    except OSError:
        v = "no verdict"
    extra.append(f"| {d} | {metric(d, 'gswitch_drops_total'):.0f} | {metric(d, 'gswitch_ecn_marked_total'):.0f} | {v} |")
head = [f"Web search among 4 hosts (topologies/websearch.yaml, 10 Gbit/s, timescale {k}), {flows} flows per host at load {load}; slowdown = FCT over the flow alone at the line rate and base RTT (gsperf's), by flow size.", ""]
text = "\n".join(head + rows + extra) + "\n"
open(f"{out}/summary.md", "w").write(text)
print(text)
PY
echo "results in $OUT (summary.md, slowdown.png, per design: JSON, CSV, slowdown table, fidelity)"
