#!/usr/bin/env bash
# latency-bench.sh — the latency benchmark, beside bench.sh, in one go
# (about 5 minutes): what a switch adds to a round trip and what it carries
# at MTU 9000, each against the Linux bridge (and a direct veth) on the
# same topology, into one directory with one summary:
#
#   1. ping at low load (scripts/latency.sh): p50/p99/p99.9 through a direct
#      veth, the bridge, gswitchd sleeping, busy-polling and pinned, and the
#      C reference AF_XDP forwarder when libxdp-dev is installed (what any
#      AF_XDP forwarder on these veths costs at best);
#   2. latency under load (scripts/experiments/rpc-latency.sh): 1 KB
#      requests while a bulk flow fills a 200 Mbit/s port, under fifo, drr,
#      afq and pfabric;
#   3. TCP at MTU 1500 and 9000 (scripts/experiments/jumbo.sh), gswitchd
#      against the bridge, with CPU-seconds per Gbit.
#
#   sudo scripts/latency-bench.sh
#   OUT=dir COUNT=1000 REPS=1 sudo -E scripts/latency-bench.sh   # shorter
#
# Each part's own knobs pass through (COUNT, ROUNDS for latency.sh; REPS,
# DUR for jumbo.sh; FLOWS, RPS for rpc-latency.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "$0: run as root (namespaces, veths, XDP)" >&2; exit 1; }
OUT=${OUT:-results-latency-bench-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cases="direct bridge gswitchd busy pinned"
if [ -f /usr/include/xdp/xsk.h ] && [ -f "${BENCH_DIR:-../shared/bench}/xsk_fwd.c" ]; then
	cases="$cases xsk"
else
	echo "latency-bench.sh: no libxdp-dev or no xsk_fwd.c: the ping part runs without the C reference forwarder" >&2
fi
CASES=${CASES:-$cases} OUT=$OUT/ping scripts/latency.sh
OUT=$OUT/rpc scripts/experiments/rpc-latency.sh
OUT=$OUT/jumbo scripts/experiments/jumbo.sh
{
	echo "# Latency benchmark, $(date -u +%Y-%m-%dT%H:%MZ), $(uname -r), $(nproc) CPUs"
	echo
	echo "## Ping at low load (ping/)"
	echo
	cat "$OUT/ping/table.md"
	echo
	echo "## 1 KB requests while a bulk flow fills a 200 Mbit/s port (rpc/)"
	echo
	cat "$OUT/rpc/table.md"
	echo
	echo "## TCP at MTU 1500 and 9000 (jumbo/)"
	echo
	cat "$OUT/jumbo/table.md"
} >"$OUT/summary.md"
echo "summary in $OUT/summary.md"
