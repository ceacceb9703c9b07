#!/usr/bin/env bash
# bfc-fig7b.sh — after BFC's Figure 7(b) (NSDI'22, section 6.1): Fig. 7(a)'s
# two flows on the three-switch testbed at the paper's parameters
# (topologies/bfc-testbed.yaml: 100 Gbit/s links, 16 queues per port, 1 us
# of propagation per link, run at its timescale, 10000), repeated "but
# vary the pause threshold": the paper plots the average queue and the
# under-utilisation of the congested link (Sw2 -> R2) against the
# threshold, given as a time ("with a pause threshold of 2 us, BFC achieves
# close to 100% utilization with an average queue length of 15 KB").
#
# Each value of THS is one run of scripts/experiments/bfc-fig7.sh per
# round (RUNS rounds, the values taking turns within each, so that a spell
# of load from elsewhere falls on all of them alike), in OUT/th-VALUE/rRUN
# with everything that script keeps (summary.md, summary.json, queue.png,
# fidelity.json, the samples). How a value sets the threshold (KIND):
#
#   hrtt   (default) the value is the time in Th's formula, Th = value x
#          100 Gbit/s / N_active (bfc-fig7.sh HRTT=: the hrtt key of every
#          port, the sticky time pinned to its default); 2us is the
#          default run's Th, whose real HRTT is 2.005 us
#   fixed  the value is a fixed Th of every queue (bfc-fig7.sh TH=: the th
#          key), a time taken at the line rate (2us = 25 KB) or a size
#          (25KB)
#
# OUT/summary.md has one row per value (over the runs whose fidelity
# verdict is VALID; over all of them, marked so, if none is): Th in KB and
# against HRTT x 50 Gbit/s (appendix C's r, each flow draining at half the
# line rate), the mean queue of a flow and of the port (KB and Th), the
# peak of a queue per 10 us (90th percentile and highest, KB and Th), the
# utilisation of Sw2 -> R2 and its complement (the paper's
# under-utilisation), appendix C's mean, peak and least utilisation for
# that Th, pauses sent, drops and the valid runs; then a row per run.
# Times are the fabric's.
#
#   sudo scripts/experiments/bfc-fig7b.sh                      # 5 values x 1 run of 20-45 s: 2-4 minutes
#   RUNS=5 sudo -E scripts/experiments/bfc-fig7b.sh            # 25 runs: 10-20 minutes
#   KIND=fixed THS="1us 2us 3us 4us" RUNS=5 sudo -E scripts/experiments/bfc-fig7b.sh
#
# THS="0.5us 1us 2us 4us 8us" (the paper's values are not in its text: 0.5
# us puts Th at the floor of two frames, 3,028 B, with N_active = 2),
# KIND=hrtt, RUNS=1, OUT=results-bfc-fig7b-DATE. Everything else passes
# through to bfc-fig7.sh (FLOW_US, STEP_US, WINDOW, HOST_PAUSES, DELAY3,
# TIMESCALE, BFC_KEYS, SWITCH_KEYS; GSWITCHD, else one build of gswitchd
# serves every run).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/go/bin
[ "$(id -u)" = 0 ] || { echo "$0: run as root (namespaces, veths, XDP)" >&2; exit 1; }
THS=${THS:-"0.5us 1us 2us 4us 8us"} KIND=${KIND:-hrtt} RUNS=${RUNS:-1}
case $KIND in
hrtt) var=HRTT ;;
fixed) var=TH ;;
*) echo "$0: KIND=$KIND: hrtt or fixed" >&2; exit 1 ;;
esac
OUT=${OUT:-results-bfc-fig7b-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
if [ -n "${GSWITCHD:-}" ]; then cp "$GSWITCHD" "$WORK/gswitchd"; else go build -o "$WORK/gswitchd" ./cmd/gswitchd; fi
{
	echo "date: $(date -u +%FT%TZ)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "THS=$THS KIND=$KIND RUNS=$RUNS"
	echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/env.txt"
for r in $(seq 1 "$RUNS"); do
	for v in $THS; do
		d=$OUT/th-$v/r$r
		mkdir -p "$d"
		echo "== $var=$v, run $r"
		if env -u TH -u HRTT "$var=$v" OUT="$d" GSWITCHD="$WORK/gswitchd" scripts/experiments/bfc-fig7.sh >"$d/run.log" 2>&1; then
			grep -E '^\| (mean queue|peak of a queue|utilisation|fidelity)' "$d/run.log" | cut -c1-150 || true
		else
			echo "  failed: see $d/run.log"
			tail -n 3 "$d/run.log" | sed 's/^/  /'
		fi
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/env.txt"
python3 - "$OUT" "$KIND" "$THS" "$RUNS" <<'PY'
import json, statistics, sys
out, kind, ths, runs = sys.argv[1], sys.argv[2], sys.argv[3].split(), int(sys.argv[4])
def load(v, r):
    try:
        return json.load(open(f"{out}/th-{v}/r{r}/summary.json"))
    except (OSError, ValueError):
        return None
def avg(xs):
    return statistics.mean(xs) if xs else float("nan")
def spread(xs, f="{:.1f}"):
    if not xs:
        return "–"
    s = f.format(avg(xs))
    return s + (f" ({f.format(min(xs))}–{f.format(max(xs))})" if len(xs) > 1 else "")
how = {"hrtt": "Th = value x 100 Gbit/s / N_active (the hrtt key)", "fixed": "Th fixed at the value (the th key; a time at 100 Gbit/s)"}[kind]
head = [f"BFC Fig. 7(b): two flows into Sw2 -> R2 (100 Gbit/s, x = 2), the pause threshold swept; {how}.",
        "Means over the runs with a VALID fidelity verdict (* : none was, over all runs), the range over them in brackets.",
        "r = Th / (HRTT x 50 Gbit/s), HRTT the real one-hop RTT; the model is appendix C's for that r.", "",
        "| threshold | Th (KB) | r | mean queue of a flow (KB) | mean queue of a flow (Th) | mean queue of the port (KB) | peak of a queue, p90 (KB) | peak p90 (Th) | highest peak (Th) | utilisation (%) | under-utilisation (%) | model: mean / peak (Th), least utilisation | pauses sent | drops | valid runs (fidelity) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
rows, per = [], []
for v in ths:
    got = [(r, s) for r in range(1, runs + 1) if (s := load(v, r)) is not None]
    valid = [s for _, s in got if s.get("valid")]
    use, mark = (valid, "") if valid else ([s for _, s in got], "*")
    for r in range(1, runs + 1):
        s = load(v, r)
        if s is None:
            per.append(f"| {v} run {r} | failed (see th-{v}/r{r}/run.log) |" + " |" * 8)
            continue
        per.append(f"| {v} run {r} | {s['th_bytes']/1e3:.1f} | {s['mean_bytes']/1e3:.1f} | {s['mean_th']:.2f} | {s['p90_peak_th']:.2f} | {s['max_peak_th']:.2f} | "
                   f"{s['util']*100:.1f} | {'met' if s['mean_bar_met'] else 'NOT met'} / {'met' if s['peak_bar_met'] else 'NOT met'} / {'met' if s['util_bar_met'] else 'NOT met'} | "
                   f"{s['pauses_sent']:.0f} | {s['verdict'][:60].replace('|', '/')} |")
    if not use:
        rows.append(f"| {v} | no run completed |" + " |" * 12 + f" 0 of {runs} |")
        continue
    g = lambda key, scale=1: [s[key] * scale for s in use]
    m = use[0]
    rows.append(f"| {v}{mark} | {avg(g('th_bytes', 1e-3)):.1f} | {m['r']:.2f} | {spread(g('mean_bytes', 1e-3))} | {spread(g('mean_th'), '{:.2f}')} | "
                f"{spread(g('port_mean_bytes', 1e-3))} | {spread(g('p90_peak_bytes', 1e-3))} | {spread(g('p90_peak_th'), '{:.2f}')} | "
                f"{max(g('max_peak_th')):.2f} | {spread(g('util', 100))} | {100 - avg(g('util', 100)):.1f} | "
                f"{m['model_mean_th']:.2f} / {m['model_peak_th']:.2f}, {m['model_util_min']*100:.0f} % | {avg(g('pauses_sent')):.0f} | {sum(g('drops')):.0f} | "
                f"{len(valid)} of {runs} ({len(got)} completed) |")
runs_head = ["", "Each run (bars: bfc-fig7.sh's, from appendix C for that Th: mean, peak p90, utilisation):", "",
             "| run | Th (KB) | mean queue of a flow (KB) | mean (Th) | peak p90 (Th) | highest peak (Th) | utilisation (%) | bars: mean / peak / utilisation | pauses sent | fidelity |",
             "|---|---|---|---|---|---|---|---|---|---|"]
text = "\n".join(head + rows + runs_head + per) + "\n"
open(f"{out}/summary.md", "w").write(text)
print(text)
PY
echo "results in $OUT (summary.md; each run in th-VALUE/rRUN)"
