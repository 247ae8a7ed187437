/**
 * `Idempotency-Key` on every POST of the authenticated context (docs/api.md, Idempotency),
 * as hooks every POST route of that context gets when it is declared, so no route can forget
 * it and no read pays for it: a preHandler claims the key (after authentication and
 * validation: a request the schema refuses started nothing and pins nothing) and onSend
 * records the answer.
 *
 * The record is a store secret, because an answer can hold a secret (a new API key, a
 * webhook's signing secret): the embedded store seals secrets at rest, the Kubernetes store
 * keeps them in Secrets. It is named after a hash of (team, caller, key), so two callers
 * never share a key, and claimed with secrets.add (create-if-absent): of replicas racing on
 * one key exactly one wins. A claim is a lease the holder renews while it works; a claim
 * whose holder crashed lapses, and a retry takes it over with secrets.swap.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { canonicalJson } from '../../lib/canonical-json';
import { fieldInvalid, idempotencyKeyReused, resourceBusy } from '../../lib/errors';
import type { IdempotencyConfig } from '../../config';
import type { Store } from '../../store/types';
import type { RecordKind } from '../../store/record-kinds';
import type { ApiContext } from '../context';
import { routeConfigOf } from '../route-config';
import { isDryRun } from '../dry-run';
import { fieldOf, isRecord, recordAt, textOf } from '../../lib/unknown-values';
import { entryOf } from '../../lib/maps';
import { Periodic } from '../../lib/periodic';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'idempotent-replayed';
/** Names of the records; the sweep deletes expired ones (IDEMPOTENCY_RECORDS). */
export const IDEMPOTENCY_RECORD_PREFIX = 'idempotency-';
const MAX_KEY_LENGTH = 255;
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;
/** The headers of an answer a client relies on; the rest (X-Request-Id, rate-limit counters) belong to each request. */
const REPLAYED_HEADERS = ['content-type', 'location', 'etag', 'retry-after'];
/** How often a claim lost to another writer is read again before the caller is told to retry. */
const CLAIM_ATTEMPTS = 5;

/** A key's record, as the secret's string values. */
interface IdempotencyRecord extends Record<string, string> {
  state: 'in_flight' | 'done' | 'released';
  /** Hash of the operation and its input: another body or route under the same key is refused. */
  fingerprint: string;
  /** Who holds or held the key (a random token per request). */
  claim: string;
  /** ISO time after which the record no longer counts and the sweep deletes it. */
  expires_at: string;
}

interface InFlight extends IdempotencyRecord {
  state: 'in_flight';
  lease_until: string;
}

interface Done extends IdempotencyRecord {
  state: 'done';
  status: string;
  /** JSON of the replayed headers. */
  headers: string;
  body: string;
}

/** What a request that claimed its key carries to onSend. */
class Claim {
  /** Renews the claim's lease until it is settled. */
  private readonly renewal: Periodic;
  settled = false;

  constructor(
    private readonly store: Store,
    readonly team: string,
    readonly name: string,
    private current: IdempotencyRecord,
    private readonly config: IdempotencyConfig,
  ) {
    // A renewal that cannot be written is let go: the next one, or the lease's end, settles it.
    this.renewal = new Periodic(
      Math.max(1, Math.floor(config.leaseMs / 3)),
      () => this.renew(),
      () => undefined,
    );
    this.renewal.start();
  }

  private async renew(): Promise<void> {
    if (this.settled) return;
    const next = { ...this.current, lease_until: new Date(Date.now() + this.config.leaseMs).toISOString() };
    if (await this.store.secrets.swap(this.team, this.name, this.current, next)) this.current = next;
  }

  /** Replaces the claim with `next` (the answer, or a release); false if another request took the key meanwhile. */
  async settle(next: IdempotencyRecord): Promise<boolean> {
    this.settled = true;
    await this.renewal.stop();
    return this.store.secrets.swap(this.team, this.name, this.current, next);
  }

  released(): IdempotencyRecord {
    return { state: 'released', fingerprint: this.current.fingerprint, claim: this.current.claim, expires_at: this.current.expires_at };
  }

  done(status: number, headers: Record<string, string>, body: string): Done {
    return {
      state: 'done',
      fingerprint: this.current.fingerprint,
      claim: this.current.claim,
      expires_at: this.current.expires_at,
      status: String(status),
      headers: JSON.stringify(headers),
      body,
    };
  }
}

const claims = new WeakMap<FastifyRequest, Claim>();

/** The record's name: a hash, so neither the caller nor the key can be read off it, and short enough for a Secret name. */
export function idempotencySecretName(team: string, caller: string, key: string): string {
  return IDEMPOTENCY_RECORD_PREFIX + createHash('sha256').update(`${team}\0${caller}\0${key}`).digest('hex').slice(0, 48);
}

function fingerprintOf(request: FastifyRequest): string {
  const operation = {
    method: request.method,
    route: routeConfigOf(request).url,
    params: request.params ?? null,
    query: request.query ?? null,
    body: request.body ?? null,
  };
  return createHash('sha256').update(canonicalJson(operation)).digest('hex');
}

function keyOf(request: FastifyRequest): string | undefined {
  const raw = request.headers[IDEMPOTENCY_HEADER];
  if (raw === undefined) return undefined;
  const key = Array.isArray(raw) ? raw.join(', ') : raw;
  if (key.length === 0 || key.length > MAX_KEY_LENGTH || !PRINTABLE_ASCII.test(key)) {
    throw fieldInvalid('Idempotency-Key', `must be 1 to ${MAX_KEY_LENGTH} printable ASCII characters`);
  }
  return key;
}

const isPast = (iso: string | undefined, now: number) => iso === undefined || Date.parse(iso) <= now;

/** A record that no longer holds its key: expired, released after a 5xx, or a claim whose holder stopped renewing (a crash). */
export function lapsed(record: Record<string, string>, now: number): boolean {
  // A request still running holds its key by its lease alone, however short the TTL.
  if (record.state === 'in_flight') return isPast(record.lease_until, now);
  return record.state === 'released' || isPast(record.expires_at, now);
}

/**
 * Sealed: a record keeps the answer to replay, and an answer may carry what is shown once
 * (a new API key, a subscription's signing secret). One past its expiry only takes room,
 * unless a request still running holds it by its lease; a retry that takes it over between
 * the sweep's list and its delete loses its record, and with it only the replay of its answer.
 */
export const IDEMPOTENCY_RECORDS: RecordKind = {
  prefix: IDEMPOTENCY_RECORD_PREFIX,
  sealed: true,
  expired: (record, now) => Date.parse(entryOf(record.data, 'expires_at') ?? '') <= now && lapsed(record.data, now),
};

type Outcome = { kind: 'claimed'; claim: Claim } | { kind: 'replay'; record: Done };

/** A finished key's record: Claim.done writes the answer's fields with the state. */
const isDone = (record: Record<string, string>): record is Done =>
  record.state === 'done' && typeof record.status === 'string' && typeof record.headers === 'string' && typeof record.body === 'string';

async function claimKey(ctx: ApiContext, team: string, name: string, fingerprint: string): Promise<Outcome> {
  const { store } = ctx;
  const config = ctx.config.idempotency;
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const now = Date.now();
    const mine: InFlight = {
      state: 'in_flight',
      fingerprint,
      claim: randomUUID(),
      expires_at: new Date(now + config.ttlMs).toISOString(),
      lease_until: new Date(now + config.leaseMs).toISOString(),
    };
    const stored = await store.secrets.add(team, name, mine);
    if (stored.claim === mine.claim) return { kind: 'claimed', claim: new Claim(store, team, name, mine, config) };
    if (lapsed(stored, now)) {
      if (await store.secrets.swap(team, name, stored, mine)) return { kind: 'claimed', claim: new Claim(store, team, name, mine, config) };
      continue;
    }
    if (stored.fingerprint !== fingerprint) throw idempotencyKeyReused();
    if (isDone(stored)) return { kind: 'replay', record: stored };
    throw resourceBusy('A request with this Idempotency-Key is still being processed; retry once it has finished to get its answer.');
  }
  throw resourceBusy('Other requests with this Idempotency-Key kept changing its record; retry.');
}

function replay(reply: FastifyReply, record: Done): FastifyReply {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(recordAt(JSON.parse(record.headers)) ?? {})) if (typeof value === 'string') headers[name] = value;
  return reply.code(Number(record.status)).headers(headers).header(REPLAYED_HEADER, 'true').send(record.body);
}

function replayedHeadersOf(reply: FastifyReply): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of REPLAYED_HEADERS) {
    const value = reply.getHeader(name);
    if (value !== undefined) headers[name] = String(value);
  }
  return headers;
}

/** The header's documentation, added to every POST in one place like the shared error answers. */
const HEADER_SCHEMA = Type.Object({
  [IDEMPOTENCY_HEADER]: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: MAX_KEY_LENGTH,
      pattern: PRINTABLE_ASCII.source,
      description:
        'A key of your choosing (printable ASCII, at most 255 characters, e.g. a UUID). A retry with the same key and body within 24 hours (CLOUDPLANE_IDEMPOTENCY_TTL_SECONDS) answers the first answer again (marked `Idempotent-Replayed: true`) and does the work once. See docs/api.md, Idempotency.',
    }),
  ),
});

export function registerIdempotency(api: FastifyInstance, ctx: ApiContext): void {
  const claimKeyOf = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!request.principal) return;
    const key = keyOf(request);
    // A dry run does nothing that a retry could repeat, and must not pin the key its real request will bring.
    if (key === undefined || isDryRun(request)) return;
    const { team, key: caller } = request.principal;
    const outcome = await claimKey(ctx, team, idempotencySecretName(team, caller, key), fingerprintOf(request));
    if (outcome.kind === 'replay') return replay(reply, outcome.record);
    claims.set(request, outcome.claim);
  };

  const recordAnswer = async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const claim = claims.get(request);
    if (!claim || claim.settled) return payload;
    // A 5xx did not finish the work, a 409 resource_busy says "later" as a 503 does (Stripe
    // keeps no answer to a request that conflicted with another), and a body that is not
    // text cannot be replayed: the key stays free.
    const body = payload === null || payload === undefined ? '' : typeof payload === 'string' ? payload : undefined;
    const keep = reply.statusCode < 500 && body !== undefined && !isBusyAnswer(reply.statusCode, body);
    const next = keep ? claim.done(reply.statusCode, replayedHeadersOf(reply), body) : claim.released();
    try {
      if (!(await claim.settle(next)))
        request.log.warn('the Idempotency-Key was taken over while its request ran (its lease lapsed); the answer is not kept for a retry');
    } catch (err) {
      // The answer is sent anyway; the claim lapses with its lease and a retry runs again.
      request.log.warn({ err: textOf(err) }, 'could not record the answer of an Idempotency-Key');
    }
    return payload;
  };

  // A request that ended without an answer (hijacked, or the client went away first) frees its key.
  const releaseUnanswered = async (request: FastifyRequest) => {
    const claim = claims.get(request);
    if (claim && !claim.settled) await claim.settle(claim.released()).catch(() => undefined);
  };

  // Hooks of every POST route of the context, added as it is declared, so no POST can
  // forget them; the reads (most of the traffic) run none of them.
  api.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.includes('POST')) return;
    route.preHandler = [claimKeyOf, ...[route.preHandler ?? []].flat()];
    route.onSend = [recordAnswer, ...[route.onSend ?? []].flat()];
    route.onResponse = [releaseUnanswered, ...[route.onResponse ?? []].flat()];
    const schema = (route.schema ??= {});
    if (schema.hide) return;
    schema.headers = withIdempotencyHeader(schema.headers);
  });
}

/** A route's header schema with Idempotency-Key beside its own headers (If-Match, say). */
function withIdempotencyHeader(headers: unknown): unknown {
  if (headers === undefined) return HEADER_SCHEMA;
  const own = fieldOf(headers, 'properties');
  return isRecord(headers) && isRecord(own) ? { ...headers, properties: { ...own, ...HEADER_SCHEMA.properties } } : headers;
}

/** A 409 `resource_busy`: the resource was in a transient state; the same request may work later. */
function isBusyAnswer(status: number, body: string): boolean {
  if (status !== 409) return false;
  try {
    return recordAt(JSON.parse(body), 'error')?.code === 'resource_busy';
  } catch {
    return false;
  }
}
