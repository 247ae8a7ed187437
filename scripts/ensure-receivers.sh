#!/usr/bin/env bash
# Builds the webhook receivers of docs/webhook-receivers.md (test/receivers/) into a cache
# outside the repo, keyed by their sources, so test/integration/receivers.test.ts runs
# the guide's own code:
#   python: a venv with the pinned PyPI packages of test/receivers/python/requirements.txt
#   go:     the receiver built through the Go module proxy (versions pinned in go.mod/go.sum)
# Prints `python <path>` and `go <path>`, one a line. Rebuilds only what changed.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
src="$here/test/receivers"
cache="${CLOUDPLANE_TOOLS_CACHE:-$HOME/.cache/cloudplane}/receivers"
digest() { cat "$@" | sha256sum | cut -c1-16; }

source "$here/scripts/python-venv.sh"
venv="$cache/python-$(digest "$src/python/requirements.txt")"
ensure_venv "$venv" "$src/python/requirements.txt"

out="$cache/go-$(digest "$src/go/go.mod" "$src/go/go.sum" "$src/go/main.go")/receiver"
if [ ! -x "$out" ]; then
  echo "building the Go receiver from the Go module proxy (once; cached in $(dirname "$out"))..." >&2
  mkdir -p "$(dirname "$out")"
  (cd "$src/go" && CGO_ENABLED=0 go build -mod=readonly -trimpath -o "$out.tmp" .)
  mv "$out.tmp" "$out"
fi

echo "python $venv/bin/python"
echo "go $out"
