/** A registry of the processes this jest run starts (test/helpers/processes.ts). */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REGISTRY_ENV } from './processes';

export default function globalSetup(): void {
  // Per run, so two runs at once (two checkouts on one machine) never kill each other's.
  process.env[REGISTRY_ENV] = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-test-processes-'));
}
