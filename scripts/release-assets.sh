#!/bin/sh
# Shell completions and man pages for release archives and packages
# (goreleaser runs this before it builds): completions/ and manpages/.
set -eu
cd "$(dirname "$0")/.."
rm -rf completions manpages
mkdir -p completions manpages
go build -o completions/.s3pd .
for shell in bash zsh fish; do
	completions/.s3pd completion "$shell" >"completions/s3pd.$shell"
done
completions/.s3pd man manpages
rm completions/.s3pd
gzip -9n manpages/*.1
