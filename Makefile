# Cloudplane: `make run` starts the service on the embedded default; `make test` runs every test.
SHELL := /bin/bash
NODE_MODULES_STAMP := node_modules/.package-lock.json

.PHONY: run test build lint crds bench clean deps

# `npm install` rather than `npm ci`: npm 11 leaves other platforms' optional binaries
# (@swc/core-darwin-*, ...) out of the lock file, and `npm ci` then refuses it.
$(NODE_MODULES_STAMP): package.json package-lock.json
	npm install --no-audit --no-fund --loglevel=error

deps: $(NODE_MODULES_STAMP)

build: deps
	npx tsc -p tsconfig.json

lint: deps
	npx tsc -p tsconfig.json --noEmit

run: build
	node dist/src/main.js

test: build
	scripts/ensure-tools.sh
	npx jest

bench: build
	node dist/bench/api.js

clean:
	rm -rf dist
