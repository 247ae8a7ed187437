/**
 * An encryption key as it is configured (CLOUDPLANE_ENCRYPTION_KEY and the previous keys)
 * or kept in a key file: the base64 of 32 random bytes. The configuration reads keys with
 * this, and the store seals its secrets with them (store/secret-box.ts).
 */
export const KEY_BYTES = 32;

/** A key given as base64 of exactly 32 bytes; `source` names where it came from in the error. */
export function parseKey(raw: string, source: string): Buffer {
  const text = raw.trim();
  const key = Buffer.from(text, 'base64');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text) || key.length !== KEY_BYTES) {
    throw new Error(`${source} must be the base64 of ${KEY_BYTES} random bytes (e.g. the output of: openssl rand -base64 32)`);
  }
  return key;
}
