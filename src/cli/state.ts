/**
 * `cloudplane state export|import|reset` (docs/testing.md, "Saving and restoring a local
 * cloud"): the embedded store's whole state, its data directory, as one file, while the
 * service is stopped (the directory's lock says so). The file holds the secrets sealed as
 * they are at rest, never the key that opens them: that travels apart (`--key-file`, or
 * CLOUDPLANE_ENCRYPTION_KEY), so a state file shared is no secret shared.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as tar from 'tar';
import type { Config } from '../config';
import { lockDataDir } from '../store/append-log';
import { KEY_FILE } from '../store/encryption-key';
import { keyIdOf } from '../store/secret-box';
import { parseKey } from '../lib/secret-key';

/** Left out of a state file: the process's lock, and the key (which never travels with the secrets it opens). */
const NOT_STATE = new Set(['LOCK', KEY_FILE]);
/** A data directory holds one of these once a service has run in it. */
const STORE_FILES = ['store.log', 'store.snapshot.json'];

export class StateUsageError extends Error {}

function embeddedDataDir(config: Config): string {
  if (config.kubernetes)
    throw new StateUsageError(
      "state works on the embedded store only; with CLOUDPLANE_STORE=kubernetes the state is the cluster's (back up etcd, or export the custom resources with kubectl)",
    );
  return path.resolve(config.dataDir);
}

/** The id of the key the directory's secrets are sealed with, as the store names it (not the key). */
function keyIdIn(config: Config, dataDir: string): string | null {
  if (config.secrets.encryptionKey) return keyIdOf(config.secrets.encryptionKey);
  const file = path.join(dataDir, KEY_FILE);
  return fs.existsSync(file) ? keyIdOf(parseKey(fs.readFileSync(file, 'utf8'), `the key file ${file}`)) : null;
}

/** Runs `work` with the data directory locked: refused while a service runs on it. */
async function whileStopped<T>(dataDir: string, work: () => Promise<T>): Promise<T> {
  const unlock = lockDataDir(dataDir);
  try {
    return await work();
  } finally {
    unlock();
  }
}

export async function exportState(config: Config, file: string): Promise<string> {
  const dataDir = embeddedDataDir(config);
  if (!STORE_FILES.some((name) => fs.existsSync(path.join(dataDir, name))))
    throw new StateUsageError(`${dataDir} holds no Cloudplane state (no store.log): has the service run there? (CLOUDPLANE_DATA_DIR)`);
  return whileStopped(dataDir, async () => {
    const entries = fs.readdirSync(dataDir).filter((name) => !NOT_STATE.has(name));
    const target = path.resolve(file);
    const partial = `${target}.partial`;
    // Written aside and renamed: an export cut short leaves no file that looks whole.
    await tar.create({ gzip: true, file: partial, cwd: dataDir, portable: true, mode: 0o600 }, entries);
    fs.renameSync(partial, target);
    const keyId = keyIdIn(config, dataDir);
    const size = fs.statSync(target).size;
    return [
      `Exported ${dataDir} to ${target} (${size} bytes).`,
      keyId
        ? `Its secrets are sealed with key ${keyId}, which is not in the file: import it with that key (--key-file ${path.join(dataDir, KEY_FILE)}, or CLOUDPLANE_ENCRYPTION_KEY).`
        : 'It holds no key file: its secrets open with CLOUDPLANE_ENCRYPTION_KEY, as they did here.',
    ].join('\n');
  });
}

export async function importState(config: Config, file: string, keyFile: string | undefined): Promise<string> {
  const dataDir = embeddedDataDir(config);
  if (!fs.existsSync(file)) throw new StateUsageError(`${file}: no such file`);
  if (fs.existsSync(dataDir) && fs.readdirSync(dataDir).length > 0)
    throw new StateUsageError(
      `${dataDir} is not empty: import into a new directory (CLOUDPLANE_DATA_DIR), or empty this one first with \`cloudplane state reset --yes\``,
    );
  const key = keyFile === undefined ? undefined : parseKey(fs.readFileSync(keyFile, 'utf8'), `the key file ${keyFile}`);
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  return whileStopped(dataDir, async () => {
    try {
      // strict: a damaged archive fails rather than restoring part of a state. Entries that
      // would land outside the directory (absolute, ..) are refused by tar itself.
      await tar.extract({ file, cwd: dataDir, strict: true, filter: (entry) => !NOT_STATE.has(path.normalize(entry)) });
      if (!STORE_FILES.some((name) => fs.existsSync(path.join(dataDir, name))))
        throw new StateUsageError(`${file} is not a Cloudplane state file (it holds no store.log)`);
    } catch (err) {
      for (const name of fs.readdirSync(dataDir)) if (name !== 'LOCK') fs.rmSync(path.join(dataDir, name), { recursive: true, force: true });
      if (err instanceof StateUsageError) throw err;
      throw new StateUsageError(`${file} is not a Cloudplane state file: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (key) fs.writeFileSync(path.join(dataDir, KEY_FILE), `${key.toString('base64')}\n`, { mode: 0o600 });
    return [
      `Imported ${path.resolve(file)} into ${dataDir}.`,
      key
        ? `Its secrets open with key ${keyIdOf(key)} (written to ${path.join(dataDir, KEY_FILE)}).`
        : 'Start it with the key its secrets are sealed with (CLOUDPLANE_ENCRYPTION_KEY), or import again with --key-file.',
    ].join('\n');
  });
}

export async function resetState(config: Config, confirmed: boolean): Promise<string> {
  const dataDir = embeddedDataDir(config);
  if (!fs.existsSync(dataDir)) return `${dataDir} does not exist: nothing to reset.`;
  if (!confirmed) throw new StateUsageError(`state reset removes everything in ${dataDir}, its key included; say --yes to do it`);
  return whileStopped(dataDir, async () => {
    const names = fs.readdirSync(dataDir).filter((name) => name !== 'LOCK');
    await Promise.all(names.map((name) => fs.promises.rm(path.join(dataDir, name), { recursive: true, force: true })));
    return `Removed the state in ${dataDir} (${names.length} entries); the next start begins afresh, with a new team and key.`;
  });
}

const USAGE = 'usage: cloudplane state export FILE | state import FILE [--key-file PATH] | state reset --yes';

/** `cloudplane state …` with its arguments: the exit code (0 done, 2 a usage error or a refusal, 1 a failure). */
export async function runState(config: Config, args: string[]): Promise<number> {
  const { parseArgs } = await import('node:util');
  try {
    const { positionals, values } = parseArgs({
      args,
      allowPositionals: true,
      options: { 'key-file': { type: 'string' }, yes: { type: 'boolean' } },
    });
    const [verb, file, ...extra] = positionals;
    if (extra.length > 0) throw new StateUsageError(USAGE);
    let said: string;
    if (verb === 'export' && file) said = await exportState(config, file);
    else if (verb === 'import' && file) said = await importState(config, file, values['key-file']);
    else if (verb === 'reset' && !file) said = await resetState(config, values.yes === true);
    else throw new StateUsageError(USAGE);
    process.stdout.write(`${said}\n`);
    return 0;
  } catch (err) {
    const usage = err instanceof StateUsageError || (err instanceof Error && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS'));
    const inUse = err instanceof Error && /is in use by process/.test(err.message);
    process.stderr.write(`cloudplane state: ${err instanceof Error ? err.message : String(err)}${inUse ? ' (stop the service first)' : ''}\n`);
    return usage || inUse ? 2 : 1;
  }
}
