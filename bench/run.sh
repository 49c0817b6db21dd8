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
#   BENCH='^Benchmark(Loopback|RSS|S3Like|Overfetch)$'   which benchmarks (a go test -bench regexp;
#                  empty: none). The HTTPS rows are BenchmarkLoopbackTLS, run
#                  only when asked: BENCH='^BenchmarkLoopback(TLS)?$' puts them
#                  beside the HTTP rows in the same rounds (make bench-tls)
#   BUDGET='^BenchmarkBudget$'   the request-budget cases, COUNT rounds in one
#                  process after BENCH's, BUDGET_BENCHTIME=1x (empty: none;
#                  one case: '^BenchmarkBudget$/^case=mcr48$')
#   S3PD_BENCH_QUICK=1   scaled-down budget cases (1 s stalls, 512 objects
#                  instead of 2,048, a smaller grid of references)
#   NEW=REV        measure s3pd built at git revision REV (default: the work tree)
#   OLD=REV        also build s3pd at git revision REV as $S3PD_OLD_BIN: the
#                  budget cases then compare fault-free sets with it, and
#                  S3PD_BENCH_CLIENTS=s3pd,s3pd-old compares it on loopback
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
BENCH=${BENCH-^Benchmark(Loopback|RSS|S3Like|Overfetch)$}
BUDGET=${BUDGET-^BenchmarkBudget$}
BUDGET_BENCHTIME=${BUDGET_BENCHTIME:-1x}
OUT=${OUT:-$(mktemp -d /tmp/s3pd-bench-XXXXXX)}
mkdir -p "$OUT"

# build_at REV PATH builds s3pd at git revision REV into PATH.
build_at() {
	rm -rf "$OUT/src-$1" && mkdir -p "$OUT/src-$1"
	git archive "$1" | tar -x -C "$OUT/src-$1"
	(cd "$OUT/src-$1" && go build -o "$2" .)
	rm -rf "$OUT/src-$1"
}
if [[ -n ${NEW:-} ]]; then build_at "$NEW" "$OUT/s3pd"; else go build -o "$OUT/s3pd" .; fi
go test -c -o "$OUT/bench.test" ./bench
export S3PD_BIN=$OUT/s3pd
if [[ -n ${OLD:-} ]]; then
	build_at "$OLD" "$OUT/s3pd-old"
	export S3PD_OLD_BIN=$OUT/s3pd-old
fi
export S5CMD=${S5CMD:-$(bench/s5cmd.sh)}
export PATH=$PATH:$(go env GOPATH)/bin
command -v benchstat >/dev/null || go install golang.org/x/perf/cmd/benchstat@latest

{
	if [[ -n ${NEW:-} ]]; then echo "# $(date -u +%FT%TZ) s3pd at $(git rev-parse --short "$NEW")"; else
		echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!bench' 2>/dev/null || echo '+dirty')"; fi
	echo "# $(uname -sr), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(go version)"
	echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
	if [[ -n ${OLD:-} ]]; then echo "# old: $(git rev-parse --short "$OLD")"; fi
	if [[ -n ${S3PD_BENCH_QUICK:-} ]]; then echo "# quick budget cases"; fi
} | tee "$OUT/machine.txt"

# pass PATTERN BENCHTIME ROUND runs round ROUND of the benchmarks PATTERN
# selects (none when it is empty) and stops the run on a failure.
pass() {
	[[ -z $1 ]] && return 0
	# Without pipefail the pipeline's status is the last grep's: 0 when
	# the benchmark printed a failure.
	set +o pipefail
	(cd bench && S3PD_BENCH_ROUND=$3 "$OUT/bench.test" -test.run '^$' -test.bench "$1" -test.benchtime "$2" -test.count 1) 2>&1 |
		tee -a "$OUT/raw.txt" | grep -E '^(--- FAIL|FAIL|panic)' && exit 1
	set -o pipefail
	return 0
}

: >"$OUT/raw.txt"
# The budget cases' emulators run in one child for the whole run:
# preparing a GiB of ETags takes seconds, too long to repeat every round.
if [[ -n $BUDGET ]]; then
	coproc SERVERS { cd bench && S3PD_BENCH_ROLE=budget-servers exec "$OUT/bench.test"; }
	read -r servers <&"${SERVERS[0]}"
	[[ $servers == servers* ]] || { echo "budget emulators did not start: $servers"; exit 1; }
	export S3PD_BENCH_SERVERS=${servers#servers }
fi
for i in $(seq 1 "$COUNT"); do
	echo "round $i/$COUNT (load $(cut -d' ' -f1 /proc/loadavg))"
	# The contenders' order changes from round to round (bench_test.go: rotate).
	pass "$BENCH" "$BENCHTIME" "$i"
	pass "$BUDGET" "$BUDGET_BENCHTIME" "$i"
	echo "# round $i load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"
done
if [[ -n $BUDGET ]]; then
	exec {SERVERS[1]}>&-
	wait "$SERVERS_PID" || true
fi
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt"

# Each benchmark against its ceiling (bare first, named: the changing
# order means the first contender in the file is not always bare), then s3pd
# as the base against its peers.
declare -A cols
cols=([Loopback]='/client@(bare bare-again bare-sum s3pd s3pd-old s3pd-engine s3pd-verify-off transfermanager manager)' [LoopbackTLS]='/client@(bare s3pd transfermanager)' [RSS]='/client' [Overfetch]='/case' [S3Like]='/client@(bare s3pd s5cmd)' [Budget]='/client')
peers=([Loopback]='/client@(s3pd transfermanager manager)' [LoopbackTLS]='/client@(s3pd transfermanager)' [S3Like]='/client@(s3pd s5cmd)')
for b in Loopback LoopbackTLS RSS S3Like Overfetch Budget; do
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
grep -v '^BenchmarkBudget/' "$OUT/raw.txt" >"$OUT/raw-vs-bare.txt" || true
go run ./bench/paired "$OUT/raw-vs-bare.txt" | tee "$OUT/paired.txt"
if [[ -n ${S3PD_OLD_BIN:-} ]] && grep -q 'client=s3pd-old' "$OUT/raw.txt"; then
	echo "== paired by round, against s3pd-old"
	go run ./bench/paired "$OUT/raw-vs-bare.txt" s3pd-old | tee -a "$OUT/paired.txt"
fi
if grep -q '^BenchmarkBudget/' "$OUT/raw.txt"; then
	# Each budget case against its best reference (by median); the
	# s3pd lines are the targets' ratios (time of the reference over s3pd's).
	echo "== budget cases, paired by round, against the best reference"
	grep '^BenchmarkBudget/' "$OUT/raw.txt" >"$OUT/budget.txt"
	go run ./bench/paired "$OUT/budget.txt" 'best:ref-' | tee "$OUT/budget-paired.txt"
fi
echo "results in $OUT"
