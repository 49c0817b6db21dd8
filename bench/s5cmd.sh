#!/usr/bin/env bash
# Builds s5cmd v2.3.0, the peer s3pd's defaults are compared with, into
# ${1:-$HOME/.cache/s3pd-bench/s5cmd} and prints its path. `go install
# github.com/peak/s5cmd/v2@v2.3.0` fails here (the module proxy refuses
# its version list), so it builds from a throwaway module outside the
# repository that requires that exact version.
set -euo pipefail
out=${1:-$HOME/.cache/s3pd-bench/s5cmd}
if [[ -x $out ]] && go version -m "$out" 2>/dev/null | grep -q "s5cmd/v2[[:space:]]*v2.3.0"; then
	echo "$out"
	exit 0
fi
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
go mod init s5cmd-build >/dev/null 2>&1
GOFLAGS=-mod=mod go get github.com/peak/s5cmd/v2@v2.3.0 >/dev/null 2>&1
CGO_ENABLED=0 go build -o "$out" github.com/peak/s5cmd/v2
echo "$out"
