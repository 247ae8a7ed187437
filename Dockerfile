# Cloudplane operator image: built once in a full stage, shipped with only the compiled
# code and production dependencies, run as a non-root user.

FROM node:20-bookworm-slim AS build
WORKDIR /src
# make runs the project's build; slim images do not ship it.
RUN apt-get update \
 && apt-get install -y --no-install-recommends make \
 && rm -rf /var/lib/apt/lists/*
# Dependencies first, so source edits reuse this layer.
COPY package.json package-lock.json ./
RUN npm install --no-audit --no-fund --loglevel=error
COPY . .
RUN make build \
 && npm prune --omit=dev --no-audit --no-fund --loglevel=error

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist/src ./dist/src
# Numeric uid (the image's `node` user) so Kubernetes can verify runAsNonRoot.
USER 1000:1000
EXPOSE 8080
CMD ["node", "dist/src/main.js"]
