#!/usr/bin/env bash
# pfabric-serial.sh — after pFabric's Figure 5(a): SENDERS (default five,
# at most five) equal gsperf transfers (SIZE each, pfabric mode) from as
# many hosts start together toward
# one host behind a port shaped to RATE with the pfabric scheduler. pFabric
# serves them essentially one at a time. Prints each completion time and
# the time all the bytes need at the port's rate, and draws throughput over
# time per flow.
#
#   sudo scripts/experiments/pfabric-serial.sh       # about 30 s
set -euo pipefail
. "$(dirname "$0")/../lib/topo.sh"
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/go/bin
RATE=${RATE:-200Mbit} SIZE=${SIZE:-5MB} PFABRIC_RTO=${PFABRIC_RTO:-3ms} BASE_RTT=${BASE_RTT:-500us} PACE=${PACE-$RATE} PACE_BURST=${PACE_BURST:-4} SENDERS=${SENDERS:-5}
case $SENDERS in [1-5]) ;; *) echo "SENDERS=$SENDERS: 1 to 5" >&2; exit 1 ;; esac
OUT=${OUT:-results-pfabric-serial-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
ID=$(topo_id gp)
exp_begin $ID 6 10.206.0
{
	echo "ports:"
	for i in 1 2 3 4 5 6; do
		if [ $i = 6 ]; then
			echo "  - {name: p$i, interface: $(topo_port $ID $i), rate: $RATE, $(policy_keys pfabric)}"
		else
			echo "  - {name: p$i, interface: $(topo_port $ID $i)}"
		fi
	done
	echo "metrics: \"off\""
} >"$WORK/gswitchd.yaml"
switch_start "$OUT/gswitchd.log"
ip netns exec $ID-h6 "$WORK/gsperf" server -bind 10.206.0.6:5500 >"$OUT/server.log" 2>&1 &
disown
for i in $(seq 1 "$SENDERS"); do ip netns exec $ID-h$i ping -c 1 -W 1 10.206.0.6 >/dev/null; done
clients=()
at=$(($(date +%s%N) + 1500000000)) # every client starts its flow at this instant
for i in $(seq 1 "$SENDERS"); do
	ip netns exec $ID-h$i "$WORK/gsperf" client -src h$i -to 10.206.0.6:5500 -size "$SIZE" -flows 1 -arrivals burst -at $at -mode pfabric \
		-rate "$RATE" -rto "$PFABRIC_RTO" -base-rtt "$BASE_RTT" -pace "$PACE" -pace-burst "$PACE_BURST" -timeline 20ms -id-base $i -out "$WORK/h$i.json" >"$OUT/client-h$i.log" 2>&1 &
	clients+=($!)
done
wait "${clients[@]}"
"$WORK/gsperf" merge -name pfabric-serial -out "$OUT/flows.json" "$WORK"/h?.json >/dev/null
"$WORK/gsperf" plot -kind throughput -title "pFabric: $SENDERS $SIZE flows into a $RATE port" -out "$OUT/throughput.png" "$OUT/flows.json"
python3 - "$OUT/flows.json" "$RATE" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rate = sys.argv[2].lower().rstrip("bit")
bps = float(rate[:-1]) * {"k": 1e3, "m": 1e6, "g": 1e9}[rate[-1]]
mss, over = 1514 - 14 - 20 - 8 - 64, 64 + 8 + 20 + 14 + 24
wire = sum(f["size"] + -(-f["size"] // mss) * over for f in r["flows"])
ideal = wire * 8 / bps
fl = [f for f in r["flows"] if f["complete"]]
if len(fl) < len(r["flows"]):
    sys.exit(f"{len(r['flows']) - len(fl)} flows did not complete")
t0 = min(f["start_unix_ns"] for f in fl)
ends = sorted((f["start_unix_ns"] + f["fct_ns"] - t0) / 1e9 for f in fl)
print(f"flows started within {(max(f['start_unix_ns'] for f in fl) - t0) / 1e6:.2f} ms of each other")
print("completion times since the first start (s): " + " ".join(f"{x:.3f}" for x in ends))
print(f"all bytes at {sys.argv[2]}: {ideal:.3f} s; the last flow finished at {ends[-1]/ideal:.3f} x that")
PY
echo "plot: $OUT/throughput.png"
