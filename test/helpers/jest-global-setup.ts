/**
 * One temporary directory per jest run, made the run's TMPDIR, so that every test's
 * temporary files (data directories, configs, tools' scratch space) go under it and the
 * teardown removes them all; and in it, the registry of the processes the run starts
 * (test/helpers/processes.ts). Per run, so two runs at once (two checkouts on one
 * machine) never kill each other's processes or remove each other's files.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REGISTRY_ENV } from './processes';

/** The run's own temporary directory, for the teardown. */
export const RUN_TMPDIR_ENV = 'CLOUDPLANE_TEST_RUN_TMPDIR';

export default function globalSetup(): void {
  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-run-'));
  // Others may pass through, not list: PostgreSQL runs as its own user when the tests run as
  // root, and reaches the directory a local-database test opens to it (each test's own stays 0700).
  fs.chmodSync(runDir, 0o711);
  process.env[RUN_TMPDIR_ENV] = runDir;
  // Read by os.tmpdir() in the test workers, which inherit this environment, and by the tools they start.
  process.env.TMPDIR = runDir;
  process.env[REGISTRY_ENV] = fs.mkdtempSync(path.join(runDir, 'processes-'));
}
