#!/usr/bin/env bash
# Fuzzes /api/v1 from the OpenAPI document the service itself serves, with schemathesis:
# every operation gets generated valid and invalid requests, and each answer must not be a
# 500, must use a status code, content type and body schema that the document declares.
# The service runs on the embedded store with a throwaway data dir and a free port; with
# FUZZ_STORE=kubernetes (`make fuzz-kube`) it runs on the Kubernetes store instead, against a
# real etcd + kube-apiserver with the CRDs installed (test/helpers/fuzz-cluster.ts, stopped
# at the end), so refusals of the API server that the embedded store never makes show up.
#
# Knobs (environment): FUZZ_STORE (embedded, default, or kubernetes), FUZZ_PROVIDER (simulated, default: the
# local drivers would start a real PostgreSQL for each of the hundreds of databases it makes; or local), FUZZ_MAX_EXAMPLES (per operation, default 30), FUZZ_SEED,
# FUZZ_WORKERS (default 2), FUZZ_REPORT_DIR (default bench/results/fuzz, git-ignored),
# FUZZ_PHASES (default examples,coverage,fuzzing,stateful). Extra arguments go to `st run`.
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION="4.32.5"
VENV="${CLOUDPLANE_FUZZ_VENV:-$HOME/.cache/cloudplane/schemathesis-venv}"
REPORT_DIR="${FUZZ_REPORT_DIR:-bench/results/fuzz}"
MAX_EXAMPLES="${FUZZ_MAX_EXAMPLES:-30}"
WORKERS="${FUZZ_WORKERS:-2}"
PHASES="${FUZZ_PHASES:-examples,coverage,fuzzing,stateful}"
STORE="${FUZZ_STORE:-embedded}"
case "$STORE" in embedded|kubernetes) ;; *) echo "fuzz: FUZZ_STORE must be embedded or kubernetes, got \"$STORE\"" >&2; exit 2;; esac

# Python venv outside the repo, reused between runs; rebuilt when the pin changes.
if [ "$("$VENV/bin/st" --version 2>/dev/null || true)" != "st, version $SCHEMATHESIS_VERSION" ]; then
  echo "installing schemathesis $SCHEMATHESIS_VERSION into $VENV..."
  if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    # Debian ships venv/ensurepip apart from python3 (python3-venv).
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv) >/dev/null 2>&1
    fi
  fi
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi

[ -f dist/src/main.js ] && [ -f dist/test/helpers/fuzz-cluster.js ] && [ -z "${FUZZ_REBUILD:-}" ] || npx tsc -p tsconfig.json

data_dir="$(mktemp -d)"
log="$data_dir/service.log"
key="cpk_fuzz$(od -An -tx1 -N20 /dev/urandom | tr -d ' \n')"
service_pid=""
cluster_pid=""
stop_pid() {
  if [ -n "$1" ] && kill -0 "$1" 2>/dev/null; then
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
  fi
}
cleanup() {
  stop_pid "$service_pid"  # the service before its API server, so it stops cleanly
  stop_pid "$cluster_pid"
  rm -rf "$data_dir"
}
trap cleanup EXIT

# Port 0: the service binds a free port and prints its address. The caller's own
# CLOUDPLANE_* settings (a store, NATS, regions) are left out: the run is on the defaults.
for name in $(compgen -e | grep '^CLOUDPLANE_' || true); do [ "$name" = CLOUDPLANE_FUZZ_VENV ] || unset "$name"; done

# Kubernetes store: the cluster helper prints the service's settings (store, kubeconfig,
# system namespace, job driver, sim delay) as KEY=VALUE lines, then `ready`.
store_env=()
if [ "$STORE" = kubernetes ]; then
  scripts/ensure-tools.sh
  cluster_out="$data_dir/cluster.env"
  node dist/test/helpers/fuzz-cluster.js >"$cluster_out" 2>"$data_dir/cluster.log" &
  cluster_pid=$!
  for _ in $(seq 900); do  # building kube-apiserver the first time takes long; cached after
    grep -qx ready "$cluster_out" && break
    kill -0 "$cluster_pid" 2>/dev/null || { cat "$data_dir/cluster.log" >&2; echo "fuzz: the kube-apiserver did not start" >&2; exit 1; }
    sleep 0.2
  done
  grep -qx ready "$cluster_out" || { cat "$data_dir/cluster.log" >&2; echo "fuzz: the kube-apiserver was not ready in time" >&2; exit 1; }
  mapfile -t store_env < <(grep '^CLOUDPLANE_[A-Z_]*=' "$cluster_out")
fi

env CLOUDPLANE_PORT=0 CLOUDPLANE_HOST=127.0.0.1 CLOUDPLANE_DATA_DIR="$data_dir/data" \
CLOUDPLANE_BOOTSTRAP_API_KEY="$key" CLOUDPLANE_SIM_DELAY_MS=50 CLOUDPLANE_PROVIDER="${FUZZ_PROVIDER:-simulated}" \
CLOUDPLANE_RATE_LIMIT_PER_MINUTE=1000000 CLOUDPLANE_LOG_LEVEL="${FUZZ_LOG_LEVEL:-warn}" \
  "${store_env[@]}" node dist/src/main.js >"$log" 2>&1 &
service_pid=$!

url=""
for _ in $(seq 600); do  # the Kubernetes store lists and watches every family first
  url="$(sed -n 's/^Cloudplane is listening on \(http:[^ ]*\).*/\1/p' "$log" | head -1)"
  [ -n "$url" ] && break
  kill -0 "$service_pid" 2>/dev/null || { cat "$log" >&2; echo "fuzz: the service did not start" >&2; exit 1; }
  sleep 0.2
done
[ -n "$url" ] || { cat "$log" >&2; echo "fuzz: the service did not report its address" >&2; exit 1; }
echo "fuzzing $url/api/v1 on the $STORE store (max $MAX_EXAMPLES examples per operation, report in $REPORT_DIR)"

mkdir -p "$REPORT_DIR"
REPORT_DIR="$(cd "$REPORT_DIR" && pwd)"
[ -f "$REPORT_DIR/.gitignore" ] || echo '*' >"$REPORT_DIR/.gitignore"  # reports are run output
rm -rf "$REPORT_DIR"/junit-*.xml "$REPORT_DIR"/ndjson-*.ndjson "$REPORT_DIR/main" "$REPORT_DIR/rotate" "$REPORT_DIR/revoke" "$REPORT_DIR/members"  # the last run's only

seed_args=()
[ -n "${FUZZ_SEED:-}" ] && seed_args=(--seed "$FUZZ_SEED")

HOOKS_DIR="$(pwd)/scripts"  # fuzz_hooks.py: realistic ids, regions and webhook URLs; fuzz-schemathesis.toml: stateful phase size
# From the report dir, so schemathesis keeps its replay cache (.schemathesis/) there:
# `cd bench/results/fuzz && st replay <id>` reproduces a failure.
# The first argument names the run: its reports go to $REPORT_DIR/<name>, so the two runs'
# JUnit files never collide (schemathesis names them by the second they were written).
run_st() {
  local name="$1"
  shift
  (cd "$REPORT_DIR" && PYTHONPATH="$HOOKS_DIR" SCHEMATHESIS_HOOKS=fuzz_hooks "$VENV/bin/st" --config-file "$HOOKS_DIR/fuzz-schemathesis.toml" run "$url/api/v1/openapi.json" \
    --header "Authorization: Bearer ${RUN_KEY:-$key}" \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
    --max-examples "$MAX_EXAMPLES" \
    --workers "$WORKERS" \
    --request-timeout 10 \
    --generation-database none \
    --suppress-health-check all \
    --no-color \
    --report junit,ndjson --report-dir "$REPORT_DIR/$name" \
    "${seed_args[@]}" "$@")
}

# Revoking or rotating an API key may hit the very key the fuzzer uses (its id comes back
# from GET /settings/api-keys and in the key's own answers), and every later request would
# then get 401 and test nothing. So those two operations run after the rest, each on its own
# with a key of its own, made just before from the main run's key. The same goes for the
# member the key belongs to: once the run has invited another owner, removing the key's own
# member revokes its keys, and demoting it leaves them 403. Those two run last, on their own.
MEMBER_CHANGES=(--include-operation-id removeMember --include-operation-id updateMember)
KEY_PATH='/api/v1/settings/api-keys/{id}'
ROTATE_PATH='/api/v1/settings/api-keys/{id}/rotate'
fresh_key() {
  node -e '
    const [url, key, name] = process.argv.slice(1);
    fetch(`${url}/api/v1/settings/api-keys`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ name }) })
      .then(async (res) => {
        if (res.status !== 201) throw new Error(`${res.status} ${await res.text()}`);
        console.log((await res.json()).data.key);
      })
      .catch((err) => {
        console.error(`fuzz: could not make the ${name} key: ${err.message}`);
        process.exit(1);
      });
  ' "$url" "$key" "$1"
}
status=0
{
  failed=0
  run_st main --phases "$PHASES" --exclude-path "$KEY_PATH" --exclude-path "$ROTATE_PATH" \
    --exclude-operation-id removeMember --exclude-operation-id updateMember "$@" || failed=$?
  RUN_KEY="$(fresh_key fuzz-rotate)" run_st rotate --phases "${PHASES/,stateful/}" --include-path "$ROTATE_PATH" "$@" || failed=$?
  RUN_KEY="$(fresh_key fuzz-revoke)" run_st revoke --phases "${PHASES/,stateful/}" --include-path "$KEY_PATH" "$@" || failed=$?
  RUN_KEY="$(fresh_key fuzz-members)" run_st members --phases "${PHASES/,stateful/}" "${MEMBER_CHANGES[@]}" "$@" || failed=$?
  exit "$failed"
} 2>&1 | tee "$REPORT_DIR/output.txt" || status=$?

# Any 500 the run caused is in the service log with its stack: keep it next to the report.
cp "$log" "$REPORT_DIR/service.log"
# Operations that only ever got 401/403 were not tested at all: a run whose key died early
# passed every check while testing nothing, and went unnoticed for a whole issue.
if grep -q 'Authentication failed' "$REPORT_DIR/output.txt"; then
  echo "fuzz: some operations only ever got 401/403 (see 'Authentication failed' above): the run's key stopped working" >&2
  status=1
fi
exit "$status"
