#!/usr/bin/env bash
# jumbo.sh — TCP through gswitchd against the Linux bridge at MTU 1500 and
# MTU 9000, on one topology in one run (issue 16): two hosts in network
# namespaces, each on a veth to a switch port, offloads off. For each MTU,
# REPS runs of iperf3 (DUR seconds, one stream) alternate between the
# bridge and gswitchd. At MTU 9000 gswitchd receives and sends each frame
# as a multi-buffer chain of UMEM frames (docs/architecture.md, "Jumbo
# frames"). Besides Gbit/s and retransmits, each run records the machine's
# CPU use (all CPUs, from /proc/stat) and gswitchd's own CPU time, as
# CPU-seconds per forwarded Gbit.
#
#   sudo scripts/experiments/jumbo.sh             # 3 x 10 s per cell, ~2.5 min
#   REPS=1 DUR=5 sudo -E scripts/experiments/jumbo.sh
#   CPUS=0 sudo -E scripts/experiments/jumbo.sh    # gswitchd's worker pinned (cpus: [0])
#   SWITCH_KEYS="workers: 2" sudo -E scripts/experiments/jumbo.sh   # more gswitchd keys (lines of YAML)
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=$PATH:/usr/local/go/bin
. scripts/lib/topo.sh
. scripts/lib/env.sh
REPS=${REPS:-3} DUR=${DUR:-10} MTUS=${MTUS:-"1500 9000"}
OUT=${OUT:-results-jumbo-$(date +%Y%m%d-%H%M%S)}
ID=$(topo_id jb)
BR=${ID}br
exp_begin "$ID" 2 10.205.0
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
trap 'ip link del "$BR" 2>/dev/null || true; exp_end' EXIT
env_header "REPS=$REPS DUR=$DUR MTUS=$MTUS CPUS=${CPUS:-} SWITCH_KEYS=${SWITCH_KEYS:-}" >"$OUT/env.txt"
P1=$(topo_port "$ID" 1) P2=$(topo_port "$ID" 2)
H1=$ID-h1 H2=$ID-h2

setmtu() {
	ip link set "$P1" mtu "$1"
	ip link set "$P2" mtu "$1"
	ip -n "$H1" link set eth0 mtu "$1"
	ip -n "$H2" link set eth0 mtu "$1"
}
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat; } # busy and total jiffies
proc_cpu() { [ -n "${PID:-}" ] && awk '{print $14+$15}' "/proc/$PID/stat" 2>/dev/null || echo 0; }

ip netns exec "$H2" iperf3 -s -D -B 10.205.0.2 -p 5201
sleep 0.3
echo -e "mtu\tfwd\trep\tgbps\tretrans\tmachine_cpu_s\tfwd_cpu_s" >"$OUT/runs.tsv"
HZ=$(getconf CLK_TCK)
for mtu in $MTUS; do
	setmtu "$mtu"
	for rep in $(seq 1 "$REPS"); do
		for fwd in bridge gswitchd; do
			if [ "$fwd" = bridge ]; then
				ip link add "$BR" type bridge
				ip link set "$BR" mtu "$mtu" up
				for p in "$P1" "$P2"; do ip link set "$p" master "$BR"; done
			else
				printf 'ports:\n  - {name: p1, interface: %s}\n  - {name: p2, interface: %s}\ncpus: [%s]\nmetrics: "off"\ncontrol: {socket: off}\n%b\n' "$P1" "$P2" "${CPUS:-}" "${SWITCH_KEYS:-}" >"$WORK/gswitchd.yaml"
				switch_start "$OUT/gswitchd-$mtu-$rep.log"
			fi
			ip netns exec "$H1" ping -c 3 -i 0.1 -q -M do -s $((mtu - 28)) 10.205.0.2 >/dev/null ||
				{ echo "jumbo.sh: $fwd at MTU $mtu does not carry full-size frames" >&2; exit 1; }
			read -r b0 t0 < <(busy)
			c0=$(proc_cpu)
			ip netns exec "$H1" iperf3 -c 10.205.0.2 -p 5201 -t "$DUR" -J >"$OUT/iperf-$mtu-$fwd-$rep.json"
			read -r b1 t1 < <(busy)
			c1=$(proc_cpu)
			python3 - "$OUT/iperf-$mtu-$fwd-$rep.json" "$mtu" "$fwd" "$rep" $((b1 - b0)) $((t1 - t0)) $((c1 - c0)) "$HZ" "$(nproc)" >>"$OUT/runs.tsv" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
mtu, fwd, rep, db, dt, dc, hz, ncpu = sys.argv[2:]
gbps = j["end"]["sum_received"]["bits_per_second"] / 1e9
secs = j["end"]["sum_received"]["seconds"]
# machine CPU-seconds over the run: busy share of all jiffies x CPUs x wall time
mach = int(db) / max(1, int(dt)) * int(ncpu) * secs
fwdc = int(dc) / int(hz) if fwd == "gswitchd" else float("nan")
print(f"{mtu}\t{fwd}\t{rep}\t{gbps:.3f}\t{j['end']['sum_sent'].get('retransmits', 0)}\t{mach:.2f}\t{fwdc:.2f}")
PY
			tail -1 "$OUT/runs.tsv"
			if [ "$fwd" = bridge ]; then ip link del "$BR"; else switch_stop; fi
		done
	done
done
python3 - "$OUT/runs.tsv" "$DUR" <<'PY' | tee "$OUT/table.md"
import csv, math, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
dur = float(sys.argv[2])
print("| MTU | forwarder | TCP Gbit/s (median, runs) | retransmits | machine CPU-s per Gbit | gswitchd CPU-s per Gbit |")
print("|---|---|---|---|---|---|")
for mtu in sorted({r["mtu"] for r in rows}, key=int):
    for fwd in ("bridge", "gswitchd"):
        rs = [r for r in rows if r["mtu"] == mtu and r["fwd"] == fwd]
        g = [float(r["gbps"]) for r in rs]
        gbit = [x * dur for x in g]  # Gbit moved in each run
        mach = statistics.median(float(r["machine_cpu_s"]) / max(1e-9, gb) for r, gb in zip(rs, gbit))
        fc = [float(r["fwd_cpu_s"]) / max(1e-9, gb) for r, gb in zip(rs, gbit)]
        fcs = "n/a (in softirq)" if any(math.isnan(x) for x in fc) else f"{statistics.median(fc):.3f}"
        print(f"| {mtu} | {fwd} | {statistics.median(g):.2f} ({', '.join(f'{x:.2f}' for x in g)}) | {statistics.median(int(r['retrans']) for r in rs):.0f} | {mach:.3f} | {fcs} |")
PY
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/env.txt"
echo "results in $OUT"
