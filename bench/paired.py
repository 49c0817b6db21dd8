#!/usr/bin/env python3
"""Paired throughput ratios from bench/run.sh's raw.txt.

bench/run.sh runs every contender once per round, so the n-th line of one
contender and the n-th line of another come from the same round, when
the machine ran at the same speed. For each benchmark and contender this
prints its throughput over the base's (the base's time over its own)
three ways: the ratio of the medians (what benchstat reports), the median
of the per-round ratios, and their geometric mean with a 95 % bootstrap
interval (4,000 resamples, fixed seed).

    python3 bench/paired.py OUT/raw.txt [base]     # base: bare

Given several raw.txt files (runs of the same code), it also pools them:
the ratios are paired within each run, and the bootstrap resamples the
rounds of each run apart, so a long run does not stand for a short one's
noise and no round is paired across runs.

    python3 bench/paired.py RUN1/raw.txt RUN2/raw.txt ... [base]
"""
import math
import random
import re
import statistics
import sys
from collections import defaultdict

LINE = re.compile(r"^Benchmark\S+?/(\S+)/client=(\S+?)-\d+\s+\d+\s+(\d+) ns/op")


def geomean(xs):
    return math.exp(statistics.fmean(math.log(x) for x in xs))


def read(path):
    """benchmark -> client -> ns/op per round, from one raw.txt."""
    times = defaultdict(lambda: defaultdict(list))
    with open(path) as f:
        for line in f:
            m = LINE.match(line)
            if m:
                times[m.group(1)][m.group(2)].append(int(m.group(3)))
    return times


def interval(rng, per_run):
    """The 95 % bootstrap interval of the geomean of the ratios of one or
    more runs, resampling each run's rounds apart."""
    boot = sorted(
        geomean([r for ratios in per_run for r in rng.choices(ratios, k=len(ratios))])
        for _ in range(4000))
    return boot[100], boot[3899]


def paired(times, base):
    """benchmark -> client -> the per-round ratios of base's time to the
    client's (the client's throughput over base's)."""
    out = defaultdict(dict)
    for bench, clients in times.items():
        if base not in clients:
            print(f"{bench}: no {base}", file=sys.stderr)
            continue
        b = clients[base]
        for client, t in clients.items():
            if client != base:
                n = min(len(b), len(t))
                out[bench][client] = [b[i] / t[i] for i in range(n)]
    return out


def main():
    args = sys.argv[1:]
    base = "bare"
    if len(args) > 1 and not args[-1].endswith(".txt"):
        base = args.pop()
    if not args:
        sys.exit("usage: paired.py RAW.txt [RAW.txt ...] [base]")
    rng = random.Random(1)
    runs = []
    for path in args:
        times = read(path)
        runs.append(paired(times, base))
        if len(args) > 1:
            print(f"# {path}")
        for bench, clients in runs[-1].items():
            b = times[bench][base]
            for client, ratios in clients.items():
                n = len(ratios)
                t = times[bench][client]
                lo, hi = interval(rng, [ratios])
                print(f"{bench} {client} against {base}, n={n}: "
                      f"medians {statistics.median(b) / statistics.median(t):.3f}, "
                      f"paired median {statistics.median(ratios):.3f}, "
                      f"paired geomean {geomean(ratios):.3f} [{lo:.3f}, {hi:.3f}]")
    if len(runs) < 2:
        return
    print(f"# pooled over {len(runs)} runs")
    pooled = defaultdict(lambda: defaultdict(list))  # benchmark -> client -> one list of ratios per run
    for run in runs:
        for bench, clients in run.items():
            for client, ratios in clients.items():
                pooled[bench][client].append(ratios)
    for bench, clients in pooled.items():
        for client, per_run in clients.items():
            every = [r for ratios in per_run for r in ratios]
            lo, hi = interval(rng, per_run)
            print(f"{bench} {client} against {base}, {len(per_run)} runs, n={len(every)}: "
                  f"paired median {statistics.median(every):.3f}, "
                  f"paired geomean {geomean(every):.3f} [{lo:.3f}, {hi:.3f}]")


if __name__ == "__main__":
    main()
