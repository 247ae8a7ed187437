#!/usr/bin/env bash
# The client generators test/integration/generated-clients.test.ts drives:
# openapi-python-client (with what its clients import), in a venv cached outside the repo
# and keyed by test/clients/python/requirements.txt; openapi-typescript is an npm dev
# dependency. Prints the venv's bin directory. Rebuilds only when the pins change.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
source "$here/scripts/python-venv.sh"
requirements="$here/test/clients/python/requirements.txt"
venv="${CLOUDPLANE_TOOLS_CACHE:-$HOME/.cache/cloudplane}/client-generators-$(sha256sum "$requirements" | cut -c1-16)"
ensure_venv "$venv" "$requirements"
echo "$venv/bin"
