#!/usr/bin/env bash
# The suites of `make test`, each run to its end even when one before it failed, each
# leaving its machine-readable result in $TEST_RESULTS_DIR (jest's JSON, schemathesis's
# JUnit) for scripts/test-totals.js, which .ci/run calls. Exits non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
results="${TEST_RESULTS_DIR:-test-results}"
rm -rf "$results"
mkdir -p "$results"
results="$(cd "$results" && pwd)"

failed=()
suite() {
  local name="$1" start=$SECONDS
  shift
  echo "=== suite $name"
  if "$@"; then
    echo "=== suite $name passed in $((SECONDS - start)) s"
  else
    echo "=== suite $name FAILED in $((SECONDS - start)) s"
    failed+=("$name")
  fi
}

# helm for the chart step (test/integration/chart-lint.test.ts: helm lint --strict and
# helm template against values.schema.json; helm.test.ts), built here once rather than
# inside a test worker. If that fails, those tests fail saying why; the other suites run.
# kube-score, which chart-lint.test.ts runs on the rendered chart (charts/kube-score.yaml).
# Both build beside scripts/ensure-tools.sh's lanes (on a fresh machine, minutes of Go).
(
  scripts/build-helm.sh >/dev/null || echo "run-tests: building helm failed; the chart tests will fail" >&2
  scripts/build-kube-score.sh >/dev/null || echo "run-tests: building kube-score failed; the chart lint test will fail" >&2
) &
chart_tools=$!

if ! scripts/ensure-tools.sh; then
  wait "$chart_tools"
  echo "run-tests: installing the test tools failed; no suite ran" >&2
  exit 1
fi
wait "$chart_tools"

# Everything on the embedded store, with the integration tests against real servers (the
# chart step among them).
suite jest npx jest --json --outputFile="$results/jest.json"
# The API suite again, each file against its own real etcd + kube-apiserver with the CRDs,
# the service running as the chart's ServiceAccount under exactly the chart's RBAC (a 403
# or a call src/store/kubernetes/api-calls.ts lacks fails the file).
suite jest-api-kubernetes env CLOUDPLANE_TEST_STORE=kubernetes CLOUDPLANE_TEST_RBAC=chart npx jest test/api --json --outputFile="$results/jest-api-kubernetes.json"
# A bounded fuzz run (about a minute) with a fixed seed, so a failure replays. One worker:
# with two, CPython 3.11's ast.parse, which hypothesis calls from both threads, now and then
# fails inside schemathesis ("AST constructor recursion depth mismatch"), a failure of the
# tool that the totals would count as the API's.
suite fuzz env FUZZ_MAX_EXAMPLES=25 FUZZ_SEED=20261123 FUZZ_WORKERS=1 FUZZ_REPORT_DIR="$results/fuzz" scripts/fuzz-api.sh

if [ "${#failed[@]}" -gt 0 ]; then
  echo "run-tests: failed suites: ${failed[*]}" >&2
  exit 1
fi
