#!/usr/bin/env bash
# Installs the real components the tests run against, when they are missing:
#   nats-server (JetStream) — Debian's package when apt is usable, else built from its
#   Go module into ~/.cache/cloudplane/bin (outside the repo, reused between runs).
#   (etcd, haproxy, the Kubernetes components, KWOK, kubectl, the guide's webhook
#   receivers and openapi-generator with Java: further down.)
# On a fresh machine that is mostly Go builds and downloads. They run in lanes side by side
# (see the end): apt's packages in one, since dpkg installs one at a time, and the Go
# tools in three, each lane's builds one after another. Every build shares Go's module
# and build caches; a lane keeps tools that share packages (the Kubernetes components and
# kubectl) one after the other, so the second finds the first's compiles in the cache
# rather than compiling them again beside it.
set -euo pipefail
here="$(dirname "$0")"
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

# Debian's packages, and the builds that stand in for them where apt is not usable.
debian_tools() {
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

  #   haproxy — Debian's package, for the real-HAProxy tests (no build to fall back on: where
  #   apt is not usable, those tests fail, saying so, and everything else still runs).
  if ! have haproxy && ! apt_install haproxy; then
    echo "ensure-tools: could not install Debian's haproxy (needs apt-get as root); the tests that run HAProxy will fail" >&2
  fi

  #   postgresql — Debian's package: the local database driver runs its initdb and pg_ctl
  #   (test/integration/database-local.test.ts), and the tests connect with its psql.
  if ! { ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || have initdb; } && ! apt_install postgresql; then
    echo "ensure-tools: could not install Debian's postgresql (needs apt-get as root); the local database tests will fail" >&2
  fi

  #   chromium — Debian's package, the real browser Playwright (playwright-core) drives in the
  #   console tests (test/console/). Debian's build rather than Playwright's download: it is
  #   kept patched by the distribution and needs no second browser cache.
  if ! have chromium && ! apt_install chromium; then
    echo "ensure-tools: could not install Debian's chromium (needs apt-get as root); the console tests will fail" >&2
  fi

  #   zsh and fish — Debian's packages: the CLI's completion scripts are checked by the real
  #   shells (test/cli/contexts.test.ts).
  for shell in zsh fish; do
    if ! have "$shell" && ! apt_install "$shell"; then
      echo "ensure-tools: could not install Debian's $shell (needs apt-get as root); the CLI completion test will fail" >&2
    fi
  done

  #   wg, wireguard-go and strongSwan, for test/integration/vpn-tunnels.test.ts (apt, then a Go build).
  "$here/ensure-vpn-tools.sh" >/dev/null

  #   Java (Debian's default-jre-headless) and openapi-generator's CLI jar from Maven Central,
  #   cached beside the other tools, for the Go client of test/integration/generated-clients.test.ts
  #   (which runs the same script again, and fails saying why, if this could not).
  if ! "$here/ensure-openapi-generator.sh" >/dev/null; then
    echo "ensure-tools: could not install openapi-generator (see above); the generated Go client test will fail" >&2
  fi
}

#   kube-apiserver, and for the workload cluster (test/helpers/workload-cluster.ts)
#   kube-controller-manager and kube-scheduler, built from one pinned Kubernetes release by
#   one `go build` (cached outside the repo), then kubectl of the same release for the
#   kubectl tests, which reuses their compiled packages.
kubernetes_tools() {
  "$here/build-kube-component.sh" kube-apiserver kube-controller-manager kube-scheduler >/dev/null
  "$here/build-kubectl.sh" >/dev/null
}

#   KWOK with its stages; kstatus (sigs.k8s.io/cli-utils) as Flux and Argo CD compute it, for
#   test/integration/kstatus.test.ts; the receivers of docs/webhook-receivers.md, for
#   test/integration/receivers.test.ts; CloudNativePG's manager and CRDs, for
#   test/integration/database-cloudnative-pg.test.ts.
cluster_tools() {
  "$here/build-kwok.sh" >/dev/null
  "$here/build-kstatus.sh" >/dev/null
  "$here/ensure-receivers.sh" >/dev/null
  "$here/build-cloudnative-pg.sh" >/dev/null
}

#   versitygw, the real S3 server of the s3 bucket driver's tests (test/helpers/s3-server.ts).
storage_tools() {
  "$here/build-s3-server.sh" >/dev/null
}

lanes=(debian_tools kubernetes_tools cluster_tools storage_tools)
pids=()
for lane in "${lanes[@]}"; do
  ("$lane") &
  pids+=("$!")
done
failed=()
for i in "${!lanes[@]}"; do
  wait "${pids[$i]}" || failed+=("${lanes[$i]}")
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "ensure-tools: failed: ${failed[*]} (see the messages above)" >&2
  exit 1
fi
