import { createHash, randomBytes } from 'node:crypto';

const ID_ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** Length of the random part of an id: inside docs/api.md's 16-26, ~103 bits of entropy. */
const OPAQUE_LENGTH = 20;

/** Uniform random string over `alphabet`, by rejection sampling (no modulo bias). */
export function randomString(length: number, alphabet: string): string {
  const limit = 256 - (256 % alphabet.length);
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < limit) out += alphabet[byte % alphabet.length];
      if (out.length === length) break;
    }
  }
  return out;
}

/** A new resource id, `<prefix>_<opaque>` with a random, unguessable opaque part. */
export function newId(prefix: string): string {
  return `${prefix}_${randomString(OPAQUE_LENGTH, ID_ALPHABET)}`;
}

/**
 * An id derived from what identifies the thing, `<prefix>_<20 hex digits of a SHA-256>`:
 * every replica, and every retry of a step, names the same thing the same way, so a second
 * create of it is refused as already existing instead of making a twin.
 */
export function derivedId(prefix: string, ...parts: string[]): string {
  return `${prefix}_${createHash('sha256').update(parts.join('\u0000')).digest('hex').slice(0, OPAQUE_LENGTH)}`;
}

export function newApiKeySecret(): string {
  return `cpk_${randomString(40, BASE62)}`;
}

const ID_PATTERN = /^([a-z][a-z0-9]*)_([0-9a-z]{16,26})$/;

export function isId(value: string, prefix?: string): boolean {
  const m = ID_PATTERN.exec(value);
  return m !== null && (prefix === undefined || m[1] === prefix);
}

/** Kubernetes object names cannot hold `_`: `lb_x7k2` is stored as `lb-x7k2`. */
export function objectNameForId(id: string): string {
  return id.replace('_', '-');
}
