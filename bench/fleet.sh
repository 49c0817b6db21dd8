#!/usr/bin/env bash
# fleet.sh: BenchmarkFleet (internal/netnstest, root: network
# namespaces) over COUNT rounds (default 5), then the fleet's time over
# four independent gets' across them: the geometric mean, the range and
# a 95 % t-interval of the rounds' ratios, and the bytes the emulator
# sent over the dataset (of every raw.txt given as arguments instead, to
# pool earlier runs without rerunning).
#
#   bench/fleet.sh                                # 4 nodes, 16 x 4 MiB, 200 Mbit/s
#   S3PD_FLEET_RATE_MBIT=300 COUNT=3 bench/fleet.sh
#   bench/fleet.sh RUN1/raw.txt RUN2/raw.txt      # pool earlier runs
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
if [ $# -gt 0 ]; then
	cat "$@" >"$OUT/raw.txt"
else
	uptime | tee "$OUT/load.txt"
	go test -tags netns -run '^$' -bench '^BenchmarkFleet$' -benchtime 1x -count "${COUNT:-5}" -timeout 0 ./internal/netnstest | tee "$OUT/raw.txt"
	uptime | tee -a "$OUT/load.txt"
fi
awk '
	# t quantiles (0.975) for 1..30 degrees of freedom; 1.96 beyond.
	BEGIN { split("12.71 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 2.160 2.145 2.131 2.120 2.110 2.101 2.093 2.086 2.080 2.074 2.069 2.064 2.060 2.056 2.052 2.048 2.045 2.042", tq, " ") }
	/^BenchmarkFleet/ {
		x = ""
		for (i = 1; i <= NF; i++) {
			if ($(i+1) == "fleet-x") x = $i
			if ($(i+1) == "fleet-sent-x") f = $i
			if ($(i+1) == "solo-sent-x") o = $i
			if ($(i+1) == "fleet-s") a = $i
			if ($(i+1) == "solo-s") b = $i
			if ($(i+1) == "fleet-wire-x") w = $i
			if ($(i+1) == "fleet-unverified") u = $i
		}
		if (x != "") { g[++n] = x; s += log(x); fs[n] = f; ss[n] = o; ft[n] = a; st[n] = b; fw[n] = w; uv += u }
	}
	END {
		if (n == 0) { print "no rounds with a fleet"; exit 1 }
		m = s / n; lo = hi = g[1]; fmax = fs[1]; smin = ss[1]; wmax = fw[1]
		for (i = 1; i <= n; i++) {
			v += (log(g[i]) - m)^2; if (g[i] < lo) lo = g[i]; if (g[i] > hi) hi = g[i]
			if (fs[i] > fmax) fmax = fs[i]; if (ss[i] < smin) smin = ss[i]; if (fw[i] > wmax) wmax = fw[i]
			ftot += ft[i]; stot += st[i]
		}
		t = (n - 1 <= 30 && n > 1) ? tq[n-1] : 1.96
		h = n > 1 ? t * sqrt(v / (n - 1) / n) : 0
		printf "fleet of 4 over 4 independent gets, %d rounds: geomean %.3fx, 95%% CI [%.3f, %.3f], range %.3f-%.3f; mean %.2f s against %.2f s\n", n, exp(m), exp(m-h), exp(m+h), lo, hi, ftot/n, stot/n
		printf "over the dataset, the fleet: the emulator wrote at most %.3fx, its link carried at most %.3fx; the independent gets: at least %.3fx written\n", fmax, wmax, smin
		printf "objects the fleet left unverified: %d\n", uv
	}' "$OUT/raw.txt" | tee "$OUT/ratio.txt"
echo "results in $OUT"
