#!/usr/bin/env bash
# Builds CloudNativePG's manager (github.com/cloudnative-pg/cloudnative-pg, cmd/manager) of a
# pinned release through the Go module proxy, into a cache outside the repo, and copies
# beside it the release's CRDs (config/crd/bases). Prints the binary's path.
#
# One binary is both sides of CloudNativePG: `manager controller` is the operator, and
# `manager instance init|run` the instance manager its Pods run (the image's init container
# copies it to /controller/manager). test/integration/database-cloudnative-pg.test.ts runs
# the operator against the workload cluster and plays each Pod with the instance manager.
set -euo pipefail
CNPG_VERSION="v1.30.0"
dir="${CLOUDPLANE_TOOLS_CACHE:-$HOME/.cache/cloudplane}/cloudnative-pg-$CNPG_VERSION"
if [ ! -x "$dir/manager" ] || [ ! -s "$dir/crds/postgresql.cnpg.io_clusters.yaml" ]; then
  echo "building CloudNativePG $CNPG_VERSION from the Go module proxy (once; cached in $dir)..." >&2
  tmp="$dir.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp/crds"
  trap 'rm -rf "$tmp"' EXIT
  # The module's own directory, built as its main module (its go.sum pins every dependency);
  # not `go install ...@version`, which also asks the proxy for the module's list of versions.
  src="$(go mod download -json "github.com/cloudnative-pg/cloudnative-pg@$CNPG_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  (cd "$src" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$tmp/manager" ./cmd/manager)
  cp "$src"/config/crd/bases/*.yaml "$tmp/crds/"
  chmod u+w "$tmp"/crds/*.yaml
  rm -rf "$dir"
  mv "$tmp" "$dir"
  trap - EXIT
fi
echo "$dir/manager"
