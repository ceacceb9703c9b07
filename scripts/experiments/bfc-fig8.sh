#!/usr/bin/env bash
# bfc-fig8.sh — after BFC's Figure 8 (NSDI'22, section 6.1): single vs
# stochastic vs dynamic queue assignment on the three-switch testbed at the
# paper's parameters (topologies/bfc-testbed.yaml: 100 Gbit/s links, 16 data
# queues per port, 1 us of propagation per link, run at its timescale,
# 10000). Group 1: two SIZE flows S1 -> Sw1 -> Sw2 -> R1, and a stream of
# small flows (SMALL, Poisson at SMALL_LOAD of the line rate) on the same
# path; group 2: N SIZE flows S2 -> Sw1 -> Sw2 -> R2; group 3: eight SIZE
# flows S3 -> Sw3 -> Sw2 -> R2. Groups 2 and 3 meet at Sw2 -> R2, whose
# backpressure reaches Sw1 -> Sw2, which group 1 shares with group 2. For
# each strategy, each N in NS and each of RUNS runs, all long flows start
# together; the script reports group 1's mean FCT (the paper's metric, mean
# and standard deviation over the runs) in the fabric's time, the small
# flows' FCT slowdown (the same on both clocks), and for each run the
# fidelity verdict (gsperf fidelity: were the switches on time?); the
# table counts the valid runs. gsperf runs at the file's timescale, its
# flags in the fabric's units.
#
#   sudo scripts/experiments/bfc-fig8.sh     # NS="4 8 12 16 20" RUNS=3: about 45 runs of 10-35 s
#
# HOSTS=deaf (default): the senders take no part in BFC (no queue ids,
# pauses ignored, WINDOW in flight per flow, paced at the line rate), as
# the paper's packet generator without end-to-end control: the strategies
# differ only in the switches, and the backlog sits in Sw1's and Sw3's
# queues, where the queue assignment decides who waits behind whom.
# HOSTS=bfc: gsperf -mode bfc hosts that honour pauses (single mode then
# pauses whole hosts). TIMESCALE= runs another K than the file's (a smaller
# one is quicker; the verdicts say whether it kept time).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/go/bin
[ "$(id -u)" = 0 ] || { echo "$0: run as root (namespaces, veths, XDP)" >&2; exit 1; }
NS=${NS:-4 8 12 16 20} RUNS=${RUNS:-3} SIZE=${SIZE:-1500KB}
SMALL=${SMALL:-64KB} SMALL_LOAD=${SMALL_LOAD:-0.1} SMALL_FLOWS=${SMALL_FLOWS:-40} HOSTS=${HOSTS:-deaf} WINDOW=${WINDOW:-256KB}
STRATEGIES=${STRATEGIES:-single stochastic dynamic}
OUT=${OUT:-results-bfc-fig8-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
WORK=$(mktemp -d)
NAME=bf8$((RANDOM % 1000))
BASE=$((20000 + RANDOM % 20000))
go build -o "$WORK/gswitchd" ./cmd/gswitchd
go build -o "$WORK/gswitchctl" ./cmd/gswitchctl
go build -o "$WORK/gsperf" ./cmd/gsperf
case $HOSTS in
deaf) hostargs=(-mode bfc -bfc-pauses=false) ;;
bfc) hostargs=(-mode bfc) ;;
*) echo "HOSTS=$HOSTS: deaf or bfc" >&2; exit 1 ;;
esac
K=${TIMESCALE:-$(sed -n 's/^timescale: *\([0-9.e+]*\).*/\1/p' topologies/bfc-testbed.yaml)}
# The fabric's base RTT: three links of the file's delay each way.
DELAY=$(sed -n 's/.*link: {rate: [^,]*, delay: \([^,}]*\).*/\1/p' topologies/bfc-testbed.yaml)
rtt=$(python3 -c "import sys; d=sys.argv[1]; u=float(d[:-2])*{'ns':1e-3,'us':1,'ms':1e3}[d[-2:]]; print(f'{6*u:g}us')" "$DELAY")
TOPO=
down() {
	[ -n "$TOPO" ] && "$WORK/gswitchctl" topo down -state "$WORK/state" "$TOPO" >/dev/null 2>&1 || true
	TOPO=
}
trap 'down; rm -rf "$WORK"' EXIT
uptime >"$OUT/load.txt"
run() { # strategy n run
	local a=$1 n=$2 r=$3 d="$OUT/$1-n$2-r$3" at pids=()
	mkdir -p "$d"
	sed -e "s/^name: .*/name: $NAME/" -e "s/^metrics_base: .*/metrics_base: $BASE/" -e "s/assign: dynamic/assign: $a/" \
		-e "s/^timescale: .*/timescale: $K/" topologies/bfc-testbed.yaml >"$d/topology.yaml"
	TOPO="$d/topology.yaml"
	"$WORK/gswitchctl" topo up -gswitchd "$WORK/gswitchd" -state "$WORK/state" -log "$d" "$TOPO" >/dev/null
	local sws=sw1=http://127.0.0.1:$((BASE + 1))/metrics,sw2=http://127.0.0.1:$((BASE + 2))/metrics,sw3=http://127.0.0.1:$((BASE + 3))/metrics
	ip netns exec "$NAME-r1" "$WORK/gsperf" server -bind 10.81.4.1:5500 -report 0 -timescale "$K" >"$d/server-r1.log" 2>&1 &
	pids+=($!)
	ip netns exec "$NAME-r2" "$WORK/gsperf" server -bind 10.81.5.1:5500 -report 0 -timescale "$K" >"$d/server-r2.log" 2>&1 &
	pids+=($!)
	sleep 0.5
	at=$(($(date +%s%N) + 3000000000))
	"$WORK/gsperf" fidelity -metrics "$sws" -save "$d/fidelity-before.json" 2>/dev/null
	local common=(-timescale "$K" "${hostargs[@]}" -init-window "$WINDOW" -rate 100Gbit -pace 100Gbit -base-rtt "$rtt" -timeout 20ms -at "$at" -seed "$r")
	local clients=()
	ip netns exec "$NAME-s1" "$WORK/gsperf" client -src g1 -to 10.81.4.1:5500 -size "$SIZE" -flows 2 -arrivals burst -id-base 1000 "${common[@]}" -out "$d/g1.json" >"$d/g1.log" 2>&1 &
	clients+=($!)
	ip netns exec "$NAME-s1" "$WORK/gsperf" client -src small -to 10.81.4.1:5500 -size "$SMALL" -flows "$SMALL_FLOWS" -load "$SMALL_LOAD" -arrivals poisson -id-base 100000 "${common[@]}" -out "$d/small.json" >"$d/small.log" 2>&1 &
	clients+=($!)
	ip netns exec "$NAME-s2" "$WORK/gsperf" client -src g2 -to 10.81.5.1:5500 -size "$SIZE" -flows "$n" -arrivals burst -id-base 2000 "${common[@]}" -out "$d/g2.json" >"$d/g2.log" 2>&1 &
	clients+=($!)
	ip netns exec "$NAME-s3" "$WORK/gsperf" client -src g3 -to 10.81.5.1:5500 -size "$SIZE" -flows 8 -arrivals burst -id-base 3000 "${common[@]}" -out "$d/g3.json" >"$d/g3.log" 2>&1 &
	clients+=($!)
	wait "${clients[@]}" || true
	"$WORK/gsperf" fidelity -metrics "$sws" -before "$d/fidelity-before.json" -json "$d/fidelity.json" >"$d/fidelity.txt" || true
	for i in 1 2 3; do curl -s "http://127.0.0.1:$((BASE + i))/metrics" >"$d/metrics-sw$i.txt" || true; done
	kill "${pids[@]}" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
	down
	echo "$a n=$n run $r: group 1 $(grep -A1 '^size  *fabric' "$d/g1.log" | tail -1 | awk '{print "FCT fabric avg", $2}'); $(cut -c1-60 "$d/fidelity.txt")"
}
for r in $(seq 1 "$RUNS"); do
	for n in $NS; do
		for a in $STRATEGIES; do
			run "$a" "$n" "$r"
		done
	done
done
uptime >>"$OUT/load.txt"
python3 - "$OUT" "$K" "$NS" "$STRATEGIES" "$RUNS" <<'PY'
import json, sys, statistics, glob, os
out, k, ns, strategies, runs = sys.argv[1], float(sys.argv[2]), [int(x) for x in sys.argv[3].split()], sys.argv[4].split(), int(sys.argv[5])
def flows(path):
    try:
        return json.load(open(path))["flows"]
    except Exception:
        return []
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))] if v else float("nan")
rows, table = {}, []
for a in strategies:
    for n in ns:
        means, small, incomplete, drops, pauses, valid = [], [], 0, 0, 0, 0
        for r in range(1, runs + 1):
            d = f"{out}/{a}-n{n}-r{r}"
            g1 = flows(f"{d}/g1.json")
            done = [f for f in g1 if f["complete"]]
            incomplete += len(g1) - len(done)
            if done:
                means.append(sum(f["fct_fabric_ns"] for f in done) / len(done) / 1e3) # us of the fabric
            try:
                valid += json.load(open(f"{d}/fidelity.json"))["valid"]
            except (OSError, ValueError, KeyError):
                pass
            small += [f["slowdown"] for f in flows(f"{d}/small.json") if f["complete"]]
            for g in ("g2", "g3", "small"):
                incomplete += sum(1 for f in flows(f"{d}/{g}.json") if not f["complete"])
            for i in (1, 2, 3):
                try:
                    for line in open(f"{d}/metrics-sw{i}.txt"):
                        name, _, v = line.rpartition(" ")
                        if line.startswith("gswitch_drops_total") and "link_local" not in name:
                            drops += float(v)
                        if line.startswith("gswitch_bfc_pauses_sent_total"):
                            pauses += float(v)
                except OSError:
                    pass
        m = statistics.mean(means) if means else float("nan")
        s = statistics.stdev(means) if len(means) > 1 else 0.0
        rows[(a, n)] = (m, s, statistics.mean(small) if small else float("nan"), pct(small, 0.99))
        table.append(f"| {a} | {n} | {m:.0f} ± {s:.0f} [{m*k/1e6:.2f} ± {s*k/1e6:.2f} s] | {rows[(a, n)][2]:.1f} | {rows[(a, n)][3]:.1f} | {len(small)} | {incomplete} | {drops:.0f} | {pauses:.0f} | {valid} of {runs} |")
head = (f"Timescale {k:g}: times are the fabric's (this machine's in brackets, {k:g} times longer).\n\n"
        "| strategy | group-2 flows | group-1 mean FCT (us), mean ± std over runs | small-flow slowdown avg | p99 | small flows | incomplete flows | drops | pauses sent | valid runs (fidelity) |\n"
        "|---|---|---|---|---|---|---|---|---|---|")
open(f"{out}/summary.md", "w").write(head + "\n" + "\n".join(table) + "\n")
print(head)
print("\n".join(table))
# Two SVG charts: group-1 mean FCT (error bars: std over runs), small-flow p99 slowdown, against N.
colors = {"single": "#d62728", "stochastic": "#1f77b4", "dynamic": "#2ca02c"}
def chart(path, title, ylabel, val, err=None):
    W, H, L, B, T, R = 640, 400, 70, 50, 40, 130
    ys = [val(rows[(a, n)]) for a in strategies for n in ns]
    es = [err(rows[(a, n)]) if err else 0 for a in strategies for n in ns]
    ymax = max(y + e for y, e in zip(ys, es) if y == y) * 1.1 or 1
    X = lambda n: L + (n - min(ns)) / max(1, max(ns) - min(ns)) * (W - L - R)
    Y = lambda y: H - B - y / ymax * (H - B - T)
    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{W/2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
         f'<line x1="{L}" y1="{H-B}" x2="{W-R}" y2="{H-B}" stroke="black"/><line x1="{L}" y1="{T}" x2="{L}" y2="{H-B}" stroke="black"/>',
         f'<text x="{(L+W-R)/2}" y="{H-12}" text-anchor="middle">group-2 flows (16 queues per port)</text>',
         f'<text x="18" y="{(T+H-B)/2}" text-anchor="middle" transform="rotate(-90 18 {(T+H-B)/2})">{ylabel}</text>']
    for i in range(6):
        y = ymax * i / 5
        s.append(f'<line x1="{L-4}" y1="{Y(y):.1f}" x2="{L}" y2="{Y(y):.1f}" stroke="black"/><text x="{L-6}" y="{Y(y)+4:.1f}" text-anchor="end">{y:.0f}</text>')
    for n in ns:
        s.append(f'<line x1="{X(n):.1f}" y1="{H-B}" x2="{X(n):.1f}" y2="{H-B+4}" stroke="black"/><text x="{X(n):.1f}" y="{H-B+16}" text-anchor="middle">{n}</text>')
    for k, a in enumerate(strategies):
        c = colors.get(a, "black")
        pts = [(X(n) + (k - 1) * 4, Y(val(rows[(a, n)])), (err(rows[(a, n)]) if err else 0)) for n in ns]
        s.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (c, " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in pts)))
        for x, y, e in pts:
            s.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{c}"/>')
            if e:
                s.append(f'<line x1="{x:.1f}" y1="{y - e/ymax*(H-B-T):.1f}" x2="{x:.1f}" y2="{y + e/ymax*(H-B-T):.1f}" stroke="{c}"/>')
        s.append(f'<line x1="{W-R+10}" y1="{T+20*k}" x2="{W-R+30}" y2="{T+20*k}" stroke="{c}" stroke-width="2"/><text x="{W-R+35}" y="{T+20*k+4}">{a}</text>')
    s.append("</svg>")
    open(path, "w").write("\n".join(s))
chart(f"{out}/group1-fct.svg", f"Group 1 (2 x long flows) mean FCT, 100 Gbit/s links (timescale {k:g})", "mean FCT (us of the fabric)", lambda r: r[0], lambda r: r[1])
chart(f"{out}/small-p99.svg", "Small flows on group 1's path: p99 FCT slowdown", "p99 slowdown", lambda r: r[3])
PY
echo "results in $OUT (summary.md, group1-fct.svg, small-p99.svg)"
