#!/usr/bin/env bash
# bench.sh — gswitchd against the Linux bridge and the reference C AF_XDP
# forwarder, in one run on one topology (../shared/bench: two hosts on veths,
# offloads off). iperf3 TCP Gbit/s and 64-byte UDP frames forwarded per
# second, REPS runs each; prints medians and gswitchd's ratios. Run as root.
#
#   sudo scripts/bench.sh                      # 3 x 10 s per cell, ~6 minutes
#   REPS=1 DUR=5 sudo -E scripts/bench.sh      # quick look
#   WORKERS=2 sudo -E scripts/bench.sh         # gswitchd with two workers
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
ROOT=$PWD
SRC=${BENCH_DIR:-$ROOT/../shared/bench}
[ -f "$SRC/run.sh" ] || { echo "bench.sh: no $SRC/run.sh (set BENCH_DIR)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "bench.sh: run as root" >&2; exit 1; }
command -v python3 >/dev/null || { apt-get update -qq; apt-get install -y -qq python3 >/dev/null; }

WORK=$(mktemp -d /tmp/gswitch-bench.XXXXXX)
cp -r "$SRC/." "$WORK/kit"
chmod -R u+w "$WORK/kit"
rm -rf "$WORK/kit/results"
go build -o "$WORK/gswitchd" ./cmd/gswitchd
cat >"$WORK/gswitchd.yaml" <<YAML
ports:
  - {name: s1, interface: s1}
  - {name: s2, interface: s2}
workers: ${WORKERS:-0}
busy_poll: ${BUSY_POLL:-false}
metrics: "off"
YAML
export CONFIGS=${CONFIGS:-"bridge xsk cmd"} TRAFFIC=${TRAFFIC:-"tcp udp64"} REPS=${REPS:-3} DUR=${DUR:-10}
export FWD_CMD="$WORK/gswitchd -config $WORK/gswitchd.yaml" OUT="$WORK/results"
"$WORK/kit/run.sh"
cp "$WORK/gswitchd.yaml" "$OUT/"
python3 - "$OUT" <<'PY'
import csv, statistics, sys
out = sys.argv[1]
rows = list(csv.DictReader(open(out + "/runs.tsv"), delimiter="\t"))
def med(cfg, tr, col):
    v = [float(r[col]) for r in rows if r["cfg"] == cfg and r["traffic"] == tr and r.get(col) not in (None, "", "nan")]
    return statistics.median(v) if v else float("nan")
names = {"bridge": "Linux bridge", "xsk": "C xsk_fwd (reference)", "cmd": "gswitchd"}
print("\n%-24s %12s %10s %14s" % ("forwarder", "TCP Gbit/s", "TCP retr", "UDP64 fwd kpps"))
for c in ["bridge", "xsk", "cmd"]:
    print("%-24s %12.2f %10.0f %14.0f" % (names[c], med(c, "tcp", "recv_gbps"), med(c, "tcp", "retrans"), med(c, "udp64", "fwd_kpps")))
for ref in ["xsk", "bridge"]:
    print("gswitchd / %-13s TCP %.2fx   UDP64 %.2fx" % (names[ref].split(" (")[0], med("cmd", "tcp", "recv_gbps") / med(ref, "tcp", "recv_gbps"),
          med("cmd", "udp64", "fwd_kpps") / med(ref, "udp64", "fwd_kpps")))
print("(medians of %d runs; all runs: %s/runs.tsv, %s/summary.md)" % (max(1, len([r for r in rows if r["cfg"] == "cmd" and r["traffic"] == "tcp"])), out, out))
PY
echo "results kept in $OUT"
