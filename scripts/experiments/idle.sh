#!/usr/bin/env bash
# idle.sh — what idle switches cost (issue 16: "the idle CPU of a switch
# with no traffic stays under 1%, and seven idle switches on two cores stay
# usable"). Starts N gswitchd (default 7), each on two veth ports of its own
# with nothing on them, waits for them to settle, then measures over SECS
# (default 30) each one's CPU time (utime + stime from /proc/PID/stat) and
# the whole machine's busy share (/proc/stat), and times 200 pings between
# two namespaces on a veth of their own (not through a switch) to show
# whether the machine stays usable. Run as root on an otherwise idle machine.
#
#   sudo scripts/experiments/idle.sh
#   N=1 SECS=10 sudo -E scripts/experiments/idle.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/go/bin
. scripts/lib/env.sh
[ "$(id -u)" = 0 ] || { echo "idle.sh: run as root" >&2; exit 1; }
N=${N:-7} SECS=${SECS:-30}
OUT=${OUT:-results-idle-$(date +%Y%m%d-%H%M%S)}
ID=id$(od -An -N2 -tx1 /dev/urandom | tr -d ' \n')
WORK=$(mktemp -d)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	for i in $(seq 1 "$N"); do
		ip link del "${ID}s${i}a" 2>/dev/null || true
		ip link del "${ID}s${i}b" 2>/dev/null || true
	done
	ip netns del "${ID}-a" 2>/dev/null || true
	ip netns del "${ID}-b" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
go build -o "$WORK/gswitchd" ./cmd/gswitchd
env_header "N=$N SECS=$SECS" >"$OUT/env.txt"
for i in $(seq 1 "$N"); do
	for s in a b; do
		ip link add "${ID}s${i}$s" type veth peer name "${ID}p${i}$s"
		ip link set "${ID}s${i}$s" up
		ip link set "${ID}p${i}$s" up
	done
	printf 'ports:\n  - {name: a, interface: %s}\n  - {name: b, interface: %s}\nmetrics: "off"\ncontrol: {socket: off}\n' \
		"${ID}s${i}a" "${ID}s${i}b" >"$WORK/sw$i.yaml"
	"$WORK/gswitchd" -config "$WORK/sw$i.yaml" >"$OUT/sw$i.log" 2>&1 &
	PIDS+=($!)
done
ip netns add "${ID}-a"
ip netns add "${ID}-b"
ip link add "${ID}va" netns "${ID}-a" type veth peer name "${ID}vb" netns "${ID}-b"
ip -n "${ID}-a" link set "${ID}va" up
ip -n "${ID}-b" link set "${ID}vb" up
ip -n "${ID}-a" addr add 10.209.0.1/24 dev "${ID}va"
ip -n "${ID}-b" addr add 10.209.0.2/24 dev "${ID}vb"
sleep 3
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat; }
declare -A c0
for p in "${PIDS[@]}"; do c0[$p]=$(cpu "$p"); done
read -r b0 t0 < <(busy)
ip netns exec "${ID}-a" ping -c 200 -i "$(python3 -c "print($SECS/200)")" 10.209.0.2 |
	sed -n 's/.*time=\([0-9.]*\) ms.*/\1/p' >"$OUT/ping.txt"
read -r b1 t1 < <(busy)
HZ=$(getconf CLK_TCK)
{
	echo "| switch | CPU % of one CPU over ${SECS} s |"
	echo "|---|---|"
	i=0
	for p in "${PIDS[@]}"; do
		i=$((i + 1))
		echo "| sw$i | $(python3 -c "print(f'{100*($(cpu "$p")-${c0[$p]})/$HZ/$SECS:.2f}')") |"
	done
	python3 - "$OUT/ping.txt" $((b1 - b0)) $((t1 - t0)) <<'PY'
import sys
v = sorted(float(x) * 1000 for x in open(sys.argv[1]) if x.strip())
b, t = int(sys.argv[2]), int(sys.argv[3])
print(f"\nmachine busy over the window: {100 * b / max(1, t):.2f}% of all CPUs")
if v:
    q = lambda p: v[min(len(v) - 1, int(p * len(v)))]
    print(f"ping on a veth beside them (no switch): {len(v)} replies, p50 {q(0.5):.0f} µs, p99 {q(0.99):.0f} µs, max {v[-1]:.0f} µs")
PY
} | tee "$OUT/table.md"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/env.txt"
echo "results in $OUT"
