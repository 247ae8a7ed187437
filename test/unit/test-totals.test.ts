/**
 * scripts/test-totals.js, the line CI reads (`N passed, N failed`), on real jest output:
 * a fixture project is run by this repository's own jest, so the JSON is what a real run
 * writes. Schemathesis's JUnit is written in the shape its 4.x reports have.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const REPO = path.resolve(__dirname, '../..');
const JEST = path.join(REPO, 'node_modules/jest/bin/jest.js');
const TOTALS = path.join(REPO, 'scripts/test-totals.js');

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-totals-'));
}

/** Runs jest on a project of `files` and leaves its --json result in `results/<name>`. */
function runJest(files: Record<string, string>, results: string, name: string): void {
  const project = tempDir();
  for (const [file, text] of Object.entries(files)) fs.writeFileSync(path.join(project, file), text);
  const config = JSON.stringify({ rootDir: project, transform: {}, testMatch: ['**/*.test.js'] });
  spawnSync(process.execPath, [JEST, '--config', config, '--json', `--outputFile=${path.join(results, name)}`], { cwd: project, encoding: 'utf8' });
  expect(fs.existsSync(path.join(results, name))).toBe(true);
}

function totals(results: string, makeStatus = 0): { lastLine: string; status: number | null } {
  const run = spawnSync(process.execPath, [TOTALS, results, String(makeStatus)], { encoding: 'utf8' });
  const lines = run.stdout.trim().split('\n');
  return { lastLine: lines[lines.length - 1], status: run.status };
}

const junit = (cases: string) => `<?xml version="1.0" encoding="utf-8"?>\n<testsuites><testsuite name="schemathesis">\n${cases}\n</testsuite></testsuites>\n`;

it('totals every jest suite and schemathesis report, and ends with the line alone', () => {
  const results = tempDir();
  runJest({ 'a.test.js': "test('one', () => {}); test('two', () => expect(1).toBe(2));" }, results, 'jest.json');
  runJest({ 'b.test.js': "test('three', () => {});" }, results, 'jest-api-kubernetes.json');
  fs.mkdirSync(path.join(results, 'fuzz/main'), { recursive: true });
  fs.writeFileSync(
    path.join(results, 'fuzz/main/junit-20261123T201057Z.xml'),
    junit(
      [
        '<testcase name="GET /api/v1/regions" time="0.09" />',
        '<testcase name="POST /api/v1/servers" time="1.1"><failure type="failure" message="Server error">500</failure></testcase>',
        '<testcase name="GET /api/v1/jobs" time="0.1"><skipped message="no data" /></testcase>',
      ].join('\n'),
    ),
  );
  const { lastLine, status } = totals(results);
  // jest: one and three pass, two fails; fuzz: one passes, one fails, one is skipped.
  expect(lastLine).toBe('3 passed, 2 failed');
  expect(status).not.toBe(0);
});

it('counts a test file that could not run as a failure', () => {
  const results = tempDir();
  runJest({ 'ok.test.js': "test('fine', () => {});", 'broken.test.js': "throw new Error('at load');" }, results, 'jest.json');
  const { lastLine, status } = totals(results);
  expect(lastLine).toBe('1 passed, 1 failed');
  expect(status).not.toBe(0);
});

it('passes only when there are results and none failed', () => {
  const results = tempDir();
  runJest({ 'ok.test.js': "test('fine', () => {});" }, results, 'jest.json');
  expect(totals(results)).toEqual({ lastLine: '1 passed, 0 failed', status: 0 });
  // make test failed although no test did (a tool failed to install): not green.
  expect(totals(results, 2)).toEqual({ lastLine: '1 passed, 1 failed', status: 1 });
  // A run that executed no test is not green either.
  expect(totals(tempDir())).toEqual({ lastLine: '0 passed, 1 failed', status: 1 });
});
