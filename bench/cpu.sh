#!/usr/bin/env bash
# The CPU each contender spends on one set, measured by `perf stat` over
# many interleaved child runs: a finer measure than bench/run.sh's wall
# time, whose noise on this machine is the machine's own speed. It
# builds s3pd and the benchmark binary into $OUT, starts the emulator
# (the benchmark binary's serve role, the Loopback sets, no network
# model), then runs every contender once per round, in turn, each under
# `perf stat`, and stops the emulator by its PID.
#
# Settings (environment):
#   N=40                  rounds
#   SINK=tmpfs            tmpfs (files under $S3PD_BENCH_TMPFS) or discard
#   SET=256x1MiB          256x1MiB (16 requests of one object each in
#                         flight) or 16x64MiB (2 objects x 8 ranges)
#   CLIENTS='bare bare-sum engine s3pd s3pd-verify-off'
#                         bare, bare-sum and engine are the benchmark
#                         binary's child roles (engine is s3pd-engine in
#                         bench/run.sh); s3pd and s3pd-verify-off run the
#                         built CLI. The first is the base of the ratios.
#   OUT=/tmp/...          where cpu.txt (one line per run) and the binaries go
#
# It prints, per contender, the medians of task-clock (ms of CPU),
# context switches and page faults, and the median over rounds of the
# contender's task-clock divided by the base's in the same round.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-40}
SINK=${SINK:-tmpfs}
SET=${SET:-256x1MiB}
CLIENTS=${CLIENTS:-bare bare-sum engine s3pd s3pd-verify-off}
OUT=${OUT:-$(mktemp -d /tmp/s3pd-cpu-XXXXXX)}
TMPFS=${S3PD_BENCH_TMPFS:-/dev/shm}
command -v perf >/dev/null || { echo "cpu.sh: needs perf (linux-perf)" >&2; exit 2; }
case $SET in
256x1MiB) prefix=small/ workers=16 threads=1 want=$((256 << 20)) ;;
16x64MiB) prefix=big/ workers=2 threads=8 want=$((1 << 30)) ;;
*) echo "cpu.sh: SET must be 256x1MiB or 16x64MiB" >&2; exit 2 ;;
esac
case $SINK in
tmpfs) dest=$(mktemp -u "$TMPFS/s3pd-cpu-XXXXXX") ;;
discard) dest= ;;
*) echo "cpu.sh: SINK must be tmpfs or discard" >&2; exit 2 ;;
esac
mkdir -p "$OUT"
go build -o "$OUT/s3pd" .
go test -c -o "$OUT/bench.test" ./bench

# The contenders' environment, as the harness gives it (bench/harness_test.go).
unset AWS_CA_BUNDLE AWS_PROFILE AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE AWS_SESSION_TOKEN
mkdir -p "$OUT/home"
export HOME=$OUT/home AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true

# The emulator runs until its standard input closes.
rm -f "$OUT/serve.in"
mkfifo "$OUT/serve.in"
S3PD_BENCH_ROLE=serve S3PD_BENCH_DATASET=big:16:64MiB,small:256:1MiB "$OUT/bench.test" <"$OUT/serve.in" >"$OUT/serve.out" 2>&1 &
server=$!
exec 3>"$OUT/serve.in"
stop() {
	exec 3>&-
	kill "$server" 2>/dev/null || true
	wait "$server" 2>/dev/null || true
	[[ -z $dest ]] || rm -rf "$dest"
}
trap stop EXIT
for _ in $(seq 100); do
	grep -q '^endpoint ' "$OUT/serve.out" && break
	sleep 0.1
done
endpoint=$(awk '/^endpoint /{print $2}' "$OUT/serve.out")
[[ -n $endpoint ]] || { echo "cpu.sh: the emulator did not start: $(cat "$OUT/serve.out")" >&2; exit 1; }

events=task-clock,context-switches,page-faults
: >"$OUT/cpu.txt"
for i in $(seq "$N"); do
	for c in $CLIENTS; do
		if [[ -n $dest ]]; then rm -rf "$dest" && mkdir "$dest"; fi
		case $c in
		s3pd | s3pd-verify-off)
			args=(get "s3://bench/$prefix" --endpoint-url "$endpoint" --quiet --workers "$workers" --threads "$threads")
			if [[ -n $dest ]]; then args+=("$dest/"); else args+=(--benchmark); fi
			[[ $c == s3pd ]] || args+=(--verify off)
			perf stat -x, -e "$events" -o "$OUT/stat.tmp" "$OUT/s3pd" "${args[@]}" >/dev/null
			;;
		*)
			S3PD_BENCH_ROLE=client S3PD_BENCH_CLIENT=$c S3PD_BENCH_ENDPOINT=$endpoint S3PD_BENCH_PREFIX=$prefix \
				S3PD_BENCH_DEST=$dest S3PD_BENCH_WORKERS=$workers S3PD_BENCH_THREADS=$threads \
				S3PD_BENCH_PARTSIZE=$((8 << 20)) S3PD_BENCH_WANT=$want S3PD_BENCH_TM_CONCURRENCY=4 \
				perf stat -x, -e "$events" -o "$OUT/stat.tmp" "$OUT/bench.test"
			;;
		esac
		echo "$i $c $(awk -F, '/^[0-9]/{printf "%s ", $1}' "$OUT/stat.tmp")" >>"$OUT/cpu.txt"
	done
	echo "round $i/$N"
done

echo "# $SINK $SET, $N rounds, $(git rev-parse --short HEAD); task-clock ms, medians" | tee "$OUT/cpu.summary"
awk -v order="$CLIENTS" '
function median(a, n,   i, j, t) {
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
{ cpu[$1, $2] = $3; cs[$2, ++n[$2]] = $4; pf[$2, n[$2]] = $5; rounds[$1] = 1 }
END {
	k = split(order, names, " ")
	printf "%-16s %9s %9s %9s %14s\n", "contender", "cpu-ms", "ctx-sw", "faults", "cpu/" names[1]
	for (c = 1; c <= k; c++) {
		name = names[c]; m = 0; r = 0
		delete a; delete b; delete d; delete q
		for (i = 1; i <= n[name]; i++) { b[i] = cs[name, i]; d[i] = pf[name, i] }
		for (i in rounds) if ((i, name) in cpu) { a[++m] = cpu[i, name]; if ((i, names[1]) in cpu) q[++r] = cpu[i, name] / cpu[i, names[1]] }
		printf "%-16s %9.1f %9.0f %9.0f %14.3f\n", name, median(a, m), median(b, n[name]), median(d, n[name]), median(q, r)
	}
}' "$OUT/cpu.txt" | tee -a "$OUT/cpu.summary"
echo "results in $OUT"
