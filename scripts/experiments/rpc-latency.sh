#!/usr/bin/env bash
# rpc-latency.sh — latency under load (issue 16): the completion time of
# small requests (gsperf RPCs) while a bulk flow keeps a shaped port's queue
# full, through one gswitchd, under each queueing policy.
#
#   h1 (bulk sender) --p1--\
#                           gswitchd --p3 (RATE, policy under test)--> h3 (receiver)
#   h2 (RPC client)  --p2--/
#
# h2 runs one gsperf client of FLOWS requests of SIZE each (one segment and
# its ack), Poisson arrivals at RPS a second, each request a flow of its own
# (its own UDP socket and 5-tuple); a request's latency is its flow
# completion time, from its first send to the ack of its last byte, as
# gsperf measures it. h1 starts the bulk flow WARM seconds before the
# requests and stops when they end. Cases (CASES, in this order by default):
#
#   idle     fifo, no bulk flow: the floor (a sleeping gswitchd wakes per packet)
#   fifo     one tail-drop queue
#   drr      deficit round robin; the bulk flow is marked DSCP 8 (iperf3 -S 32:
#            queue 6), the requests carry DSCP 0 (queue 7): one queue each
#            (needs BULK=tcp: gsperf cannot mark its packets)
#   sfq      DRR over queues picked by the 5-tuple (not in the default CASES)
#   afq      AFQ (rsp + the afq mechanism): per-flow bids, every request a new flow
#   pfabric  pFabric (rank from the gsperf header); the bulk flow is always a
#            gsperf flow in pfabric mode (its rank is its remaining size: the
#            worst), and the requests run in pfabric mode too (rank 1KB: the
#            best), -rto PFABRIC_RTO and -base-rtt BASE_RTT as
#            pfabric-serial.sh; unpaced, so it keeps the small pFabric buffer
#            full (PFABRIC_PACE=200Mbit paces it to a line rate, as pFabric's
#            hosts are; then one flow leaves the queue nearly empty)
#
# The bulk flow of the other cases: BULK=tcp (default) is iperf3 TCP with
# BULK_CC (default cubic, loss-based: it fills the buffer); BULK=gsperf is
# one gsperf flow in plain mode (window-based, also loss-based), which costs
# the hosts about as much CPU as the pfabric case's bulk flow: on a small
# machine the requests' latency depends on that too (see CPUs busy).
#
# The requests' transport is gsperf's: in plain mode a request whose ack
# has not come back after -rto (RPC_RTO, default gsperf's 10 ms, also its
# floor) is sent again, so behind a queue longer than that every request
# is retransmitted at least once (counted in "RTO fired"; its latency still
# runs from the first send).
#
# For each case it prints p50, p99, p99.9 and the largest request latency
# in µs, the requests completed and those whose RTO fired, and, from the
# switch's metrics over the requests' interval, what the port sent (Mbit/s
# of frames) and dropped, and the machine's CPUs busy; then the port's
# queue, QSAMPLES (10) scrapes 0.1 s apart right after the requests, with
# the bulk flow still running (the queue the requests met; scraping while
# they run would cost them latency). Every request's record (gsperf JSON),
# the switch's logs and the table are kept in OUT (default
# results-rpc-latency-DATE), with env.txt (date, kernel, commit, settings,
# load before and after).
#
#   sudo scripts/experiments/rpc-latency.sh                       # about 1.5 min
#   CASES="idle fifo pfabric" FLOWS=1000 sudo -E scripts/experiments/rpc-latency.sh
#   RATE=100Mbit BUFFER=256KB sudo -E scripts/experiments/rpc-latency.sh
#
# The machine's other load shows in the tails: take figures on a quiet
# machine, and compare policies within one run.
set -euo pipefail
. "$(dirname "$0")/../lib/topo.sh"
. "$(dirname "$0")/../lib/env.sh"
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/go/bin
RATE=${RATE:-200Mbit} SIZE=${SIZE:-1KB} FLOWS=${FLOWS:-3000} RPS=${RPS:-400} WARM=${WARM:-2} BUFFER=${BUFFER:-}
BULK=${BULK:-tcp} BULK_CC=${BULK_CC:-cubic} PFABRIC_RTO=${PFABRIC_RTO:-3ms} BASE_RTT=${BASE_RTT:-500us} PFABRIC_PACE=${PFABRIC_PACE:-} PFABRIC_WINDOW=${PFABRIC_WINDOW:-} RPC_RTO=${RPC_RTO:-}
SEED=${SEED:-1} QSAMPLES=${QSAMPLES:-10} CASES=${CASES:-"idle fifo drr afq pfabric"}
for c in $CASES; do
	case $c in idle | fifo | drr | sfq | afq | pfabric) ;; *) echo "rpc-latency.sh: unknown case $c (idle, fifo, drr, sfq, afq, pfabric)" >&2; exit 1 ;; esac
	[ "$c" = drr ] && [ "$BULK" = gsperf ] && { echo "rpc-latency.sh: drr needs BULK=tcp (the bulk flow must be marked to get a queue of its own; gsperf cannot mark; use sfq)" >&2; exit 1; }
done
case $BULK in tcp | gsperf) ;; *) echo "rpc-latency.sh: BULK=$BULK: tcp or gsperf" >&2; exit 1 ;; esac
grep -qw "$BULK_CC" /proc/sys/net/ipv4/tcp_available_congestion_control ||
	{ echo "rpc-latency.sh: BULK_CC=$BULK_CC is not in net.ipv4.tcp_available_congestion_control" >&2; exit 1; }
# The requests' offered load as gsperf takes it: a fraction of -rate.
read -r RATE_BITS LOAD < <(python3 - "$RATE" "$SIZE" "$RPS" <<'PY'
import re, sys
def num(s, units, what):
    m = re.fullmatch(r"([0-9.]+)\s*([A-Za-z]*)", s)
    if not m or m.group(2) not in units:
        sys.exit(f"rpc-latency.sh: {what}={s}: write e.g. " + {"RATE": "200Mbit or 1Gbit", "SIZE": "1KB, 4KiB or 1500"}[what])
    return float(m.group(1)) * units[m.group(2)]
rate = num(sys.argv[1], {"bit": 1, "Kbit": 1e3, "kbit": 1e3, "Mbit": 1e6, "Gbit": 1e9}, "RATE")
size = num(sys.argv[2], {"": 1, "B": 1, "KB": 1e3, "KiB": 1024, "MB": 1e6, "MiB": 1 << 20}, "SIZE")
load = float(sys.argv[3]) * size * 8 / rate
if not 0 < load <= 0.5:
    sys.exit(f"rpc-latency.sh: RPS={sys.argv[3]} of SIZE={sys.argv[2]} is {load:.3f} of RATE={sys.argv[1]} (want at most 0.5: the requests are the small traffic)")
print(f"{rate:.0f} {load:.6f}")
PY
)
[ -n "${LOAD:-}" ] || exit 1
# A gsperf bulk flow must outlast any run: two minutes at the port's rate.
BULK_BYTES=$(python3 -c "print(int($RATE_BITS / 8 * 120))")
OUT=${OUT:-results-rpc-latency-$(date +%Y%m%d-%H%M%S)}
ID=$(topo_id rl)
SUB=10.207.0 DST=10.207.0.3
MPORT=$((20000 + RANDOM % 20000))
while ss -Hltn "sport = :$MPORT" | grep -q .; do MPORT=$((20000 + RANDOM % 20000)); done
exp_begin "$ID" 3 $SUB
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cpu_busy() { # SECONDS: % of all CPUs busy over that long (/proc/stat)
	local a b
	a=$(head -1 /proc/stat)
	sleep "$1"
	b=$(head -1 /proc/stat)
	echo "$a" "$b" | awk '{b0 = $2 + $3 + $4 + $7 + $8; t0 = b0 + $5 + $6; b1 = $13 + $14 + $15 + $18 + $19; t1 = b1 + $16 + $17
		printf "%.0f", (t1 > t0 ? 100 * (b1 - b0) / (t1 - t0) : 0)}'
}
BG=() # what this script started in the hosts, by PID
stop_bg() {
	local p
	for p in "${BG[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${BG[@]}"; do wait "$p" 2>/dev/null || true; done
	BG=()
}
trap 'stop_bg; exp_end' EXIT
trap 'exit 130' INT TERM
env_header "iperf3: $(iperf3 --version | head -1)" \
	"RATE=$RATE SIZE=$SIZE FLOWS=$FLOWS RPS=$RPS (load $LOAD of the port) WARM=$WARM BUFFER=${BUFFER:-default} SEED=$SEED" \
	"BULK=$BULK BULK_CC=$BULK_CC PFABRIC_RTO=$PFABRIC_RTO BASE_RTT=$BASE_RTT PFABRIC_PACE=${PFABRIC_PACE:-unpaced} PFABRIC_WINDOW=${PFABRIC_WINDOW:-default} RPC_RTO=${RPC_RTO:-default} QSAMPLES=$QSAMPLES CASES=$CASES" \
	"CPUs busy over 1 s before: $(cpu_busy 1)%" >"$OUT/env.txt"

metric_port() { # METRICS-FILE: the shaped port's lines
	grep -E '^gswitch_(port_tx_(bytes|packets)_total|drops_total|queue_depth_bytes)\{.*port="p3"' "$1" || true
}
scrape() { curl -s --max-time 2 "http://127.0.0.1:$MPORT/metrics" || true; }

echo "| case | bulk flow | requests done | p50 µs | p99 µs | p99.9 µs | max µs | requests whose RTO fired | port Mbit/s | port drops | queue KB mean / max after | CPUs busy % |" | tee "$OUT/table.md"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|" | tee -a "$OUT/table.md"
for c in $CASES; do
	policy=$c mode=plain
	[ "$c" = idle ] && policy=fifo
	[ "$c" = pfabric ] && mode=pfabric
	{
		echo "ports:"
		echo "  - {name: p1, interface: $(topo_port "$ID" 1)}"
		echo "  - {name: p2, interface: $(topo_port "$ID" 2)}"
		echo "  - {name: p3, interface: $(topo_port "$ID" 3), rate: $RATE, $(policy_keys "$policy")${BUFFER:+, buffer: $BUFFER}}"
		echo "metrics: \"127.0.0.1:$MPORT\""
		echo "control: {socket: \"off\"}"
	} >"$WORK/gswitchd.yaml"
	cp "$WORK/gswitchd.yaml" "$OUT/$c-gswitchd.yaml"
	switch_start "$OUT/$c-gswitchd.log"
	kill -0 "$PID" 2>/dev/null || { cat "$OUT/$c-gswitchd.log" >&2; echo "rpc-latency.sh: gswitchd did not start" >&2; exit 1; }
	for i in 1 2; do ip netns exec "$ID-h$i" ping -c 1 -W 1 $DST >/dev/null; done
	ip netns exec "$ID-h3" "$WORK/gsperf" server -bind $DST:5501 -report 0 >"$OUT/$c-rpc-server.log" 2>&1 &
	BG+=($!)
	pfx=() # the requests' transport flags
	[ $mode = pfabric ] && pfx=(-mode pfabric -rto "$PFABRIC_RTO" -base-rtt "$BASE_RTT")
	[ $mode = plain ] && [ -n "$RPC_RTO" ] && pfx=(-rto "$RPC_RTO")
	bulk=none bfl=()
	if [ "$c" = pfabric ]; then
		bulk="gsperf pfabric${PFABRIC_PACE:+, paced $PFABRIC_PACE}"
		bfl=(-mode pfabric -rto "$PFABRIC_RTO" -base-rtt "$BASE_RTT" ${PFABRIC_PACE:+-pace "$PFABRIC_PACE"} ${PFABRIC_WINDOW:+-init-window "$PFABRIC_WINDOW"})
	elif [ "$c" != idle ] && [ "$BULK" = gsperf ]; then
		bulk="gsperf plain"
		bfl=(-mode plain)
	elif [ "$c" != idle ]; then
		bulk="TCP $BULK_CC"
	fi
	case $bulk in
	none) ;;
	gsperf*)
		ip netns exec "$ID-h3" "$WORK/gsperf" server -bind $DST:5500 -report 0 >"$OUT/$c-bulk-server.log" 2>&1 &
		BG+=($!)
		sleep 0.3
		ip netns exec "$ID-h1" "$WORK/gsperf" client -src bulk -to $DST:5500 -size "$BULK_BYTES" -flows 1 -arrivals burst -rate "$RATE" \
			"${bfl[@]}" -timeout 300s -id-base 1 >"$OUT/$c-bulk.log" 2>&1 &
		BG+=($!)
		;;
	TCP*)
		ip netns exec "$ID-h3" iperf3 -s -1 -B $DST -p 5201 >"$OUT/$c-bulk-server.log" 2>&1 &
		BG+=($!)
		sleep 0.3
		ip netns exec "$ID-h1" iperf3 -c $DST -p 5201 -t 300 -C "$BULK_CC" -S 32 -i 1 >"$OUT/$c-bulk.log" 2>&1 &
		BG+=($!)
		;;
	esac
	[ "$c" = idle ] && sleep 0.3 || sleep "$WARM"
	m0=$(date +%s%N)
	scrape >"$OUT/$c-metrics-before.txt"
	m0=$(((m0 + $(date +%s%N)) / 2)) # the scrape's midpoint: when the counters were read, within half a scrape
	t0=$(date +%s%N) cpu0=$(head -1 /proc/stat)
	ip netns exec "$ID-h2" timeout 600 "$WORK/gsperf" client -src rpc -to $DST:5501 -size "$SIZE" -flows "$FLOWS" -load "$LOAD" -rate "$RATE" \
		-arrivals poisson -seed "$SEED" -timeout 10s -id-base 1000000 "${pfx[@]}" -out "$OUT/$c-rpc.json" >"$OUT/$c-rpc.log" 2>&1 ||
		echo "rpc-latency.sh: $c: the request client failed (see $OUT/$c-rpc.log)" >&2
	t1=$(date +%s%N) cpu1=$(head -1 /proc/stat)
	m1=$(date +%s%N)
	scrape >"$OUT/$c-metrics-after.txt"
	m1=$(((m1 + $(date +%s%N)) / 2))
	# The port's queue, sampled after the requests, while the bulk flow still
	# runs: a scrape costs gswitchd and the machine enough CPU to move the
	# requests' tail (every 0.25 s during the requests: idle p99 1.4 -> 5.2 ms).
	for i in $(seq 1 "$QSAMPLES"); do
		echo "$(scrape | awk '/^gswitch_queue_depth_bytes\{.*port="p3"/ {s += $NF} END {print s + 0}')"
		sleep 0.1
	done >"$OUT/$c-queue.txt"
	stop_bg
	switch_stop
	for f in before after; do # keep the shaped port's lines only
		metric_port "$OUT/$c-metrics-$f.txt" >"$OUT/$c-metrics-$f.tmp"
		mv "$OUT/$c-metrics-$f.tmp" "$OUT/$c-metrics-$f.txt"
	done
	python3 - "$OUT" "$c" "$bulk" "$m0" "$m1" "$FLOWS" "$cpu0" "$cpu1" <<'PY' | tee -a "$OUT/table.md"
import json, os, re, sys
out, case, bulk, m0, m1, nflows = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
base = os.path.join(out, case)

def metrics(path):
    d = {}
    for line in open(path):
        m = re.match(r"^(\w+)\{(.*)\}\s+(\S+)$", line.strip())
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
            d[(m.group(1), labels.get("reason", ""))] = d.get((m.group(1), labels.get("reason", "")), 0) + float(m.group(3))
    return d

row = [case, bulk]
try:
    flows = json.load(open(base + "-rpc.json"))["flows"]
except (OSError, ValueError, KeyError):
    flows = None
if not flows:
    row += [f"0 of {nflows} (client failed)", "n/a", "n/a", "n/a", "n/a", "n/a"]
else:
    # a request that never completed counts as slower than every other
    v = sorted(f["fct_ns"] / 1e3 for f in flows if f["complete"])
    n = len(flows)
    q = lambda i: f"{v[i]:,.0f}" if i < len(v) else "incomplete"
    row += [f"{len(v)} of {n}", q(int(0.5 * n)), q(int(0.99 * n)), q(int(0.999 * n)), q(n - 1),
            str(sum(1 for f in flows if f.get("timeouts", 0) > 0))]
a, b = metrics(base + "-metrics-before.txt"), metrics(base + "-metrics-after.txt")
secs = (m1 - m0) / 1e9  # between the two scrapes of the counters
key = ("gswitch_port_tx_bytes_total", "")
if key in a and key in b and secs > 0:
    row.append(f"{(b[key] - a[key]) * 8 / secs / 1e6:.1f}")
    drops = {k[1]: b[k] - a.get(k, 0) for k in b if k[0] == "gswitch_drops_total" and b[k] - a.get(k, 0) > 0}
    row.append(", ".join(f"{int(n)} {r}" for r, n in sorted(drops.items())) or "0")
else:
    row += ["n/a", "n/a"]
qs = []
if os.path.exists(base + "-queue.txt"):
    qs = [float(x) / 1e3 for x in open(base + "-queue.txt").read().split()]
row.append(f"{sum(qs) / len(qs):.1f} / {max(qs):.1f}" if qs else "n/a")
# machine CPU busy while the requests ran (/proc/stat: user nice system irq softirq over all but steal)
a, b = (list(map(int, x.split()[1:9])) for x in sys.argv[7:9])
d = [y - x for x, y in zip(a, b)]
busy, tot = d[0] + d[1] + d[2] + d[5] + d[6], d[0] + d[1] + d[2] + d[3] + d[4] + d[5] + d[6]
row.append(f"{100 * busy / tot:.0f}" if tot else "n/a")
print("| " + " | ".join(row) + " |")
PY
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/env.txt"
echo "latency percentiles are over all $FLOWS requests; one that did not complete within 10 s counts as slower than all (\"incomplete\")"
echo "latency = a request's completion time in gsperf (send to ack, one $SIZE segment); port Mbit/s = frames the shaped port sent while the requests ran"
echo "results in $OUT"
