#!/usr/bin/env bash
# The entry point of `make bench`. The Makefile target it expects:
#
#   bench:
#   	bench/run.sh
#
# It builds s3pd, the benchmark binary and s5cmd v2.3.0 (bench/s5cmd.sh),
# then runs the benchmarks of bench/bench_test.go COUNT times in turn
# (each round runs every contender once more, so slow drifts of the
# machine hit all of them alike), and summarises with benchstat, one
# column per client, and with bench/paired, the ratios paired by round. Results land in $OUT (default: a new directory under
# /tmp), whose path it prints; docs/BENCHMARKS.md records a run.
#
# Settings (environment):
#   COUNT=10          rounds
#   BENCHTIME=2x      iterations of each contender per round
#   BENCH='^Benchmark(Loopback|RSS|S3Like)$'   which benchmarks (a go test -bench regexp)
#   OUT=/tmp/...      where raw.txt and the summaries go
#   S3PD_BENCH_TMPFS=/dev/shm     the tmpfs downloads land in
#   S3PD_BENCH_CLIENTS=bare,s3pd  only these contenders (default: all but
#                  bare-again, bare under another name, run to show the
#                  harness's own noise, and bare-sum, bare that also sums
#                  every byte with CRC64NVME as s3pd does); pick them here,
#                  not in BENCH, so the order stays balanced
set -euo pipefail
declare -A peers
cd "$(dirname "$0")/.."

COUNT=${COUNT:-10}
BENCHTIME=${BENCHTIME:-2x}
BENCH=${BENCH:-^Benchmark(Loopback|RSS|S3Like)$}
OUT=${OUT:-$(mktemp -d /tmp/s3pd-bench-XXXXXX)}
mkdir -p "$OUT"

go build -o "$OUT/s3pd" .
go test -c -o "$OUT/bench.test" ./bench
export S3PD_BIN=$OUT/s3pd
export S5CMD=${S5CMD:-$(bench/s5cmd.sh)}
export PATH=$PATH:$(go env GOPATH)/bin
command -v benchstat >/dev/null || go install golang.org/x/perf/cmd/benchstat@latest

{
	echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!bench' 2>/dev/null || echo '+dirty')"
	echo "# $(uname -sr), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(go version)"
	echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT/machine.txt"

: >"$OUT/raw.txt"
for i in $(seq 1 "$COUNT"); do
	echo "round $i/$COUNT (load $(cut -d' ' -f1 /proc/loadavg))"
	# The contenders' order changes from round to round (bench_test.go: rotate).
	(cd bench && S3PD_BENCH_ROUND=$i "$OUT/bench.test" -test.run '^$' -test.bench "$BENCH" -test.benchtime "$BENCHTIME" -test.count 1) |
		tee -a "$OUT/raw.txt" | grep -E '^(Benchmark|--- FAIL|FAIL|panic)' | grep -E 'FAIL|panic' && exit 1
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt"

# Each benchmark against its ceiling (bare first, named: the changing
# order means the first contender in the file is not always bare), then s3pd
# as the base against its peers.
declare -A cols
cols=([Loopback]='/client@(bare bare-again bare-sum s3pd s3pd-engine s3pd-verify-off transfermanager manager)' [RSS]='/client' [S3Like]='/client@(bare s3pd s5cmd)')
peers=([Loopback]='/client@(s3pd transfermanager manager)' [S3Like]='/client@(s3pd s5cmd)')
for b in Loopback RSS S3Like; do
	grep -E "^(goos|goarch|pkg|cpu):|^Benchmark$b/" "$OUT/raw.txt" >"$OUT/$b.txt" || continue
	benchstat -col "${cols[$b]}" "$OUT/$b.txt" >"$OUT/$b.benchstat" 2>&1 || true
	echo "== $b"
	cat "$OUT/$b.benchstat"
	if [[ -n ${peers[$b]:-} ]]; then
		benchstat -col "${peers[$b]}" "$OUT/$b.txt" >"$OUT/$b-peers.benchstat" 2>&1 || true
		echo "== $b, s3pd against its peers"
		cat "$OUT/$b-peers.benchstat"
	fi
done
# Paired by round, with a bootstrap interval (bench/paired): the ratios
# docs/BENCHMARKS.md reports.
echo "== paired by round, against bare"
go run ./bench/paired "$OUT/raw.txt" | tee "$OUT/paired.txt"
echo "results in $OUT"
