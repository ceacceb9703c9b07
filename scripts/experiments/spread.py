#!/usr/bin/env python3
"""spread.py — the spread of an experiment over its runs.

    scripts/experiments/spread.py RUN1/summary.md RUN2/summary.md ... > spread.md

Every experiment script writes its figures as markdown tables (xpass.sh and
bfc-fig7.sh, bfc-fig8.sh: summary.md; sfc-incast.sh: table.md). Given the
same file of several runs of one script, spread.py prints the tables of the
first with every number replaced by the median over the runs and, in
brackets, the smallest and the largest: `0.93 [0.91–0.95]`. A cell holding
several numbers (`0 / 3 / 8`) gets a spread for each. Cells that are not
numbers are kept when every run agrees and listed otherwise. Lines that are
not tables are dropped, except headings. Tables are matched by their order
under each heading and rows by their first cell, so runs must come from the
same script with the same settings; a row missing from a run is spread
over the runs that have it, and the count is given when it is not all.

The fidelity verdicts of the runs are counted from every fidelity.json the
scripts write (gsperf fidelity -json) under the directory of each file.
"""
import json
import os
import re
import statistics
import sys

NUM = re.compile(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?")


def tables(path):
    """Returns [(heading, [rows])] in file order; a row is a list of cells."""
    out, heading, cur = [], "", None
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("#"):
            heading, cur = line, None
            continue
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cur is None:
                cur = []
                out.append((heading, cur))
            cur.append(cells)
        else:
            cur = None
    return out


def fmt(x):
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:.0f}"


def spread_cell(values):
    """values: the cell's text in each run that has it."""
    if len(set(values)) == 1:
        return values[0]
    shapes = {NUM.sub("#", v) for v in values}
    if len(shapes) != 1:
        return " / ".join(sorted(set(values)))
    shape = shapes.pop()
    nums = [[float(m) for m in NUM.findall(v)] for v in values]
    parts = shape.split("#")
    texts = [NUM.findall(v) for v in values]
    res = parts[0]
    for i in range(len(parts) - 1):
        col = [n[i] for n in nums]
        med = statistics.median(col)
        lo, hi = min(col), max(col)
        res += texts[0][i] if lo == hi else f"{fmt(med)} [{fmt(lo)}–{fmt(hi)}]"
        res += parts[i + 1]
    return res


def verdicts(run_dir):
    valid = invalid = 0
    for root, _, files in os.walk(run_dir):
        if "fidelity.json" in files:
            try:
                ok = json.load(open(os.path.join(root, "fidelity.json")))["valid"]
            except (OSError, ValueError, KeyError):
                continue
            if ok:
                valid += 1
            else:
                invalid += 1
    return valid, invalid


def main(paths):
    runs = [tables(p) for p in paths]
    first = runs[0]
    n = len(runs)
    print(f"Spread over {n} runs: median [min–max] of each figure.\n")
    seen = {}
    for ti, (heading, rows) in enumerate(first):
        k = seen.get(heading, 0)
        seen[heading] = k + 1
        if heading:
            print(heading + "\n")
        others = []
        for r in runs:
            same = [t for t in r if t[0] == heading]
            others.append(same[k][1] if k < len(same) else [])
        header, sep, body = rows[0], rows[1] if len(rows) > 1 else None, rows[2:]
        print("| " + " | ".join(header) + " | runs |")
        print("|" + "---|" * (len(header) + 1))
        for row in body:
            key = row[0]
            vals = []
            for o in others:
                for orow in o[2:]:
                    if orow[0] == key and len(orow) == len(row):
                        vals.append(orow)
                        break
            cells = [key] + [spread_cell([v[i] for v in vals]) for i in range(1, len(row))]
            print("| " + " | ".join(cells) + f" | {len(vals)} |")
        print()
    v = [verdicts(os.path.dirname(os.path.abspath(p))) for p in paths]
    tv, ti = sum(a for a, _ in v), sum(b for _, b in v)
    print(f"Fidelity verdicts over the {n} runs: {tv} VALID, {ti} INVALID "
          f"(per run: {', '.join(f'{a}/{a + b}' for a, b in v)}).")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
