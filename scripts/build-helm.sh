#!/usr/bin/env bash
# Installs the pinned helm v3 from its Go module (through the Go module proxy) into a
# cache outside the repo, once; later runs reuse it. Prints the binary's path.
set -euo pipefail
HELM_VERSION="v3.19.5"
CACHE_BIN="${CLOUDPLANE_TOOLS_BIN:-$HOME/.cache/cloudplane/bin}"
out="$CACHE_BIN/helm"

installed_version() { "$out" version --template '{{.Version}}' 2>/dev/null || true; }

if [ ! -x "$out" ] || [ "$(installed_version)" != "$HELM_VERSION" ]; then
  mkdir -p "$CACHE_BIN"
  echo "building helm $HELM_VERSION from the Go module proxy (once; cached in $CACHE_BIN)..." >&2
  # helm reports its version from these linker variables; without them it says "v3.x-unreleased"-ish.
  # -mod=mod: helm's go.mod is resolved as a module, not from a vendor directory.
  GOFLAGS="${GOFLAGS:-} -mod=mod" GOBIN="$CACHE_BIN" CGO_ENABLED=0 go install -trimpath \
    -ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
    "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
fi
echo "$out"
