/**
 * `cloudplane state export|import|reset` (docs/testing.md, "Saving and restoring a local
 * cloud"), run as a user runs them: a local cloud with resources of several families is
 * stopped and exported; the file, imported into a fresh directory with the key, answers
 * every list exactly as before, and the original key still works; the file holds no key
 * and no secret in plain text. A running service's directory is refused.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { startTestService, tempDataDir, TestService, waitForStatus, eventually } from '../helpers/service';

jest.setTimeout(120_000);

const MAIN = path.resolve(__dirname, '../../dist/src/main.js');
const run = promisify(execFile);

const state = (dataDir: string, ...args: string[]) =>
  run(process.execPath, [MAIN, 'state', ...args], {
    env: { ...process.env, CLOUDPLANE_STORE: 'embedded', CLOUDPLANE_DATA_DIR: dataDir, CLOUDPLANE_LOG_LEVEL: 'silent' },
  });

/** Every list a client reads, whole. */
const LISTS = [
  '/api/v1/load-balancers?limit=100',
  '/api/v1/servers?limit=100',
  '/api/v1/object-storage?limit=100',
  '/api/v1/file-storage?limit=100',
  '/api/v1/jobs?limit=100',
  '/api/v1/alert-policies?limit=100',
  '/api/v1/settings/api-keys',
  '/api/v1/settings/members',
  '/api/v1/audit-log?limit=100',
];

const listsOf = async (t: TestService) => Object.fromEntries(await Promise.all(LISTS.map(async (list) => [list, (await t.api('GET', list)).body.data])));

async function seed(t: TestService): Promise<string> {
  const made = async (path: string, body: object, status: string) => {
    const res = await t.api('POST', path, body);
    expect(res.status).toBe(201);
    return (await waitForStatus(t, `${path}/${res.body.data.id}`, status, 30_000)).id as string;
  };
  await made('/api/v1/load-balancers', { name: 'web', region: 'fra1' }, 'running');
  const server = await made('/api/v1/servers', { name: 'app-1', region: 'fra1' }, 'running');
  await made('/api/v1/object-storage', { name: 'assets', region: 'fra1' }, 'available');
  await made('/api/v1/file-storage', { name: 'home', region: 'fra1' }, 'available');
  await made('/api/v1/jobs', { name: 'migrate', command: 'echo done' }, 'completed');
  expect((await t.api('POST', '/api/v1/alert-policies', { name: 'jobs', condition: { type: 'job_failed' } })).status).toBe(201);
  const key = await t.api('POST', '/api/v1/settings/api-keys', { name: 'ci', scope: 'read_only' });
  expect(key.status).toBe(201);
  const backup = (await t.api('POST', `/api/v1/servers/${server}/backups`, { name: 'nightly' })).body.data.id;
  await waitForStatus(t, `/api/v1/servers/${server}/backups/${backup}`, 'completed', 30_000);
  return key.body.data.key as string;
}

describe('cloudplane state', () => {
  it('exports a stopped local cloud and imports it into a fresh directory that answers every list as before', async () => {
    const original = tempDataDir();
    const first = await startTestService({}, original);
    const ownerKey = first.key;
    const readerKey = await seed(first);
    // Settled: the last event is in the audit log before the lists are read.
    await eventually(async () => ((await first.api('GET', '/api/v1/audit-log?limit=100')).body.data.length > 0 ? true : undefined));
    const before = await listsOf(first);

    // A running service's directory is refused: the export would not be a state it ever had.
    await expect(state(original, 'export', path.join(original, '..', 'refused.tgz'))).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('stop the service first'),
    });
    await first.stop();

    const file = path.join(tempDataDir(), 'local-cloud.tgz');
    const exported = await state(original, 'export', file);
    expect(exported.stdout).toMatch(/Its secrets are sealed with key [0-9a-f]{16}, which is not in the file/);
    // Neither the key nor a secret is in the file, even unpacked.
    const unpacked = zlib.gunzipSync(fs.readFileSync(file));
    const key = fs.readFileSync(path.join(original, 'encryption.key'), 'utf8').trim();
    for (const secret of [key, ownerKey, readerKey]) expect(unpacked.includes(Buffer.from(secret))).toBe(false);
    expect(fs.statSync(file).mode & 0o077).toBe(0);

    const restored = path.join(tempDataDir(), 'restored');
    const imported = await state(restored, 'import', file, '--key-file', path.join(original, 'encryption.key'));
    expect(imported.stdout).toContain(`Imported ${file} into ${restored}`);
    const again = await startTestService({ CLOUDPLANE_BOOTSTRAP_API_KEY: ownerKey }, restored);
    try {
      expect(await listsOf(again)).toEqual(before);
      expect((await again.api('GET', '/api/v1/servers', undefined, { key: readerKey })).status).toBe(200);
    } finally {
      await again.stop();
    }

    // Into a directory that holds something: refused, nothing touched.
    await expect(state(restored, 'import', file)).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('is not empty') });
    // Reset asks for --yes, then leaves the directory empty.
    await expect(state(restored, 'reset')).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('--yes') });
    await state(restored, 'reset', '--yes');
    expect(fs.readdirSync(restored)).toEqual([]);
  });

  it('refuses a file that is not a state, leaving the directory empty', async () => {
    const notState = path.join(tempDataDir(), 'not-state.tgz');
    fs.writeFileSync(notState, zlib.gzipSync(Buffer.from('just some text')));
    const target = path.join(tempDataDir(), 'target');
    await expect(state(target, 'import', notState)).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('not a Cloudplane state file') });
    expect(fs.readdirSync(target)).toEqual([]);
  });
});
