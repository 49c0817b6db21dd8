#!/bin/sh
# Builds versitygw, an S3 gateway that checks request signatures, for the
# e2e suite that fetches keys with every printable character through it
# (e2e TestVersitygwKeys). It is built from the Go module proxy in a
# throwaway module (its version list cannot be installed from with go
# install) into $VERSITYGW_BIN, default ~/.cache/s3pd/versitygw. Does
# nothing when that file exists.
set -eu

VERSION=v1.8.0
out=${VERSITYGW_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/s3pd/versitygw}
if [ -x "$out" ]; then
	echo "build-versitygw: $out already built"
	exit 0
fi
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
printf 'module versitygwbuild\n\ngo 1.25\n\nrequire github.com/versity/versitygw %s\n' "$VERSION" >go.mod
GOFLAGS=-mod=mod go build -o "$out.tmp" github.com/versity/versitygw/cmd/versitygw
mv "$out.tmp" "$out"
echo "build-versitygw: built versitygw $VERSION at $out"
