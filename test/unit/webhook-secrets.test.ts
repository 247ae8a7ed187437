/**
 * A webhook's rotated-away secret on the embedded store: kept (sealed) while it signs,
 * dropped once its overlap has ended, and gone from the data directory, even as
 * ciphertext, after the next compaction.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedStore } from '../../src/store/embedded';
import { KEY_FILE } from '../../src/store/encryption-key';
import { isSealed, SecretBox } from '../../src/store/secret-box';
import { createSecret, dropExpiredPrevious, rotateSecret, signingSecrets } from '../../src/webhooks/secrets';
import { webhookSecretName } from '../../src/resources/webhook';

/** Every secret record in the data directory (snapshot and log), opened with its key file. */
function openedAtRest(dataDir: string): string[] {
  const box = new SecretBox(Buffer.from(fs.readFileSync(path.join(dataDir, KEY_FILE), 'utf8').trim(), 'base64'));
  const objects: any[] = [];
  const snapshot = path.join(dataDir, 'store.snapshot.json');
  if (fs.existsSync(snapshot)) objects.push(...JSON.parse(fs.readFileSync(snapshot, 'utf8')).objects);
  for (const line of fs.readFileSync(path.join(dataDir, 'store.log'), 'utf8').split('\n').filter(Boolean)) {
    const record = JSON.parse(line);
    if (record.op === 'put') objects.push(record.o);
  }
  return objects
    .filter((o) => o.meta.kind === '__Secret')
    .map((o) => {
      expect(isSealed(o.spec)).toBe(true);
      return JSON.stringify(box.open(o.meta.team, o.meta.id, o.spec));
    });
}

describe('a rotated-away webhook secret', () => {
  let dir: string;
  let store: EmbeddedStore;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-webhook-secrets-'));
    // Compaction after every write, so the data directory holds the current state alone.
    store = new EmbeddedStore({ dataDir: dir, compactBytes: 1, compactPastSnapshotSize: false });
    await store.start();
  });
  afterEach(async () => {
    await store.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('signs during its overlap, is dropped after it, and is then gone from the data directory', async () => {
    const now = Date.now();
    const first = await createSecret(store, 'team_a', 'wh_1');
    const second = await rotateSecret(store, 'team_a', 'wh_1', 60_000, now);
    expect(await signingSecrets(store, 'team_a', 'wh_1', now + 59_999)).toEqual([second, first]);
    const [listed] = await store.secrets.list(webhookSecretName('wh_1'));

    // Not before the overlap ends.
    expect(await dropExpiredPrevious(store, listed, now + 59_999)).toBe(false);
    await store.stop();
    expect(openedAtRest(dir).some((record) => record.includes(first))).toBe(true);

    store = new EmbeddedStore({ dataDir: dir, compactBytes: 1, compactPastSnapshotSize: false });
    await store.start();
    expect(await signingSecrets(store, 'team_a', 'wh_1', now + 60_000)).toEqual([second]);
    expect(await dropExpiredPrevious(store, listed, now + 60_000)).toBe(true);
    expect(await store.secrets.get('team_a', webhookSecretName('wh_1'))).toEqual({ current: second, previous: '', previous_expires_at: '' });
    // Once dropped, there is nothing more to drop.
    const [after] = await store.secrets.list(webhookSecretName('wh_1'));
    expect(await dropExpiredPrevious(store, after, now + 120_000)).toBe(false);
    await store.stop(); // waits for the compaction the drop set off

    const atRest = openedAtRest(dir);
    expect(atRest.length).toBeGreaterThan(0);
    expect(atRest.some((record) => record.includes(second))).toBe(true);
    expect(atRest.some((record) => record.includes(first))).toBe(false);
    store = new EmbeddedStore({ dataDir: dir });
    await store.start();
  });
});
