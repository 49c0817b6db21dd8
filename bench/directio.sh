#!/usr/bin/env bash
# Direct I/O against the page cache on one landing disk: s3pd get with
# --direct-io on and with --direct-io off, interleaved round by round
# (the order alternates), onto xfs over a loop device that does direct
# I/O itself (losetup --direct-io=on, so the image file's own pages are
# not cached either), backed by a sparse file on a real disk. Each run
# lands the whole dataset inside a memory cgroup (v1) of its own, so
# the page cache it fills is charged to it, as in a Kubernetes pod.
#
# Per run it records the throughput and CPU seconds per GiB (from the
# --json summary), the share of the landed files' pages left in the page
# cache (fincore) and the cgroup's peak (memory.max_usage_in_bytes),
# then removes the files. It prints the medians per mode and the ratio
# on/off paired by round. Needs root, losetup, mkfs.xfs, fincore and a
# v1 memory cgroup hierarchy; it removes the mount, the loop device, the
# image and the cgroups it made, and stops the emulator by its PID.
#
# Settings (environment):
#   ROUNDS=10               rounds (each runs both modes once)
#   DATASET=big:32:64MiB    what each run lands (2 GiB)
#   DIR=/var/tmp            where the image goes (a disk, not tmpfs)
#   ARGS=                   more get flags for both modes
#   OUT=/tmp/...            where runs.txt and the binary go
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-10}
DATASET=${DATASET:-big:32:64MiB}
DIR=${DIR:-/var/tmp}
ARGS=${ARGS:-}
OUT=${OUT:-$(mktemp -d /tmp/s3pd-directio-XXXXXX)}
CGROOT=/sys/fs/cgroup/memory

[ "$(id -u)" -eq 0 ] || { echo "directio.sh: needs root (loop device, mount, cgroup)" >&2; exit 2; }
for tool in losetup mkfs.xfs mount umount fincore python3; do
	command -v "$tool" >/dev/null || { echo "directio.sh: needs $tool" >&2; exit 2; }
done
[ -w "$CGROOT" ] || { echo "directio.sh: no v1 memory cgroup hierarchy at $CGROOT" >&2; exit 2; }
[ "$(stat -f -c %T "$DIR")" != tmpfs ] || { echo "directio.sh: $DIR is tmpfs: the image must sit on a disk" >&2; exit 2; }

mkdir -p "$OUT"
go build -o "$OUT/s3pd" .
work=$(mktemp -d "$DIR/s3pd-directio-XXXXXX")
img=$work/xfs.img
mnt=$work/mnt
dev=
server=
cg=
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null || true
	[ -n "$cg" ] && [ -d "$cg" ] && rmdir "$cg" 2>/dev/null || true
	mountpoint -q "$mnt" 2>/dev/null && umount "$mnt"
	[ -n "$dev" ] && losetup -d "$dev"
	rm -rf "$work"
}
trap cleanup EXIT

truncate -s 4G "$img"
dev=$(losetup -f --show --direct-io=on "$img")
mkfs.xfs -q -f "$dev"
mkdir -p "$mnt"
mount "$dev" "$mnt"

"$OUT/s3pd" bench serve --listen 127.0.0.1:0 --dataset "$DATASET" --prepare >"$OUT/serve.out" 2>&1 &
server=$!
for _ in $(seq 600); do
	endpoint=$(sed -n 's/.* at \(http[^:]*:[^:]*:[0-9]*\): .*/\1/p' "$OUT/serve.out" | head -1)
	[ -n "$endpoint" ] && break
	sleep 0.1
done
[ -n "$endpoint" ] || { echo "directio.sh: the emulator did not start:" >&2; cat "$OUT/serve.out" >&2; exit 1; }

# One run: land the dataset with --direct-io $1 in a cgroup of its own,
# then append "round mode GiB/s cpu_s_per_GiB cached_% cgroup_peak_MiB".
measure() {
	local mode=$1 round=$2 dest=$mnt/dest
	cg=$CGROOT/s3pd-directio-$$-$mode-$round
	mkdir "$cg"
	# shellcheck disable=SC2086
	sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cg" \
		"$OUT/s3pd" get --json --quiet --direct-io "$mode" --endpoint-url "$endpoint" --no-sign-request $ARGS \
		s3://bench/ "$dest" >"$OUT/run-$mode-$round.json"
	local peak
	peak=$(cat "$cg/memory.max_usage_in_bytes")
	local cached
	cached=$(find "$dest" -path "$dest/.s3pd" -prune -o -type f -print0 | xargs -0 fincore --bytes --noheadings --raw -o RES,SIZE |
		awk '{r += $1; s += $2} END {printf "%.2f", s ? 100 * r / s : 0}')
	python3 - "$OUT/run-$mode-$round.json" "$round" "$mode" "$cached" "$peak" >>"$OUT/runs.txt" <<'EOF'
import json, sys
path, rnd, mode, cached, peak = sys.argv[1:]
s = [json.loads(l) for l in open(path) if '"summary"' in l][-1]
assert s["failed"] == 0 and s["objects"] > 0, s
print(rnd, mode, "%.3f" % s["gib_per_s"], "%.3f" % s["cpu_seconds_per_gib"], cached, "%.1f" % (int(peak) / 2**20), s.get("direct_io", "-"))
EOF
	rm -rf "$dest"
	rmdir "$cg"
	cg=
}

: >"$OUT/runs.txt"
for r in $(seq "$ROUNDS"); do
	if [ $((r % 2)) -eq 1 ]; then order="on off"; else order="off on"; fi
	for mode in $order; do
		measure "$mode" "$r"
	done
done

echo "runs: $OUT/runs.txt (round mode GiB/s cpu_s/GiB cached_% cgroup_peak_MiB direct_io)"
python3 - "$OUT/runs.txt" <<'EOF'
import statistics as st, sys
runs = [l.split() for l in open(sys.argv[1])]
by = {}
for rnd, mode, gibs, cpu, cached, peak, state in runs:
    by.setdefault(mode, []).append((int(rnd), float(gibs), float(cpu), float(cached), float(peak), state))
for mode in ("on", "off"):
    rs = by[mode]
    col = lambda i: [r[i] for r in rs]
    print("%-3s GiB/s median %.3f (min %.3f, max %.3f); CPU s/GiB median %.3f; cached %% max %.2f; cgroup peak MiB median %.0f, max %.0f; direct_io %s"
          % (mode, st.median(col(1)), min(col(1)), max(col(1)), st.median(col(2)), max(col(3)), st.median(col(4)), max(col(4)), ",".join(sorted(set(col(5))))))
on = {r[0]: r for r in by["on"]}
off = {r[0]: r for r in by["off"]}
tp = sorted(on[k][1] / off[k][1] for k in on)
cpu = sorted(on[k][2] / off[k][2] for k in on)
print("on/off paired by round: throughput median %.3f (min %.3f, max %.3f); CPU per GiB median %.3f (min %.3f, max %.3f)"
      % (st.median(tp), tp[0], tp[-1], st.median(cpu), cpu[0], cpu[-1]))
EOF
