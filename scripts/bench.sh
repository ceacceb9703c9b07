#!/usr/bin/env bash
# bench.sh — gswitchd against the Linux bridge and the reference C AF_XDP
# forwarder, in one run on one topology (../shared/bench: two hosts on veths,
# offloads off). iperf3 TCP Gbit/s and 64-byte UDP frames forwarded per
# second, REPS runs each; prints medians and gswitchd's ratios, and what the
# forwarding cost in CPU: CPU-seconds per Gbit (TCP) and per million frames
# (UDP64) delivered to h2, of the forwarder's process (xsk_fwd, gswitchd)
# and of the whole machine (which also holds the bridge's softirq work and
# the hosts' iperf3). Run as root, on an otherwise quiet machine: the
# machine-wide figure counts everything that runs.
#
#   sudo scripts/bench.sh                      # 3 x 10 s per cell, ~6 minutes
#   REPS=1 DUR=5 sudo -E scripts/bench.sh      # quick look
#   WORKERS=2 sudo -E scripts/bench.sh         # gswitchd with two workers
#   CPUS=0 sudo -E scripts/bench.sh            # gswitchd's worker pinned to CPU 0 (cpus: [0])
#   PORT_OPTS="role: host, source_guard: binding" sudo -E scripts/bench.sh   # keys added to both ports
#   GSWITCHD=/path/to/gswitchd CONFIGS=cmd sudo -E scripts/bench.sh          # another build of gswitchd (A/B)
#
# CPU accounting: the kit's run.sh is copied into the work directory (as
# before) and the copy gets two more snapshots per run, right after the
# kit's "before" counters and right before its "after" counters, so they
# enclose the whole iperf3 run: wall clock, /proc/stat's cpu line, the
# forwarder's utime+stime (/proc/PID/stat, all its threads) and h2 eth0's
# rx bytes and packets. CPU and forwarded traffic come from the same
# interval. Where a figure cannot be had (no process for the bridge, the
# kit changed so the copy cannot be patched, a forwarder that exited) it
# prints n/a.
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
# The copy's one_run takes a CPU snapshot (cpusnap) next to each counter
# snapshot. If the kit no longer has the lines this hooks, the copy stays as
# it is and the CPU columns say n/a.
if ! python3 - "$WORK/kit/run.sh" <<'PY'; then
import sys
path = sys.argv[1]
s = open(path).read()
func = r'''# cpusnap (added by gswitch's scripts/bench.sh to its copy of the kit):
# wall clock, machine CPU, the forwarder's CPU and what reached h2, at one
# instant, read as close together as the shell allows.
cpusnap() {
	local t stat fwd=""
	t=$(date +%s%N)
	stat=$(head -1 /proc/stat)
	if [ -n "$FWD_PID" ] && [ -r "/proc/$FWD_PID/stat" ]; then
		fwd=$(cat "/proc/$FWD_PID/stat" 2>/dev/null || true)
	fi
	echo "t_ns $t"
	echo "clk_tck $(getconf CLK_TCK)"
	echo "proc_stat $stat"
	if [ -n "$fwd" ]; then
		echo "fwd_comm $(cat "/proc/$FWD_PID/comm" 2>/dev/null || echo '?')"
		echo "fwd_stat $fwd"
	fi
	ip netns exec h2 cat /sys/class/net/eth0/statistics/rx_bytes /sys/class/net/eth0/statistics/rx_packets |
		{ read -r b; read -r p; echo "h2_rx_bytes $b"; echo "h2_rx_packets $p"; }
}

'''
subs = [
    ('one_run() {', func + 'one_run() {'),
    ('\tsnapshot >"$base.before"\n', '\tsnapshot >"$base.before"\n\tcpusnap >"$base.cpu0"\n'),
    ('\tsnapshot >"$base.after"\n', '\tcpusnap >"$base.cpu1"\n\tsnapshot >"$base.after"\n'),
]
for old, new in subs:
    if s.count(old) != 1:
        sys.exit(f"bench.sh: the kit's run.sh has {s.count(old)} of {old.strip()!r} (want 1): CPU accounting off, CPU columns n/a")
    s = s.replace(old, new)
open(path, "w").write(s)
PY
	cp "$SRC/run.sh" "$WORK/kit/run.sh"
fi
if [ -n "${GSWITCHD:-}" ]; then
	cp "$GSWITCHD" "$WORK/gswitchd" # another build (A/B: an older commit's)
else
	go build -o "$WORK/gswitchd" ./cmd/gswitchd
fi
cat >"$WORK/gswitchd.yaml" <<YAML
ports:
  - {name: s1, interface: s1${PORT_OPTS:+, $PORT_OPTS}}
  - {name: s2, interface: s2${PORT_OPTS:+, $PORT_OPTS}}
workers: ${WORKERS:-0}
busy_poll: ${BUSY_POLL:-false}
cpus: [${CPUS:-}]
metrics: "off"
YAML
export CONFIGS=${CONFIGS:-"bridge xsk cmd"} TRAFFIC=${TRAFFIC:-"tcp udp64"} REPS=${REPS:-3} DUR=${DUR:-10}
export FWD_CMD="$WORK/gswitchd -config $WORK/gswitchd.yaml" OUT="$WORK/results"

# What else keeps the machine busy: the machine-wide CPU figures count it.
idle_load() { # seconds -> busy % of all CPUs over that long
	local a b
	a=$(head -1 /proc/stat)
	sleep "$1"
	b=$(head -1 /proc/stat)
	python3 -c 'import sys
a, b = (list(map(int, x.split()[1:9])) for x in sys.argv[1:3])
d = [y - x for x, y in zip(a, b)]
busy = d[0] + d[1] + d[2] + d[5] + d[6]  # user nice system irq softirq (guest time is inside user)
tot = busy + d[3] + d[4]                 # + idle iowait (steal left out)
print(f"{100 * busy / tot:.1f}" if tot else "n/a")' "$a" "$b"
}
LOAD_BEFORE=$(idle_load 2)
echo "bench.sh: machine busy before the run: $LOAD_BEFORE% of $(nproc) CPUs (2 s)"
case $LOAD_BEFORE in n/a) ;; *) python3 -c "import sys; sys.exit(float('$LOAD_BEFORE') <= 5)" &&
	echo "bench.sh: WARNING: the machine is not idle; the machine-wide CPU figures include that load" >&2 ;; esac

"$WORK/kit/run.sh"
cp "$WORK/gswitchd.yaml" "$OUT/"
LOAD_AFTER=$(idle_load 2)
{
	echo "machine busy before the run: $LOAD_BEFORE% (2 s), after: $LOAD_AFTER% (2 s)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- 2>/dev/null || echo ' (with uncommitted changes)')"
} >>"$OUT/env.txt"
python3 - "$OUT" <<'PY'
import csv, glob, os, re, statistics, sys
out = sys.argv[1]
rows = list(csv.DictReader(open(out + "/runs.tsv"), delimiter="\t"))
names = {"bridge": "Linux bridge", "xsk": "C xsk_fwd (reference)", "cmd": "gswitchd"}
cfgs = [c for c in ["bridge", "xsk", "cmd"] if any(r["cfg"] == c for r in rows)]

def med(vals):
    v = [x for x in vals if isinstance(x, float)]
    return statistics.median(v) if v else None

def kit(cfg, tr, col):
    return med([float(r[col]) for r in rows if r["cfg"] == cfg and r["traffic"] == tr and r.get(col) not in (None, "", "nan")])

# --- CPU: the snapshots bench.sh added to the kit's copy --------------------
def snap(path):
    d = {}
    if not os.path.exists(path):
        return None
    for line in open(path):
        k, _, v = line.rstrip("\n").partition(" ")
        d[k] = v
    return d

def busy_total(stat):  # /proc/stat "cpu  user nice system idle iowait irq softirq steal guest guest_nice"
    f = list(map(int, stat.split()[1:9]))
    return f[0] + f[1] + f[2] + f[5] + f[6]

def proc_cpu(stat):  # utime + stime of /proc/PID/stat (fields 14 and 15; comm may hold spaces)
    pid = stat.split()[0]
    f = stat[stat.rindex(")") + 2:].split()
    return pid, int(f[11]) + int(f[12])

cpu = []
for path in sorted(glob.glob(os.path.join(out, "*", "*.cpu0"))):
    cfg = os.path.basename(os.path.dirname(path))
    m = re.match(r"(.+)\.(\d+)\.cpu0$", os.path.basename(path))
    tr, rep = m.group(1), int(m.group(2))
    a, b = snap(path), snap(path[:-1] + "1")
    if not b:
        continue
    hz = int(a["clk_tck"])
    r = dict(cfg=cfg, traffic=tr, rep=rep)
    r["window_s"] = (int(b["t_ns"]) - int(a["t_ns"])) / 1e9
    r["gbit"] = (int(b["h2_rx_bytes"]) - int(a["h2_rx_bytes"])) * 8 / 1e9
    r["mpkt"] = (int(b["h2_rx_packets"]) - int(a["h2_rx_packets"])) / 1e6
    r["sys_cpu_s"] = (busy_total(b["proc_stat"]) - busy_total(a["proc_stat"])) / hz
    r["fwd_cpu_s"] = None
    if "fwd_stat" in a and "fwd_stat" in b:
        (pa, ca), (pb, cb) = proc_cpu(a["fwd_stat"]), proc_cpu(b["fwd_stat"])
        if pa == pb:
            r["fwd_cpu_s"] = (cb - ca) / hz
        r["fwd_comm"] = b.get("fwd_comm", "")
    for who in ("fwd", "sys"):
        c = r[who + "_cpu_s"]
        r[who + "_cores"] = c / r["window_s"] if c is not None else None
        r[who + "_s_per_gbit"] = c / r["gbit"] if c is not None and r["gbit"] > 0 else None
        r[who + "_s_per_mpkt"] = c / r["mpkt"] if c is not None and r["mpkt"] > 0 else None
    kr = [x for x in rows if x["cfg"] == cfg and x["traffic"] == tr and x["rep"] == str(rep)]
    r["kit_pidstat_cores"] = float(kr[0]["fwd_cpu_pct"]) / 100 if kr and kr[0].get("fwd_cpu_pct") else None
    cpu.append(r)

cols = ["cfg", "traffic", "rep", "window_s", "gbit", "mpkt", "fwd_comm", "fwd_cpu_s", "sys_cpu_s", "fwd_cores", "sys_cores",
        "kit_pidstat_cores", "fwd_s_per_gbit", "sys_s_per_gbit", "fwd_s_per_mpkt", "sys_s_per_mpkt"]
fmt = lambda v: "" if v is None else (f"{v:.4f}" if isinstance(v, float) else str(v))
with open(os.path.join(out, "cpu.tsv"), "w") as f:
    f.write("\t".join(cols) + "\n")
    for r in cpu:
        f.write("\t".join(fmt(r.get(c)) for c in cols) + "\n")

def cpum(cfg, tr, col):
    return med([r[col] for r in cpu if r["cfg"] == cfg and r["traffic"] == tr])

na = lambda v, f: "n/a" if v is None else f % v
ratio = lambda a, b: "n/a" if a is None or b is None or b == 0 else "%.2fx" % (a / b)

print("\n%-24s %12s %10s %14s" % ("forwarder", "TCP Gbit/s", "TCP retr", "UDP64 fwd kpps"))
for c in cfgs:
    print("%-24s %12s %10s %14s" % (names[c], na(kit(c, "tcp", "recv_gbps"), "%.2f"), na(kit(c, "tcp", "retrans"), "%.0f"),
          na(kit(c, "udp64", "fwd_kpps"), "%.0f")))
for ref in ["xsk", "bridge"]:
    if "cmd" in cfgs and ref in cfgs:
        print("gswitchd / %-13s TCP %s   UDP64 %s" % (names[ref].split(" (")[0], ratio(kit("cmd", "tcp", "recv_gbps"), kit(ref, "tcp", "recv_gbps")),
              ratio(kit("cmd", "udp64", "fwd_kpps"), kit(ref, "udp64", "fwd_kpps"))))

md = ["| forwarder | TCP: forwarder CPU-s / Gbit | TCP: machine CPU-s / Gbit | UDP64: forwarder CPU-s / Mpkt | UDP64: machine CPU-s / Mpkt | forwarder cores (TCP / UDP64) |",
      "|---|---|---|---|---|---|"]
print("\nCPU cost: CPU-seconds per Gbit (TCP) and per million frames (UDP64) delivered to h2's eth0,")
print("over each run's whole iperf3 interval (= CPU cores per Gbit/s and per Mpps); machine = all CPUs busy")
print("%-24s %13s %13s %15s %15s %16s" % ("forwarder", "TCP fwd s/Gb", "TCP mach s/Gb", "UDP64 fwd s/Mp", "UDP64 mach s/Mp", "fwd cores T/U"))
for c in cfgs:
    v = [cpum(c, "tcp", "fwd_s_per_gbit"), cpum(c, "tcp", "sys_s_per_gbit"), cpum(c, "udp64", "fwd_s_per_mpkt"), cpum(c, "udp64", "sys_s_per_mpkt")]
    cores = "%s / %s" % (na(cpum(c, "tcp", "fwd_cores"), "%.2f"), na(cpum(c, "udp64", "fwd_cores"), "%.2f"))
    cells = [na(v[0], "%.3f"), na(v[1], "%.3f"), na(v[2], "%.2f"), na(v[3], "%.2f")]
    print("%-24s %13s %13s %15s %15s %16s" % (names[c], *cells, cores))
    md.append(f"| {names[c]} | " + " | ".join(cells) + f" | {cores} |")
if "cmd" in cfgs and "xsk" in cfgs:
    r = [ratio(cpum("cmd", t, k), cpum("xsk", t, k)) for t, k in
         [("tcp", "fwd_s_per_gbit"), ("tcp", "sys_s_per_gbit"), ("udp64", "fwd_s_per_mpkt"), ("udp64", "sys_s_per_mpkt")]]
    print("%-24s %13s %13s %15s %15s   (below 1x: gswitchd is cheaper)" % ("gswitchd / C xsk_fwd", *r))
    md.append("| gswitchd / C xsk_fwd | " + " | ".join(r) + " | |")
if not cpu:
    print("(no CPU snapshots: the kit's run.sh could not be patched; CPU figures n/a)")
with open(os.path.join(out, "cpu.md"), "w") as f:
    f.write("\n".join(md) + "\n")
n = max([1] + [len([r for r in rows if r["cfg"] == c and r["traffic"] == "tcp"]) for c in cfgs])
print("(medians of %d runs; all runs: %s/runs.tsv, %s/cpu.tsv, %s/summary.md, %s/cpu.md)" % (n, out, out, out, out))
PY
echo "machine busy before the run: $LOAD_BEFORE%, after: $LOAD_AFTER% (of $(nproc) CPUs, 2 s each; the machine-wide figures include other load)"
echo "results kept in $OUT"
