#!/usr/bin/env python3
"""schedsum.py: reads `perf sched timehist` on stdin and prints, for
latency.sh's SCHED=1, the scheduling delay (wake-up to running) of every
gswitchd thread that was woken (percentiles, in µs) and every stretch of
more than half a millisecond that a task ran on a CPU, counted by task."""
import collections
import sys

delays = collections.defaultdict(list)
long_runs = collections.defaultdict(list)
for line in sys.stdin:
    f = line.split()
    # time [cpu] task wait sch_delay run_time
    if len(f) != 6 or not f[1].startswith("["):
        continue
    try:
        sch, run = float(f[4]) * 1000, float(f[5]) * 1000
    except ValueError:
        continue
    task = f[2].split("[")[0]
    if task == "gswitchd":
        delays[f[2]].append(sch)
    if run > 500 and task != "<idle>":
        long_runs[task].append(run)

q = lambda v, p: v[min(len(v) - 1, int(p * len(v)))]
print("gswitchd threads: scheduling delay after a wake-up (µs)")
print("| thread | runs | p50 | p99 | p99.9 | max |")
print("|---|---|---|---|---|---|")
for t, v in sorted(delays.items(), key=lambda kv: -len(kv[1])):
    v.sort()
    print(f"| {t} | {len(v)} | {q(v, .5):.0f} | {q(v, .99):.0f} | {q(v, .999):.0f} | {v[-1]:.0f} |")
print()
print("tasks that ran more than 0.5 ms at a time")
print("| task | stretches | total ms | longest ms |")
print("|---|---|---|---|")
for t, v in sorted(long_runs.items(), key=lambda kv: -sum(kv[1])):
    print(f"| {t} | {len(v)} | {sum(v)/1000:.1f} | {max(v)/1000:.2f} |")
