# Cloudplane: `make run` starts the service on the embedded default; `make test` runs every test.
SHELL := /bin/bash
NODE_MODULES_STAMP := node_modules/.package-lock.json

.PHONY: run test soak build lint format layers crds bench bench-webhooks bench-cluster bench-scale bench-noisy clean deps fuzz fuzz-kube

# `npm install` rather than `npm ci`: npm 11 leaves other platforms' optional binaries
# (@swc/core-darwin-*, ...) out of the lock file, and `npm ci` then refuses it.
$(NODE_MODULES_STAMP): package.json package-lock.json
	npm install --no-audit --no-fund --loglevel=error

deps: $(NODE_MODULES_STAMP)

# The service (tsc into dist/src) and the web console (its TypeScript modules and the
# scripts and markup of its .svelte components type-checked, accessibility warnings
# included, then Vite into dist/console; docs/console.md). Each is built again only when
# one of its sources changed, so `make run` with nothing changed starts at once; a build
# prints nothing but its problems.
SERVICE_SOURCES := $(shell find src test bench -name '*.ts' -not -path 'test/clients/*') tsconfig.json
CONSOLE_SOURCES := $(shell find console -type f) tsconfig.json
SERVICE_STAMP := dist/.service-built
CONSOLE_STAMP := dist/console/index.html

$(SERVICE_STAMP): $(NODE_MODULES_STAMP) $(SERVICE_SOURCES)
	@echo "Building the service (src/ into dist/)"
	@npx tsc -p tsconfig.json
	@touch $@

$(CONSOLE_STAMP): $(NODE_MODULES_STAMP) $(CONSOLE_SOURCES)
	@echo "Building the web console (console/ into dist/console)"
	@npx tsc -p console/tsconfig.json
	@out=$$(npx svelte-check --workspace console --tsconfig ./tsconfig.json --fail-on-warnings --output human 2>&1) || { echo "$$out"; exit 1; }
	@npx vite build --config console/vite.config.mts --logLevel warn

build: deps $(SERVICE_STAMP) $(CONSOLE_STAMP)

# Types, then ESLint (eslint.config.mjs); test/unit/lint.test.ts runs the same in make test.
lint: deps
	npx tsc -p tsconfig.json --noEmit
	npx eslint src bench
	npx prettier --check .

# Rewrites every source file as Prettier writes it (.prettierrc.json); make lint checks it.
format: deps
	npx prettier --write .

# The layers of src/ (docs/layers.md): no import reaches up a layer, no import cycle.
layers: deps
	npx depcruise src --config .dependency-cruiser.cjs

run: build
	@node dist/src/main.js

# The API suite runs twice: on the embedded store (with everything else), then on the
# Kubernetes store, each file against its own real etcd + kube-apiserver with the CRDs.
# Last, a bounded fuzz run (about a minute) with a fixed seed, so a failure replays;
# `make fuzz` draws a new seed each time. Every suite runs even if one before it failed;
# their results land in test-results/ (scripts/run-tests.sh), which .ci/run totals.
test: build
	scripts/run-tests.sh

# The long forms of tests that `make test` runs scaled down (CLOUDPLANE_SOAK=1 in the
# test): minutes each, on the embedded store.
soak: build
	scripts/ensure-tools.sh
	CLOUDPLANE_SOAK=1 npx jest test/integration/bounded-growth.test.ts

# Schemathesis against the OpenAPI document the service serves (scripts/fuzz-api.sh):
# no 500s, and every status, content type and body as documented. Report in bench/results/fuzz.
fuzz: build
	scripts/fuzz-api.sh

# The same on the Kubernetes store, against a real etcd + kube-apiserver with the CRDs.
fuzz-kube: build
	FUZZ_STORE=kubernetes scripts/fuzz-api.sh

crds: build
	node dist/src/cli/generate-crds.js

bench: build
	node dist/bench/api.js

bench-webhooks: build
	node dist/bench/webhooks.js

# Cluster mode against a real kube-apiserver + etcd (built/installed like `make test` does).
bench-cluster: build
	scripts/ensure-tools.sh
	node dist/bench/cluster.js

# Lists at 1k, 10k and 100k load balancers in one team, on the embedded and the Kubernetes store.
bench-scale: build
	scripts/ensure-tools.sh
	node dist/bench/scale.js

# A quiet team's p99 alone and while a noisy team runs each abuse in turn (bench/README.md).
bench-noisy: build
	node dist/bench/noisy-neighbours.js

clean:
	rm -rf dist

# End-to-end on a throwaway kind cluster (needs Docker and kind; see test/e2e/README.md):
# the image is built and loaded into kind, the chart installed, and test/e2e run through a
# port-forward to the Service.
KIND_CLUSTER ?= cloudplane-e2e
KIND_IMAGE ?= cloudplane:e2e
KIND_NAMESPACE ?= cloudplane-system
KIND_LOCAL_PORT ?= 18080

.PHONY: kind-e2e
kind-e2e: deps
	set -euo pipefail; \
	helm="$$(scripts/build-helm.sh)"; \
	kind get clusters | grep -qx '$(KIND_CLUSTER)' || kind create cluster --name '$(KIND_CLUSTER)' --wait 120s; \
	context='kind-$(KIND_CLUSTER)'; \
	docker build -t '$(KIND_IMAGE)' .; \
	kind load docker-image '$(KIND_IMAGE)' --name '$(KIND_CLUSTER)'; \
	key="cpk_$$(od -An -tx1 -N20 /dev/urandom | tr -d ' \n')"; \
	"$$helm" upgrade --install cloudplane charts/cloudplane --kube-context "$$context" \
	  --namespace '$(KIND_NAMESPACE)' --create-namespace \
	  --set image.repository='$(word 1,$(subst :, ,$(KIND_IMAGE)))' --set image.tag='$(word 2,$(subst :, ,$(KIND_IMAGE)))' \
	  --set image.pullPolicy=Never --set bootstrapApiKey="$$key"; \
	kubectl --context "$$context" -n '$(KIND_NAMESPACE)' rollout restart deployment/cloudplane; \
	kubectl --context "$$context" -n '$(KIND_NAMESPACE)' rollout status deployment/cloudplane --timeout=180s; \
	kubectl --context "$$context" -n '$(KIND_NAMESPACE)' port-forward service/cloudplane '$(KIND_LOCAL_PORT)':80 >/dev/null 2>&1 & \
	forward=$$!; trap 'kill $$forward' EXIT; \
	for _ in $$(seq 60); do curl -fs 'http://127.0.0.1:$(KIND_LOCAL_PORT)/healthz' >/dev/null && break; sleep 1; done; \
	CLOUDPLANE_E2E_URL='http://127.0.0.1:$(KIND_LOCAL_PORT)' CLOUDPLANE_E2E_API_KEY="$$key" npx jest test/e2e
