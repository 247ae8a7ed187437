#!/usr/bin/env bash
# Builds versitygw (github.com/versity/versitygw, Apache-2.0), the S3 server the bucket
# driver's tests run against, of a pinned release through the Go module proxy, into a
# cache outside the repo. Prints the binary's path.
#
# Why versitygw: checked by hand against v1.8.0 with @aws-sdk/client-s3 before choosing it:
# an unsigned GET of an object is refused (403) until a bucket policy grants Principal "*"
# s3:GetObject, then served (200), and refused again once the policy is deleted; a second
# CreateBucket answers BucketAlreadyOwnedByYou and DeleteBucket of a bucket holding objects
# BucketNotEmpty, as AWS does. Besides: Apache-2.0, actively released, and a single Go
# binary with a posix backend (buckets are directories under a data dir; nothing else to
# run), served by the Go module proxy here.
set -euo pipefail
VERSITYGW_VERSION="v1.8.0"
dir="${CLOUDPLANE_TOOLS_CACHE:-$HOME/.cache/cloudplane}/versitygw-$VERSITYGW_VERSION"
if [ ! -x "$dir/versitygw" ]; then
  echo "building versitygw $VERSITYGW_VERSION from the Go module proxy (once; cached in $dir)..." >&2
  tmp="$dir.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  trap 'rm -rf "$tmp"' EXIT
  CGO_ENABLED=0 GOBIN="$tmp" go install -trimpath -ldflags="-s -w" "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  trap - EXIT
fi
echo "$dir/versitygw"
