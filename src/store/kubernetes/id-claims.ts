/**
 * Which custom resource holds which id. A custom resource claims the id of its label (or
 * of its name, `lb-x7k2...`); a manifest copied with its labels makes two claim one id,
 * and only the rightful one (rightfulOwner) is cached under it: the other is given an id
 * of its own (relabel), as a kubectl-made object without one is (assignId). Every custom
 * resource the API server answers or the watch brings comes in here, and leaves here
 * (removeRaw, watchedRemoval, replaceKind); the cache changes only through settle.
 */
import { CustomObjectsApi } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { StoredObject, WatchEvent } from '../types';
import { ObjectCache } from '../object-cache';
import { newId } from '../../lib/ids';
import { messageOf } from '../../lib/unknown-values';
import { asCached } from './cached-object';
import { httpCode } from './http-code';
import { KubeObject } from './watcher';
import { CachedResource, idOf, KindInfo, Raw, rawAnswer, toStored } from './custom-resource';
import { isNewer, isOlder, laterVersion } from './resource-version';
import {
  CREATED_AT_ANNOTATION,
  FINALIZER,
  GROUP,
  ID_LABEL,
  rightfulOwner,
  STATUS_PENDING_LABEL,
  teamOfNamespace,
  UPDATED_AT_ANNOTATION,
  VERSION,
} from './names';
import { known } from '../../lib/known';
import { FIRST_STATUS_ANNOTATION, FIRST_STATUS_SEAL_ANNOTATION, FirstStatusSeal, hasStatus, withoutStaleFirstStatus } from './first-status';
import { getOrCreate } from '../../lib/maps';

/** What the claims need of the store they decide for. */
export interface IdClaimsContext {
  /** Where each id's rightful custom resource is cached. */
  cache: ObjectCache<CachedResource>;
  /** Tells the store's watchers of a change of what is cached. */
  notify: (event: WatchEvent) => void;
  /** The kinds claimed. */
  kinds: readonly KindInfo[];
  custom: CustomObjectsApi;
  systemNamespace: string;
  logger: Logger;
  /** Opens the first status the store's creates carry. */
  firstStatus: FirstStatusSeal;
}

export class IdClaims {
  /**
   * kind -> `namespace/name` -> the `team/id` each custom resource claims, and its latest
   * version seen. A manifest copied with its labels makes two claim one id: only the
   * rightful one (rightfulOwner) is cached under it, the other is given an id of its own.
   */
  private readonly claims = new Map<string, Map<string, { key: string; raw: Raw }>>();
  /** kind -> `team/id` -> `namespace/name` of every custom resource claiming it. */
  private readonly claimants = new Map<string, Map<string, Set<string>>>();
  /** `kind/uid` -> the id a copy was judged not to own: it never gets it, not even once the owner is gone. */
  private readonly disowned = new Map<string, string>();
  /** `kind/uid` of copies being given an id of their own. */
  private readonly relabeling = new Set<string>();
  /**
   * `kind/team/id` of objects this store removed, with the last resourceVersion seen: a watch
   * event of an earlier version that arrives late must not bring them back. Cleared by a
   * relist, which is authoritative.
   */
  private readonly tombstones = new Map<string, string>();

  constructor(private readonly o: IdClaimsContext) {
    for (const info of o.kinds) {
      this.claims.set(info.kind, new Map());
      this.claimants.set(info.kind, new Map());
    }
  }

  /** Takes an object from the API server into the cache, unless the cache holds a newer one. */
  upsert(info: KindInfo, raw: Raw): StoredObject {
    this.takeIn(raw);
    const id = idOf(info, raw);
    if (id && leaving(raw)) {
      this.removeRaw(info, raw);
      return toStored(info, raw, id, this.o.systemNamespace);
    }
    if (!id) {
      for (const key of this.claim(info, raw, null) ?? []) this.settle(info, key);
      void this.assignId(info, raw);
      return toStored(info, raw, `${info.idPrefix}_unassigned`, this.o.systemNamespace);
    }
    const object = toStored(info, raw, id, this.o.systemNamespace);
    const key = `${object.meta.team}/${id}`;
    const removedAt = this.tombstones.get(`${info.kind}/${key}`);
    if (removedAt !== undefined && !isOlder(removedAt, object.meta.resourceVersion)) return object;
    for (const changed of this.claim(info, raw, key) ?? []) this.settle(info, changed);
    const entry = this.o.cache.entry(info.kind, key);
    return entry && sameResource(entry.raw, raw) ? entry.object : object;
  }

  /**
   * Takes in the object a create just made, answered as made: the watch may already have
   * brought a later version (a reconciler's first status write, in the same process), and
   * a create answers what it created, as the embedded store and the API server do.
   */
  created(info: KindInfo, raw: Raw): StoredObject {
    const cached = this.upsert(info, raw);
    if (cached.meta.resourceVersion === raw.metadata.resourceVersion) return cached;
    return toStored(info, raw, cached.meta.id, this.o.systemNamespace);
  }

  /**
   * Trims, in place, a custom resource as it comes in, and gives one the store created,
   * whose status is not written yet, the first status it carries (first-status.ts).
   */
  private takeIn(raw: Raw): void {
    asCached(raw);
    if (hasStatus(raw)) {
      withoutStaleFirstStatus(raw);
      return;
    }
    const first = this.o.firstStatus.open(raw);
    if (first) raw.status = first;
  }

  /** The claims of one of the store's kinds, each given its maps by the constructor. */
  private claimsOf(info: KindInfo): Map<string, { key: string; raw: Raw }> {
    return known(this.claims.get(info.kind), 'the claims of a kind of the store');
  }

  private claimantsOf(info: KindInfo): Map<string, Set<string>> {
    return known(this.claimants.get(info.kind), 'the claimants of a kind of the store');
  }

  /**
   * Records the id a custom resource claims (none: null). Answers the `team/id`s whose
   * claimants changed, to be settled, or null for a version older than one already seen.
   */
  private claim(info: KindInfo, raw: Raw, key: string | null): string[] | null {
    const name = nameKeyOf(raw);
    const prior = this.claimsOf(info).get(name);
    if (prior && isOlder(raw.metadata.resourceVersion ?? '', prior.raw.metadata.resourceVersion ?? '')) return null;
    const changed = key ? [key] : [];
    if (prior && prior.key !== key) {
      this.unclaim(info, name);
      changed.push(prior.key);
    }
    if (key) {
      this.claimsOf(info).set(name, { key, raw });
      getOrCreate(this.claimantsOf(info), key, () => new Set()).add(name);
    }
    return changed;
  }

  private unclaim(info: KindInfo, name: string): void {
    const prior = this.claimsOf(info).get(name);
    if (!prior) return;
    this.claimsOf(info).delete(name);
    const names = this.claimantsOf(info).get(prior.key);
    names?.delete(name);
    if (names?.size === 0) this.claimantsOf(info).delete(prior.key);
    this.disowned.delete(uidKeyOf(info, prior.raw));
  }

  /**
   * Caches under an id the custom resource it belongs to, of all that claim it, and sets
   * the others to get ids of their own: a copy is never served under its original's id.
   */
  private settle(info: KindInfo, key: string): void {
    const id = key.slice(key.indexOf('/') + 1);
    const claims = this.claimsOf(info);
    const rivals = [...(this.claimantsOf(info).get(key) ?? [])].map((name) => known(claims.get(name), 'the claim of a claimant').raw);
    const owner = rightfulOwner(
      id,
      rivals.filter((raw) => this.disowned.get(uidKeyOf(info, raw)) !== id),
    );
    for (const raw of rivals) if (raw !== owner) this.disown(info, raw, id);
    const previous = this.o.cache.entry(info.kind, key);
    const same = previous !== undefined && owner !== undefined && sameResource(previous.raw, owner);
    if (same && !isNewer(owner.metadata.resourceVersion ?? '', previous.object.meta.resourceVersion)) return;
    if (previous && !same) {
      this.o.cache.delete(info.kind, key);
      this.o.notify({ type: 'deleted', object: previous.object, previous: previous.object });
    }
    if (!owner) return;
    const object = toStored(info, owner, id, this.o.systemNamespace);
    this.o.cache.set(info.kind, key, { object, raw: owner });
    this.o.notify({ type: same ? 'modified' : 'added', object, previous: same ? previous.object : undefined });
  }

  /** `team/id` of the id a custom resource carries, or null without one. */
  private labelKeyOf(info: KindInfo, raw: Raw): string | null {
    const id = idOf(info, raw);
    return id ? `${teamOfNamespace(raw.metadata.namespace ?? '', this.o.systemNamespace)}/${id}` : null;
  }

  /** The `team/id` a custom resource is known under: the one it claimed, else its label's. */
  private knownKeyOf(info: KindInfo, raw: Raw): string | null {
    return this.claimsOf(info).get(nameKeyOf(raw))?.key ?? this.labelKeyOf(info, raw);
  }

  removeRaw(info: KindInfo, raw: Raw): void {
    const name = nameKeyOf(raw);
    const claim = this.claimsOf(info).get(name);
    const key = this.knownKeyOf(info, raw);
    if (claim && sameResource(claim.raw, raw)) this.unclaim(info, name);
    if (!key) return;
    const previous = this.o.cache.entry(info.kind, key);
    // A copy that never had the id leaves the id's owner and its tombstone alone.
    if (!previous || sameResource(previous.raw, raw)) this.bury(info, key, raw.metadata.resourceVersion);
    this.settle(info, key);
  }

  /** Marks `team/id` removed as of a version: a late event of an earlier one must not bring it back. */
  private bury(info: KindInfo, key: string, version: string | undefined): void {
    const tombstone = `${info.kind}/${key}`;
    const cached = this.o.cache.entry(info.kind, key)?.object.meta.resourceVersion;
    this.tombstones.set(tombstone, laterVersion(laterVersion(this.tombstones.get(tombstone) ?? '0', cached), version));
  }

  /** A deletion the watch reports is the object's last event: nothing older can follow it. */
  watchedRemoval(info: KindInfo, raw: Raw): void {
    const key = this.knownKeyOf(info, raw);
    const cached = key ? this.o.cache.entry(info.kind, key) : undefined;
    const served = !cached || sameResource(cached.raw, raw);
    this.removeRaw(info, raw);
    if (key && served) this.tombstones.delete(`${info.kind}/${key}`);
  }

  /**
   * After a relist: everything listed is current; whatever is cached but not listed is
   * gone. Every claim is recorded before any owner is chosen, so a copy listed before its
   * original is not served under its id even for a moment.
   */
  replaceKind(info: KindInfo, items: Raw[]): void {
    for (const key of [...this.tombstones.keys()]) if (key.startsWith(`${info.kind}/`)) this.tombstones.delete(key);
    const claims = this.claimsOf(info);
    const changed = new Set<string>(this.o.cache.keysOf(info.kind));
    const listed = new Set<string>();
    for (const raw of items) {
      this.takeIn(raw);
      if (leaving(raw)) continue;
      listed.add(nameKeyOf(raw));
      const key = this.labelKeyOf(info, raw);
      if (!key) void this.assignId(info, raw);
      for (const k of this.claim(info, raw, key) ?? []) changed.add(k);
    }
    for (const [name, claim] of [...claims]) {
      if (listed.has(name)) continue;
      const cached = this.o.cache.entry(info.kind, claim.key);
      if (cached && sameResource(cached.raw, claim.raw)) this.bury(info, claim.key, claim.raw.metadata.resourceVersion);
      this.unclaim(info, name);
      changed.add(claim.key);
    }
    for (const key of changed) this.settle(info, key);
  }

  /**
   * A custom resource that carries an id another owns (a manifest copied with its labels)
   * is made a kubectl-made object of its own. Being deleted, it only loses the finalizer it
   * copied: nothing was provisioned for it, and no reconciler would ever remove it.
   */
  private disown(info: KindInfo, raw: Raw, id: string): void {
    const uidKey = uidKeyOf(info, raw);
    this.disowned.set(uidKey, id);
    if (this.relabeling.has(uidKey)) return;
    this.relabeling.add(uidKey);
    void this.relabel(info, raw).finally(() => {
      this.relabeling.delete(uidKey);
      // A version that came in while this ran was passed over: try again on it.
      const latest = this.claimsOf(info).get(nameKeyOf(raw));
      if (latest && this.disowned.get(uidKey) === id && sameResource(latest.raw, raw) && latest.raw.metadata.resourceVersion !== raw.metadata.resourceVersion) {
        this.disown(info, latest.raw, id);
      }
    });
  }

  /**
   * Gives a copy a new id, as assignId does a kubectl-made object without one, and drops
   * what it copied of its original's history so that adoption takes it in at once as new:
   * the status-pending mark (it would wait for a status write that is not coming), the
   * created-at and updated-at stamps (its own creationTimestamp is when it was made), the
   * sealed first status (whose seal no longer holds, first-status.ts), and a status, should
   * one have been written to it (first, by itself: the status subresource takes no
   * metadata). Each write has the version read as precondition: of replicas doing
   * it at once one succeeds, the others' 409 is dropped and the watch brings the result.
   */
  // API call: store: custom resources, written
  // API call: store: custom resources' status
  private async relabel(info: KindInfo, raw: Raw): Promise<void> {
    const where = {
      group: GROUP,
      version: VERSION,
      namespace: known(raw.metadata.namespace, 'the namespace of a custom resource'),
      plural: info.plural,
      name: raw.metadata.name,
    };
    const from = idLabelOf(raw);
    try {
      if (raw.metadata.deletionTimestamp) {
        const finalizers = raw.metadata.finalizers ?? [];
        if (!finalizers.includes(FINALIZER)) return;
        const body = structuredClone(raw);
        body.metadata.finalizers = finalizers.filter((f) => f !== FINALIZER);
        await this.o.custom.replaceNamespacedCustomObject({ ...where, body });
        return;
      }
      let current = raw;
      if (raw.status && Object.keys(raw.status).length > 0) {
        const { status: _copied, ...statusless } = structuredClone<Raw>(raw);
        current = await rawAnswer(() => this.o.custom.replaceNamespacedCustomObjectStatus({ ...where, body: statusless }));
      }
      const body = asOwnObject(current, newId(info.idPrefix));
      await this.o.custom.replaceNamespacedCustomObject({ ...where, body });
      this.o.logger.info(
        { kind: info.kind, namespace: where.namespace, name: where.name, copiedId: from, id: idLabelOf(body) },
        "gave a custom resource carrying another's id one of its own",
      );
    } catch (err) {
      if (httpCode(err) !== 409 && httpCode(err) !== 404)
        this.o.logger.warn({ kind: info.kind, name: raw.metadata.name, err: messageOf(err) }, 'could not give a copied custom resource an id of its own');
    }
  }

  /**
   * A custom resource made with kubectl under a name that is no id gets one, kept in a
   * label; the watch then brings it in. Several replicas racing are settled by the
   * resourceVersion precondition. (A status-pending mark or creation stamp on it was
   * copied: the store puts them only on what it creates, with the id label.)
   */
  // API call: store: custom resources, written
  private async assignId(info: KindInfo, raw: Raw): Promise<void> {
    if (raw.metadata.deletionTimestamp) return;
    const body = asOwnObject(raw, newId(info.idPrefix));
    try {
      await this.o.custom.replaceNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: known(raw.metadata.namespace, 'the namespace of a custom resource'),
        plural: info.plural,
        name: raw.metadata.name,
        body,
      });
    } catch (err) {
      if (httpCode(err) !== 409 && httpCode(err) !== 404)
        this.o.logger.warn({ kind: info.kind, name: raw.metadata.name, err: messageOf(err) }, 'could not assign an id');
    }
  }
}

const idLabelOf = (raw: Raw) => raw.metadata.labels?.[ID_LABEL];

/**
 * A custom resource as a kubectl-made one with the id given: without what the store puts
 * on the ones it creates, which on this one can only have been copied (the status-pending
 * mark would hold its adoption back; its own creationTimestamp says when it was made;
 * a copied first status is sealed for its original alone).
 */
function asOwnObject(raw: Raw, id: string): Raw {
  const body = structuredClone(raw);
  const labels: Record<string, string> = { ...(body.metadata.labels ?? {}), [ID_LABEL]: id };
  delete labels[STATUS_PENDING_LABEL];
  const annotations = { ...(body.metadata.annotations ?? {}) };
  delete annotations[CREATED_AT_ANNOTATION];
  delete annotations[UPDATED_AT_ANNOTATION];
  delete annotations[FIRST_STATUS_ANNOTATION];
  delete annotations[FIRST_STATUS_SEAL_ANNOTATION];
  body.metadata.labels = labels;
  body.metadata.annotations = annotations;
  body.metadata.finalizers = [...new Set([...(body.metadata.finalizers ?? []), FINALIZER])];
  return body;
}

/**
 * Being deleted without our finalizer: released by this store, kept only by another's
 * finalizer (the garbage collector's `orphan`, while it orphans what the resource owned).
 * It is gone for the store, as it will be for the API server.
 */
const leaving = (raw: Raw) => Boolean(raw.metadata.deletionTimestamp) && !(raw.metadata.finalizers ?? []).includes(FINALIZER);

const nameKeyOf = (raw: KubeObject) => `${raw.metadata.namespace ?? ''}/${raw.metadata.name}`;
const uidKeyOf = (info: KindInfo, raw: Raw) => `${info.kind}/${raw.metadata.uid ?? nameKeyOf(raw)}`;

/** Two versions of one custom resource (not one deleted and made again under its name). */
function sameResource(a: KubeObject, b: KubeObject): boolean {
  const [ua, ub] = [a.metadata.uid, b.metadata.uid];
  return ua && ub ? ua === ub : nameKeyOf(a) === nameKeyOf(b);
}
