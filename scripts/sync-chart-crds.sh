#!/usr/bin/env bash
# Copies the generated CRDs (crds/*.yaml, from `make crds`) into the Helm chart, which
# installs them before its templates. Run it after `make crds`; a test checks they match.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dest="$here/charts/cloudplane/crds"
mkdir -p "$dest"
# Remove CRDs whose family no longer exists, then copy the current ones.
find "$dest" -maxdepth 1 -name '*.yaml' -delete
cp "$here"/crds/*.yaml "$dest/"
echo "copied $(ls "$here"/crds/*.yaml | wc -l) CRDs into charts/cloudplane/crds/"
