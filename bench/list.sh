#!/usr/bin/env bash
# list.sh: BenchmarkListing over COUNT rounds (default 5), then the gain
# of fan-out over one listing stream across them: the geometric mean,
# the range and a 95 % t-interval of the rounds' gains (of every raw.txt
# given as arguments instead, to pool earlier runs without rerunning).
#
#   bench/list.sh                          # 10^6 keys over 100 sub-prefixes
#   S3PD_LIST_KEYS=200000 COUNT=3 bench/list.sh
#   bench/list.sh RUN1/raw.txt RUN2/raw.txt  # pool earlier runs
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
if [ $# -gt 0 ]; then
	cat "$@" >"$OUT/raw.txt"
else
	uptime | tee "$OUT/load.txt"
	go test -run '^$' -bench '^BenchmarkListing$' -benchtime 1x -count "${COUNT:-5}" -timeout 0 ./bench | tee "$OUT/raw.txt"
	uptime | tee -a "$OUT/load.txt"
fi
awk '
	# t quantiles (0.975) for 1..30 degrees of freedom; 1.96 beyond.
	BEGIN { split("12.71 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 2.160 2.145 2.131 2.120 2.110 2.101 2.093 2.086 2.080 2.074 2.069 2.064 2.060 2.056 2.052 2.048 2.045 2.042", tq, " ") }
	/^BenchmarkListing\// {
		for (i = 1; i <= NF; i++) if ($(i+1) == "gain") { g[++n] = $i; s += log($i) }
	}
	END {
		if (n == 0) { print "no rounds"; exit 1 }
		m = s / n; lo = hi = g[1]
		for (i = 1; i <= n; i++) { v += (log(g[i]) - m)^2; if (g[i] < lo) lo = g[i]; if (g[i] > hi) hi = g[i] }
		t = (n - 1 <= 30 && n > 1) ? tq[n-1] : 1.96
		h = n > 1 ? t * sqrt(v / (n - 1) / n) : 0
		printf "fan-out (16) over one stream, %d rounds: geomean %.2fx, 95%% CI [%.2f, %.2f], range %.2f-%.2f\n", n, exp(m), exp(m-h), exp(m+h), lo, hi
	}' "$OUT/raw.txt" | tee "$OUT/gain.txt"
echo "results in $OUT"
