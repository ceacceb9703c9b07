#!/usr/bin/env bash
# bfc-fig7.sh — after BFC's Figure 7(a) (NSDI'22, section 6.1): on the
# three-switch testbed (topologies/bfc-testbed.yaml), one group-2 flow
# (S2 -> Sw1 -> Sw2 -> R2) and one group-3 flow (S3 -> Sw3 -> Sw2 -> R2)
# compete for Sw2's port toward R2. Every link runs at RATE, so each flow
# arrives at up to twice what it drains (x = 2, as in the paper). The
# senders are gsperf in BFC mode as NICs that take no part in BFC
# (HOST_PAUSES=false: no queue id, pauses ignored, WINDOW in flight, paced
# at RATE), as the paper's packet generator without end-to-end control: the
# upstream switches' queues stay backlogged and BFC alone sets the pace.
# While both flows run, the script samples Sw2's metrics every STEP (the
# queues' time integral, the watermark since the previous sample, the port's
# bytes) and reports for the steady state: Th, the mean queue per flow and
# the peak against Th, the peak against the bar 2 x Th + one batch (64 full
# frames: what a switch may have taken off its ring before the pause reached
# it), the port's utilisation (bar: 95%), pauses, resumes and drops; and
# plots queue length over time with Th.
#
#   sudo scripts/experiments/bfc-fig7.sh     # about 45 s
#
# GSWITCHD=path runs that gswitchd build instead of building one (A/B runs).
# RATE=100Mbit, DELAY=5ms (the Sw1-Sw2 link), DELAY3=2500us (the Sw3-Sw2
# link), SECONDS_=10, STEP=0.1, WINDOW=2MB, HOST_PAUSES=false, BFC_KEYS= (more
# keys of the bfc mechanism, e.g. BFC_KEYS="hrtt: 20ms"), SWITCH_KEYS= (more
# gswitchd keys of every switch, e.g. SWITCH_KEYS="spin: 0, catchup: 5ms"), NICE=0 (set
# e.g. NICE=-10 to run the switches' workers before the hosts: gswitchd's
# nice: key, so the metrics server this script samples every STEP does not
# compete with them). The link delays make
# HRTT long against the scheduling jitter of a shared machine, and unequal so
# the two flows do not run in lockstep (with equal HRTTs they pause and
# resume together and idle together a fifth of the time, appendix C; see
# TestTwoFlowsNearTh in mech/bfc).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/go/bin
[ "$(id -u)" = 0 ] || { echo "$0: run as root (namespaces, veths, XDP)" >&2; exit 1; }
RATE=${RATE:-100Mbit} DELAY=${DELAY:-5ms} DELAY3=${DELAY3:-2500us} SECS=${SECONDS_:-10} STEP=${STEP:-0.1} WINDOW=${WINDOW:-2MB} HOST_PAUSES=${HOST_PAUSES:-false}
OUT=${OUT:-results-bfc-fig7-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
WORK=$(mktemp -d)
NAME=bf7$((RANDOM % 1000))
BASE=$((20000 + RANDOM % 20000))
if [ -n "${GSWITCHD:-}" ]; then cp "$GSWITCHD" "$WORK/gswitchd"; else go build -o "$WORK/gswitchd" ./cmd/gswitchd; fi # GSWITCHD: another build (A/B runs)
go build -o "$WORK/gswitchctl" ./cmd/gswitchctl
go build -o "$WORK/gsperf" ./cmd/gsperf
sed -e "s/^name: .*/name: $NAME/" -e "s/^metrics_base: .*/metrics_base: $BASE/" \
	-e "s/link: {rate: 100Mbit, delay: 500us, mtu: 1500}/link: {rate: $RATE, delay: $DELAY, mtu: 1500}/" \
	-e "s/  - {a: sw3, b: sw2}/  - {a: sw3, b: sw2, delay: $DELAY3}/" \
	-e "s/mechanisms: {bfc: {assign: dynamic}}/mechanisms: {bfc: {assign: dynamic${BFC_KEYS:+, $BFC_KEYS}}}/" \
	-e "s/switch: {workers: 1}/switch: {workers: 1$([ "${NICE:-0}" != 0 ] && echo ", nice: $NICE")${SWITCH_KEYS:+, $SWITCH_KEYS}}/" \
	topologies/bfc-testbed.yaml >"$OUT/topology.yaml"
down() {
	"$WORK/gswitchctl" topo down -state "$WORK/state" "$OUT/topology.yaml" >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap down EXIT
"$WORK/gswitchctl" topo up -gswitchd "$WORK/gswitchd" -state "$WORK/state" -log "$OUT" "$OUT/topology.yaml" >/dev/null
SW2=http://127.0.0.1:$((BASE + 2))/metrics
uptime >"$OUT/load.txt"
ip netns exec "$NAME-r2" "$WORK/gsperf" server -bind 10.81.5.1:5500 -report 0 >"$OUT/server.log" 2>&1 &
sleep 0.5
bits=$(echo "$RATE" | python3 -c 'import sys; s=sys.stdin.read().strip().lower().replace("bit",""); print(int(float(s[:-1])*{"k":1e3,"m":1e6,"g":1e9}[s[-1]]))')
delay_s=$(python3 -c "import sys; d='$DELAY'; print(float(d[:-2])/1e3 if d.endswith('ms') else float(d[:-2])/1e6)")
rtt=$(python3 -c "print(f'{int((4*$delay_s+0.0004)*1e6)}us')") # host to host: two fabric hops each way, and the host links
size=$(python3 -c "print(int($bits/2/8*$SECS))")
at=$(($(date +%s%N) + 3000000000))
python3 - "$SW2" "$STEP" "$((SECS + 8))" "$OUT/samples.json" <<'PY' &
import json, sys, time, urllib.request
url, step, dur, out = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
keys = ("gswitch_queue_depth_bytes{", "gswitch_queue_depth_packets{", "gswitch_bfc_queue_watermark_bytes{",
        "gswitch_bfc_queue_byte_seconds_total{", "gswitch_port_tx_bytes_total{", "gswitch_port_tx_packets_total{",
        "gswitch_bfc_threshold_bytes{", "gswitch_bfc_over_threshold_total{", "gswitch_port_tx_late_seconds_total{")
samples, end, nxt = [], time.time() + dur, time.time()
while time.time() < end:
    t = time.time()
    row = {"t": t}
    try:
        for line in urllib.request.urlopen(url, timeout=1).read().decode().splitlines():
            if line.startswith(keys) and 'port="r2"' in line:
                name, val = line.rsplit(" ", 1)
                row[name] = float(val)
    except Exception as e:
        row["error"] = str(e)
    samples.append(row)
    nxt += step
    time.sleep(max(0, nxt - time.time()))
json.dump(samples, open(out, "w"))
PY
SAMPLER=$!
for h in s2 s3; do
	ip netns exec "$NAME-$h" "$WORK/gsperf" client -src "$h" -to 10.81.5.1:5500 -size "$size" -flows 1 -arrivals burst -at "$at" \
		-mode bfc -bfc-pauses="$HOST_PAUSES" -init-window "$WINDOW" -rate "$RATE" -pace "$RATE" -base-rtt "$rtt" -id-base "$([ $h = s2 ] && echo 2000 || echo 3000)" \
		-timeline 100ms -out "$OUT/$h.json" >"$OUT/client-$h.log" 2>&1 &
	clients+=($!)
done
wait "${clients[@]}"
wait $SAMPLER
for i in 1 2 3; do curl -s "http://127.0.0.1:$((BASE + i))/metrics" >"$OUT/metrics-sw$i.txt"; done
uptime >>"$OUT/load.txt"
python3 - "$OUT" "$bits" "$delay_s" <<'PY'
import json, sys
out, bits, delay = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
S = [s for s in json.load(open(f"{out}/samples.json")) if "error" not in s]
def tot(s, pre):
    return sum(v for k, v in s.items() if k.startswith(pre))
def most(s, pre):
    return max([v for k, v in s.items() if k.startswith(pre)] or [0])
# Steady state: both flows running, from one second after the later start
# to half a second before the first end.
recs = [json.load(open(f"{out}/{h}.json"))["flows"][0] for h in ("s2", "s3")]
t0 = max(r["start_unix_ns"] for r in recs) / 1e9 + 1.0
t1 = min(r["start_unix_ns"] + r.get("fct_ns", 0) for r in recs) / 1e9 - 0.5
W = [s for s in S if t0 <= s["t"] <= t1]
if len(W) < 10:
    sys.exit(f"only {len(W)} samples while both flows ran: see {out}")
hrtt = 2 * delay + 50e-6                       # the largest HRTT of Sw2's ports (the Sw1 link), as configured
th = max(hrtt * bits / 8 / 2, 3028)             # Th with N_active = 2, unless the switch says otherwise:
ths = sorted(s.get('gswitch_bfc_threshold_bytes{port="r2"}', 0) for s in W)
if ths and ths[len(ths) // 2] > 0:
    th = ths[len(ths) // 2]                     # the Th sw2 used (its median over the steady state)
dt = W[-1]["t"] - W[0]["t"]
integ = lambda s: tot(s, "gswitch_bfc_queue_byte_seconds_total{")
mean_flow = (integ(W[-1]) - integ(W[0])) / dt / 2
peak = max(most(s, "gswitch_bfc_queue_watermark_bytes{") for s in W[1:])
tx = lambda s: tot(s, "gswitch_port_tx_bytes_total{") + 24 * tot(s, "gswitch_port_tx_packets_total{")
util = (tx(W[-1]) - tx(W[0])) * 8 / bits / dt
wire = lambda s: tot(s, "gswitch_queue_depth_bytes{") + 24 * tot(s, "gswitch_queue_depth_packets{")
empty = sum(1 for s in W if wire(s) == 0) / len(W)
over = tot(W[-1], "gswitch_bfc_over_threshold_total{") - tot(W[0], "gswitch_bfc_over_threshold_total{")
batch = 64 * 1538
# Intervals in which Sw2's worker ran late: its port toward R2 lost more
# than 1 ms of line time (gswitch_port_tx_late_seconds_total), so frames
# waited on its receive ring, unseen by BFC, and reached the queue at once
# (the spec's "in-ring frames"). The peak over the other intervals (and not
# the interval right after one) is the algorithm's own overshoot.
late = lambda s: s.get('gswitch_port_tx_late_seconds_total{port="r2"}', 0)
stalled = [late(b) - late(a) > 1e-3 for a, b in zip(W, W[1:])]
clean = [most(b, "gswitch_bfc_queue_watermark_bytes{") for i, b in enumerate(W[1:])
         if not stalled[i] and not (i > 0 and stalled[i - 1])]
peak_clean = max(clean or [0])
m = {}
for i in (1, 2, 3):
    for line in open(f"{out}/metrics-sw{i}.txt"):
        if line.startswith(("gswitch_bfc_pauses_sent_total", "gswitch_bfc_resumes_sent_total", "gswitch_drops_total", "gswitch_bfc_watchdog_resumes_total")):
            name, v = line.rsplit(" ", 1)
            if float(v) and "link_local" not in name:
                m[f"sw{i} {name}"] = float(v)
drops = sum(v for k, v in m.items() if "drops_total" in k)
lines = [
    f"| steady state | {dt:.1f} s, {len(W)} samples |",
    f"| HRTT (largest, configured) | {hrtt*1e3:.2f} ms |",
    f"| Th (sw2's gswitch_bfc_threshold_bytes, median; HRTT x {bits/1e6:.0f} Mbit/s / 2 = {max(hrtt*bits/8/2, 3028)/1e3:.1f} KB) | {th/1e3:.1f} KB |",
    f"| mean queue per flow (time average) | {mean_flow/1e3:.1f} KB = {mean_flow/th:.2f} Th |",
    f"| peak of any queue (watermark) | {peak/1e3:.1f} KB = {peak/th:.2f} Th |",
    f"| bar: peak <= 2 x Th + one batch (64 frames) = {(2*th+batch)/1e3:.1f} KB | {'met' if peak <= 2*th+batch else 'NOT met'} |",
    f"| intervals in which Sw2's port toward R2 lost more than 1 ms of line time (its worker ran late) | {sum(stalled)} of {len(stalled)} |",
    f"| peak of any queue in the {len(clean)} intervals without such a stall, nor one just before | {peak_clean/1e3:.1f} KB = {peak_clean/th:.2f} Th ({'within' if peak_clean <= 2*th+batch else 'above'} the bar) |",
    f"| utilisation of Sw2 -> R2 | {util*100:.1f} % |",
    f"| bar: utilisation >= 95 % | {'met' if util >= 0.95 else 'NOT met'} |",
    f"| samples with nothing queued | {empty*100:.1f} % |",
    f"| packets counted above Th in the steady state | {over:.0f} |",
    f"| drops (all switches, whole run) | {drops:.0f} |",
]
for k, v in sorted(m.items()):
    if "drops" not in k:
        lines.append(f"| {k} | {v:.0f} |")
open(f"{out}/summary.md", "w").write("| | |\n|---|---|\n" + "\n".join(lines) + "\n")
print("\n".join(lines))
# For gsperf plot -kind queue: per sampling interval, the mean queue per
# flow (from the integral) and the peak of any queue (the watermark), and Th.
mean_s, peak_s = [], []
for a, b in zip(W, W[1:]):
    mean_s.append((integ(b) - integ(a)) / (b["t"] - a["t"]) / 2)
    peak_s.append(most(b, "gswitch_bfc_queue_watermark_bytes{"))
step = dt / (len(W) - 1)
series = {"mean per flow": mean_s, "peak of any queue": peak_s, "Th": [th] * len(mean_s)}
json.dump({"metrics": "sw2", "step_ns": int(step * 1e9), "bytes": series}, open(f"{out}/queues.json", "w"))
PY
"$WORK/gsperf" plot -kind queue -title "BFC Fig. 7: Sw2 -> R2, two flows at $RATE, HRTT $(python3 -c "print(f'{(2*$delay_s+50e-6)*1e3:.2f}')") ms (wire bytes per $(python3 -c "print(int($STEP*1000))") ms)" -out "$OUT/queue.png" "$OUT/queues.json"
echo "results in $OUT (summary.md, queue.png)"
