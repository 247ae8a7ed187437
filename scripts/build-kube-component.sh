#!/usr/bin/env bash
# Builds control-plane components (kube-apiserver, kube-controller-manager,
# kube-scheduler) of the Kubernetes release pinned in test/tools/kubernetes/go.mod through
# the Go module proxy, into a cache outside the repo (reused until the pin changes). The
# components missing are built by one `go build`, which compiles the packages they share
# once and runs their compiles and links side by side. Prints each binary's path, a line
# each, in the order asked.
#   usage: scripts/build-kube-component.sh COMPONENT...
#   (COMPONENT: kube-apiserver, kube-controller-manager or kube-scheduler)
set -euo pipefail
if [ "$#" -eq 0 ]; then
  echo "usage: $0 kube-apiserver|kube-controller-manager|kube-scheduler..." >&2
  exit 2
fi
for component in "$@"; do
  case "$component" in
    kube-apiserver | kube-controller-manager | kube-scheduler) ;;
    *)
      echo "usage: $0 kube-apiserver|kube-controller-manager|kube-scheduler..." >&2
      exit 2
      ;;
  esac
done
here="$(cd "$(dirname "$0")/.." && pwd)"
mod="$here/test/tools/kubernetes"
version="$(awk '/^require k8s.io\/kubernetes/ {print $3}' "$mod/go.mod")"
cache="${CLOUDPLANE_TOOLS_CACHE:-$HOME/.cache/cloudplane}"
out() { echo "$cache/$1-$version/$1"; }

missing=()
for component in "$@"; do
  [ -x "$(out "$component")" ] || missing+=("$component")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "building ${missing[*]} $version from the Go module proxy (once; cached in $cache)..." >&2
  mkdir -p "$cache"
  tmp="$(mktemp -d "$cache/kube-components.tmp.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  # The same version stamps a release build carries, so `--version` and the API's /version
  # report the pinned release rather than v0.0.0. With -o naming a directory, go build
  # writes each command there under its own name.
  (cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$version" | cut -d. -f2)" -o "$tmp/" "${missing[@]/#/k8s.io/kubernetes/cmd/}")
  for component in "${missing[@]}"; do
    mkdir -p "$(dirname "$(out "$component")")"
    mv "$tmp/$component" "$(out "$component")"
  done
fi
for component in "$@"; do
  out "$component"
done
