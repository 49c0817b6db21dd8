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


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: paired.py RAW.txt [base]")
    base = sys.argv[2] if len(sys.argv) == 3 else "bare"
    times = defaultdict(lambda: defaultdict(list))  # benchmark -> client -> ns/op per round
    with open(sys.argv[1]) as f:
        for line in f:
            m = LINE.match(line)
            if m:
                times[m.group(1)][m.group(2)].append(int(m.group(3)))
    rng = random.Random(1)
    for bench, clients in times.items():
        if base not in clients:
            print(f"{bench}: no {base}", file=sys.stderr)
            continue
        b = clients[base]
        for client, t in clients.items():
            if client == base:
                continue
            n = min(len(b), len(t))
            ratios = [b[i] / t[i] for i in range(n)]
            boot = sorted(geomean(rng.choices(ratios, k=n)) for _ in range(4000))
            print(f"{bench} {client} against {base}, n={n}: "
                  f"medians {statistics.median(b) / statistics.median(t):.3f}, "
                  f"paired median {statistics.median(ratios):.3f}, "
                  f"paired geomean {geomean(ratios):.3f} [{boot[100]:.3f}, {boot[3899]:.3f}]")


if __name__ == "__main__":
    main()
