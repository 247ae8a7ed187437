# Cloudplane operator image: built once in a full stage, shipped with only the compiled
# code and production dependencies, run as a non-root user. The same image runs the VPN
# agent (`node dist/src/main.js vpn-agent`) in each gateway's own Deployment, which is why
# it carries WireGuard and strongSwan (docs/architecture/vpn.md, "The VPN agent").

# wireguard-go, the userspace WireGuard for nodes whose kernel has no WireGuard module, at
# the pseudo-version scripts/ensure-vpn-tools.sh pins for the tests (one place for it).
FROM golang:1.24-bookworm AS wireguard-go
COPY scripts/ensure-vpn-tools.sh /tmp/ensure-vpn-tools.sh
RUN version="$(sed -n 's/^WIREGUARD_GO_VERSION="\(.*\)"$/\1/p' /tmp/ensure-vpn-tools.sh)" \
 && test -n "$version" \
 && CGO_ENABLED=0 GOBIN=/out go install -trimpath -ldflags="-s -w" "golang.zx2c4.com/wireguard@$version" \
 && mv /out/wireguard /out/wireguard-go

# Node 24 (LTS "Krypton", supported until April 2028): Node 20 reached its end of life in
# April 2026. Node 26 is due to become LTS in October 2026, but the 26.x releases the npm
# registry serves here (to 26.10.0, 23 September) are not LTS builds (process.release.lts
# is unset), so the image stays on the line that is. Both stages use the same line so the
# compiled code and node_modules run where they were built, and
# test/integration/image-runtime.test.ts runs the service on this line's newest release.
FROM node:24-bookworm-slim AS build
WORKDIR /src
# make runs the project's build; slim images do not ship it.
RUN apt-get update \
 && apt-get install -y --no-install-recommends make \
 && rm -rf /var/lib/apt/lists/*
# Dependencies first, so source edits reuse this layer. npm ci installs exactly the lock
# file's tree and fails if package.json and the lock file disagree (npm install would
# resolve again and could ship versions nobody tested).
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error
COPY . .
RUN make build \
 && npm prune --omit=dev --no-audit --no-fund --loglevel=error

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production
# The VPN agent's tools: ip, wg, charon and swanctl with the plugins it loads (the standard
# ones for openssl and gcm, the extra ones for curve25519 and kernel-libipsec, the userspace
# ESP for kernels without it); nothing starts them but the agent.
RUN apt-get update \
 && apt-get install -y --no-install-recommends iproute2 wireguard-tools strongswan-charon strongswan-swanctl \
      libstrongswan-standard-plugins libstrongswan-extra-plugins libcharon-extra-plugins \
 && rm -rf /var/lib/apt/lists/*
COPY --from=wireguard-go /out/wireguard-go /usr/local/bin/wireguard-go
WORKDIR /app
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist/src ./dist/src
# The web console (make build), found beside package.json as dist/console.
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/dist/console ./dist/console
# Numeric uid (the image's `node` user) so Kubernetes can verify runAsNonRoot. The VPN
# agent's Deployment overrides it with runAsUser 0 and NET_ADMIN: it makes interfaces and
# routes, and charon writes /var/run/charon.pid.
USER 1000:1000
EXPOSE 8080
CMD ["node", "dist/src/main.js"]
