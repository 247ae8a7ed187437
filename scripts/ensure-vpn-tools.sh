#!/usr/bin/env bash
# Installs what the VPN agent and its tunnel tests run (test/integration/vpn-tunnels.test.ts):
#   - Debian's wireguard-tools (`wg`) and strongSwan (charon, swanctl, the standard plugins
#     (openssl, gcm: installed only as a recommendation otherwise) and the extra plugins
#     that carry kernel-libipsec: userspace ESP for kernels without XFRM/ESP);
#   - wireguard-go, the userspace WireGuard for kernels without the module, built from a
#     pinned pseudo-version on the Go module proxy (the module publishes no tagged release
#     there) into ~/.cache/cloudplane/bin, outside the repo;
#   - ping (iputils-ping), which the tests send through the tunnels.
set -euo pipefail
CACHE_BIN="${CLOUDPLANE_TOOLS_BIN:-$HOME/.cache/cloudplane/bin}"
WIREGUARD_GO_VERSION="v0.0.0-20260522210424-ecfc5a8d5446"
PACKAGES=(wireguard-tools strongswan-swanctl strongswan-charon libstrongswan-standard-plugins libcharon-extra-plugins libstrongswan-extra-plugins iputils-ping)

missing=()
for package in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "installing ${missing[*]}..." >&2
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure-vpn-tools: cannot install ${missing[*]} (needs apt-get as root); the VPN tunnel tests will fail" >&2
  else
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
      || { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1; } \
      || echo "ensure-vpn-tools: apt-get install ${missing[*]} failed; the VPN tunnel tests will fail" >&2
  fi
fi

marker="$CACHE_BIN/.wireguard-go-$WIREGUARD_GO_VERSION"
if [ ! -x "$CACHE_BIN/wireguard-go" ] || [ ! -e "$marker" ]; then
  echo "building wireguard-go $WIREGUARD_GO_VERSION from the Go module proxy (once; cached in $CACHE_BIN)..." >&2
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  # The module's main package installs as `wireguard`; the tools and docs call it wireguard-go.
  CGO_ENABLED=0 GOBIN="$tmp" go install -trimpath -ldflags="-s -w" "golang.zx2c4.com/wireguard@$WIREGUARD_GO_VERSION"
  mkdir -p "$CACHE_BIN"
  mv "$tmp/wireguard" "$CACHE_BIN/wireguard-go"
  rm -f "$CACHE_BIN"/.wireguard-go-*
  touch "$marker"
fi
echo "$CACHE_BIN/wireguard-go"
