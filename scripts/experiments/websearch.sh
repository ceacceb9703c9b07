#!/usr/bin/env bash
# websearch.sh — after pFabric's Figure 7: the web-search workload among
# four hosts through gswitchd, every port shaped to RATE, each sender at
# LOAD, run once per switch scheduler with the same flows (same seeds):
# fifo and sfq with gsperf's plain transport, pfabric with its own.
# Prints the slowdown table per scheduler and draws one plot.
#
#   sudo scripts/experiments/websearch.sh                 # 60% load, 400 flows per host (~6 min)
#   FLOWS=100 LOAD=0.6 sudo -E scripts/experiments/websearch.sh
set -euo pipefail
. "$(dirname "$0")/../lib/topo.sh"
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/go/bin
RATE=${RATE:-200Mbit} LOAD=${LOAD:-0.6} FLOWS=${FLOWS:-400} BUFFER=${BUFFER:-32KB}
# pFabric's timeout is 3 x the fabric RTT; here the RTT through a userspace
# switch with a full 32 KB queue at 200 Mbit/s is about 1.5 ms.
PFABRIC_RTO=${PFABRIC_RTO:-3ms}
# Base RTT for the slowdown (and pFabric's BDP initial window): ping through
# the switch when idle is 0.1 to 0.5 ms here.
BASE_RTT=${BASE_RTT:-500us}
# PACE=200Mbit holds each host's flows together to that line rate. Off by
# default: gsperf's pacer is shared first-come first-served by the flows of
# a client, so flows that are already sending take the tokens and a new
# small flow waits (a NIC queue would be FIFO, pFabric's NIC a priority
# queue); with it on, every scheduler's small-flow tail got far worse.
PACE=${PACE-}
SCHEDS=${SCHEDS:-"fifo sfq pfabric"}
OUT=${OUT:-results-websearch-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
ID=$(topo_id gx)
exp_begin $ID 4 10.204.0
for s in $SCHEDS; do
	mode=plain extra=()
	[ "$s" = pfabric ] && mode=pfabric extra=(-rto "$PFABRIC_RTO")
	{
		echo "ports:"
		for i in 1 2 3 4; do echo "  - {name: p$i, interface: $(topo_port $ID $i), rate: $RATE, buffer: $BUFFER, $(policy_keys $s), queues: 32}"; done
		echo "metrics: \"off\""
	} >"$WORK/gswitchd.yaml"
	switch_start "$OUT/gswitchd-$s.log"
	for i in 1 2 3 4; do ip netns exec $ID-h$i "$WORK/gsperf" server -bind 10.204.0.$i:5500 >"$OUT/server-$s-h$i.log" 2>&1 & done
	sleep 0.5
	echo "== $s ($mode transport): $FLOWS web-search flows per host at $LOAD of $RATE, paced to ${PACE:-unpaced}"
	clients=()
	for i in 1 2 3 4; do
		to=""
		for j in 1 2 3 4; do [ $i = $j ] || to="$to,10.204.0.$j:5500"; done
		ip netns exec $ID-h$i "$WORK/gsperf" client -src h$i -to "${to#,}" -workload WebSearch_distribution -flows "$FLOWS" \
			-load "$LOAD" -rate "$RATE" -mode $mode "${extra[@]}" -base-rtt "$BASE_RTT" -pace "$PACE" -seed $i -id-base $((i * 1000000)) -out "$WORK/$s-h$i.json" >"$OUT/client-$s-h$i.log" 2>&1 &
		clients+=($!)
	done
	wait "${clients[@]}"
	"$WORK/gsperf" merge -name "$s" -out "$OUT/$s.json" -csv "$OUT/$s.csv" "$WORK/$s"-h?.json | tee "$OUT/$s.txt"
	for i in 1 2 3 4; do for p in $(ip netns pids $ID-h$i); do kill "$p" 2>/dev/null || true; done; done
	switch_stop
	sleep 0.5
done
"$WORK/gsperf" plot -title "web search, $LOAD load, $RATE" -out "$OUT/slowdown.png" $(for s in $SCHEDS; do echo "$OUT/$s.json"; done)
echo "results in $OUT (per-scheduler JSON, CSV, summaries, slowdown.png)"
