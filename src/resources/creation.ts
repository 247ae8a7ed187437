/**
 * The parts of creating a resource that lie beyond its spec: a family's unique names and
 * its generated secret. Shared by POST /api/v1/<family> and the adoption of custom
 * resources made with kubectl, so both enforce and generate alike.
 */
import type { Store, StoredObject } from '../store/types';
import { conflict } from '../lib/errors';
import { KeyedMutex } from '../lib/mutex';
import { lifecycleState, type AnyFamily } from './family';

const uniqueNameLock = new KeyedMutex();

/**
 * Whether an object holds its name: once shown (it has a status) and until deleted. A
 * custom resource still waiting for adoption holds none, so two kubectl-made objects of
 * the same name do not refuse each other: the first adopted keeps the name.
 */
function holdsName(object: StoredObject<unknown, unknown>): boolean {
  const state = lifecycleState(object);
  return state !== undefined && state !== 'deleted' && state !== 'destroyed';
}

/**
 * Runs `create` under a lock on the name after checking that no other object (`self`
 * excepted) holds it; throws 409 name_taken otherwise. Only creates of the same name wait
 * for each other (names are not changed after creation), so creates of different names
 * share disk flushes instead of taking turns.
 */
export async function withUniqueName<R>(
  store: Store,
  family: AnyFamily,
  team: string,
  spec: object,
  self: string | undefined,
  create: () => Promise<R>,
): Promise<R> {
  if (!family.uniqueNames) return create();
  const name = family.nameOf(spec);
  return uniqueNameLock.run(`${team}/${family.kind}/${name}`, async () => {
    // A seek to the name in the store's name index, not a scan of the team.
    const objects = await store.named(family.kind, team, name);
    const taken = objects.some((o) => o.meta.id !== self && holdsName(o));
    if (taken) throw conflict('name_taken', `A ${family.title} named "${name}" already exists in this team.`);
    return create();
  });
}

/**
 * Keeps the family's secret of a new resource (`given`, else generated from the spec)
 * before `write` makes the resource, so a reconciler always finds it; removes it again if
 * the write fails. Without a secret to keep, only writes.
 */
export async function withNewSecret<R>(
  store: Store,
  family: AnyFamily,
  team: string,
  id: string,
  spec: object,
  given: string | undefined,
  write: () => Promise<R>,
): Promise<R> {
  const { secret } = family;
  if (!secret) return write();
  const value = given ?? secret.generate?.(spec) ?? null;
  if (value === null) return write();
  const name = secret.secretName(id);
  await store.secrets.put(team, name, { value });
  try {
    return await write();
  } catch (err) {
    await store.secrets.delete(team, name);
    throw err;
  }
}
