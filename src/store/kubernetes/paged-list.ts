/**
 * A (re)list of a whole collection in pages, as client-go's reflector does: one answer of
 * 100,000 custom resources is hundreds of megabytes of JSON, parsed in one piece with the
 * event loop blocked for seconds and the API server building it all in memory. Pages of
 * PAGE_SIZE keep each parse short. Every page belongs to the first page's snapshot (the
 * API server guarantees it for `continue`), so the list's resourceVersion is that of the
 * first page and a watch from it misses nothing. A continue token that expired midway
 * answers 410, which the watcher turns into a fresh relist.
 */
import type { KubeObject } from './watcher';

export const PAGE_SIZE = 500;

export interface ListPage<T extends KubeObject = KubeObject> {
  items: T[];
  metadata?: { resourceVersion?: string; continue?: string; _continue?: string };
}

export async function listInPages<T extends KubeObject = KubeObject>(
  pageSize: number = PAGE_SIZE,
  fetchPage: (query: { limit: number; _continue?: string }) => Promise<ListPage<T>>,
): Promise<{ items: T[]; resourceVersion: string }> {
  const items: T[] = [];
  let resourceVersion: string | undefined;
  let next: string | undefined;
  do {
    const page = await fetchPage({ limit: pageSize, ...(next ? { _continue: next } : {}) });
    for (const item of page.items) items.push(item);
    resourceVersion ??= page.metadata?.resourceVersion;
    // Custom objects come as plain JSON (`continue`); the typed client renames it `_continue`.
    next = page.metadata?.continue || page.metadata?._continue || undefined;
  } while (next);
  return { items, resourceVersion: resourceVersion ?? '' };
}
