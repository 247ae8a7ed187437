/** Stops whatever the run's tests left running (test/helpers/processes.ts). */
import fs from 'node:fs';
import { killRecorded, REGISTRY_ENV } from './processes';

export default function globalTeardown(): void {
  const dir = process.env[REGISTRY_ENV];
  if (!dir) return;
  const killed = killRecorded(dir);
  if (killed.length) process.stderr.write(`test processes left running at the end of the run, killed: ${killed.join(', ')}\n`);
  fs.rmSync(dir, { recursive: true, force: true });
}
