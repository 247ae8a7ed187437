/**
 * Where the embedded store's encryption key comes from: CLOUDPLANE_ENCRYPTION_KEY when it
 * is set, else the key file `encryption.key` in the data directory (mode 0600), made on
 * the first start of a store that holds no encrypted secret yet. Keys being rotated away
 * (CLOUDPLANE_ENCRYPTION_KEY_PREVIOUS) open records and never seal.
 *
 * A store that holds encrypted secrets never gets a new key silently: without the key
 * that encrypted them its secrets could not be read, so start-up stops instead.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { keyIdOf } from './secret-box';
import { KEY_BYTES, parseKey } from '../lib/secret-key';

export const KEY_FILE = 'encryption.key';

export interface EncryptionKeys {
  /** The key to seal with; without it, the data directory's key file. */
  key?: Buffer;
  /** Keys accepted for opening only, while the store is re-sealed with the current key. */
  previousKeys?: Buffer[];
}

export interface Keyring {
  current: Buffer;
  previous: Buffer[];
}

/**
 * The keyring of a store in `dataDir`. `sealedWith` holds the ids of the keys its records
 * are encrypted with: a key file is made only if none of them is lost by that, i.e. on a
 * first start, or when the keys being rotated away open every record.
 */
export function loadKeyring(dataDir: string, keys: EncryptionKeys, sealedWith: Iterable<string>): Keyring {
  const previous = keys.previousKeys ?? [];
  if (keys.key) return { current: keys.key, previous };
  const file = path.join(dataDir, KEY_FILE);
  if (fs.existsSync(file)) return { current: readKeyFile(file), previous };
  const known = new Set(previous.map(keyIdOf));
  if ([...sealedWith].some((kid) => !known.has(kid))) {
    throw new Error(
      `${dataDir} holds encrypted secrets, but CLOUDPLANE_ENCRYPTION_KEY is not set and the key file ${file} is missing. ` +
        'Restore the key file, or set CLOUDPLANE_ENCRYPTION_KEY to the key that encrypted them; a new key could not open them, so none is made.',
    );
  }
  const key = randomBytes(KEY_BYTES);
  writeKeyFile(file, key);
  return { current: key, previous };
}

function readKeyFile(file: string): Buffer {
  const key = parseKey(fs.readFileSync(file, 'utf8'), `the key file ${file}`);
  // Only the service's user may read it, whatever a copy or a restore did to its mode.
  if ((fs.statSync(file).mode & 0o077) !== 0) fs.chmodSync(file, 0o600);
  return key;
}

/** Writes the key file durably and readable by its owner alone: a crash leaves no file or a whole one. */
function writeKeyFile(file: string, key: Buffer): void {
  const tmp = `${file}.tmp`;
  fs.rmSync(tmp, { force: true });
  const fd = fs.openSync(tmp, 'wx', 0o600);
  try {
    fs.fchmodSync(fd, 0o600); // the mode given to open() is narrowed by the umask, never widened: make it exact
    fs.writeSync(fd, `${key.toString('base64')}\n`);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
  const dir = fs.openSync(path.dirname(file), 'r');
  try {
    fs.fsyncSync(dir);
  } finally {
    fs.closeSync(dir);
  }
}
