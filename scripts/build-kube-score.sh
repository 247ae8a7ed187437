#!/usr/bin/env bash
# Installs the pinned kube-score (a linter of Kubernetes manifests: probes, resources,
# security contexts, NetworkPolicies, PodDisruptionBudgets...) from its Go module (through
# the Go module proxy) into a cache outside the repo, once; later runs reuse it. Prints the
# binary's path. test/integration/chart-lint.test.ts runs it on the rendered chart.
set -euo pipefail
KUBE_SCORE_VERSION="v1.20.0"
CACHE_BIN="${CLOUDPLANE_TOOLS_BIN:-$HOME/.cache/cloudplane/bin}"
out="$CACHE_BIN/kube-score"

installed_version() { "$out" version 2>/dev/null | sed -n 's/^kube-score version: \([^,]*\),.*/\1/p' || true; }

if [ ! -x "$out" ] || [ "$(installed_version)" != "$KUBE_SCORE_VERSION" ]; then
  mkdir -p "$CACHE_BIN"
  echo "building kube-score $KUBE_SCORE_VERSION from the Go module proxy (once; cached in $CACHE_BIN)..." >&2
  # kube-score reports its version from this linker variable; without it, "development".
  GOFLAGS="${GOFLAGS:-} -mod=mod" GOBIN="$CACHE_BIN" CGO_ENABLED=0 go install -trimpath \
    -ldflags="-s -w -X main.version=$KUBE_SCORE_VERSION" \
    "github.com/zegl/kube-score/cmd/kube-score@$KUBE_SCORE_VERSION"
fi
echo "$out"
