#!/usr/bin/env bash
# bfc-incast.sh — BFC under an incast of 8, 16 and 32 senders at the paper's
# parameters (topologies/bfc-incast.yaml: 100 Gbit/s links with 1 us of
# propagation, 16 queues per port, 8 MB buffers, BFC with dynamic
# assignment on every port, run at the file's timescale, 10000): for each N
# in NS, the first N senders on sw1 each start one flow at the same
# instant to r1 behind sw2, TOTAL bytes in all (the paper's incasts are 20
# MB in aggregate, section 6.2: Fig. 9 and Fig. 13, which varies the
# degree). The senders are gsperf -mode bfc hosts (section 3.3.2, "the
# source NIC is the first upstream"): each flow names its queue id, the
# host honours sw1's pauses by it, paces its link to 100 Gbit/s and keeps
# one BDP in flight (HOSTS=deaf: the paper's "BFC - NIC", pauses ignored).
# r1's link runs at half the rate (R1_RATE, below): sw2 -> r1 is the
# bottleneck, sw2 pauses sw1's queues toward it, and sw1, whose port toward
# sw2 has 16 queues for N flows (shared once N > 16: the HoL blocking of
# section 3.3.1), pauses the hosts in turn.
#
# While the flows run the script samples sw1's port toward sw2 and sw2's
# port toward r1 every STEP_US of the fabric (the ports' queued bytes, each
# queue's watermark since the previous sample, the bytes sent), and keeps
# each run's switches' metrics at the end, every flow (incast.json) and the
# run's fidelity verdict (gsperf fidelity around the run: were the switches
# on time? fidelity.json). OUT/summary.md has a row per N (over the runs
# whose verdict is VALID; over all of them, marked so, if none is): the
# incast's completion (its last byte, from the common start) against the
# ideal (TOTAL at 100 Gbit/s), the flows' FCTs, the bottleneck's queued
# bytes (99th percentile and highest of the samples) and the highest a
# single queue reached, sw2 -> r1's highest, drops, pauses sent (sw1 to
# the hosts, sw2 to sw1), flows given a random queue (none empty), the
# utilisation of sw2 -> r1 over the incast, incomplete flows and the valid
# runs; then a row per run. Times are the fabric's (this machine's are K
# times longer).
#
# DESIGNS= runs the same incast under other designs of the file (its
# designs: section; each sets the ports' mechanisms and the hosts' gsperf
# transport, read with gswitchctl topo transport), taking turns: the
# baselines of the paper's section 6 (DCQCN and HPCC, each with and
# without PFC) beside BFC:
#
#   sudo scripts/experiments/bfc-incast.sh              # NS="8 16 32" RUNS=1: 3 runs of 35-50 s, about 2.5 minutes
#   DESIGNS="bfc dcqcn hpcc dcqcn-pfc hpcc-pfc" NS="16 32" sudo -E scripts/experiments/bfc-incast.sh
#
# BG_LOAD= adds the background the paper runs its incasts in (section
# 6.2: a workload's flows at a load, the incast on top): BG_HOSTS=4
# senders after the incast's (sN+1 ...) send BG_FLOWS=50 flows each of
# BG_WORKLOAD=FbHdp_distribution's sizes (Facebook's Hadoop, one of the
# paper's workloads), Poisson, BG_LOAD of r1's link in all, from 300 us
# before the incast; summary.md then has their FCT slowdown by size:
#
#   BG_LOAD=0.5 DESIGNS="bfc dcqcn hpcc dcqcn-pfc hpcc-pfc" NS=16 sudo -E scripts/experiments/bfc-incast.sh
#   RUNS=5 sudo -E scripts/experiments/bfc-incast.sh    # 15 runs: 10-13 minutes
#
# NS="8 16 32" (1 to 32), RUNS=1 (every N once per round, the N taking
# turns), DESIGNS=bfc (designs of the file, taking turns), TOTAL=20000000 (bytes, split evenly over the N flows; SIZE= bytes
# gives each flow that size instead), HOSTS=bfc (or deaf), WINDOW= (gsperf
# -init-window; default one BDP at 100 Gbit/s x the base RTT),
# R1_RATE=50Gbit (r1's link: the congestion is at sw2 -> r1, and sw2's
# pauses pool the backlog in sw1, the spec's "queues pooled upstream";
# R1_RATE= (empty) leaves it at 100 Gbit/s: the flows then meet first at
# sw1's port toward sw2, and sw1 pauses the hosts), STEP_US=10 (sampling step, fabric us: a scrape of sw1
# costs it CPU, 100 ms here is what the ExpressPass incast found harmless),
# TIMEOUT=10ms (fabric: a flow gives up this long after it starts; the
# ideal incast takes 1.6 ms), LEAD_S=10 (wall seconds for the N clients to
# start before the common instant), TIMESCALE= (another K than the file's),
# GSWITCHD= (another gswitchd build), OUT=results-bfc-incast-DATE.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/go/bin
[ "$(id -u)" = 0 ] || { echo "$0: run as root (namespaces, veths, XDP)" >&2; exit 1; }
NS=${NS:-"8 16 32"} RUNS=${RUNS:-1} TOTAL=${TOTAL:-20000000} SIZE=${SIZE:-} HOSTS=${HOSTS:-bfc} WINDOW=${WINDOW:-}
R1_RATE=${R1_RATE-50Gbit} STEP_US=${STEP_US:-10} TIMEOUT=${TIMEOUT:-10ms} LEAD_S=${LEAD_S:-10}
BG_LOAD=${BG_LOAD:-0} BG_HOSTS=${BG_HOSTS:-4} BG_FLOWS=${BG_FLOWS:-50} BG_WORKLOAD=${BG_WORKLOAD:-FbHdp_distribution}
BG=$(python3 -c "import sys; print(1 if float(sys.argv[1]) > 0 else 0)" "$BG_LOAD") || { echo "$0: BG_LOAD=$BG_LOAD: give a fraction of r1's link, e.g. 0.5" >&2; exit 1; }
for n in $NS; do
	[[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 32 ] || { echo "$0: NS: $n is not 1 to 32 (topologies/bfc-incast.yaml has 32 senders)" >&2; exit 1; }
	[ "$BG" = 0 ] || [ $((n + BG_HOSTS)) -le 32 ] || { echo "$0: NS: $n senders and BG_HOSTS=$BG_HOSTS background senders are more than the file's 32 (lower N or BG_HOSTS)" >&2; exit 1; }
done
[[ $TOTAL =~ ^[0-9]+$ ]] || { echo "$0: TOTAL=$TOTAL: give bytes, e.g. 20000000" >&2; exit 1; }
[[ $SIZE =~ ^[0-9]*$ ]] || { echo "$0: SIZE=$SIZE: give bytes, e.g. 625000" >&2; exit 1; }
case $HOSTS in
bfc | deaf) ;;
*) echo "$0: HOSTS=$HOSTS: bfc or deaf" >&2; exit 1 ;;
esac
DESIGNS=${DESIGNS:-bfc}
for d in $DESIGNS; do
	grep -q "^  $d:" topologies/bfc-incast.yaml || { echo "$0: DESIGNS: $d is not a design of topologies/bfc-incast.yaml (see its designs:)" >&2; exit 1; }
done
OUT=${OUT:-results-bfc-incast-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d)
NAME=bfi$((RANDOM % 1000))
BASE=$((20000 + RANDOM % 20000))
if [ -n "${GSWITCHD:-}" ]; then cp "$GSWITCHD" "$WORK/gswitchd"; else go build -o "$WORK/gswitchd" ./cmd/gswitchd; fi
go build -o "$WORK/gswitchctl" ./cmd/gswitchctl
go build -o "$WORK/gsperf" ./cmd/gsperf
K=${TIMESCALE:-$(sed -n 's/^timescale: *\([0-9.e+]*\).*/\1/p' topologies/bfc-incast.yaml)}
K=${K:-1}
# The fabric's base RTT: three links of the file's delay each way.
DELAY=$(sed -n 's/.*link: {rate: [^,]*, delay: \([^,}]*\).*/\1/p' topologies/bfc-incast.yaml)
rtt=$(python3 -c "import sys; d=sys.argv[1]; u=float(d[:-2])*{'ns':1e-3,'us':1,'ms':1e3}[d[-2:]]; print(f'{6*u:g}us')" "$DELAY")
R1_BITS=$(python3 -c "
import re, sys
m = re.fullmatch(r'([0-9.]+)\s*([kKmMgGtT]?)bit', sys.argv[1] or '100Gbit')
if not m:
    sys.exit(f'R1_RATE={sys.argv[1]}: write a rate such as 50Gbit')
print(int(float(m[1]) * {'': 1, 'k': 1e3, 'm': 1e6, 'g': 1e9, 't': 1e12}[m[2].lower()]))" "$R1_RATE")
TOPO=
down() {
	[ -n "$TOPO" ] && "$WORK/gswitchctl" topo down -state "$WORK/state" "$TOPO" >/dev/null 2>&1 || true
	TOPO=
}
trap 'down; rm -rf "$WORK"' EXIT
{
	echo "date: $(date -u +%FT%TZ)"
	echo "kernel: $(uname -r); cpus: $(nproc)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "timescale: $K (fabric times; this machine runs them $K times longer)"
	echo "params: BG_LOAD=$BG_LOAD BG_HOSTS=$BG_HOSTS BG_FLOWS=$BG_FLOWS BG_WORKLOAD=$BG_WORKLOAD DESIGNS=$DESIGNS NS=$NS RUNS=$RUNS TOTAL=$TOTAL SIZE=$SIZE HOSTS=$HOSTS WINDOW=$WINDOW R1_RATE=$R1_RATE STEP_US=$STEP_US TIMEOUT=$TIMEOUT LEAD_S=$LEAD_S base RTT $rtt"
	echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/env.txt"

run() { # design n run
	local design=$1 n=$2 r=$3 d="$OUT/$1/n$2/r$3" size at i sampler pids=() clients=() hostargs=() serverargs=()
	mkdir -p "$d"
	echo "== $design: $n senders, run $r"
	size=${SIZE:-$((TOTAL / n))}
	local edits=(-e "s/^name: .*/name: $NAME/" -e "s/^metrics_base: .*/metrics_base: $BASE/" -e "s/^timescale: .*/timescale: $K/")
	[ -z "$R1_RATE" ] || edits+=(-e "s/^  - {a: r1, b: sw2}/  - {a: r1, b: sw2, rate: $R1_RATE}/")
	sed "${edits[@]}" topologies/bfc-incast.yaml >"$d/topology.yaml"
	TOPO="$d/topology.yaml"
	"$WORK/gswitchctl" topo up -design "$design" -gswitchd "$WORK/gswitchd" -state "$WORK/state" -log "$d" "$TOPO" >"$d/up.txt"
	# The design's gsperf flags for the senders (all alike) and the server.
	mapfile -t hostargs < <("$WORK/gswitchctl" topo transport "$TOPO" s1 -design "$design")
	mapfile -t serverargs < <("$WORK/gswitchctl" topo transport "$TOPO" r1 -design "$design" -server)
	[ "$HOSTS" = deaf ] && [ "$design" = bfc ] && hostargs+=(-bfc-pauses=false)
	[ -z "$WINDOW" ] || hostargs+=(-init-window "$WINDOW")
	echo "senders: ${hostargs[*]}; server: ${serverargs[*]}" >"$d/transport.txt"
	local sws=sw1=http://127.0.0.1:$((BASE + 1))/metrics,sw2=http://127.0.0.1:$((BASE + 2))/metrics
	ip netns exec "$NAME-r1" "$WORK/gsperf" server -bind 10.2.1.1:5500 "${serverargs[@]}" -report 0 -timescale "$K" >"$d/server.log" 2>&1 &
	pids+=($!)
	ip netns exec "$NAME-s1" ping -c 3 -i 0.2 -q 10.2.1.1 | tail -1 >"$d/ping.txt" || true
	at=$(($(date +%s%N) + LEAD_S * 1000000000))
	echo "incast_at_ns=$at n=$n size=$size" >"$d/meta.txt"
	"$WORK/gsperf" fidelity -metrics "$sws" -save "$d/fidelity-before.json" 2>/dev/null
	# Both ports every STEP_US of the fabric from just before the instant
	# until the clients are done (the file .done), at most TIMEOUT and 1 ms.
	python3 - "$BASE" "$K" "$STEP_US" "$at" "$(python3 -c "import sys; d=sys.argv[1]; print(float(d[:-2])*{'us':1e-3,'ms':1,'µs':1e-3}[d[-2:]] if d[-2:] in ('us','ms','µs') else float(d[:-1])*1e3)" "$TIMEOUT")" "$d" <<'PY' &
import json, os, sys, time, urllib.request
base, k, step_us, at, timeout_ms, d = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
keys = ("gswitch_queue_depth_bytes{", "gswitch_bfc_queue_watermark_bytes{", "gswitch_bfc_queue_byte_seconds_total{",
        "gswitch_port_tx_bytes_total{", "gswitch_port_tx_packets_total{", "gswitch_port_tx_late_seconds_total{")
ports = {"sw1": (f"http://127.0.0.1:{base + 1}/metrics", 'port="sw2"'), "sw2": (f"http://127.0.0.1:{base + 2}/metrics", 'port="r1"')}
step = step_us * 1e-6 * k                        # this machine's seconds
nxt = at / 1e9 - 2 * step
end = at / 1e9 + (timeout_ms + 1) * 1e-3 * k
samples = []
time.sleep(max(0, nxt - time.time()))
while time.time() < end and not os.path.exists(f"{d}/.done"):
    row = {"t": time.time()}
    for sw, (url, want) in ports.items():
        try:
            for line in urllib.request.urlopen(url, timeout=2).read().decode().splitlines():
                if line.startswith(keys) and want in line:
                    name, val = line.rsplit(" ", 1)
                    row[f"{sw} {name}"] = float(val)
        except Exception as e:
            row[f"{sw} error"] = str(e)
    samples.append(row)
    nxt += step
    time.sleep(max(0, nxt - time.time()))
json.dump(samples, open(f"{d}/samples.json", "w"))
PY
	sampler=$!
	for i in $(seq 1 "$n"); do
		ip netns exec "$NAME-s$i" "$WORK/gsperf" client -src "s$i" -to 10.2.1.1:5500 -timescale "$K" -size "$size" -flows 1 -arrivals burst -at "$at" \
			"${hostargs[@]}" -rate 100Gbit -pace 100Gbit -base-rtt "$rtt" -timeout "$TIMEOUT" -id-base $((i * 1000)) \
			-out "$d/flow-s$i.json" >"$d/client-s$i.log" 2>&1 &
		clients+=($!)
	done
	# The background (BG_LOAD > 0): BG_HOSTS senders after the incast's,
	# Poisson flows of BG_WORKLOAD's sizes to r1 at BG_LOAD of its link in
	# all, from 300 us of the fabric before the incast, under the same
	# design.
	if [ "$BG" = 1 ]; then
		for i in $(seq $((n + 1)) $((n + BG_HOSTS))); do
			ip netns exec "$NAME-s$i" "$WORK/gsperf" client -src "s$i" -to 10.2.1.1:5500 -timescale "$K" -workload "$BG_WORKLOAD" -flows "$BG_FLOWS" \
				-load "$(python3 -c "print($BG_LOAD / $BG_HOSTS)")" -rate "${R1_RATE:-100Gbit}" -arrivals poisson -seed "$((r * 100 + i))" -at "$((at - 300 * K * 1000))" \
				"${hostargs[@]}" -pace 100Gbit -base-rtt "$rtt" -timeout "$TIMEOUT" -id-base $((100000 + i * 1000)) \
				-out "$d/bg-s$i.json" >"$d/client-bg-s$i.log" 2>&1 &
			clients+=($!)
		done
	fi
	wait "${clients[@]}" || echo "  a client failed (see $d/client-*.log)"
	touch "$d/.done"
	wait "$sampler" || true
	rm -f "$d/.done"
	"$WORK/gsperf" fidelity -metrics "$sws" -before "$d/fidelity-before.json" -json "$d/fidelity.json" >"$d/fidelity.txt" || true
	for i in 1 2; do curl -s "http://127.0.0.1:$((BASE + i))/metrics" >"$d/metrics-sw$i.txt" || true; done
	kill "${pids[@]}" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
	down
	local flows=("$d"/flow-s*.json)
	if [ -e "${flows[0]}" ] && "$WORK/gsperf" merge -name "incast-$n" -out "$d/incast.json" "${flows[@]}" >"$d/incast.txt" 2>&1; then
		rm -f "${flows[@]}"
	fi
	local bgs=("$d"/bg-s*.json)
	if [ -e "${bgs[0]}" ] && "$WORK/gsperf" merge -name "background-$n" -out "$d/background.json" "${bgs[@]}" >"$d/background.txt" 2>&1; then
		rm -f "${bgs[@]}"
	fi
	echo "  $(cut -c1-100 "$d/fidelity.txt")"
}
# The designs take turns within each N, and the N within each round, so
# that a spell of load from elsewhere falls on all of them alike.
for r in $(seq 1 "$RUNS"); do
	for n in $NS; do
		for design in $DESIGNS; do
			run "$design" "$n" "$r"
		done
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/env.txt"
python3 - "$OUT" "$K" "$NS" "$RUNS" "$R1_BITS" "$TOTAL" "$SIZE" "$DESIGNS" <<'PY'
import glob, json, statistics, sys
out, k, ns, runs, r1_bits = sys.argv[1], float(sys.argv[2]), [int(x) for x in sys.argv[3].split()], int(sys.argv[4]), float(sys.argv[5])
total, size_env, designs = int(sys.argv[6]), sys.argv[7], sys.argv[8].split()
line_bits = 100e9                                 # every sender's link and the bottleneck (fabric)

def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))] if v else float("nan")

def prom(path):
    m = {}
    try:
        for line in open(path):
            if line.startswith("gswitch_") and " " in line:
                name, v = line.rsplit(" ", 1)
                m[name] = float(v)
    except (OSError, ValueError):
        pass
    return m

def total_of(m, prefix, *want):
    return sum(v for kk, v in m.items() if kk.startswith(prefix) and all(w in kk for w in want))

def one(design, n, r):
    """One run's figures, or None if it left no flows."""
    d = f"{out}/{design}/n{n}/r{r}"
    meta = {}
    try:
        for kv in open(f"{d}/meta.txt").read().split():
            a, _, b = kv.partition("=")
            meta[a] = int(b)
    except (OSError, ValueError):
        return None
    flows = []
    for p in [f"{d}/incast.json"] if glob.glob(f"{d}/incast.json") else sorted(glob.glob(f"{d}/flow-s*.json")):
        try:
            flows += json.load(open(p))["flows"]
        except (OSError, ValueError, KeyError):
            pass
    if not flows:
        return None
    at, size = meta["incast_at_ns"], meta["size"]
    done = [f for f in flows if f.get("complete")]
    x = {"n": n, "size": size, "incomplete": n - len(done),
         "retx": sum(f.get("retransmits", 0) for f in flows), "timeouts": sum(f.get("timeouts", 0) for f in flows)}
    x["ideal_us"] = n * size * 8 / min(line_bits, r1_bits) * 1e6  # at the bottleneck's rate
    ends = [f["start_unix_ns"] + f["fct_ns"] for f in done]
    x["completion_us"] = (max(ends) - at) / k / 1e3 if ends and not x["incomplete"] else float("nan")
    fcts = [f["fct_fabric_ns"] / 1e3 for f in done]
    x["fct_mean"] = statistics.mean(fcts) if fcts else float("nan")
    x["fct_min"], x["fct_max"] = (min(fcts), max(fcts)) if fcts else (float("nan"), float("nan"))
    # The samples over the incast: from the common instant to its last byte
    # (or the end of the samples if a flow did not complete).
    try:
        S = [s for s in json.load(open(f"{d}/samples.json")) if not any(kk.endswith(" error") for kk in s)]
    except (OSError, ValueError):
        S = []
    t1 = max(ends) / 1e9 if ends and not x["incomplete"] else float("inf")
    W = [s for s in S if at / 1e9 <= s["t"] <= t1]
    def port(sw, s, pre):
        return total_of(s, f"{sw} {pre}")
    def most(sw, s, pre):
        return max([v for kk, v in s.items() if kk.startswith(f"{sw} {pre}")] or [0])
    q1 = [port("sw1", s, "gswitch_queue_depth_bytes{") for s in W]
    q2 = [port("sw2", s, "gswitch_queue_depth_bytes{") for s in W]
    x["samples"] = len(W)
    x["q1_p99"], x["q1_max"] = pct(q1, 0.99), max(q1, default=float("nan"))
    bfc = any(kk.startswith("sw1 gswitch_bfc_queue_watermark_bytes{") for s in W for kk in s)  # designs without BFC have no watermark
    x["q1_queue_peak"] = max((most("sw1", s, "gswitch_bfc_queue_watermark_bytes{") for s in W), default=float("nan")) if bfc else float("nan")
    x["q1_sum_peaks"] = max((port("sw1", s, "gswitch_bfc_queue_watermark_bytes{") for s in W), default=float("nan"))
    x["q2_max"] = max(q2, default=float("nan"))
    x["q2_queue_peak"] = max((most("sw2", s, "gswitch_bfc_queue_watermark_bytes{") for s in W), default=float("nan")) if bfc else float("nan")
    if len(W) >= 2 and W[-1]["t"] > W[0]["t"]:
        wire = lambda s: port("sw2", s, "gswitch_port_tx_bytes_total{") + 24 * port("sw2", s, "gswitch_port_tx_packets_total{")
        x["util"] = (wire(W[-1]) - wire(W[0])) * 8 / (r1_bits / k) / (W[-1]["t"] - W[0]["t"])
        integ = lambda s: port("sw1", s, "gswitch_bfc_queue_byte_seconds_total{")
        if any(kk.startswith("sw1 gswitch_bfc_queue_byte_seconds_total{") for kk in W[-1]):
            x["q1_mean"] = (integ(W[-1]) - integ(W[0])) / (W[-1]["t"] - W[0]["t"])
        else:  # no BFC: the mean of the samples
            x["q1_mean"] = statistics.mean(q1)
    else:
        x["util"] = x["q1_mean"] = float("nan")
    m1, m2 = prom(f"{d}/metrics-sw1.txt"), prom(f"{d}/metrics-sw2.txt")
    x["drops"] = sum(total_of(m, "gswitch_drops_total") - total_of(m, "gswitch_drops_total", 'reason="link_local"') for m in (m1, m2))
    x["pauses_sw1"] = total_of(m1, "gswitch_bfc_pauses_sent_total") - total_of(m1, "gswitch_bfc_pauses_sent_total", 'port="sw2"')
    x["pauses_sw2"] = total_of(m2, "gswitch_bfc_pauses_sent_total", 'port="sw1"')
    x["random"] = total_of(m1, "gswitch_bfc_assigned_total", 'port="sw2"', 'how="random"')
    x["collisions"] = total_of(m1, "gswitch_bfc_flow_collisions_total", 'port="sw2"')
    x["watchdog"] = total_of(m1, "gswitch_bfc_watchdog_resumes_total") + total_of(m2, "gswitch_bfc_watchdog_resumes_total")
    # PFC (designs with pfc): frames sent, and the time sw1's port toward sw2
    # and the hosts' priorities were held by PFC (the switches' count of
    # the time their queues were paused, in the fabric's us).
    x["pfc_sw1"] = total_of(m1, "gswitch_pfc_pauses_sent_total") - total_of(m1, "gswitch_pfc_pauses_sent_total", 'port="sw2"')
    x["pfc_sw2"] = total_of(m2, "gswitch_pfc_pauses_sent_total", 'port="sw1"')
    x["pfc_paused_us"] = total_of(m1, "gswitch_pfc_paused_seconds_total", 'port="sw2"') / k * 1e6
    x["marks"] = total_of(m1, "gswitch_ecn_marked_total") + total_of(m2, "gswitch_ecn_marked_total")
    x["bg"], x["bg_incomplete"] = [], 0
    try:
        for fl in json.load(open(f"{d}/background.json"))["flows"]:
            if fl.get("complete"):
                x["bg"].append((fl["size"], fl["slowdown"]))
            else:
                x["bg_incomplete"] += 1
    except (OSError, ValueError, KeyError):
        pass
    try:
        x["valid"] = bool(json.load(open(f"{d}/fidelity.json"))["valid"])
    except (OSError, ValueError, KeyError):
        x["valid"] = False
    try:
        x["verdict"] = open(f"{d}/fidelity.txt").read().strip().replace("|", "/")
    except OSError:
        x["verdict"] = "no verdict"
    return x

def f(v, fmt="{:.0f}"):
    return "–" if v != v else fmt.format(v)

def mean_range(xs, fmt="{:.0f}"):
    xs = [v for v in xs if v == v]
    if not xs:
        return "–"
    s = fmt.format(statistics.mean(xs))
    return s + (f" ({fmt.format(min(xs))}–{fmt.format(max(xs))})" if len(xs) > 1 else "")

size_note = f"each flow {size_env} B" if size_env else f"{total/1e6:g} MB in all, split over the N flows"
head = [f"Incast on topologies/bfc-incast.yaml at timescale {k:g} under the designs {', '.join(designs)} (the file's designs: switch mechanisms and gsperf transport): N synchronized flows to r1 ({size_note}); times in us of the fabric ({k:g} times longer here).",
        "Means over the runs with a VALID fidelity verdict (* : none was, over all runs), the range over them in brackets.",
        (f"Queues: sw2 -> r1 ({r1_bits / 1e9:g} Gbit/s) is the bottleneck; sw1 -> sw2 (100 Gbit/s) holds what sw2's pauses push back, sampled; the largest single queue from BFC's watermark." if r1_bits < line_bits
         else "Queues: sw1 -> sw2 is the bottleneck (N x 100 Gbit/s into 100 Gbit/s), sampled; the largest single queue from BFC's watermark."),
        "Pauses: BFC's pause frames, or PFC's (pfc designs), sw1 -> hosts / sw2 -> sw1; PFC paused: the time sw1's port toward sw2 was held by sw2's PFC.", "",
        "| senders | design | flow size (KB) | incast completion (us) | ideal (us) | FCT mean (us) | FCT min–max (us) | sw1 -> sw2 queued: mean (KB) | p99 (KB) | highest sample (KB) | largest single queue (KB) | sw2 -> r1 highest sample (KB) | drops | pauses sent: sw1 -> hosts / sw2 -> sw1 | PFC paused sw1 -> sw2 (us) | ECN marks | flows on a random queue (none empty) | utilisation sw2 -> r1 (%) | incomplete flows | valid runs (fidelity) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
rows, per = [], []
for n in ns:
    for design in designs:
        got = [x for r in range(1, runs + 1) if (x := one(design, n, r)) is not None]
        valid = [x for x in got if x["valid"]]
        use, mark = (valid, "") if valid else (got, "*")
        for r in range(1, runs + 1):
            x = one(design, n, r)
            if x is None:
                per.append(f"| {n} {design} run {r} | no flows (see {design}/n{n}/r{r}) |" + " |" * 10)
                continue
            pauses = (x['pauses_sw1'] + x['pfc_sw1'], x['pauses_sw2'] + x['pfc_sw2'])
            per.append(f"| {n} {design} run {r} | {f(x['completion_us'])} | {f(x['fct_mean'])} | {f(x['q1_p99']/1e3, '{:.1f}')} | {f(x['q1_max']/1e3, '{:.1f}')} | "
                       f"{f(x['q1_queue_peak']/1e3, '{:.1f}')} | {x['drops']:.0f} | {pauses[0]:.0f} / {pauses[1]:.0f} | {f(x['util']*100, '{:.1f}')} | "
                       f"{x['incomplete']} | {x['samples']} | {x['verdict'][:70]} |")
        if not use:
            rows.append(f"| {n} | {design} | no run left flows |" + " |" * 16 + f" 0 of {runs} |")
            continue
        g = lambda key, s=1: [x[key] * s for x in use]
        p1 = [x["pauses_sw1"] + x["pfc_sw1"] for x in use]
        p2 = [x["pauses_sw2"] + x["pfc_sw2"] for x in use]
        rows.append(f"| {n}{mark} | {design} | {use[0]['size']/1e3:g} | {mean_range(g('completion_us'))} | {use[0]['ideal_us']:.0f} | {mean_range(g('fct_mean'))} | "
                    f"{f(min(g('fct_min')))}–{f(max(g('fct_max')))} | {mean_range(g('q1_mean', 1e-3), '{:.1f}')} | {mean_range(g('q1_p99', 1e-3), '{:.1f}')} | "
                    f"{mean_range(g('q1_max', 1e-3), '{:.1f}')} | {f(max(g('q1_queue_peak')) / 1e3, '{:.1f}')} | {f(max(g('q2_max')) / 1e3, '{:.1f}')} | "
                    f"{sum(g('drops')):.0f} | {mean_range(p1)} / {mean_range(p2)} | {mean_range(g('pfc_paused_us'))} | {mean_range(g('marks'))} | {mean_range(g('random'))} | "
                    f"{mean_range(g('util', 100), '{:.1f}')} | {sum(g('incomplete'))} | {len(valid)} of {runs} ({len(got)} with flows) |")
per_head = ["", "Each run:", "",
            "| run | incast completion (us) | FCT mean (us) | sw1 -> sw2 p99 (KB) | highest sample (KB) | largest single queue (KB) | drops | pauses sent sw1 / sw2 | utilisation sw2 -> r1 (%) | incomplete flows | samples | fidelity |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
bg = []
for n in ns:
    for design in designs:
        got = [x for r in range(1, runs + 1) if (x := one(design, n, r)) is not None]
        use = [x for x in got if x["valid"]] or got
        pool = [f for x in use for f in x["bg"]]
        if not pool and not any(x["bg_incomplete"] for x in use):
            continue
        for name, lo, hi in (("all", 0, float("inf")), ("<100KB", 0, 100e3), ("100KB-1MB", 100e3, 1e6), (">1MB", 1e6, float("inf"))):
            sl = [sd for size, sd in pool if lo <= size < hi]
            if sl:
                bg.append(f"| {n} | {design} | {name} | {len(sl)} | {statistics.mean(sl):.2f} | {pct(sl, 0.5):.2f} | {pct(sl, 0.99):.2f} | "
                          f"{sum(x['bg_incomplete'] for x in use) if name == 'all' else ''} |")
if bg:
    bg = ["", "Background flows (BG_LOAD of r1's link from the senders after the incast's, pooled over the runs counted above): FCT slowdown (FCT over the flow alone on the fabric) by size.", "",
          "| senders | design | size | flows | mean | median | p99 | incomplete |", "|---|---|---|---|---|---|---|---|"] + bg
text = "\n".join(head + rows + bg + per_head + per) + "\n"
open(f"{out}/summary.md", "w").write(text)
print(text)
PY
echo "results in $OUT (summary.md; each run in DESIGN/nN/rRUN)"
