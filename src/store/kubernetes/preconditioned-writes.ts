/**
 * Writes of custom resources with a resourceVersion precondition, as the store's update,
 * status write and removal make them. A 409 refreshes the cache so that the caller's retry
 * reads the latest, but not when the cache already holds a later version than the one
 * written against: the write that won is most often this process's own (the reconciler's
 * and the outbox relay's race), and its answer is cached.
 */
import type { CustomObjectsApi } from '@kubernetes/client-node';
import { ConflictError, NotFoundError, StoredObject } from '../types';
import type { ObjectCache } from '../object-cache';
import type { ApiServerCalls } from './api-server-calls';
import { CachedResource, KindInfo, Raw, whereOf } from './custom-resource';
import { httpCode } from './http-code';
import type { IdClaims } from './id-claims';
import { isNewer } from './resource-version';

export class PreconditionedWrites {
  constructor(private readonly o: { custom: CustomObjectsApi; call: ApiServerCalls['call']; cache: ObjectCache<CachedResource>; claims: IdClaims }) {}

  /** Runs `request`, a write of `object` at its resourceVersion; answers the custom resource written. */
  async write(info: KindInfo, object: StoredObject<unknown, unknown>, request: () => Promise<Raw>): Promise<Raw> {
    try {
      return await this.o.call(request);
    } catch (err) {
      const code = httpCode(err);
      if (code === 409) {
        const cached = this.o.cache.entry(info.kind, `${object.meta.team}/${object.meta.id}`)?.object.meta.resourceVersion;
        if (!cached || !isNewer(cached, object.meta.resourceVersion)) await this.refresh(info, object).catch(() => undefined);
        throw new ConflictError(info.kind, object.meta.id);
      }
      if (code === 404) throw new NotFoundError(info.kind, object.meta.id);
      throw err;
    }
  }

  // API call: store: custom resources, written
  private async refresh(info: KindInfo, object: StoredObject<unknown, unknown>): Promise<void> {
    const entry = this.o.cache.entry(info.kind, `${object.meta.team}/${object.meta.id}`);
    if (!entry) return;
    const fresh = await this.o.call<Raw>(() => this.o.custom.getNamespacedCustomObject(whereOf(info, entry.raw)));
    this.o.claims.upsert(info, fresh);
  }
}
