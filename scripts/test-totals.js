#!/usr/bin/env node
/**
 * Totals over every suite `make test` ran, from the result files scripts/run-tests.sh left
 * (jest's --json output, schemathesis's JUnit reports), printed as the one line CI reads:
 * `N passed, N failed`. A suite that crashed before it could report, or a run that ended
 * non-zero without any failing test on record, counts as a failure: a run that executed
 * nothing must never read as green.
 *
 *   node scripts/test-totals.js RESULTS_DIR [EXIT_STATUS_OF_MAKE_TEST]
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const [dir = 'test-results', statusArg = '0'] = process.argv.slice(2);
const makeStatus = Number(statusArg);
let passed = 0;
let failed = 0;
const notes = [];

function files(root, pattern) {
  if (!fs.existsSync(root)) return [];
  return fs.readdirSync(root, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(root, entry.name);
    if (entry.isDirectory()) return files(full, pattern);
    return pattern.test(entry.name) ? [full] : [];
  });
}

for (const file of files(dir, /^jest.*\.json$/)) {
  const result = JSON.parse(fs.readFileSync(file, 'utf8'));
  // Files that failed to run (a syntax error, a crash in beforeAll) have no tests counted.
  const crashed = result.numRuntimeErrorTestSuites ?? 0;
  passed += result.numPassedTests;
  failed += result.numFailedTests + crashed;
  notes.push(`${path.basename(file)}: ${result.numPassedTests} passed, ${result.numFailedTests} failed${crashed ? `, ${crashed} test files crashed` : ''}`);
}

// Schemathesis writes one <testcase> per API operation; a <failure> or <error> inside marks
// it failed, a <skipped> neither passed nor failed.
for (const file of files(dir, /^junit-.*\.xml$/)) {
  const xml = fs.readFileSync(file, 'utf8');
  const cases = xml.match(/<testcase\b(?:[^>]*\/>|[\s\S]*?<\/testcase>)/g) ?? [];
  const bad = cases.filter((c) => /<(failure|error)\b/.test(c)).length;
  const skipped = cases.filter((c) => /<skipped\b/.test(c)).length;
  passed += cases.length - bad - skipped;
  failed += bad;
  notes.push(`${path.relative(dir, file)}: ${cases.length - bad - skipped} passed, ${bad} failed${skipped ? `, ${skipped} skipped` : ''}`);
}

if (passed + failed === 0) {
  failed += 1;
  notes.push(`no test result in ${dir}: counted as one failure`);
} else if (makeStatus !== 0 && failed === 0) {
  failed += 1;
  notes.push(`make test exited with status ${makeStatus} and no failing test on record: counted as one failure`);
}
for (const note of notes) process.stdout.write(`  ${note}\n`);
process.stdout.write(`${passed} passed, ${failed} failed\n`);
process.exit(failed > 0 ? 1 : 0);
