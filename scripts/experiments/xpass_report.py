#!/usr/bin/env python3
"""Tables for scripts/experiments/xpass.sh: reads its result directory,
prints Markdown, and writes incastN-queue.json (the shared port's queue over
time, one series per scheme) for gsperf plot -kind queue."""
import glob
import json
import math
import os
import sys

out, ratebits, secs, ns = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4].split()


def prom(path):
    m = {}
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        k, v = line.rsplit(" ", 1)
        m[k] = float(v)
    return m


def deltas(run):
    d = {}
    for before in glob.glob(f"{run}/before-sw*.prom"):
        sw = before.split("-")[-1][:-5]
        b, a = prom(before), prom(before.replace("before-", "after-"))
        d[sw] = {k: v - b.get(k, 0.0) for k, v in a.items()}
    return d


def data_drops(d):
    return sum(v for m in d.values() for k, v in m.items() if k.startswith("gswitch_drops_total{") and 'reason="lane_full"' not in k)


def credit_drops(d):
    return sum(v for m in d.values() for k, v in m.items() if k.startswith("gswitch_expresspass_credits_dropped_total{"))


def queue(d, sw, port):
    """p50, p99 and the largest non-empty bucket of the data-queue depths
    (packets) data packets found on sw's port; and their number."""
    pre = "gswitch_expresspass_data_queue_packets_bucket{"
    bs = []
    for k, v in d.get(sw, {}).items():
        if not k.startswith(pre):
            continue
        labels = dict(kv.split("=", 1) for kv in k[len(pre):-1].split(","))  # in whatever order the exposition has them
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


def xp_rates(run, lo, hi):
    rates, fcts, mech = [], [], []
    for f in sorted(glob.glob(f"{run}/flow-*.json"), key=lambda p: int(p.split("-")[-1][:-5])):
        r = json.load(open(f))["flows"][0]
        tl = r.get("timeline") or [0]
        at = lambda t: tl[min(max(int(round(t * 10)) - 1, 0), len(tl) - 1)]
        rates.append((at(hi) - at(lo)) * 8 / (hi - lo))
        fcts.append(r["fct_ns"] / 1e9 if r["complete"] else math.inf)
        mech.append(r.get("mech", {}))
    return rates, fcts, mech


def tcp_rates(run, lo, hi):
    rates = []
    for f in sorted(glob.glob(f"{run}/iperf-*.json"), key=lambda p: int(p.split("-")[-1][:-5])):
        try:
            d = json.load(open(f))
        except ValueError:
            rates.append(0)
            continue
        bits = sum(iv["sum"]["bits_per_second"] * (iv["sum"]["end"] - iv["sum"]["start"]) for iv in d.get("intervals", [])
                   if iv["sum"]["start"] >= lo - 1e-6 and iv["sum"]["end"] <= hi + 1e-6)
        rates.append(bits / (hi - lo))
    return rates


def watch_series(run, sw, port):
    path = f"{run}/queues-{sw}.json"
    if not os.path.exists(path):
        return None, None
    s = json.load(open(path))
    keys = [k for k in s["bytes"] if k.split("/")[0] == port]
    if not keys:
        return s["step_ns"], []
    n = max(len(s["bytes"][k]) for k in keys)
    return s["step_ns"], [sum(s["bytes"][k][i] for k in keys if i < len(s["bytes"][k])) for i in range(n)]


print(f"Rate {ratebits / 1e6:.0f} Mbit/s on every link; load {open(out + '/load.txt').read().strip()}.\n")
for n in ns:
    print(f"### {n}-to-1 (topologies/expresspass/incast.yaml)\n")
    print("| scheme | goodput in [0.5, 1.5] s (Mbit/s) | Jain there | Jain, whole flows | data drops | credit drops | queue sw1->sw2 p50 / p99 / max (packets) | queue sw2->r1 p50 / p99 / max | slowest flow (s) | thread lateness, time-weighted p99 / max |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    merged = {"metrics": "xpass.sh", "step_ns": 5_000_000, "bytes": {}}
    for scheme in ("xpass", "naive", "tcp-fifo", "tcp-sfq"):
        run = f"{out}/incast{n}-{scheme}"
        if not os.path.isdir(run):
            continue
        d = deltas(run)
        whole = "-"
        if scheme.startswith("tcp"):
            rates, slow = tcp_rates(run, 0.5, 1.5), "-"
        else:
            rates, fcts, _ = xp_rates(run, 0.5, 1.5)
            slow = f"{max(fcts):.2f}"
            if all(f != math.inf for f in fcts):
                whole = f"{jain([1 / f for f in fcts]):.3f}"
        lat = "-"
        if os.path.exists(f"{run}/latency.txt"):
            t = open(f"{run}/latency.txt").read()
            if "time-weighted p99" in t:
                lat = t.split("time-weighted p99 ")[1].split(",")[0] + " / " + t.split("max ")[1].split(" ")[0]
        qa, qb = queue(d, "sw1", "sw2"), queue(d, "sw2", "r1")
        qs = lambda q: "-" if q is None else f"{fmt(q[0])} / {fmt(q[1])} / {fmt(q[2])}"
        print(f"| {scheme} | {sum(rates) / 1e6:.1f} | {jain(rates):.3f} | {whole} | {data_drops(d):.0f} | {credit_drops(d):.0f} | {qs(qa)} | {qs(qb)} | {slow} | {lat} |")
        step, series = watch_series(run, "sw1", "sw2")
        if series:
            merged["step_ns"] = step
            merged["bytes"][f"sw2 {scheme}"] = series
    json.dump(merged, open(f"{out}/incast{n}-queue.json", "w"))
    print()

line = ratebits * 1408 / 1538 * 1538 / 1622  # payload of a link whose credits take 84/1622
lo, hi = 0.5, secs - 0.5
print(f"### Parking lot (topologies/expresspass/parking-lot.yaml): share of a link's payload rate in [{lo}, {hi}] s\n")
print("| credits | long | p1 | p2 | link 1 | link 2 |")
print("|---|---|---|---|---|---|")
for m in ("naive", "xpass"):
    run = f"{out}/parking-{m}"
    if os.path.isdir(run):
        r = [x / line for x in xp_rates(run, lo, hi)[0]]
        print(f"| {'naive' if m == 'naive' else 'feedback'} | {r[0]:.3f} | {r[1]:.3f} | {r[2]:.3f} | {r[0] + r[1]:.3f} | {r[0] + r[2]:.3f} |")
print(f"\n### Multi-bottleneck (topologies/expresspass/multi-bottleneck.yaml): share of snd's link in [{lo}, {hi}] s\n")
print("| credits | f0 (to r0) | f1 (to r1) | f2 (to r2) | f0 / mean(f1, f2) | Jain |")
print("|---|---|---|---|---|---|")
for m in ("naive", "xpass"):
    run = f"{out}/multi-{m}"
    if os.path.isdir(run):
        r = [x / line for x in xp_rates(run, lo, hi)[0]]
        print(f"| {'naive' if m == 'naive' else 'feedback'} | {r[0]:.3f} | {r[1]:.3f} | {r[2]:.3f} | {2 * r[0] / max(r[1] + r[2], 1e-9):.2f} | {jain(r):.3f} |")
