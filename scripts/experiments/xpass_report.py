#!/usr/bin/env python3
"""Tables for scripts/experiments/xpass.sh: reads its result directory,
prints Markdown, and writes incastN-queue.json (the shared port's queue over
time, one series per scheme) for gsperf plot -kind queue.

Times and rates are the fabric's (the runs' timescale undone: a rate x K, a
time / K) unless a column says wall; gsperf's records carry both clocks
(fct_ns and fct_fabric_ns, timeline_step_ns and timeline_step_fabric_ns).
Kernel TCP runs on the wall clock only (it cannot be scaled): its rates are
given on both clocks.

usage: xpass_report.py OUT RATEBITS K NS INCAST_NS NAIVE_NS FEEDBACK_NS TCP_SECS
  RATEBITS  every link's rate in the fabric's bit/s
  K         the timescale the runs ran at
  *_NS      the scenarios' durations in fabric ns
  TCP_SECS  how long (wall) iperf3 ran
"""
import glob
import json
import math
import os
import sys

out, ratebits, k = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
ns = sys.argv[4].split()
incast_ns, naive_ns, feedback_ns = (float(x) for x in sys.argv[5:8])
tcp_secs = float(sys.argv[8])
# The payload credits let through a link: a credit (84 bytes on the wire)
# releases one 1538-byte frame with 1408 bytes of gsperf payload.
payload = ratebits * 1408 / 1622


def prom(path):
    m = {}
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        key, v = line.rsplit(" ", 1)
        m[key] = float(v)
    return m


def deltas(run):
    d = {}
    for before in glob.glob(f"{run}/before-sw*.prom"):
        sw = before.split("-")[-1][:-5]
        b, a = prom(before), prom(before.replace("before-", "after-"))
        d[sw] = {key: v - b.get(key, 0.0) for key, v in a.items()}
    return d


def data_drops(d):
    return sum(v for m in d.values() for key, v in m.items() if key.startswith("gswitch_drops_total{") and 'reason="lane_full"' not in key)


def credit_drops(d):
    return sum(v for m in d.values() for key, v in m.items() if key.startswith("gswitch_expresspass_credits_dropped_total{"))


def queue(d, sw, port, metric="gswitch_expresspass_data_queue_packets"):
    """p50, p99 and the largest non-empty bucket of the data-queue depths
    (packets) data packets found on sw's port (ExpressPass's histogram, or
    another per-port histogram of the same kind); and their number."""
    pre = metric + "_bucket{"
    bs = []
    for key, v in d.get(sw, {}).items():
        if not key.startswith(pre):
            continue
        labels = dict(kv.split("=", 1) for kv in key[len(pre):-1].split(","))  # in whatever order the exposition has them
        if labels.get("port") != f'"{port}"':
            continue
        le = labels["le"].strip('"')
        bs.append((math.inf if le == "+Inf" else float(le), v))
    bs.sort()
    if not bs or bs[-1][1] == 0:
        return None
    n = bs[-1][1]
    q = lambda f: next(le for le, c in bs if c >= f * n)
    most, prev = 0, 0
    for le, c in bs:
        if c > prev:
            most = le
        prev = c
    return q(0.5), q(0.99), most, n


def fmt(x):
    return "inf" if x == math.inf else f"{x:.0f}"


def jain(x):
    return sum(x) ** 2 / (len(x) * sum(v * v for v in x)) if x and sum(x) else 0


def verdict(run):
    """VALID or INVALID and the line time lost, from gsperf fidelity's JSON."""
    try:
        v = json.load(open(f"{run}/fidelity.json"))
    except (OSError, ValueError):
        return "-"
    lost = v.get("line_time_lost_percent", 0)
    late = v.get("lateness_p99_frames", 0)
    delay = v.get("delay_error_p99_frames", 0)
    return f"{'VALID' if v.get('valid') else 'INVALID'} (lateness {late:.2f}, delay error {delay:.2f} frames; {lost:.2f}% lost)"


def xp_rates(run, lo_ns, hi_ns):
    """Each flow's goodput (fabric bit/s) between lo and hi fabric ns after
    the common start, from the timelines; completion times (fabric ms)."""
    rates, fcts = [], []
    for f in sorted(glob.glob(f"{run}/flow-*.json"), key=lambda p: int(p.split("-")[-1][:-5])):
        r = json.load(open(f))["flows"][0]
        tl = r.get("timeline") or [0]
        step = r.get("timeline_step_fabric_ns") or r.get("timeline_step_ns") * k

        def at(t):
            i = int(round(t / step)) - 1
            return 0 if i < 0 else tl[min(i, len(tl) - 1)]

        rates.append((at(hi_ns) - at(lo_ns)) * 8 / ((hi_ns - lo_ns) / 1e9))
        fct = r.get("fct_fabric_ns") or r["fct_ns"] / k
        fcts.append(fct / 1e6 if r["complete"] else math.inf)
    return rates, fcts


def tcp_rates(run):
    """Each iperf3 flow's goodput (wall bit/s) over its run, as its receiver counted it."""
    rates = []
    for f in sorted(glob.glob(f"{run}/iperf-*.json"), key=lambda p: int(p.split("-")[-1][:-5])):
        try:
            rates.append(json.load(open(f))["end"]["sum_received"]["bits_per_second"])
        except (ValueError, KeyError):
            rates.append(0)
    return rates


def watch_series(run, sw, port):
    path = f"{run}/queues-{sw}.json"
    if not os.path.exists(path):
        return None, None
    s = json.load(open(path))
    keys = [key for key in s["bytes"] if key.split("/")[0] == port]
    if not keys:
        return s, []
    n = max(len(s["bytes"][key]) for key in keys)
    return s, [sum(s["bytes"][key][i] for key in keys if i < len(s["bytes"][key])) for i in range(n)]


lo, hi = 0.5e6, incast_ns - 0.5e6  # the N-to-1's steady window, fabric ns
print(f"Every link {ratebits / 1e9:g} Gbit/s (fabric) at timescale {k:g}: {ratebits / k / 1e6:g} Mbit/s on this machine; "
      f"credits let {payload / 1e9:.3f} Gbit/s of payload through a link. {open(out + '/load.txt').read().strip()}\n")
print("Times and rates are the fabric's (wall / K, x K) unless marked wall. Fidelity: the switches' verdict over each run "
      "(lateness p99 and delay error p99 in frame times of the fastest link, the most line time a port lost; fidelity.txt in each run says why a run is INVALID). "
      f"Kernel TCP (iperf3) ran {tcp_secs:g} s of wall time: its goodput is the bytes its receivers counted over that time (the buffer drains after it), "
      "given on both clocks.\n")
for n in ns:
    print(f"### {n}-to-1 (topologies/expresspass/incast.yaml)\n")
    print(f"| scheme | goodput in [{lo / 1e6:g}, {hi / 1e6:g}] ms (Gbit/s) | of the credits' | Jain there | data drops | credit drops "
          "| queue sw1->sw2 p50 / p99 / max (packets) | queue sw2->r1 p50 / p99 / max | slowest flow (ms) | fidelity |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    merged = {"metrics": "xpass.sh", "step_ns": 20_000_000, "timescale": k, "bytes": {}}
    for scheme in ("xpass", "naive", "tcp-fifo", "tcp-sfq", "dctcp"):
        run = f"{out}/incast{n}-{scheme}"
        if not os.path.isdir(run):
            continue
        d = deltas(run)
        if scheme.startswith("tcp"):
            # Kernel TCP runs at the wall rate; x K is what the fabric's time makes of it.
            rates, slow = tcp_rates(run), "-"
            good = f"{sum(rates) * k / 1e9:.3f} ({sum(rates) / 1e6:.2f} Mbit/s wall, receivers)"
        else:
            rates, fcts = xp_rates(run, lo, hi)
            slow = f"{max(fcts):.2f}"
            good = f"{sum(rates) / 1e9:.3f}"
        hist = "gswitch_ecn_queue_packets" if scheme == "dctcp" else "gswitch_expresspass_data_queue_packets"
        qa, qb = queue(d, "sw1", "sw2", hist), queue(d, "sw2", "r1", hist)
        qs = lambda q: "-" if q is None else f"{fmt(q[0])} / {fmt(q[1])} / {fmt(q[2])}"
        # DCTCP's frames share the line with no credits: its share is of the line's payload (1408 of 1538 bytes).
        share = "-" if scheme.startswith("tcp") else f"{sum(rates) / (ratebits * 1408 / 1538 if scheme == 'dctcp' else payload):.3f}"
        print(f"| {scheme} | {good} | {share} | {jain(rates):.3f} | {data_drops(d):.0f} | {credit_drops(d):.0f} | {qs(qa)} | {qs(qb)} | {slow} | {verdict(run)} |")
        s, series = watch_series(run, "sw1", "sw2")
        if series:
            merged["step_ns"] = s["step_ns"]
            merged["step_fabric_ns"] = s.get("step_fabric_ns", s["step_ns"] / k)
            merged["bytes"][f"sw2 {scheme}"] = series
    json.dump(merged, open(f"{out}/incast{n}-queue.json", "w"))
    print()

for title, tag, cols, links in (
        ("Parking lot (topologies/expresspass/parking-lot.yaml, the paper's Fig. 4b)", "parking", ("long", "p1", "p2"),
         lambda r: f"{r[0] + r[1]:.3f} | {r[0] + r[2]:.3f}"),
        ("Multi-bottleneck (topologies/expresspass/multi-bottleneck.yaml, the paper's Fig. 4a)", "multi", ("f0 (to r0)", "f1 (to r1)", "f2 (to r2)"),
         lambda r: f"{2 * r[0] / max(r[1] + r[2], 1e-9):.2f} | {jain(r):.3f}")):
    print(f"### {title}: each flow's share of what credits let through a link\n")
    extra = "link 1 | link 2" if tag == "parking" else "f0 / mean(f1, f2) | Jain"
    print(f"| credits | window (ms) | {' | '.join(cols)} | {extra} | fidelity |")
    print("|---|---|---|---|---|---|---|---|")
    for m, dur, start in (("naive", naive_ns, 1e6), ("xpass", feedback_ns, 3e6)):
        run = f"{out}/{tag}-{m}"
        if not os.path.isdir(run):
            continue
        end = dur - 0.1e6
        start = min(start, dur / 2)
        r = [x / payload for x in xp_rates(run, start, end)[0]]
        print(f"| {'naive' if m == 'naive' else 'feedback'} | [{start / 1e6:g}, {end / 1e6:g}] | {' | '.join(f'{x:.3f}' for x in r)} | {links(r)} | {verdict(run)} |")
    print()

# Convergence (PARTS=converge): flow i joined (i-1) x JOIN after the first.
for scheme in ("naive", "xpass", "dctcp"):
    conv = f"{out}/converge-{scheme}"
    if not os.path.isdir(conv):
        continue
    # DCTCP's flows share the line with no credits: their fair share is of the line's payload.
    cap = ratebits * 1408 / 1538 if scheme == "dctcp" else payload
    cn, join_ns, hold_ns = int(os.environ["CONVERGE_N"]), float(os.environ["JOIN_NS"]), float(os.environ["HOLD_NS"])
    flows = []
    for f in sorted(glob.glob(f"{conv}/flow-*.json"), key=lambda p: int(p.split("-")[-1][:-5])):
        r = json.load(open(f))["flows"][0]
        step = r.get("timeline_step_fabric_ns") or r.get("timeline_step_ns") * k
        flows.append((r.get("timeline") or [0], step))
    step = flows[0][1]
    win = 2 * step  # rates over 200 us of the fabric
    total = (cn - 1) * join_ns + hold_ns

    def cum(i, t):
        """Flow i's bytes by t (the run's fabric ns; flow i started at i x JOIN)."""
        tl, st = flows[i]
        n = int(round((t - i * join_ns) / st))
        return 0 if n < 1 else tl[min(n, len(tl)) - 1]

    def rate(i, t):
        """Flow i's goodput (fabric bit/s) over [t - win, t]."""
        return (cum(i, t) - cum(i, t - win)) * 8 / (win / 1e9)

    def fair(t, j, tol):
        return all(abs(rate(i, t) - cap / j) <= tol * cap / j for i in range(j))

    def converged(t_join, t_end, j, tol):
        """The first time after t_join (fabric us after it) from which every
        running flow stays within tol of its fair share for 1 ms (or to t_end)."""
        hold = min(1e6, t_end - t_join - win)
        t = t_join + win
        while t + hold <= t_end:
            u = t
            while u <= t + hold and fair(u, j, tol):
                u += step
            if u > t + hold:
                return f"{(t - t_join) / 1e3:.0f}"
            t += step
        return "-"

    print(f"### Convergence, { {'naive': 'naive credits', 'xpass': 'feedback', 'dctcp': 'DCTCP over ECN marking (no credits)'}[scheme] } (topologies/expresspass/incast.yaml): {cn} flows to r1, one joining every {join_ns / 1e6:g} ms\n")
    print("After each join, how long (fabric) until every running flow's goodput over 200 us is within 10% (the spec's bar) "
          "or 20% of its fair share (what credits let through, / the flows running) and stays there for 1 ms (or to the next join; "
          "- : not in that time); then each flow's share of the link over the last 1 ms before the next join (the end of the run for the last). "
          "200 us is the shortest window read: a flow that converged at once shows 200.\n")
    print("| flows running | within 10% after (us) | within 20% after (us) | shares | Jain | fidelity |")
    print("|---|---|---|---|---|---|")
    for j in range(1, cn + 1):
        t_join = (j - 1) * join_ns
        t_end = j * join_ns if j < cn else total
        lo_t = max(t_end - 1e6, t_join)
        shares = [(cum(i, t_end) - cum(i, lo_t)) * 8 / ((t_end - lo_t) / 1e9) / cap for i in range(j)]
        print(f"| {j} | {converged(t_join, t_end, j, 0.1)} | {converged(t_join, t_end, j, 0.2)} | {' '.join(f'{x:.2f}' for x in shares)} | {jain(shares):.3f} | {verdict(conv) if j == 1 else ''} |")
    print()
if os.environ.get("JITTER"):
    print(f"Receivers' credit jitter: -xp-jitter {os.environ['JITTER']}.\n")
