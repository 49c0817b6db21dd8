#!/usr/bin/env bash
# s3pd bench's steady figure beside `s3pd get --benchmark` of the same
# dataset against the same emulator, and beside the loopback ceilings.
# It builds s3pd into $OUT, starts two standalone emulators (`s3pd bench
# serve --tls --prepare`: the S3-like model, and no network model), and
# runs, once per round in turn (interleaved, so the machine's drift falls
# on every row alike):
#
#   bench           s3pd bench --duration $DURATION (its emulator in a
#                   child process of its own, the default dataset as a
#                   steady mix, fresh names each pass): the steady figure
#   get             s3pd get --benchmark s3://bench/ against the S3-like
#                   emulator, $DATASET read once in key order: the whole
#                   run's rate
#   bench-ceiling   s3pd bench --duration $DURATION --ttfb 0 --conn-rate 0
#   get-ceiling     s3pd get --benchmark against the emulator without a
#                   network model
#
# Settings (environment):
#   ROUNDS=5            rounds
#   DURATION=30s        each bench's --duration
#   DATASET=...         get's dataset (default: 4x bench's default, about
#                       21 GiB, so that the get runs long enough for its
#                       ramp and tail to weigh little)
#   OUT=/tmp/...        where steady.tsv (one line per run), each run's
#                       --json and the binary go
#
# It prints one line per run (round, row, MiB/s, seconds, client CPU
# seconds, emulator CPU seconds, verdict) and the median MiB/s of each
# row. Run it on a quiet machine: `uptime` under 1 per core.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-30s}
DATASET=${DATASET:-model:64:256MiB,shards:4096:1MiB,small:16384:64KiB}
OUT=${OUT:-$(mktemp -d /tmp/s3pd-steady.XXXXXX)}
mkdir -p "$OUT"

go build -o "$OUT/s3pd" .
S3PD=$OUT/s3pd

# serve NAME ARGS...: starts an emulator, waits for its endpoint, sets
# NAME_URL and NAME_PID.
serve() {
	local name=$1
	shift
	"$S3PD" bench serve --listen 127.0.0.1:0 --prepare --tls --ca-out "$OUT/$name.pem" --dataset "$DATASET" "$@" >"$OUT/$name.log" 2>&1 &
	local pid=$!
	local url=""
	for _ in $(seq 600); do
		url=$(grep -o 'https://127\.0\.0\.1:[0-9]*' "$OUT/$name.log" | head -1 || true)
		[ -n "$url" ] && break
		sleep 0.5
	done
	[ -n "$url" ] || { echo "emulator $name did not start: $(cat "$OUT/$name.log")" >&2; kill "$pid"; exit 1; }
	printf -v "${name}_URL" %s "$url"
	printf -v "${name}_PID" %s "$pid"
}
serve S3LIKE --ttfb 30ms --conn-rate 90MB
serve BARE --ttfb 0 --conn-rate 0
trap 'kill -INT "$S3LIKE_PID" "$BARE_PID" 2>/dev/null || true' EXIT

# row NAME ARGS...: one run of s3pd with ARGS and --json, one TSV line.
row() {
	local round=$1 name=$2
	shift 2
	local js=$OUT/$name-$round.json
	"$S3PD" "$@" --json --quiet >"$js" 2>"$OUT/$name-$round.err" || { echo "$name round $round: exit $?: $(tail -3 "$OUT/$name-$round.err")" >&2; return; }
	jq -r --arg r "$round" --arg n "$name" 'select(.type == "summary") |
		[$r, $n, ((if .steady_reached then .steady_bytes_per_second else .bytes_per_second end) / 1048576 | floor),
		 (.seconds * 10 | floor / 10), (.cpu_seconds * 100 | floor / 100), ((.emulator_cpu_seconds // 0) * 100 | floor / 100),
		 .bottleneck] | @tsv' "$js" | tee -a "$OUT/steady.tsv"
}

printf 'round\trow\tMiB/s\tseconds\tclient_cpu_s\temulator_cpu_s\tbottleneck\n' | tee "$OUT/steady.tsv"
for r in $(seq "$ROUNDS"); do
	row "$r" bench bench --duration "$DURATION"
	row "$r" get get --benchmark s3://bench/ --endpoint-url "$S3LIKE_URL" --ca-bundle "$OUT/S3LIKE.pem" --no-sign-request --region us-east-1
	row "$r" bench-ceiling bench --duration "$DURATION" --ttfb 0 --conn-rate 0
	row "$r" get-ceiling get --benchmark s3://bench/ --endpoint-url "$BARE_URL" --ca-bundle "$OUT/BARE.pem" --no-sign-request --region us-east-1
done

echo
echo "median MiB/s per row (bench rows: the steady figure; get rows: the whole run's rate)"
for name in bench get bench-ceiling get-ceiling; do
	awk -F'\t' -v n="$name" '$2 == n { print $3 }' "$OUT/steady.tsv" | sort -n |
		awk -v n="$name" '{ v[NR] = $1 } END { if (NR) printf "%-14s %d (%d runs)\n", n, (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), NR }'
done
echo "runs in $OUT"
