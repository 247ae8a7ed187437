#!/usr/bin/env bash
# Builds kube-apiserver of the Kubernetes release pinned in test/tools/kube-apiserver/go.mod
# through the Go module proxy, into a cache outside the repo (reused until the pin
# changes). Prints the binary's path.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
mod="$here/test/tools/kube-apiserver"
version="$(awk '/^require k8s.io\/kubernetes/ {print $3}' "$mod/go.mod")"
out="${CLOUDPLANE_TOOLS_CACHE:-$HOME/.cache/cloudplane}/kube-apiserver-$version/kube-apiserver"
if [ ! -x "$out" ]; then
  mkdir -p "$(dirname "$out")"
  echo "building kube-apiserver $version from the Go module proxy (once; cached in $(dirname "$out"))..." >&2
  (cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$version" | cut -d. -f2)" -o "$out.tmp" k8s.io/kubernetes/cmd/kube-apiserver)
  mv "$out.tmp" "$out"
fi
echo "$out"
