/**
 * Encryption of the embedded store's secrets at rest: AES-256-GCM from node:crypto, a
 * random 96-bit nonce for every write, and the secret's team and name as additional
 * authenticated data, so a sealed record opens only as the secret it was written for
 * (copied onto another secret's record, it fails to open).
 *
 * A box seals with its current key and opens with any key of its keyring (the current
 * one and keys being rotated away), picked by the key id a sealed record carries.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { KEY_BYTES } from '../lib/secret-key';
import { isRecord } from '../lib/unknown-values';

const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const ALGORITHM = 'aes-256-gcm';

/** A secret's data as it is written at rest. */
export interface Sealed {
  /** Format version. */
  v: 1;
  /** Id of the key that sealed it (keyIdOf). */
  kid: string;
  /** base64 of the nonce, the ciphertext and the GCM tag. */
  iv: string;
  ct: string;
  tag: string;
}

/** A secret's stored record once sealed: nothing but the sealed data. */
export interface SealedData {
  sealed: Sealed;
}

/** Whether a stored secret record is sealed (plaintext records hold only string values). */
export function isSealed(data: unknown): data is SealedData {
  const sealed = isRecord(data) ? data.sealed : undefined;
  return isRecord(sealed) && sealed.v === 1 && typeof sealed.kid === 'string';
}

/** A short public name of a key: it tells which key sealed a record without saying anything about the key. */
export function keyIdOf(key: Buffer): string {
  return createHmac('sha256', key).update('cloudplane secret key id').digest('hex').slice(0, 16);
}

/** A sealed record that no key of the keyring opens, or that was altered. */
export class SecretKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretKeyError';
  }
}

const aadOf = (team: string, name: string) => Buffer.from(`cloudplane secret v1\0${team}\0${name}`, 'utf8');

export class SecretBox {
  private readonly keys = new Map<string, Buffer>();
  readonly currentKeyId: string;

  /** Seals with `current`; opens with `current` or any of `previous`. */
  constructor(
    private readonly current: Buffer,
    previous: Buffer[] = [],
  ) {
    for (const key of [current, ...previous]) {
      if (key.length !== KEY_BYTES) throw new Error(`an encryption key must be ${KEY_BYTES} bytes`);
      this.keys.set(keyIdOf(key), key);
    }
    this.currentKeyId = keyIdOf(current);
  }

  /** Whether a sealed record can be opened by this keyring. */
  knows(sealed: Sealed): boolean {
    return this.keys.has(sealed.kid);
  }

  seal(team: string, name: string, data: Record<string, string>): SealedData {
    const iv = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv(ALGORITHM, this.current, iv);
    cipher.setAAD(aadOf(team, name));
    const ct = Buffer.concat([cipher.update(JSON.stringify(data), 'utf8'), cipher.final()]);
    return { sealed: { v: 1, kid: this.currentKeyId, iv: iv.toString('base64'), ct: ct.toString('base64'), tag: cipher.getAuthTag().toString('base64') } };
  }

  open(team: string, name: string, { sealed }: SealedData): Record<string, string> {
    const key = this.keys.get(sealed.kid);
    if (!key) {
      throw new SecretKeyError(`secret ${team}/${name} was encrypted with key ${sealed.kid}, which is not the configured key nor a previous one`);
    }
    try {
      // A fixed tag length: GCM would otherwise accept a truncated tag, which is easier to forge.
      const decipher = createDecipheriv(ALGORITHM, key, Buffer.from(sealed.iv, 'base64'), { authTagLength: TAG_BYTES });
      decipher.setAAD(aadOf(team, name));
      decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
      const plain = Buffer.concat([decipher.update(Buffer.from(sealed.ct, 'base64')), decipher.final()]);
      return JSON.parse(plain.toString('utf8')) as Record<string, string>;
    } catch {
      throw new SecretKeyError(`secret ${team}/${name} does not decrypt with key ${sealed.kid}: the record was altered or belongs to another secret`);
    }
  }
}
