#!/usr/bin/env bash
# Fetches the Prometheus Operator's ServiceMonitor CRD (monitoring.coreos.com/v1) from its Go
# module, through the Go module proxy, into a cache outside the repo, once; prints its path.
# The chart test applies it to the kube-apiserver so the chart's ServiceMonitor is checked
# against the real schema.
set -euo pipefail
PROMETHEUS_OPERATOR_VERSION="v0.85.0"
CACHE="${CLOUDPLANE_TOOLS_CACHE:-$HOME/.cache/cloudplane}/prometheus-operator-$PROMETHEUS_OPERATOR_VERSION"
out="$CACHE/monitoring.coreos.com_servicemonitors.yaml"

if [ ! -s "$out" ]; then
  echo "fetching the ServiceMonitor CRD of prometheus-operator $PROMETHEUS_OPERATOR_VERSION from the Go module proxy (once; cached in $CACHE)..." >&2
  dir="$(go mod download -json "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION" \
    | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  test -n "$dir"
  mkdir -p "$CACHE"
  cp "$dir/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml" "$out.tmp"
  mv "$out.tmp" "$out"
fi
echo "$out"
