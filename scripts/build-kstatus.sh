#!/usr/bin/env bash
# Builds the kstatus checker (test/tools/kstatus: sigs.k8s.io/cli-utils' status.Compute
# on JSON objects read from stdin) at the versions pinned in its go.mod, through the Go
# module proxy, into a cache outside the repo. Prints the binary's path.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
mod="$here/test/tools/kstatus"
version="$(awk '$1 == "sigs.k8s.io/cli-utils" {print $2}' "$mod/go.mod")"
stamp="$(cat "$mod/go.mod" "$mod/go.sum" "$mod/main.go" | sha256sum | cut -c1-12)"
out="${CLOUDPLANE_TOOLS_CACHE:-$HOME/.cache/cloudplane}/kstatus-$version-$stamp/kstatus"
if [ ! -x "$out" ]; then
  mkdir -p "$(dirname "$out")"
  echo "building the kstatus checker (cli-utils $version) from the Go module proxy (once; cached in $(dirname "$out"))..." >&2
  (cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$out.tmp" .)
  mv "$out.tmp" "$out"
fi
echo "$out"
