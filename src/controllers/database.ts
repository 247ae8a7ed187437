/**
 * How databases bind to the managed reconciler: the driver is asked for the spec with the
 * administrator's password from its store secret; a running database shows how to connect,
 * the major that runs and how many standbys follow.
 */
import type { Store } from '../store/types';
import type { FamilyBinding } from './managed';
import { databaseFamily, type Database } from '../resources/database';
import type { DatabaseDesired, DatabaseDriver, DatabaseObserved, DatabaseOutputs } from '../drivers/database';
import { known } from '../lib/known';

export async function databaseDesired(store: Store, { meta, spec }: Database): Promise<DatabaseDesired> {
  const passwordSecret = known(databaseFamily.secret, "the administrator's password secret of a database");
  const secret = await store.secrets.get(meta.team, passwordSecret.secretName(meta.id));
  return { ...spec, password: secret?.value ?? null };
}

export function databaseBinding(driver: DatabaseDriver, store: Store): FamilyBinding<DatabaseDesired, DatabaseOutputs, DatabaseObserved, Database> {
  return {
    family: databaseFamily,
    readyState: 'running',
    driver,
    desired: (resource) => databaseDesired(store, resource),
    outputs: ({ connection, version }) => ({ connection, version }),
    onReady: ({ standby_nodes }) => ({ standby_nodes }),
    steady: ({ standby_nodes }, { status }) => (standby_nodes === status.standby_nodes ? {} : { changes: { standby_nodes } }),
  };
}
