#!/usr/bin/env bash
# The entry point of `make bench-copy`: s3pd copy local to local against
# cp (2,000 x 1 MiB files and one 2 GiB file on tmpfs), and upload to the
# emulator's discard backend against the SDK's upload manager, 10
# interleaved rounds compared with benchstat. Needs about 7 GiB free on
# /dev/shm (or COPYBENCH_DIR set to another tmpfs). COPYBENCH_BIN=path
# measures that s3pd instead of this tree's; OLD=REV also measures s3pd
# built at git revision REV (tool=s3pd-old) in the same rounds; UPLOAD=0
# runs the copy rows only.
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-10}
UPLOAD=${UPLOAD:-1}
# The benchmarks keep their source trees between rounds; they go when
# this script ends, so a run leaves no gigabytes in memory behind it.
tmpfs=${COPYBENCH_DIR:-/dev/shm}
trap 'rm -rf "$tmpfs/s3pd-copybench" "$tmpfs/s3pd-uploadbench"' EXIT
OUT=${OUT:-$(mktemp -d /tmp/s3pd-bench-copy-XXXXXX)}
export PATH=$PATH:$(go env GOPATH)/bin
command -v benchstat >/dev/null || go install golang.org/x/perf/cmd/benchstat@latest
go test -c -o "$OUT/e2e.test" ./e2e
go test -c -o "$OUT/s3store.test" ./pkg/s3store
if [[ -n ${OLD:-} ]]; then
	rm -rf "$OUT/src-old" && mkdir -p "$OUT/src-old"
	git archive "$OLD" | tar -x -C "$OUT/src-old"
	(cd "$OUT/src-old" && go build -o "$OUT/s3pd-old" .)
	rm -rf "$OUT/src-old"
fi
: > "$OUT/copy.txt"; : > "$OUT/upload.txt"
for i in $(seq "$COUNT"); do
	echo "round $i/$COUNT" >&2
	(cd e2e && COPYBENCH_ROUND=$i "$OUT/e2e.test" -test.run '^$' -test.bench BenchmarkCopyLocal -test.benchtime 1x >> "$OUT/copy.txt")
	if [[ -n ${OLD:-} ]]; then
		(cd e2e && COPYBENCH_BIN=$OUT/s3pd-old "$OUT/e2e.test" -test.run '^$' -test.bench 'BenchmarkCopyLocal/.*/tool=s3pd$' -test.benchtime 1x) |
			sed 's#/tool=s3pd-\([0-9]\)#/tool=s3pd-old-\1#' | grep '^Benchmark' >> "$OUT/copy.txt"
	fi
	if [ "$UPLOAD" != 0 ]; then
		(cd pkg/s3store && "$OUT/s3store.test" -test.run '^$' -test.bench BenchmarkUpload -test.benchtime 1x >> "$OUT/upload.txt")
	fi
done
benchstat -col /tool "$OUT/copy.txt" | tee "$OUT/copy.benchstat"
# Paired by round: s3pd's speed over cp's in each round, a bootstrap
# interval over the rounds.
sed 's#/tool=#/client=#' "$OUT/copy.txt" > "$OUT/copy.paired.txt"
go run ./bench/paired "$OUT/copy.paired.txt" cp | tee "$OUT/copy.ratios"
if [[ -n ${OLD:-} ]]; then
	go run ./bench/paired "$OUT/copy.paired.txt" s3pd-old | tee -a "$OUT/copy.ratios"
fi
if [ "$UPLOAD" != 0 ]; then
	benchstat -col /tool "$OUT/upload.txt" | tee "$OUT/upload.benchstat"
fi
echo "results in $OUT" >&2
