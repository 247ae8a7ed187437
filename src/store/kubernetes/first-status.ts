/**
 * A custom resource the store creates carries its first status in annotations, sealed with
 * a key of the installation's: the status subresource ignores status on create, and a
 * second write only for it doubled what a create costs the API server. Until the first
 * status write, the store reads the status from the annotation (everywhere: the API's
 * answers, quotas, the reconcilers, the outbox relay); from then on the status subresource
 * holds it and the annotation is stale, dropped by the next write of the object's metadata.
 *
 * The seal is what keeps a kubectl user from writing an object that claims a status (and
 * events) of their choosing, or that skips the create rules a status-less object is judged
 * by (controllers/adoption.ts). It binds the kind, namespace, name, the signing time and a
 * hash of the spec created; the signing time must be within ACCEPTED_SKEW_MS of the
 * creationTimestamp the API server gave the object, so a manifest copied or made again
 * later carries a seal that no longer holds, and is status-less and adopted as kubectl's.
 * While the object is at its first generation its spec must be the one sealed (a manifest
 * made again at once with a spec of its own is judged too); a later generation is an edit
 * of an accepted object, which its reconciler judges as it judges any edit, so the seal
 * still holds: a kubectl edit in the first seconds does not take the status away.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { canonicalJson } from '../../lib/canonical-json';
import { isRecord } from '../../lib/unknown-values';
import { CREATED_AT_ANNOTATION, GROUP } from './names';

export const FIRST_STATUS_ANNOTATION = `${GROUP}/first-status`;
export const FIRST_STATUS_SEAL_ANNOTATION = `${GROUP}/first-status-seal`;

/** The secret (in the system namespace) holding the sealing key, made once by whichever replica starts first. */
export const FIRST_STATUS_KEY_SECRET = 'first-status-seal-key';

/** How far apart the API server's clock and a replica's may be when the object is created. */
const ACCEPTED_SKEW_MS = 60_000;

/** The fields of a custom resource the seal binds. */
interface Sealed {
  kind?: string;
  spec?: unknown;
  metadata: { name: string; namespace?: string; generation?: number; annotations?: Record<string, string>; creationTimestamp?: string | Date };
}

/** What the cache holds of a custom resource, as far as its first status goes. */
interface Cached {
  metadata: { annotations?: Record<string, string> };
  status?: Record<string, unknown>;
}

export class FirstStatusSeal {
  private key: Buffer | undefined;

  /** The key to seal and open with; until it is set nothing is sealed or opened. */
  use(key: Buffer): void {
    this.key = key;
  }

  /** The annotations that carry `status` on `body`, about to be created (its created-at annotation is the signing time). */
  annotationsFor(body: Sealed, status: Record<string, unknown>): Record<string, string> {
    if (!this.key) return {};
    const text = JSON.stringify(status);
    const specHash = specHashOf(body.spec);
    return { [FIRST_STATUS_ANNOTATION]: text, [FIRST_STATUS_SEAL_ANNOTATION]: `${specHash}.${this.macOf(this.key, body, specHash, text)}` };
  }

  /** The first status a custom resource carries, when its seal holds; undefined otherwise. */
  open(raw: Sealed): Record<string, unknown> | undefined {
    const annotations = raw.metadata.annotations;
    const text = annotations?.[FIRST_STATUS_ANNOTATION];
    const parts = (annotations?.[FIRST_STATUS_SEAL_ANNOTATION] ?? '').split('.');
    if (!this.key || text === undefined || parts.length !== 2 || !signedAtCreation(raw)) return undefined;
    const [specHash, mac] = parts;
    if ((raw.metadata.generation ?? 1) <= 1 && specHash !== specHashOf(raw.spec)) return undefined;
    const expected = Buffer.from(this.macOf(this.key, raw, specHash, text));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    try {
      const status: unknown = JSON.parse(text);
      return isRecord(status) ? status : undefined;
    } catch {
      return undefined;
    }
  }

  private macOf(key: Buffer, body: Sealed, specHash: string, text: string): string {
    const { name, namespace, annotations } = body.metadata;
    const bound = [body.kind, namespace ?? '', name, annotations?.[CREATED_AT_ANNOTATION] ?? '', specHash, text];
    return createHmac('sha256', key).update(JSON.stringify(bound)).digest('base64url');
  }
}

/** The spec as created, in the seal: base64url of SHA-256 of its canonical JSON (no dot, the seal's separator). */
const specHashOf = (spec: unknown) =>
  createHash('sha256')
    .update(canonicalJson(spec ?? {}))
    .digest('base64url');

/** Whether the object was made when its seal was signed (not copied or made again later). */
function signedAtCreation(raw: Sealed): boolean {
  const signedAt = Date.parse(raw.metadata.annotations?.[CREATED_AT_ANNOTATION] ?? '');
  const created = raw.metadata.creationTimestamp === undefined ? NaN : new Date(raw.metadata.creationTimestamp).getTime();
  return Math.abs(created - signedAt) <= ACCEPTED_SKEW_MS;
}

/** Drops, in place, the first-status annotations of a cached object that has a status of its own: stale, and the cache's memory. */
export function withoutStaleFirstStatus(raw: Cached): void {
  const annotations = raw.metadata.annotations;
  if (!annotations || !(FIRST_STATUS_ANNOTATION in annotations) || !hasStatus(raw)) return;
  delete annotations[FIRST_STATUS_ANNOTATION];
  delete annotations[FIRST_STATUS_SEAL_ANNOTATION];
}

export const hasStatus = (raw: Pick<Cached, 'status'>): boolean => raw.status !== undefined && Object.keys(raw.status).length > 0;
