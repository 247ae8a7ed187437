#!/usr/bin/env bash
# Installs the real components the tests run against, when they are missing:
#   nats-server (JetStream) — Debian's package when apt is usable, else built from its
#   Go module into ~/.cache/cloudplane/bin (outside the repo, reused between runs).
#   (etcd, kube-apiserver, kubectl and the guide's webhook receivers: further down.)
set -euo pipefail
CACHE_BIN="${CLOUDPLANE_TOOLS_BIN:-$HOME/.cache/cloudplane/bin}"
NATS_SERVER_VERSION="v2.10.29"

have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "$CACHE_BIN/$1" ]; }

apt_install() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1 && return 0
    apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1 && return 0
  fi
  return 1
}

if ! have nats-server; then
  echo "installing nats-server..."
  if ! apt_install nats-server; then
    mkdir -p "$CACHE_BIN"
    GOBIN="$CACHE_BIN" go install "github.com/nats-io/nats-server/v2@$NATS_SERVER_VERSION"
  fi
fi

#   etcd — Debian's etcd-server, else built from its Go module into the same cache.
ETCD_VERSION="v3.5.21"
if ! have etcd; then
  echo "installing etcd..."
  if ! apt_install etcd-server; then
    mkdir -p "$CACHE_BIN"
    GOBIN="$CACHE_BIN" go install "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
    [ -x "$CACHE_BIN/server" ] && mv "$CACHE_BIN/server" "$CACHE_BIN/etcd"
  fi
fi

#   kube-apiserver — built from the pinned Kubernetes release (cached outside the repo).
"$(dirname "$0")/build-kube-apiserver.sh" >/dev/null
"$(dirname "$0")/build-kubectl.sh" >/dev/null  # kubectl of the same release, for the kubectl tests
"$(dirname "$0")/ensure-receivers.sh" >/dev/null  # the receivers of docs/webhook-receivers.md, for test/integration/receivers.test.ts
