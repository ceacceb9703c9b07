#!/usr/bin/env bash
# bfc-fig7.sh — after BFC's Figure 7(a) (NSDI'22, section 6.1): on the
# three-switch testbed at the paper's parameters (topologies/bfc-testbed.yaml:
# 100 Gbit/s links, 16 queues per port, 1 us of propagation per link, run at
# its timescale, 10000), one group-2 flow (S2 -> Sw1 -> Sw2 -> R2) and one
# group-3 flow (S3 -> Sw3 -> Sw2 -> R2) compete for Sw2's port toward R2.
# Each flow arrives at up to the line rate and drains at half of it (x = 2,
# appendix C). The senders are gsperf in BFC mode as NICs that take no part
# in BFC (HOST_PAUSES=false: no queue id, pauses ignored, WINDOW in flight,
# paced at the line rate), as the paper's packet generator without
# end-to-end control: the upstream switches' queues stay backlogged and BFC
# alone sets the pace. Both upstream switches are one HRTT of 2.005 us away
# (equal HRTTs) unless DELAY3 sets the Sw3 - Sw2 link apart.
#
# gsperf runs at the file's timescale (-timescale K, every flag in the
# fabric's units). While both flows run the script samples Sw2's metrics
# every STEP_US of the fabric (the queues' time integral, the watermark
# since the previous sample, the port's bytes) and reports for the steady
# state, in the fabric's time (this machine's in brackets): Th, the mean
# queue of a flow and the peak of a queue against Th, per interval, the
# port's utilisation, pauses, resumes and drops, with the bars of
# TestBFCFig7 (test/netns), which come from appendix C: utilisation at
# least 80% (a flow runs dry at most a fifth of the time, both at once with
# equal HRTTs), a mean of 0.8 Th +- 2 frames in the median interval, a peak
# of at most 2 Th + 2 frames in 90% of the intervals; and the fidelity
# verdict of the run (gsperf fidelity: were the switches on time?). It
# plots queue length over the fabric's time with Th.
#
#   sudo scripts/experiments/bfc-fig7.sh     # about 20 s
#
# GSWITCHD=path runs that gswitchd build instead of building one (A/B runs).
# DELAY3= (the Sw3 - Sw2 link's delay, fabric time, e.g. 0.5us: unequal
# HRTTs), FLOW_US=400 (each flow's time at half the line rate, fabric us),
# STEP_US=10 (sampling step, fabric us: five HRTTs), WINDOW=2MB,
# HOST_PAUSES=false, TIMESCALE= (another K than the file's), BFC_KEYS= (more
# keys of the bfc mechanism, e.g. BFC_KEYS="flow_table: 3200"; th and hrtt
# through TH and HRTT below, which the report follows), SWITCH_KEYS= (more
# gswitchd keys of every switch).
#
# Fig. 7(b) repeats this "but vary the pause threshold"
# (scripts/experiments/bfc-fig7b.sh sweeps it). HRTT=2us puts that time in
# Th's formula (section 3.3.2): the hrtt key of every port, so Th = HRTT x
# 100 Gbit/s / N_active; the sticky time stays at its default (the key
# pinned to 2 x the real HRTT), the bitmap period at its floor of 100 us
# (for HRTT up to 25 us). TH=25KB (bytes, or TH=2us: that long at 100
# Gbit/s) is a fixed Th of every queue instead (the th key). A pause still
# takes the real HRTT (2.005 us) to act, so the bars follow appendix C's
# model for x = 2 and r = Th / (HRTT x 50 Gbit/s): a queue peaks at
# (r + 1) HRTT x 50 Gbit/s, averages (r + 1)^2 / (2r + 3) of it, and runs
# dry 1 / (2r + 3) of the time (r = 1 without TH or HRTT: 2 Th, 0.8 Th,
# 80%). Each run writes summary.json beside summary.md (the same figures,
# for bfc-fig7b.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/go/bin
[ "$(id -u)" = 0 ] || { echo "$0: run as root (namespaces, veths, XDP)" >&2; exit 1; }
FLOW_US=${FLOW_US:-400} STEP_US=${STEP_US:-10} WINDOW=${WINDOW:-2MB} HOST_PAUSES=${HOST_PAUSES:-false} DELAY3=${DELAY3:-}
TH=${TH:-} HRTT=${HRTT:-}
[ -z "$TH" ] || [ -z "$HRTT" ] || { echo "$0: TH=$TH and HRTT=$HRTT: give one of them (a fixed Th, or the time in Th's formula)" >&2; exit 1; }
# Fig. 7(b)'s threshold: THB, a fixed Th in bytes (TH), or THRTT, the time
# in Th's formula in us (HRTT); 0 when not given.
THB=0 THRTT=0
if [ -n "$TH" ]; then
	THB=$(python3 -c "
import re, sys
s = sys.argv[1]
t = re.fullmatch(r'([0-9.]+)(ns|us|µs|ms|s)', s)
b = re.fullmatch(r'([0-9.]+)(|B|KB|KiB|MB|MiB)', s)
if t:
    print(int(float(t[1]) * {'ns': 1e-9, 'us': 1e-6, 'µs': 1e-6, 'ms': 1e-3, 's': 1}[t[2]] * 100e9 / 8))
elif b:
    print(int(float(b[1]) * {'': 1, 'B': 1, 'KB': 1e3, 'KiB': 1024, 'MB': 1e6, 'MiB': 1 << 20}[b[2]]))
else:
    sys.exit(f'TH={s}: write a size (25KB, 25000) or a time at 100 Gbit/s (2us)')" "$TH")
elif [ -n "$HRTT" ]; then
	[[ $HRTT =~ ^[0-9.]+(ns|us|µs|ms)$ ]] || { echo "$0: HRTT=$HRTT: write a time of the fabric such as 2us" >&2; exit 1; }
fi
OUT=${OUT:-results-bfc-fig7-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
WORK=$(mktemp -d)
NAME=bf7$((RANDOM % 1000))
BASE=$((20000 + RANDOM % 20000))
if [ -n "${GSWITCHD:-}" ]; then cp "$GSWITCHD" "$WORK/gswitchd"; else go build -o "$WORK/gswitchd" ./cmd/gswitchd; fi # GSWITCHD: another build (A/B runs)
go build -o "$WORK/gswitchctl" ./cmd/gswitchctl
go build -o "$WORK/gsperf" ./cmd/gsperf
edits=(-e "s/^name: .*/name: $NAME/" -e "s/^metrics_base: .*/metrics_base: $BASE/")
[ -z "${TIMESCALE:-}" ] || edits+=(-e "s/^timescale: .*/timescale: $TIMESCALE/")
[ -z "$DELAY3" ] || edits+=(-e "s/  - {a: sw3, b: sw2}/  - {a: sw3, b: sw2, delay: $DELAY3}/")
sed "${edits[@]}" \
	-e "s/mechanisms: {bfc: {assign: dynamic}}/mechanisms: {bfc: {assign: dynamic${BFC_KEYS:+, $BFC_KEYS}}}/" \
	-e "s/switch: {workers: 1, realtime: 10, spin: 0us}/switch: {workers: 1, realtime: 10, spin: 0us${SWITCH_KEYS:+, $SWITCH_KEYS}}/" \
	topologies/bfc-testbed.yaml >"$OUT/topology.yaml"
K=$(sed -n 's/^timescale: *\([0-9.e+]*\).*/\1/p' "$OUT/topology.yaml")
K=${K:-1}
DELAY=$(sed -n 's/.*link: {rate: [^,]*, delay: \([^,}]*\).*/\1/p' "$OUT/topology.yaml")
# Fabric units from here: delays in us, the line rate 100 Gbit/s.
us() { python3 -c "import sys; d=sys.argv[1]; print(float(d[:-2])*{'ns':1e-3,'us':1,'µs':1,'ms':1e3}[d[-2:]] if d[-2:] in ('ns','us','µs','ms') else float(d[:-1])*1e6)" "$1"; }
d=$(us "$DELAY")
d3=$(us "${DELAY3:-$DELAY}")
if [ -n "$TH" ]; then
	sed -i "s/mechanisms: {bfc: {assign: dynamic/mechanisms: {bfc: {assign: dynamic, th: $THB/" "$OUT/topology.yaml"
elif [ -n "$HRTT" ]; then
	THRTT=$(us "$HRTT")
	# sticky's default is 2 x the largest hrtt, which the key would change: pin it to 2 x the real one.
	sticky=$(python3 -c "print(f'{2 * (2 * max($d, $d3) + 2 * 25 / $K):.6g}us')")
	sed -i "s/mechanisms: {bfc: {assign: dynamic/mechanisms: {bfc: {assign: dynamic, hrtt: $HRTT, sticky: $sticky/" "$OUT/topology.yaml"
fi
down() {
	"$WORK/gswitchctl" topo down -state "$WORK/state" "$OUT/topology.yaml" >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap down EXIT
"$WORK/gswitchctl" topo up -gswitchd "$WORK/gswitchd" -state "$WORK/state" -log "$OUT" "$OUT/topology.yaml" >"$OUT/up.txt"
SW=sw1=http://127.0.0.1:$((BASE + 1))/metrics,sw2=http://127.0.0.1:$((BASE + 2))/metrics,sw3=http://127.0.0.1:$((BASE + 3))/metrics
SW2=http://127.0.0.1:$((BASE + 2))/metrics
uptime >"$OUT/load.txt"
ip netns exec "$NAME-r2" "$WORK/gsperf" server -bind 10.81.5.1:5500 -report 0 -timescale "$K" >"$OUT/server.log" 2>&1 &
disown
sleep 0.5
rtt=$(python3 -c "print(f'{2*(2*$d + max($d, $d3)):.3f}us')") # the longer path: both host links and a fabric link, each way
size=$(python3 -c "print(int(50e9/8*$FLOW_US*1e-6))")  # FLOW_US at half of 100 Gbit/s
at=$(($(date +%s%N) + 3000000000))
"$WORK/gsperf" fidelity -metrics "$SW" -save "$OUT/fidelity-before.json" 2>/dev/null
python3 - "$SW2" "$K" "$STEP_US" "$((FLOW_US + 150))" "$at" "$OUT/samples.json" <<'PY' &
import json, sys, time, urllib.request
url, k, step_us, dur_us, at, out = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
keys = ("gswitch_queue_depth_bytes{", "gswitch_queue_depth_packets{", "gswitch_bfc_queue_watermark_bytes{",
        "gswitch_bfc_queue_byte_seconds_total{", "gswitch_port_tx_bytes_total{", "gswitch_port_tx_packets_total{",
        "gswitch_bfc_threshold_bytes{", "gswitch_bfc_over_threshold_total{", "gswitch_port_tx_late_seconds_total{")
step = step_us * 1e-6 * k                       # this machine's seconds
samples, nxt = [], at / 1e9
end = nxt + dur_us * 1e-6 * k
time.sleep(max(0, nxt - time.time()))
while time.time() < end:
    row = {"t": time.time()}
    try:
        for line in urllib.request.urlopen(url, timeout=2).read().decode().splitlines():
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
clients=()
for h in s2 s3; do
	ip netns exec "$NAME-$h" "$WORK/gsperf" client -src "$h" -to 10.81.5.1:5500 -timescale "$K" -size "$size" -flows 1 -arrivals burst -at "$at" \
		-mode bfc -bfc-pauses="$HOST_PAUSES" -init-window "$WINDOW" -rate 100Gbit -pace 100Gbit -base-rtt "$rtt" -timeout 20ms \
		-id-base "$([ $h = s2 ] && echo 2000 || echo 3000)" -timeline "${STEP_US}us" -out "$OUT/$h.json" >"$OUT/client-$h.log" 2>&1 &
	clients+=($!)
done
wait "${clients[@]}"
wait $SAMPLER
"$WORK/gsperf" fidelity -metrics "$SW" -before "$OUT/fidelity-before.json" -json "$OUT/fidelity.json" >"$OUT/fidelity.txt"
for i in 1 2 3; do curl -s "http://127.0.0.1:$((BASE + i))/metrics" >"$OUT/metrics-sw$i.txt"; done
uptime >>"$OUT/load.txt"
python3 - "$OUT" "$K" "$d" "$d3" "$THB" "$THRTT" <<'PY'
import json, statistics, sys
out, k, d, d3 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]) * 1e-6, float(sys.argv[4]) * 1e-6
th_fixed, th_rtt = float(sys.argv[5]), float(sys.argv[6]) * 1e-6   # TH (bytes), HRTT (fabric seconds); 0: not given
rate = 100e9                                     # bit/s of the fabric, every link
S = [s for s in json.load(open(f"{out}/samples.json")) if "error" not in s]
def tot(s, pre):
    return sum(v for kk, v in s.items() if kk.startswith(pre))
def most(s, pre):
    return max([v for kk, v in s.items() if kk.startswith(pre)] or [0])
fab = lambda wall_s: wall_s / k                  # this machine's seconds -> the fabric's
# Steady state: both flows running, from 40 us of the fabric after the
# later start to 40 us before the first end (20 HRTTs from either edge).
recs = [json.load(open(f"{out}/{h}.json"))["flows"][0] for h in ("s2", "s3")]
if not all(r.get("complete") for r in recs):
    sys.exit(f"a flow did not complete: see {out}/client-*.log")
margin = 40e-6 * k
t0 = max(r["start_unix_ns"] for r in recs) / 1e9 + margin
t1 = min(r["start_unix_ns"] + r["fct_ns"] for r in recs) / 1e9 - margin
W = [s for s in S if t0 <= s["t"] <= t1]
if len(W) < 10:
    sys.exit(f"only {len(W)} samples while both flows ran: see {out}")
# Th with N_active = 2: HRTT x rate / 2, HRTT the largest of Sw2's BFC ports
# (2 x delay x K + 2 x 25 us of this machine's budget), in bytes (the same
# on both clocks); HRTT= puts its own time in the formula, TH= fixes Th.
hrtt = 2 * max(d, d3) + 2 * 25e-6 / k            # fabric seconds
th = th_fixed or max((th_rtt or hrtt) * rate / 8 / 2, 3028)
# Appendix C for x = 2 (each flow drains at half the line rate and arrives
# at up to all of it): with r = Th / (HRTT x mu_f), a queue peaks at
# (r + 1) HRTT x mu_f, its time average is (r + 1)^2 / (2r + 3) of that,
# and it runs dry 1 / (2r + 3) of the time. In Th: r = 1 gives 2 Th, 0.8 Th
# and 80 % (the default bars).
bdp = hrtt * rate / 8 / 2
r = th / bdp
mean_th = (r + 1) ** 2 / (r * (2 * r + 3))       # the model's mean queue, in Th
peak_th = (r + 1) / r                            # its peak, in Th
util_min = (2 * r + 2) / (2 * r + 3)             # a flow's share of its time with packets
ths = sorted(s.get('gswitch_bfc_threshold_bytes{port="r2"}', 0) for s in W)
dt = W[-1]["t"] - W[0]["t"]
integ = lambda s: tot(s, "gswitch_bfc_queue_byte_seconds_total{")
wire = lambda s: tot(s, "gswitch_port_tx_bytes_total{") + 24 * tot(s, "gswitch_port_tx_packets_total{")
util = (wire(W[-1]) - wire(W[0])) * 8 / (rate / k) / dt
means = [(integ(b) - integ(a)) / (b["t"] - a["t"]) / 2 for a, b in zip(W, W[1:])]
peaks = sorted(most(b, "gswitch_bfc_queue_watermark_bytes{") for b in W[1:])
mean = statistics.median(means)
p90 = peaks[len(peaks) * 9 // 10]
qdepth = lambda s: tot(s, "gswitch_queue_depth_bytes{")
empty = sum(1 for s in W if qdepth(s) == 0) / len(W)
over = tot(W[-1], "gswitch_bfc_over_threshold_total{") - tot(W[0], "gswitch_bfc_over_threshold_total{")
late = lambda s: s.get('gswitch_port_tx_late_seconds_total{port="r2"}', 0)
f2 = 2 * 1538
m = {}
for i in (1, 2, 3):
    for line in open(f"{out}/metrics-sw{i}.txt"):
        if line.startswith(("gswitch_bfc_pauses_sent_total", "gswitch_bfc_resumes_sent_total", "gswitch_drops_total", "gswitch_bfc_watchdog_resumes_total")):
            name, v = line.rsplit(" ", 1)
            if float(v) and "link_local" not in name:
                m[f"sw{i} {name}"] = float(v)
drops = sum(v for kk, v in m.items() if "drops_total" in kk)
verdict = open(f"{out}/fidelity.txt").read().strip()
ok = lambda c: "met" if c else "NOT met"
thname = "Th, N_active = 2 (HRTT x 100 Gbit/s / 2)"
if th_fixed:
    thname = "Th, fixed (TH: the th key)"
elif th_rtt:
    thname = f"Th, N_active = 2 (HRTT= {th_rtt*1e6:g} us, the hrtt key: x 100 Gbit/s / 2)"
lines = [
    f"| timescale | {k:g} (fabric time = this machine's / {k:g}) |",
    f"| steady state | {fab(dt)*1e6:.1f} us of the fabric [{dt:.2f} s], {len(means)} intervals of {fab(dt/len(means))*1e6:.1f} us |",
    f"| HRTT (largest of Sw2's ports: 2 x delay + 2 x 25 us of this machine) | {hrtt*1e6:.3f} us [{hrtt*k*1e3:.2f} ms] |",
    f"| {thname} | {th/1e3:.1f} KB (sw2's gauge, median over the samples: {ths[len(ths)//2]/1e3:.1f} KB) |",
]
if th_fixed or th_rtt:
    lines.append(f"| Th / (HRTT x 50 Gbit/s) (appendix C's r, x = 2) | {r:.2f}: mean {mean_th:.2f} Th, peak {peak_th:.2f} Th, a flow dry {(1-util_min)*100:.1f} % of the time |")
lines += [
    f"| mean queue of a flow, median interval | {mean/1e3:.1f} KB = {mean/th:.2f} Th (whole steady state {(integ(W[-1])-integ(W[0]))/dt/2/th:.2f} Th) |",
    f"| bar: {mean_th:.2g} Th +- 2 frames ({(mean_th*th-f2)/1e3:.1f} to {(mean_th*th+f2)/1e3:.1f} KB) | {ok(mean_th*th-f2 <= mean <= mean_th*th+f2)} |",
    f"| peak of a queue in an interval, 90th percentile | {p90/1e3:.1f} KB = {p90/th:.2f} Th (highest {peaks[-1]/th:.2f} Th) |",
    f"| bar: at most {peak_th:.2g} Th + 2 frames = {(peak_th*th+f2)/1e3:.1f} KB | {ok(p90 <= peak_th*th+f2)} |",
    f"| utilisation of Sw2 -> R2 | {util*100:.1f} % |",
    f"| bar: at least {util_min*100:.0f} % (appendix C) | {ok(util >= util_min)} |",
    f"| samples with nothing queued | {empty*100:.1f} % |",
    f"| line time Sw2 -> R2 lost in the steady state (its worker ran late) | {fab(late(W[-1])-late(W[0]))*1e6:.2f} us [{(late(W[-1])-late(W[0]))*1e3:.1f} ms] |",
    f"| packets counted above Th in the steady state | {over:.0f} |",
    f"| drops (all switches, whole run) | {drops:.0f} |",
    f"| fidelity (whole run) | {verdict} |",
]
for kk, v in sorted(m.items()):
    if "drops" not in kk:
        lines.append(f"| {kk} | {v:.0f} |")
open(f"{out}/summary.md", "w").write("| | |\n|---|---|\n" + "\n".join(lines) + "\n")
try:
    valid = json.load(open(f"{out}/fidelity.json"))["valid"]
except (OSError, ValueError, KeyError):
    valid = None
whole = (integ(W[-1]) - integ(W[0])) / dt        # both queues together, whole steady state
json.dump({"th_bytes": th, "th_gauge_bytes": ths[len(ths) // 2], "th_fixed_bytes": th_fixed, "th_hrtt_s": th_rtt,
           "hrtt_s": hrtt, "r": r, "model_mean_th": mean_th, "model_peak_th": peak_th, "model_util_min": util_min,
           "mean_bytes": mean, "mean_th": mean / th, "port_mean_bytes": whole, "p90_peak_bytes": p90, "p90_peak_th": p90 / th,
           "max_peak_bytes": peaks[-1], "max_peak_th": peaks[-1] / th, "util": util, "empty": empty,
           "over_threshold": over, "drops": drops,
           "pauses_sent": sum(v for kk, v in m.items() if "pauses_sent" in kk),
           "mean_bar_met": mean_th * th - f2 <= mean <= mean_th * th + f2, "peak_bar_met": p90 <= peak_th * th + f2,
           "util_bar_met": util >= util_min, "valid": valid, "verdict": verdict,
           "steady_fabric_s": fab(dt), "intervals": len(means), "timescale": k}, open(f"{out}/summary.json", "w"), indent=1)
print("\n".join(lines))
# For gsperf plot -kind queue: per interval, the mean queue of a flow and
# the peak of any queue, and Th; the step on both clocks.
step = dt / len(means)
series = {"mean per flow": means, "peak of any queue": [most(b, "gswitch_bfc_queue_watermark_bytes{") for b in W[1:]], "Th": [th] * len(means)}
json.dump({"metrics": "sw2", "step_ns": int(step * 1e9), "step_fabric_ns": int(fab(step) * 1e9), "timescale": k, "bytes": series}, open(f"{out}/queues.json", "w"))
PY
"$WORK/gsperf" plot -kind queue -title "BFC Fig. 7: Sw2 -> R2, two flows at 100 Gbit/s, HRTT $(python3 -c "print(f'{2*max($d,$d3)+50/$K:.3f}')") us (wire bytes per ${STEP_US} us)" -out "$OUT/queue.png" "$OUT/queues.json"
echo "results in $OUT (summary.md, queue.png)"
