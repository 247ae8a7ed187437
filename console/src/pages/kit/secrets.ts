import { shownOnceOf } from '../../lib/openapi';

/**
 * A secret shown once lives only in a page's state. `forgetOnLeave(clear)` makes the page
 * drop it when the user leaves: when the page is unmounted (another console page) and on
 * `pagehide` (another site, a reload, a closed tab), so that the back-forward cache never
 * brings it back. Use as `$effect(() => forgetOnLeave(() => (revealed = null)))`.
 */
export function forgetOnLeave(clear: () => void): () => void {
  window.addEventListener('pagehide', clear);
  return () => {
    window.removeEventListener('pagehide', clear);
    clear();
  };
}

/** A secret shown once, as a page holds it until the user dismisses it. */
export interface Revealed {
  /** What it is ("password"), for the heading, the field's label and the copy button. */
  label: string;
  /** Whose it is (the database's name). */
  name: string;
  secret: string;
  /** What the API says of it ("The administrator's password, shown in this answer only; ..."). */
  description?: string;
}

/**
 * A secret answered by one page (a create's) and shown by the page it leads to (the new
 * resource's), in memory only: `handOver` before the navigation, `takeOver` once by the next
 * page, which then holds it as any secret shown once. Not taken, it goes with the document
 * (a reload, another site), like every other state of the console; nothing is written
 * anywhere.
 */
const handedOver = new Map<string, Revealed>();

export function handOver(key: string, revealed: Revealed): void {
  handedOver.set(key, revealed);
}

export function takeOver(key: string): Revealed | null {
  const revealed = handedOver.get(key) ?? null;
  handedOver.delete(key);
  return revealed;
}

/**
 * After a create: the secrets its answer shows once (the fields the family's record never
 * has, lib/openapi.ts) handed over to the new resource's page. True when there was one.
 */
export async function handOverCreated(path: string, created: { id: string; name: string; [field: string]: unknown }): Promise<boolean> {
  for (const field of await shownOnceOf(path)) {
    const secret = created[field.name];
    if (typeof secret !== 'string') continue;
    handOver(created.id, { label: field.label, name: created.name, secret, description: field.description });
    return true;
  }
  return false;
}
