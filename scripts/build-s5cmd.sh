#!/bin/sh
# Builds s5cmd, a peer S3 client, for the e2e client suite that runs
# every common client against `s3pd bench serve` (e2e TestClients). It is
# built from the Go module proxy in a throwaway module (its version list
# cannot be installed from with go install) into $S5CMD_BIN, default
# ~/.cache/s3pd/s5cmd. Does nothing when that file exists.
set -eu

VERSION=v2.3.0
out=${S5CMD_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/s3pd/s5cmd}
if [ -x "$out" ]; then
	echo "build-s5cmd: $out already built"
	exit 0
fi
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
printf 'module s5cmdbuild\n\ngo 1.25\n\nrequire github.com/peak/s5cmd/v2 %s\n' "$VERSION" >go.mod
GOFLAGS=-mod=mod go build -o "$out.tmp" github.com/peak/s5cmd/v2
mv "$out.tmp" "$out"
echo "build-s5cmd: built s5cmd $VERSION at $out"
