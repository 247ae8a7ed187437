#!/usr/bin/env bash
# Builds one control-plane component (kube-apiserver, kube-controller-manager or
# kube-scheduler) of the Kubernetes release pinned in test/tools/kubernetes/go.mod through
# the Go module proxy, into a cache outside the repo (reused until the pin changes). The
# three share that module set, so after the first one the others reuse its downloads and
# Go's build cache. Prints the binary's path.
#   usage: scripts/build-kube-component.sh kube-apiserver|kube-controller-manager|kube-scheduler
set -euo pipefail
component="${1:-}"
case "$component" in
  kube-apiserver | kube-controller-manager | kube-scheduler) ;;
  *)
    echo "usage: $0 kube-apiserver|kube-controller-manager|kube-scheduler" >&2
    exit 2
    ;;
esac
here="$(cd "$(dirname "$0")/.." && pwd)"
mod="$here/test/tools/kubernetes"
version="$(awk '/^require k8s.io\/kubernetes/ {print $3}' "$mod/go.mod")"
out="${CLOUDPLANE_TOOLS_CACHE:-$HOME/.cache/cloudplane}/$component-$version/$component"
if [ ! -x "$out" ]; then
  mkdir -p "$(dirname "$out")"
  echo "building $component $version from the Go module proxy (once; cached in $(dirname "$out"))..." >&2
  # The same version stamps a release build carries, so `--version` and the API's /version
  # report the pinned release rather than v0.0.0.
  (cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$version" | cut -d. -f2)" -o "$out.tmp.$$" "k8s.io/kubernetes/cmd/$component")
  mv "$out.tmp.$$" "$out"
fi
echo "$out"
