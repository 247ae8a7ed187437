#!/usr/bin/env bash
# Builds KWOK (sigs.k8s.io/kwok, the Kubernetes SIG tool that fakes nodes and the lifecycle
# of their Pods) of a pinned release through the Go module proxy, into a cache outside the
# repo, and writes beside it the stages it plays. Prints the binary's path.
#
# The kwok binary plays no stages of its own: it refuses to start without them ("no
# stages found"), and kwokctl hands it the defaults embedded in the release
# (kustomize/stage/...). stages.yaml is that same default set, taken from the pinned
# module's own files: node-initialize (Ready, addresses, allocatable), node heartbeat
# with a Lease, and the fast pod stages (ready with a Pod IP, complete for Pods of Jobs,
# delete once deletion is requested).
set -euo pipefail
KWOK_VERSION="v0.8.0"
dir="${CLOUDPLANE_TOOLS_CACHE:-$HOME/.cache/cloudplane}/kwok-$KWOK_VERSION"
if [ ! -x "$dir/kwok" ] || [ ! -s "$dir/stages.yaml" ]; then
  echo "building kwok $KWOK_VERSION from the Go module proxy (once; cached in $dir)..." >&2
  tmp="$dir.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  trap 'rm -rf "$tmp"' EXIT
  CGO_ENABLED=0 GOBIN="$tmp" go install -trimpath -ldflags="-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  src="$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  stages=(
    kustomize/stage/node/fast/node-initialize.yaml
    kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml
    kustomize/stage/pod/fast/pod-ready.yaml
    kustomize/stage/pod/fast/pod-complete.yaml
    kustomize/stage/pod/fast/pod-delete.yaml
  )
  {
    echo "# KWOK $KWOK_VERSION's default stages (as kwokctl gives them to kwok), from $src"
    for stage in "${stages[@]}"; do
      echo "---"
      cat "$src/$stage"
    done
  } >"$tmp/stages.yaml"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  trap - EXIT
fi
echo "$dir/kwok"
