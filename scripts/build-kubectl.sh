#!/usr/bin/env bash
# Builds kubectl of the Kubernetes release pinned in test/tools/kubectl/go.mod (the same
# release as kube-apiserver: scripts/build-kube-apiserver.sh, checked below) through the
# Go module proxy, into the same cache outside the repo. Both builds share the
# k8s.io/kubernetes module download and Go's build cache. Prints the binary's path.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
mod="$here/test/tools/kubectl"
pin() { awk '/^require k8s.io\/kubernetes/ {print $3}' "$1/go.mod"; }
version="$(pin "$mod")"
server_version="$(pin "$here/test/tools/kubernetes")"
if [ "$version" != "$server_version" ]; then
  # A kubectl of another release would test skew, not the experience users get.
  echo "kubectl pin $version differs from kube-apiserver pin $server_version: update test/tools/kubectl/go.mod" >&2
  exit 1
fi
out="${CLOUDPLANE_TOOLS_CACHE:-$HOME/.cache/cloudplane}/kubectl-$version/kubectl"
if [ ! -x "$out" ]; then
  mkdir -p "$(dirname "$out")"
  echo "building kubectl $version from the Go module proxy (once; cached in $(dirname "$out"))..." >&2
  (cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$version" | cut -d. -f2) -X k8s.io/client-go/pkg/version.gitVersion=$version" -o "$out.tmp" k8s.io/kubernetes/cmd/kubectl)
  mv "$out.tmp" "$out"
fi
echo "$out"
