/** Walks a paged list endpoint to its end, following meta.next_cursor. */
import type { ApiResponse } from './service';

type Get = (method: string, path: string) => Promise<ApiResponse>;

/** Every row of `path` (a list URL, with or without a query), 100 a page. */
export async function pageAll<T = any>(api: Get, path: string): Promise<T[]> {
  const all: T[] = [];
  const separator = path.includes('?') ? '&' : '?';
  let cursor: string | null = null;
  do {
    const res = await api('GET', `${path}${separator}limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    if (res.status !== 200) throw new Error(`GET ${path} -> ${res.status} ${JSON.stringify(res.body)}`);
    all.push(...res.body.data);
    cursor = res.body.meta.next_cursor ?? null;
  } while (cursor);
  return all;
}
