/**
 * Changes pushed instead of polled (docs/api.md, "Watching changes"):
 * `GET /api/v1/{path}?watch=true` streams the caller's team's resources of a family as
 * server-sent events, `GET /api/v1/{path}/{id}?watch=true` one resource. First the
 * resources as they are (an `added` each, then `synced`), then every change as the store
 * sees it: `added`, `modified` (only a change the record shows: a write it does not, such
 * as the outbox relay's, sends nothing) and `deleted` (gone from the API: destroyed or
 * removed).
 *
 * Each event's id is a position in this replica's sequence of changes. A client that
 * connects again with the last one as Last-Event-ID gets what changed since, each resource
 * once as it is now, provided this replica still remembers that far back (the last
 * `history` changes, of every team); otherwise a `reset`, then the resources afresh.
 *
 * Bounded: a team holds at most `perTeam` watches at once (429 too_many_watches), the
 * replica `max` (503 service_overloaded); a watch ends after its timeout (at most
 * `maxSeconds`) with a `closed` event, and a client that reads too slowly is cut off
 * (event-stream.ts). The work per change is a lookup when nobody watches its team's
 * family, and one serialisation of the record for all who do.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { isOfFamily, lifecycleState, type AnyFamily, type Resource } from '../resources/family';
import { apiKeyFamily, userFamily } from '../resources/accounts';
import type { Store, StoredObject, WatchEvent as StoreEvent } from '../store/types';
import { ApiError } from '../lib/errors';
import { messageOf } from '../lib/unknown-values';
import { overloaded } from './plugins/load-shedding';
import { StringEnum } from '../resources/schema-kit';
import { EventStream, TOO_SLOW } from './event-stream';
import { isVisible } from './visible';
import type { RequestLogLevel, WatchConfig } from '../config';
import type { ActiveSession } from '../accounts/sessions';
import { reportOpenWatches, watchesRefused } from '../metrics';
import { recordOf } from '../resources/record-of';

/** The query of a watch: `watch=true`, and how long it may last. */
export const watchProperties = (settings: Pick<WatchConfig, 'maxSeconds'>) => ({
  watch: Type.Optional(
    Type.Boolean({ description: 'true: answer text/event-stream, the resources then every change as it happens (docs/api.md, Watching changes).' }),
  ),
  timeout_seconds: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: settings.maxSeconds,
      description: `With watch=true: end the stream after this long (default and most ${settings.maxSeconds}); connect again with Last-Event-ID to go on.`,
    }),
  ),
});

/** One event of a watch, as a client's SSE parser sees it. */
export const WatchEvent = Type.Object({
  event: StringEnum(['added', 'modified', 'deleted', 'synced', 'reset', 'closed'] as const, {
    description:
      'added, modified: data is the record; deleted: the record as it was last, or {id} when no longer kept; synced: the resources as they were are all sent; reset: what changed since Last-Event-ID is no longer known, the resources follow afresh; closed: {reason}, the last event.',
  }),
  data: Type.String({ description: 'JSON text.' }),
  id: Type.Optional(Type.String({ description: 'The position to resume from: send it back as Last-Event-ID.' })),
});

type ChangeType = 'added' | 'modified' | 'deleted';

interface Change {
  seq: number;
  kind: string;
  team: string;
  id: string;
}

interface Watcher {
  family: AnyFamily;
  team: string;
  /** Whose it is: the API key's id, or for a console session its user's (Principal.key). */
  heldBy: string;
  /** One resource's watch; undefined for the family's. */
  id: string | undefined;
  /** The hash of the console session that opened it: it ends when the session does (sign-out). */
  session: string | undefined;
  stream: EventStream;
  serialize: (record: Record<string, unknown>) => string;
  /** Changes that came while its first events were written; null once it is live. */
  queued: Array<[ChangeType, string, string]> | null;
}

export interface WatchRequest {
  request: FastifyRequest;
  reply: FastifyReply;
  family: AnyFamily;
  team: string;
  /** The caller's Principal.key: its watches end when that key is revoked or that member removed. */
  heldBy: string;
  id?: string;
  timeoutSeconds?: number;
}

const tooManyWatches = (limit: number) =>
  new ApiError(429, 'too_many_watches', `The team holds ${limit} watches already, the most it may; close one first (or poll).`);

/** Changes held for a watch while its first events are written; past them it is cut off as too slow. */
const QUEUED_CHANGES = 10_000;

/** When to try again a watch refused because the replica holds its most. */
const WATCH_RETRY_SECONDS = 5;

/** What a watch ended with its console session says. */
const SESSION_ENDED = 'the session that opened the watch ended (signed out, expired or moved to another team); sign in again';

/** What a watch ended by its timeout says. */
export const WATCH_TIMED_OUT = 'the watch reached its timeout; connect again with Last-Event-ID to go on';

export class ResourceWatches {
  /** Tells this replica's event ids from another's, or a restarted one's. */
  private readonly epoch = randomBytes(6).toString('base64url');
  private seq = 0;
  /** The last `history` changes, a ring: `seq` n is at n % history. */
  private readonly changes: Array<Change | undefined>;
  /** `kind/team` -> its watchers. */
  private readonly watchers = new Map<string, Set<Watcher>>();
  private readonly perTeam = new Map<string, number>();
  private held = 0;
  private unwatch: (() => void) | undefined;

  /**
   * `sessionHolds`: whether a console session still acts as it did (SessionManager.holds),
   * asked of each session's watch every `settings.sessionCheckMs`: a session signed out on
   * another replica, moved to another team or whose key was revoked ends its watches too.
   */
  constructor(
    private readonly o: {
      store: Store;
      settings: WatchConfig;
      requestLogLevel: RequestLogLevel;
      sessionHolds?: (session: ActiveSession) => Promise<boolean>;
    },
  ) {
    this.changes = new Array<Change | undefined>(o.settings.history);
  }

  start(): void {
    reportOpenWatches(() => this.held);
    this.unwatch ??= this.o.store.watch((event) => {
      this.changed(event);
    });
  }

  /** Ends every watch (the service is stopping): the server waits for open connections. */
  close(reason = 'the service is stopping; connect again with Last-Event-ID to go on'): void {
    this.unwatch?.();
    this.unwatch = undefined;
    for (const set of this.watchers.values()) for (const watcher of set) watcher.stream.end(reason);
  }

  /** Answers the request with a watch; refused (429, 503) before anything is written. */
  open(w: WatchRequest): void {
    const { settings } = this.o;
    const teamHolds = this.perTeam.get(w.team) ?? 0;
    if (teamHolds >= settings.perTeam) {
      watchesRefused.inc({ reason: 'team_limit' });
      throw tooManyWatches(settings.perTeam);
    }
    if (this.held >= settings.max) {
      watchesRefused.inc({ reason: 'replica_limit' });
      throw overloaded(WATCH_RETRY_SECONDS, 'it holds as many watches as it may');
    }
    const stream = new EventStream(w.request, w.reply, {
      keepAliveMs: settings.keepAliveMs,
      bufferBytes: settings.bufferBytes,
      logLevel: this.o.requestLogLevel,
    });
    const serializer = w.reply.compileSerializationSchema(w.family.schemas.record);
    const { session } = w.request;
    const watcher: Watcher = {
      family: w.family,
      team: w.team,
      heldBy: w.heldBy,
      id: w.id,
      session: session?.record.hash,
      stream,
      serialize: (record) => serializer(record),
      queued: [],
    };
    const key = `${w.family.kind}/${w.team}`;
    const set = this.watchers.get(key) ?? new Set<Watcher>();
    this.watchers.set(key, set.add(watcher));
    this.perTeam.set(w.team, teamHolds + 1);
    this.held++;
    const timeout = setTimeout(
      () => {
        stream.end(WATCH_TIMED_OUT);
      },
      Math.min(w.timeoutSeconds ?? settings.maxSeconds, settings.maxSeconds) * 1000,
    ).unref();
    const sessionCheck = session ? this.checkSession(session, stream) : undefined;
    stream.onClose(() => {
      clearTimeout(timeout);
      clearInterval(sessionCheck);
      set.delete(watcher);
      if (set.size === 0) this.watchers.delete(key);
      const left = (this.perTeam.get(w.team) ?? 1) - 1;
      if (left > 0) this.perTeam.set(w.team, left);
      else this.perTeam.delete(w.team);
      this.held--;
    });
    this.begin(watcher, w.request.headers['last-event-id']).catch((err: unknown) => {
      // The store could not list (it stopped, say): the client connects again.
      stream.end(`the watch could not start (${messageOf(err)}); connect again`);
    });
  }

  /** The first events: what changed since Last-Event-ID when that is known, else every resource as it is. */
  private async begin(watcher: Watcher, lastEventId: string | string[] | undefined): Promise<void> {
    const position = `${this.epoch}.${this.seq}`;
    const since = this.resumable(typeof lastEventId === 'string' ? lastEventId : undefined);
    const first: Array<[ChangeType, Resource | { id: string }]> = [];
    if (since === null) {
      if (lastEventId !== undefined) watcher.stream.send('reset', { reason: 'what changed since Last-Event-ID is no longer known here' });
      for (const resource of await this.current(watcher)) first.push(['added', resource]);
    } else {
      for (const id of this.changedSince(since, watcher)) {
        const resource = this.o.store.peek<Resource['spec'], Resource['status']>(watcher.family.kind, watcher.team, id);
        first.push(resource && isVisible(resource) ? ['modified', resource] : ['deleted', resource ?? { id }]);
      }
    }
    for (const [type, shown] of first) {
      if (watcher.stream.closed) return;
      watcher.stream.sendJson(type, 'meta' in shown ? this.recordJson(watcher, shown) : JSON.stringify(shown), position);
      await watcher.stream.drained();
    }
    watcher.stream.send('synced', { resources: first.length }, position);
    const queued = watcher.queued ?? [];
    watcher.queued = null;
    for (const [type, json, id] of queued) watcher.stream.sendJson(type, json, id);
  }

  /** The watcher's resources as they are now, in the store's order. */
  private async current(watcher: Watcher): Promise<Resource[]> {
    const { kind } = watcher.family;
    if (watcher.id !== undefined) {
      const one = this.o.store.peek<Resource['spec'], Resource['status']>(kind, watcher.team, watcher.id);
      return one && isVisible(one) ? [one] : [];
    }
    return (await this.o.store.list<Resource['spec'], Resource['status']>(kind, watcher.team)).filter(isVisible);
  }

  /** The sequence number a Last-Event-ID names, when every change after it is still remembered; else null. */
  private resumable(lastEventId: string | undefined): number | null {
    if (lastEventId === undefined) return null;
    const [epoch, number] = lastEventId.split('.');
    const seq = Number(number);
    if (epoch !== this.epoch || !Number.isSafeInteger(seq) || seq < 0 || seq > this.seq) return null;
    return this.seq - seq <= this.changes.length ? seq : null;
  }

  /** The ids of the watcher's resources changed after `since`, oldest change first, each once. */
  private changedSince(since: number, watcher: Watcher): string[] {
    const ids = new Set<string>();
    for (let seq = since + 1; seq <= this.seq; seq++) {
      const change = this.changes[seq % this.changes.length];
      if (!change || change.kind !== watcher.family.kind || change.team !== watcher.team) continue;
      if (watcher.id !== undefined && change.id !== watcher.id) continue;
      ids.delete(change.id);
      ids.add(change.id);
    }
    return [...ids];
  }

  private changed(event: StoreEvent): void {
    const { kind, team, id } = event.object.meta;
    const seq = ++this.seq;
    this.changes[seq % this.changes.length] = { seq, kind, team, id };
    this.endRevoked(event);
    const set = this.watchers.get(`${kind}/${team}`);
    const family = set?.values().next().value?.family;
    if (!set || !family) return;
    const shows = (object: StoredObject<unknown, unknown> | undefined): object is Resource =>
      object !== undefined && isOfFamily(family, object) && isVisible(object);
    const before = shows(event.previous) ? event.previous : undefined;
    const after = event.type !== 'deleted' && shows(event.object) ? event.object : undefined;
    const shown = after ?? before;
    if (!shown) return;
    const type: ChangeType = !after ? 'deleted' : before ? 'modified' : 'added';
    const eventId = `${this.epoch}.${seq}`;
    let json: string | undefined;
    let unchanged: boolean | undefined;
    for (const watcher of set) {
      if (watcher.id !== undefined && watcher.id !== id) continue;
      json ??= this.recordJson(watcher, shown);
      // A write the record does not show (the outbox relay's, a resync's): nothing to tell.
      unchanged ??= type === 'modified' && before !== undefined && this.recordJson(watcher, before) === json;
      if (unchanged) return;
      if (!watcher.queued) watcher.stream.sendJson(type, json, eventId);
      else if (watcher.queued.length < QUEUED_CHANGES) watcher.queued.push([type, json, eventId]);
      else watcher.stream.end(TOO_SLOW);
    }
  }

  /** Ends the watches the console session `hash` opened on this replica (it signed out here). */
  endSession(hash: string): void {
    for (const set of this.watchers.values()) for (const watcher of set) if (watcher.session === hash) watcher.stream.end(SESSION_ENDED);
  }

  /** Asks, every sessionCheckMs, whether the session that opened `stream` still holds; ends the stream once it does not. */
  private checkSession(session: ActiveSession, stream: EventStream): NodeJS.Timeout | undefined {
    const holds = this.o.sessionHolds;
    if (!holds) return undefined;
    let asking = false;
    return setInterval(() => {
      if (asking || stream.closed) return;
      asking = true;
      holds(session)
        .then((held) => {
          if (!held) stream.end(SESSION_ENDED);
        })
        // The store did not answer: the session is judged again at the next check.
        .catch(() => undefined)
        .finally(() => (asking = false));
    }, this.o.settings.sessionCheckMs).unref();
  }

  /** A watch lasts no longer than what opened it: its key revoked, or its member removed (whose keys and sessions end). */
  private endRevoked(event: StoreEvent): void {
    const { kind, id } = event.object.meta;
    const state = lifecycleState(event.object);
    const revoked = (kind === apiKeyFamily.kind && state === 'revoked') || (kind === userFamily.kind && state === 'removed');
    if (!revoked) return;
    for (const set of this.watchers.values())
      for (const watcher of set) if (watcher.heldBy === id) watcher.stream.end('the key or member that opened the watch was revoked');
  }

  private recordJson(watcher: Watcher, resource: Resource): string {
    return watcher.serialize(recordOf(watcher.family, resource));
  }
}
