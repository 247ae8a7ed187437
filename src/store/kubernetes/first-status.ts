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
 * by (controllers/adoption.ts). It binds the kind, namespace, name, spec and the signing
 * time, and the signing time must be within ACCEPTED_SKEW_MS of the creationTimestamp the
 * API server gave the object: a manifest copied or made again later carries a seal that no
 * longer holds, so it is status-less and adopted as kubectl's.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
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
  metadata: { name: string; namespace?: string; annotations?: Record<string, string>; creationTimestamp?: string | Date };
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
    return { [FIRST_STATUS_ANNOTATION]: text, [FIRST_STATUS_SEAL_ANNOTATION]: this.sealOf(this.key, body, text) };
  }

  /** The first status a custom resource carries, when its seal holds; undefined otherwise. */
  open(raw: Sealed): Record<string, unknown> | undefined {
    const annotations = raw.metadata.annotations;
    const text = annotations?.[FIRST_STATUS_ANNOTATION];
    const seal = annotations?.[FIRST_STATUS_SEAL_ANNOTATION];
    if (!this.key || text === undefined || seal === undefined || !signedAtCreation(raw)) return undefined;
    const expected = Buffer.from(this.sealOf(this.key, raw, text));
    const given = Buffer.from(seal);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    try {
      const status: unknown = JSON.parse(text);
      return isRecord(status) ? status : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Seals again on `next` (the object as the store is about to write it, with a spec it was
   * asked to write) a first status that holds on `current`: the status is still not written.
   * A kubectl edit is not sealed again: its object is status-less and judged as kubectl's.
   */
  reseal(current: Sealed, next: Sealed): void {
    const text = current.metadata.annotations?.[FIRST_STATUS_ANNOTATION];
    if (!this.key || text === undefined || !next.metadata.annotations || !this.open(current)) return;
    next.metadata.annotations[FIRST_STATUS_SEAL_ANNOTATION] = this.sealOf(this.key, next, text);
  }

  private sealOf(key: Buffer, body: Sealed, text: string): string {
    const { name, namespace, annotations } = body.metadata;
    const bound = [body.kind, namespace ?? '', name, annotations?.[CREATED_AT_ANNOTATION] ?? '', canonicalJson(body.spec ?? {}), text];
    return createHmac('sha256', key).update(JSON.stringify(bound)).digest('base64url');
  }
}

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
