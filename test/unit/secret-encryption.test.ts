/**
 * Secrets of the embedded store at rest: sealed with AES-256-GCM under a key kept apart
 * from the log (CLOUDPLANE_ENCRYPTION_KEY, else a 0600 key file made on first start),
 * bound to their team and name, never opened with a wrong key and never given a new key
 * silently; plain text left by earlier versions, and ciphertext under a key rotated away,
 * is sealed again and purged from the log and the snapshot in one start.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { EmbeddedStore } from '../../src/store/embedded';
import { KEY_FILE } from '../../src/store/encryption-key';
import { keyIdOf, SecretBox } from '../../src/store/secret-box';
import { loadConfig } from '../../src/config';
import { findInFiles, Needle } from '../helpers/secret-scan';

const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-secrets-'));
const newKey = () => randomBytes(32);

async function opened(dataDir: string, encryption?: { key?: Buffer; previousKeys?: Buffer[] }): Promise<EmbeddedStore> {
  const store = new EmbeddedStore({ dataDir, encryption });
  await store.start();
  return store;
}

/** Every secret record in the log and the snapshot, as written. */
function secretRecords(dataDir: string): Array<{ id: string; spec: any }> {
  const objects: any[] = [];
  const snapshot = path.join(dataDir, 'store.snapshot.json');
  if (fs.existsSync(snapshot)) objects.push(...JSON.parse(fs.readFileSync(snapshot, 'utf8')).objects);
  const log = path.join(dataDir, 'store.log');
  for (const line of fs.readFileSync(log, 'utf8').split('\n').filter(Boolean)) {
    const record = JSON.parse(line);
    if (record.op === 'put') objects.push(record.o);
  }
  return objects.filter((o) => o.meta.kind === '__Secret').map((o) => ({ id: o.meta.id, spec: o.spec }));
}

const WRITTEN_AT = '2026-01-02T03:04:05.000Z';

/** A secret record as versions before encryption wrote it: the data as the object's spec. */
function plainSecret(team: string, name: string, data: Record<string, string>, version: number) {
  const at = WRITTEN_AT;
  return {
    meta: { kind: '__Secret', id: name, team, labels: {}, generation: 1, createdAt: at, updatedAt: at, resourceVersion: String(version) },
    spec: data,
    status: {},
  };
}

describe('sealing secrets (SecretBox)', () => {
  const box = new SecretBox(newKey());

  it('opens what it sealed, with a fresh nonce every time', () => {
    const a = box.seal('team_a', 'vpn-psk-vpn_1', { value: 'the-key' });
    const b = box.seal('team_a', 'vpn-psk-vpn_1', { value: 'the-key' });
    expect(a.sealed.iv).not.toBe(b.sealed.iv);
    expect(a.sealed.ct).not.toBe(b.sealed.ct);
    expect(box.open('team_a', 'vpn-psk-vpn_1', a)).toEqual({ value: 'the-key' });
    expect(JSON.stringify(a)).not.toContain('the-key');
  });

  it('binds a sealed record to its team and name, and refuses an altered one', () => {
    const sealed = box.seal('team_a', 'vpn-psk-vpn_1', { value: 'the-key' });
    expect(() => box.open('team_b', 'vpn-psk-vpn_1', sealed)).toThrow(/altered or belongs to another secret/);
    expect(() => box.open('team_a', 'vpn-psk-vpn_2', sealed)).toThrow(/altered or belongs to another secret/);
    const flipped = Buffer.from(sealed.sealed.ct, 'base64');
    flipped[0] ^= 1;
    expect(() => box.open('team_a', 'vpn-psk-vpn_1', { sealed: { ...sealed.sealed, ct: flipped.toString('base64') } })).toThrow(/altered/);
    // A truncated tag is not accepted either.
    const shortTag = Buffer.from(sealed.sealed.tag, 'base64').subarray(0, 4).toString('base64');
    expect(() => box.open('team_a', 'vpn-psk-vpn_1', { sealed: { ...sealed.sealed, tag: shortTag } })).toThrow(/altered/);
  });

  it('opens with a previous key and seals with the current one only', () => {
    const old = newKey();
    const sealedOld = new SecretBox(old).seal('t', 'n', { v: '1' });
    const rotating = new SecretBox(newKey(), [old]);
    expect(rotating.open('t', 'n', sealedOld)).toEqual({ v: '1' });
    expect(rotating.seal('t', 'n', { v: '1' }).sealed.kid).toBe(rotating.currentKeyId);
    expect(() => new SecretBox(newKey()).open('t', 'n', sealedOld)).toThrow(/not the configured key nor a previous one/);
  });
});

describe('configuration of the key', () => {
  it('takes base64 of 32 bytes and names the variable when a key is malformed', () => {
    const key = newKey();
    expect(loadConfig({ CLOUDPLANE_ENCRYPTION_KEY: key.toString('base64') }).secrets.encryptionKey).toEqual(key);
    expect(
      loadConfig({ CLOUDPLANE_ENCRYPTION_KEY_PREVIOUS: `${newKey().toString('base64')},${key.toString('base64')}` }).secrets.previousEncryptionKeys[1],
    ).toEqual(key);
    expect(() => loadConfig({ CLOUDPLANE_ENCRYPTION_KEY: randomBytes(16).toString('base64') })).toThrow(/CLOUDPLANE_ENCRYPTION_KEY must be the base64 of 32/);
    expect(() => loadConfig({ CLOUDPLANE_ENCRYPTION_KEY: 'not base64 at all!' })).toThrow(/CLOUDPLANE_ENCRYPTION_KEY must/);
    expect(() => loadConfig({ CLOUDPLANE_ENCRYPTION_KEY_PREVIOUS: 'short' })).toThrow(/CLOUDPLANE_ENCRYPTION_KEY_PREVIOUS must/);
  });
});

describe('secrets at rest in the embedded store', () => {
  let dir: string;
  const stores: EmbeddedStore[] = [];
  const open = async (encryption?: { key?: Buffer; previousKeys?: Buffer[] }) => {
    const store = await opened(dir, encryption);
    stores.push(store);
    return store;
  };
  const close = async (store: EmbeddedStore) => {
    await store.stop();
    stores.splice(stores.indexOf(store), 1);
  };
  beforeEach(() => {
    dir = tempDir();
  });
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('makes a key file readable by its owner alone on first start and keeps only ciphertext in the log and the snapshot', async () => {
    const store = await open();
    const file = path.join(dir, KEY_FILE);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const key = Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64');
    expect(key).toHaveLength(32);
    await store.secrets.put('team_a', 'vpn-psk-vpn_1', { value: 'psk-in-the-log-1' });
    await store.secrets.put('team_a', 'vpn-psk-vpn_1', { value: 'psk-in-the-log-2' });
    await close(store);

    const needles: Needle[] = [
      { label: 'first key', value: 'psk-in-the-log-1' },
      { label: 'second key', value: 'psk-in-the-log-2' },
    ];
    expect(findInFiles(dir, needles)).toEqual([]);
    expect(secretRecords(dir).map((r) => r.spec.sealed.kid)).toEqual([keyIdOf(key), keyIdOf(key)]);

    // The same key file is used again, and a mode widened by a copy is narrowed again.
    fs.chmodSync(file, 0o644);
    const again = await open();
    expect(await again.secrets.get('team_a', 'vpn-psk-vpn_1')).toEqual({ value: 'psk-in-the-log-2' });
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64')).toEqual(key);
  });

  it('uses a configured key and makes no key file', async () => {
    const key = newKey();
    const store = await open({ key });
    await store.secrets.put('team_a', 's', { value: 'configured-secret' });
    await close(store);
    expect(fs.existsSync(path.join(dir, KEY_FILE))).toBe(false);
    expect(secretRecords(dir).map((r) => r.spec.sealed.kid)).toEqual([keyIdOf(key)]);
    const again = await open({ key });
    expect(await again.secrets.get('team_a', 's')).toEqual({ value: 'configured-secret' });
  });

  it('stops start-up with a wrong key, and with a missing key file, never making a new key', async () => {
    const key = newKey();
    const store = await open({ key });
    await store.secrets.put('team_a', 's', { value: 'v' });
    await close(store);

    await expect(opened(dir, { key: newKey() })).rejects.toThrow(/encrypted with key [0-9a-f]{16}, which is not the configured key.*CLOUDPLANE_ENCRYPTION_KEY/);
    await expect(opened(dir)).rejects.toThrow(/holds encrypted secrets, but CLOUDPLANE_ENCRYPTION_KEY is not set and the key file .* is missing/);
    expect(fs.existsSync(path.join(dir, KEY_FILE))).toBe(false);
    expect(fs.existsSync(path.join(dir, 'LOCK'))).toBe(false);

    // The same with a generated key file that went missing.
    const fileDir = tempDir();
    const generated = await opened(fileDir);
    await generated.secrets.put('team_a', 's', { value: 'v' });
    await generated.stop();
    fs.rmSync(path.join(fileDir, KEY_FILE));
    await expect(opened(fileDir)).rejects.toThrow(/holds encrypted secrets/);
    expect(fs.existsSync(path.join(fileDir, KEY_FILE))).toBe(false);
    fs.rmSync(fileDir, { recursive: true, force: true });

    // The right key still opens it: nothing was changed by the refused starts.
    const right = await open({ key });
    expect(await right.secrets.get('team_a', 's')).toEqual({ value: 'v' });
  });

  it('refuses a sealed record moved onto another secret', async () => {
    const key = newKey();
    const store = await open({ key });
    await store.secrets.put('team_a', 'vpn-psk-vpn_1', { value: 'first' });
    await store.secrets.put('team_a', 'vpn-psk-vpn_2', { value: 'second' });
    await close(store);
    const log = path.join(dir, 'store.log');
    const records = fs
      .readFileSync(log, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line));
    // Someone with write access to the log gives gateway 2 the key of gateway 1.
    records[1].o.spec = records[0].o.spec;
    fs.writeFileSync(log, records.map((r) => `${JSON.stringify(r)}\n`).join(''));
    await expect(opened(dir, { key })).rejects.toThrow(/team_a\/vpn-psk-vpn_2 does not decrypt.*belongs to another secret/);
  });

  it('seals plain-text secrets of an earlier version and purges them from the log and the snapshot in one start', async () => {
    // A data directory as earlier versions left it: secrets in plain text in the snapshot and
    // the log, one of them overwritten and one deleted since.
    fs.writeFileSync(
      path.join(dir, 'store.snapshot.json'),
      JSON.stringify({
        revision: 2,
        objects: [
          plainSecret('team_a', 'vpn-psk-vpn_1', { value: 'plain-psk-in-snapshot' }, 1),
          plainSecret('__system', 'cursor-signing-key', { key: 'plain-cursor-key-base64' }, 2),
        ],
      }),
    );
    const log = [
      { op: 'put', o: plainSecret('team_a', 'webhook-secret-wh_1', { current: 'whsec_plain-current', previous: '', previous_expires_at: '' }, 3) },
      {
        op: 'put',
        o: plainSecret('team_a', 'webhook-secret-wh_1', { current: 'whsec_plain-rotated', previous: 'whsec_plain-current', previous_expires_at: '1' }, 4),
      },
      { op: 'put', o: plainSecret('team_b', 'vpn-psk-vpn_2', { value: 'plain-psk-deleted' }, 5) },
      { op: 'del', k: '__Secret/team_b/vpn-psk-vpn_2' },
    ];
    fs.writeFileSync(path.join(dir, 'store.log'), log.map((r) => `${JSON.stringify(r)}\n`).join(''));
    const plain: Needle[] = ['plain-psk-in-snapshot', 'plain-cursor-key-base64', 'whsec_plain-current', 'whsec_plain-rotated', 'plain-psk-deleted'].map(
      (value) => ({ label: value, value }),
    );
    expect(findInFiles(dir, plain)).toHaveLength(5);

    const store = await open();
    expect(findInFiles(dir, plain)).toEqual([]);
    expect(await store.secrets.get('team_a', 'vpn-psk-vpn_1')).toEqual({ value: 'plain-psk-in-snapshot' });
    expect(await store.secrets.get('__system', 'cursor-signing-key')).toEqual({ key: 'plain-cursor-key-base64' });
    expect(await store.secrets.get('team_a', 'webhook-secret-wh_1')).toEqual({
      current: 'whsec_plain-rotated',
      previous: 'whsec_plain-current',
      previous_expires_at: '1',
    });
    expect(await store.secrets.get('team_b', 'vpn-psk-vpn_2')).toBeUndefined();
    // Creation times survive the re-sealing.
    expect((await store.secrets.list('vpn-psk-vpn_1'))[0].createdAt).toBe(WRITTEN_AT);
    expect(fs.statSync(path.join(dir, KEY_FILE)).mode & 0o777).toBe(0o600);
    const kid = keyIdOf(Buffer.from(fs.readFileSync(path.join(dir, KEY_FILE), 'utf8').trim(), 'base64'));
    expect(secretRecords(dir).every((r) => r.spec.sealed?.kid === kid)).toBe(true);
    await close(store);
    const again = await open();
    expect(await again.secrets.get('team_a', 'vpn-psk-vpn_1')).toEqual({ value: 'plain-psk-in-snapshot' });
  });

  it('rotates the key: a previous key opens, everything is sealed again under the new key, and the old key then opens nothing', async () => {
    const oldKey = newKey();
    const store = await open({ key: oldKey });
    await store.secrets.put('team_a', 'a', { value: 'secret-a' });
    await store.secrets.put('team_b', 'b', { value: 'secret-b' });
    await store.secrets.delete('team_b', 'b');
    await store.secrets.put('team_b', 'c', { value: 'secret-c' });
    await close(store);

    const newer = newKey();
    const rotating = await open({ key: newer, previousKeys: [oldKey] });
    expect(await rotating.secrets.get('team_a', 'a')).toEqual({ value: 'secret-a' });
    expect(secretRecords(dir).map((r) => r.spec.sealed.kid)).toEqual([keyIdOf(newer), keyIdOf(newer)]);
    await close(rotating);

    const rotated = await open({ key: newer });
    expect((await rotated.secrets.list('')).map((s) => s.data.value).sort()).toEqual(['secret-a', 'secret-c']);
    await close(rotated);
    await expect(opened(dir, { key: oldKey })).rejects.toThrow(/not the configured key nor a previous one/);
  });

  it('rotates from a generated key file to a new one', async () => {
    const first = await open();
    await first.secrets.put('team_a', 'a', { value: 'secret-a' });
    await close(first);
    const file = path.join(dir, KEY_FILE);
    const oldKey = Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64');
    // The operator moves the key file aside; the next start makes a new one, reading with the old.
    fs.renameSync(file, path.join(dir, 'old.key'));
    const rotating = await open({ previousKeys: [oldKey] });
    expect(await rotating.secrets.get('team_a', 'a')).toEqual({ value: 'secret-a' });
    const newKeyId = keyIdOf(Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64'));
    expect(newKeyId).not.toBe(keyIdOf(oldKey));
    expect(secretRecords(dir).map((r) => r.spec.sealed.kid)).toEqual([newKeyId]);
  });
});
