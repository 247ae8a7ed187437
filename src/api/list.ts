/**
 * Lists of every family: filter, sort, and keyset pagination. The cursor holds the sort
 * key and id of the last item of the page, signed, so a walk visits every resource that
 * existed for the whole walk exactly once whatever is created or deleted meanwhile, and
 * a cursor that was tampered with or belongs to another sort answers 422 invalid_cursor.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Type, TObject } from '@sinclair/typebox';
import { domainError } from '../lib/errors';

export type SortField = 'name' | 'created_at';
export type SortOrder = 'asc' | 'desc';

export interface ListQuery {
  cursor?: string;
  limit: number;
  status?: string;
  sort: SortField;
  order: SortOrder;
}

export interface Listable {
  id: string;
  name: string;
  created_at: string;
  status: string;
}

/** Query schema of a family's list endpoint; `status` takes the family's states. */
export function listQuerySchema(states: readonly string[], extra: TObject['properties'] = {}): TObject {
  return Type.Object(
    {
      cursor: Type.Optional(Type.String({ maxLength: 1024, description: 'Pagination cursor from meta.next_cursor of the previous page.' })),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'Results per page, 1-100, default 50.' })),
      status: Type.Optional(Type.String({ enum: [...states], description: `Only resources in this state. Without it, deleted resources are left out.` })),
      sort: Type.Optional(Type.String({ enum: ['name', 'created_at'], description: 'Sort field, default created_at.' })),
      order: Type.Optional(Type.String({ enum: ['asc', 'desc'], description: 'Sort direction, default desc.' })),
      ...extra,
    },
    { additionalProperties: false },
  );
}

export function normaliseQuery(raw: Record<string, unknown>): ListQuery {
  return {
    cursor: raw.cursor as string | undefined,
    limit: (raw.limit as number | undefined) ?? 50,
    status: raw.status as string | undefined,
    sort: (raw.sort as SortField | undefined) ?? 'created_at',
    order: (raw.order as SortOrder | undefined) ?? 'desc',
  };
}

interface CursorPayload {
  s: SortField;
  o: SortOrder;
  f: string | null;
  v: string;
  i: string;
}

const sign = (key: Buffer, payload: string) => createHmac('sha256', key).update(payload).digest('base64url').slice(0, 22);

export function encodeCursor(key: Buffer, payload: CursorPayload): string {
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `${body}.${sign(key, body)}`;
}

export function decodeCursor(key: Buffer, cursor: string, query: ListQuery): CursorPayload {
  const invalid = () => domainError('invalid_cursor', 'The cursor is not one this list handed out for this sort and filter; start again without it.', 'cursor');
  const [body, signature] = cursor.split('.');
  if (!body || !signature) throw invalid();
  const expected = sign(key, body);
  if (signature.length !== expected.length || !timingSafeEqual(Buffer.from(signature), Buffer.from(expected))) throw invalid();
  let payload: CursorPayload;
  try {
    payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as CursorPayload;
  } catch {
    throw invalid();
  }
  if (payload.s !== query.sort || payload.o !== query.order || payload.f !== (query.status ?? null)) throw invalid();
  return payload;
}

/** One page of `items` (already filtered to the caller's team) after the cursor. */
export function paginate<T extends Listable>(items: T[], query: ListQuery, cursorKey: Buffer, hiddenByDefault: readonly string[] = ['deleted', 'destroyed']): { page: T[]; nextCursor: string | null } {
  const visible = query.status ? items.filter((i) => i.status === query.status) : items.filter((i) => !hiddenByDefault.includes(i.status));
  const direction = query.order === 'asc' ? 1 : -1;
  const keyOf = (item: T) => (query.sort === 'name' ? item.name : item.created_at);
  const compare = (av: string, ai: string, bv: string, bi: string) => direction * (av < bv ? -1 : av > bv ? 1 : ai < bi ? -1 : ai > bi ? 1 : 0);
  visible.sort((a, b) => compare(keyOf(a), a.id, keyOf(b), b.id));
  let start = 0;
  if (query.cursor) {
    const after = decodeCursor(cursorKey, query.cursor, query);
    // First item strictly after the cursor position: binary search over the sorted list.
    let lo = 0;
    let hi = visible.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (compare(keyOf(visible[mid]), visible[mid].id, after.v, after.i) <= 0) lo = mid + 1;
      else hi = mid;
    }
    start = lo;
  }
  const page = visible.slice(start, start + query.limit);
  const last = page[page.length - 1];
  const nextCursor =
    start + query.limit < visible.length && last
      ? encodeCursor(cursorKey, { s: query.sort, o: query.order, f: query.status ?? null, v: keyOf(last), i: last.id })
      : null;
  return { page, nextCursor };
}
