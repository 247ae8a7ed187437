/**
 * How databases bind to the managed reconciler: the driver is asked for the spec with the
 * passwords from their store secrets and the trusted servers resolved to their addresses;
 * a running database shows how to connect, the major that runs and how many standbys follow.
 */
import type { Store } from '../store/types';
import type { FamilyBinding } from './managed';
import { databaseFamily, trustedBlockOf, userPasswordSecret, type Database } from '../resources/database';
import { serverFamily, type Server } from '../resources/server';
import type { DatabaseDesired, DatabaseDriver, DatabaseObserved, DatabaseOutputs } from '../drivers/database';
import { known } from '../lib/known';
import { fieldOf } from '../lib/unknown-values';

export async function databaseDesired(store: Store, { meta, spec }: Database): Promise<DatabaseDesired> {
  const passwordSecret = known(databaseFamily.secret, "the administrator's password secret of a database");
  const secret = await store.secrets.get(meta.team, passwordSecret.secretName(meta.id));
  const users = await Promise.all(
    (spec.users ?? []).map(async (user) => ({
      ...user,
      password: (await store.secrets.get(meta.team, userPasswordSecret(meta.id, user.name)))?.value ?? null,
    })),
  );
  return { ...spec, password: secret?.value ?? null, users, trusted_blocks: await trustedBlocks(store, meta.team, spec.trusted_sources) };
}

/** The blocks of the trusted sources: a server by its address, none while it has none (or is gone). */
async function trustedBlocks(store: Store, team: string, sources: Database['spec']['trusted_sources']): Promise<string[] | null> {
  if (!sources || sources.length === 0) return null;
  const blocks = await Promise.all(
    sources.map(async ({ type, value }) => {
      if (type === 'ip_addr') return trustedBlockOf(value);
      const server = await store.get<Server['spec'], Server['status']>(serverFamily.kind, team, value);
      return server?.status.ipv4 && server.status.status !== 'deleted' ? `${server.status.ipv4}/32` : null;
    }),
  );
  return [...new Set(blocks.filter((block) => block !== null))];
}

export function databaseBinding(driver: DatabaseDriver, store: Store): FamilyBinding<DatabaseDesired, DatabaseOutputs, DatabaseObserved, Database> {
  return {
    family: databaseFamily,
    readyState: 'running',
    driver,
    desired: (resource) => databaseDesired(store, resource),
    outputs: ({ connection, version }) => ({ connection, version }),
    // What was applied: its logical databases made or dropped are data.* events (resources/database.ts).
    applied: ({ spec }) => ({ db_names: spec.db_names ?? [] }),
    onReady: ({ standby_nodes }) => ({ standby_nodes }),
    steady: ({ standby_nodes }, { status }) => (standby_nodes === status.standby_nodes ? {} : { changes: { standby_nodes } }),
    watchRelated(changed) {
      // A trusted server's new address matters to the databases that trust it.
      return store.watch(({ object, previous }) => {
        if (object.meta.kind !== serverFamily.kind || fieldOf(object.status, 'ipv4') === fieldOf(previous?.status, 'ipv4')) return;
        const { team, id } = object.meta;
        void store
          .list<Database['spec'], Database['status']>(databaseFamily.kind, team)
          .then((databases) => {
            for (const database of databases)
              if (database.spec.trusted_sources?.some((s) => s.type === 'server' && s.value === id)) changed(team, database.meta.id);
          })
          .catch(() => undefined); // The periodic resync looks again.
      });
    },
  };
}
