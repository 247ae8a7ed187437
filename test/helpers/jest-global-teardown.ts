/** Stops whatever the run's tests left running (test/helpers/processes.ts), then removes the run's temporary files. */
import fs from 'node:fs';
import { killRecorded, REGISTRY_ENV } from './processes';
import { RUN_TMPDIR_ENV } from './jest-global-setup';

export default function globalTeardown(): void {
  const registry = process.env[REGISTRY_ENV];
  if (registry) {
    const killed = killRecorded(registry);
    if (killed.length) process.stderr.write(`test processes left running at the end of the run, killed: ${killed.join(', ')}\n`);
  }
  const runDir = process.env[RUN_TMPDIR_ENV];
  if (runDir) fs.rmSync(runDir, { recursive: true, force: true });
}
