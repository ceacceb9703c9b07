#!/usr/bin/env bash
# afq-fairness.sh — after AFQ's Figure 14: four iperf3 TCP flows from four
# hosts into one port shaped to RATE, started at 0, 5, 10, 15 s and stopped
# at 40, 35, 30, 25 s, once with SCHED=afq and once with fifo. For every
# phase (k flows active) it prints each flow's share of the fair rate and the
# Jain index, from the senders' 1 s intervals (the second after each start
# or stop is left out). Then one CUBIC and one BBR flow together under each.
#
#   sudo scripts/experiments/afq-fairness.sh        # about 2 minutes
set -euo pipefail
. "$(dirname "$0")/../lib/topo.sh"
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/go/bin
RATE=${RATE:-200Mbit} SCHEDS=${SCHEDS:-"fifo afq"} BUFFER=${BUFFER:-512KB}
OUT=${OUT:-results-afq-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
ID=$(topo_id ga)
exp_begin $ID 5 10.205.0
run_switch() { # sched
	{
		echo "ports:"
		for i in 1 2 3 4; do echo "  - {name: p$i, interface: $(topo_port $ID $i)}"; done
		echo "  - {name: p5, interface: $(topo_port $ID 5), rate: $RATE, buffer: $BUFFER, $(policy_keys $1), queues: 32}"
		echo "metrics: \"off\""
	} >"$WORK/gswitchd.yaml"
	switch_start "$OUT/gswitchd-$1.log"
	for i in 1 2 3 4; do ip netns exec $ID-h$i ping -c 1 -W 1 10.205.0.5 >/dev/null; done
}
for i in 1 2 3 4; do ip netns exec $ID-h5 iperf3 -s -D -B 10.205.0.5 -p $((5200 + i)); done
sleep 0.5
for s in $SCHEDS; do
	echo "== staggered flows, $s"
	run_switch "$s"
	pids=()
	for i in 1 2 3 4; do
		(sleep $(((i - 1) * 5)); ip netns exec $ID-h$i timeout 60 iperf3 -c 10.205.0.5 -p $((5200 + i)) -t $((40 - 10 * (i - 1))) \
			-J >"$OUT/stagger-$s-f$i.json") &
		pids+=($!)
	done
	wait "${pids[@]}"
	switch_stop
	echo "== cubic and bbr together, $s"
	run_switch "$s"
	ip netns exec $ID-h1 timeout 40 iperf3 -c 10.205.0.5 -p 5201 -t 20 -C cubic -J >"$OUT/mix-$s-cubic.json" &
	a=$!
	ip netns exec $ID-h2 timeout 40 iperf3 -c 10.205.0.5 -p 5202 -t 20 -C bbr -J >"$OUT/mix-$s-bbr.json" &
	b=$!
	wait $a $b
	switch_stop
done
python3 - "$OUT" "$RATE" $SCHEDS <<'PY'
import json, sys
out, rate, scheds = sys.argv[1], sys.argv[2], sys.argv[3:]
mult = {"k": 1e3, "m": 1e6, "g": 1e9}[rate.lower().rstrip("bit")[-1]]
line = float(rate.lower().rstrip("bit")[:-1]) * mult * 1448 / 1538  # TCP payload at the line rate
def recv_series(path, offset):
    d = json.load(open(path))  # the sender's 1 s intervals: the port's queue (at most 20 ms) barely shifts them
    return {int(round(offset + iv["sum"]["start"])): iv["sum"]["bits_per_second"] for iv in d.get("intervals", [])}
def jain(x):
    return sum(x) ** 2 / (len(x) * sum(v * v for v in x)) if x else 0
for s in scheds:
    series = [recv_series(f"{out}/stagger-{s}-f{i}.json", 5 * (i - 1)) for i in range(1, 5)]
    print(f"\n{s}: staggered flows (start 0/5/10/15 s, stop 40/35/30/25 s); share = goodput / (payload line rate / k)")
    print("  phase        k   flow shares                      Jain")
    phases = [(0, 5), (5, 10), (10, 15), (15, 25), (25, 30), (30, 35), (35, 40)]
    for a, b in phases:
        act = [i for i in range(4) if 5 * i <= a and b <= 40 - 5 * i]
        k = len(act)
        means = []
        for i in act:
            v = [series[i][t] for t in range(a + 1, b - 1) if t in series[i]]
            means.append(sum(v) / len(v) if v else 0)
        shares = [m / (line / k) for m in means]
        print(f"  {a:2d}-{b:2d} s    {k}   " + " ".join(f"{x:5.2f}" for x in shares).ljust(32) + f" {jain(means):.4f}")
    for cc in ["cubic", "bbr"]:
        d = json.load(open(f"{out}/mix-{s}-{cc}.json"))
        g = d["end"]["sum_received"]["bits_per_second"]
        print(f"  {s}: {cc} alone with the other: {g/1e6:6.1f} Mbit/s = {g/line:.2f} of the port")
PY
echo "raw iperf3 JSON in $OUT"
