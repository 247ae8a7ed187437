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

python_bin() { command -v python3 || command -v python; }
py="$(python_bin)" || { echo "python3 is needed for the Python receiver" >&2; exit 1; }
venv="$cache/python-$(digest "$src/python/requirements.txt")"
# A venv cannot be moved once made: it is made in place and marked complete at the end.
if [ ! -f "$venv/.complete" ]; then
  echo "making the Python receiver's venv (once; cached in $venv)..." >&2
  rm -rf "$venv"
  if ! "$py" -m venv "$venv" >/dev/null 2>&1; then
    # Debian's python3 keeps venv in a package of its own.
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      rm -rf "$venv"
      apt-get install -y -qq python3-venv >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq python3-venv >/dev/null 2>&1; }
      "$py" -m venv "$venv"
    else
      echo "python3 -m venv failed: install python3-venv" >&2
      exit 1
    fi
  fi
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$src/python/requirements.txt" >&2
  touch "$venv/.complete"
fi

out="$cache/go-$(digest "$src/go/go.mod" "$src/go/go.sum" "$src/go/main.go")/receiver"
if [ ! -x "$out" ]; then
  echo "building the Go receiver from the Go module proxy (once; cached in $(dirname "$out"))..." >&2
  mkdir -p "$(dirname "$out")"
  (cd "$src/go" && CGO_ENABLED=0 go build -mod=readonly -trimpath -o "$out.tmp" .)
  mv "$out.tmp" "$out"
fi

echo "python $venv/bin/python"
echo "go $out"
