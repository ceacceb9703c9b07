#!/usr/bin/env bash
# gsperf-cpu.sh — what paced gsperf senders cost the machine, without a
# switch: N clients (one flow of SIZE each, paced to RATE, no congestion
# control) in one namespace send to one server in another over a veth pair.
# Prints the flows' completion times (the ideal is SIZE at RATE), and, over
# a window in the middle of the run, the context switches per second and
# the share of the CPUs left idle (from /proc/stat).
#
#   sudo scripts/experiments/gsperf-cpu.sh [N] [RATE] [SIZE]   (defaults 16 10Mbit 6MB)
#
# GSPERF=path runs another gsperf binary (to compare builds).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/go/bin
N=${1:-16} RATE=${2:-10Mbit} SIZE=${3:-6MB}
[ "$(id -u)" = 0 ] || { echo "gsperf-cpu.sh: needs root (namespaces)" >&2; exit 1; }
work=$(mktemp -d)
G=${GSPERF:-$work/gsperf}
[ -n "${GSPERF:-}" ] || go build -o "$G" ./cmd/gsperf
id=$$
A=gscpuA$id B=gscpuB$id
srv=
cleanup() {
	if [ -n "$srv" ]; then { kill -9 "$srv"; wait "$srv"; } 2>/dev/null || true; fi
	ip netns del "$A" 2>/dev/null || true
	ip netns del "$B" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
ip netns add "$A"
ip netns add "$B"
ip link add gsc$id netns "$A" type veth peer name gsd$id netns "$B"
ip -n "$A" addr add 10.250.0.1/24 dev gsc$id
ip -n "$B" addr add 10.250.0.2/24 dev gsd$id
ip -n "$A" link set gsc$id up
ip -n "$B" link set gsd$id up
ip netns exec "$B" "$G" server -bind 10.250.0.2:5500 -report 0 >/dev/null 2>&1 &
srv=$!
sleep 0.5
at=$(($(date +%s%N) + 3000000000))
pids=()
for i in $(seq 1 "$N"); do
	ip netns exec "$A" "$G" client -src c$i -to 10.250.0.2:5500 -size "$SIZE" -flows 1 -arrivals burst -mode plain \
		-rate "$RATE" -pace "$RATE" -base-rtt 2ms -init-window 64MB -rto 5s -timeout 120s -at $at -id-base $((i * 1000)) \
		-out "$work/c$i.json" >/dev/null 2>&1 &
	pids+=($!)
done
# The window: from 1 s after the start for 1 s.
while [ "$(date +%s%N)" -lt $((at + 1000000000)) ]; do sleep 0.05; done
read -r -a c1 < <(grep '^cpu ' /proc/stat)
x1=$(awk '/^ctxt/ {print $2}' /proc/stat)
t1=$(date +%s%N)
sleep 1
read -r -a c2 < <(grep '^cpu ' /proc/stat)
x2=$(awk '/^ctxt/ {print $2}' /proc/stat)
t2=$(date +%s%N)
wait "${pids[@]}"
sum() { local s=0; for v in "$@"; do s=$((s + v)); done; echo $s; }
tot=$(($(sum "${c2[@]:1}") - $(sum "${c1[@]:1}")))
idle=$((c2[4] - c1[4]))
python3 - "$work" "$N" "$RATE" "$SIZE" $(((x2 - x1) * 1000000000 / (t2 - t1))) $((100 * idle / tot)) <<'EOF'
import glob, json, sys
work, n, rate, size, ctxt, idle = sys.argv[1:]
fcts = sorted(json.load(open(f))['flows'][0]['fct_ns'] / 1e9 for f in glob.glob(work + '/c*.json'))
print(f"{n} clients x {size} at {rate}: {ctxt} context switches/s, {idle}% of the CPUs idle (1 s window); "
      f"completion times min {fcts[0]:.2f} s, median {fcts[len(fcts)//2]:.2f} s, max {fcts[-1]:.2f} s ({len(fcts)} of {n} complete)")
EOF
