/**
 * Lists of every family: filter, sort, and keyset pagination. The cursor holds the sort
 * key and id of the last item of the page and the list it came from, signed, so a walk
 * visits every resource that existed for the whole walk exactly once whatever is created
 * or deleted meanwhile, and a cursor that was tampered with, or is used on another list or
 * with another sort, order or filter, answers 422 invalid_cursor.
 */
import { createHmac, hash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { Static, TObject, TProperties, Type } from '@sinclair/typebox';
import { domainError } from '../lib/errors';
import type { Store } from '../store/types';
import type { PageRequest } from '../store/types';
import { routeConfigOf } from './route-config';
import { StringEnum } from '../resources/schema-kit';
import { isOfFamily, type BaseStatus, type FamilyDefinition, type Resource } from '../resources/family';

export type SortField = 'name' | 'created_at';
export type SortOrder = 'asc' | 'desc';

export interface ListQuery {
  cursor?: string;
  limit: number;
  status?: string;
  sort: SortField;
  order: SortOrder;
  /** Digest of the list the request reads (see scopeOf): a cursor is good only there. */
  scope: string;
}

export interface Listable {
  id: string;
  name: string;
  created_at: string;
  status: string;
}

/** The paging parameters, one builder each: listQuerySchema uses them all, lists with a query of their own pick. */
export const pagingParameters = {
  cursor: () => Type.Optional(Type.String({ maxLength: 1024, description: 'Pagination cursor from meta.next_cursor of the previous page.' })),
  limit: () => Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'Results per page, 1-100, default 50.' })),
  sort: (fields: readonly SortField[], description: string) => Type.Optional(StringEnum(fields, { description })),
  order: (description: string) => Type.Optional(StringEnum<SortOrder>(['asc', 'desc'], { description })),
};

const pagingProperties = (states: readonly string[]) => ({
  cursor: pagingParameters.cursor(),
  limit: pagingParameters.limit(),
  status: Type.Optional(Type.String({ enum: [...states], description: `Only resources in this state. Without it, deleted resources are left out.` })),
  sort: pagingParameters.sort(['name', 'created_at'], 'Sort field, default created_at.'),
  order: pagingParameters.order('Sort direction, default desc.'),
});

type PagingProperties = ReturnType<typeof pagingProperties>;

/** The paging parameters of every list's (validated) query. */
export type PagingQuery = Static<TObject<PagingProperties>>;

/** Query schema of a family's list endpoint; `status` takes the family's states, `extra` adds the list's filters. */
export function listQuerySchema(states: readonly string[]): TObject<PagingProperties>;
export function listQuerySchema<Extra extends TProperties>(states: readonly string[], extra: Extra): TObject<PagingProperties & Extra>;
export function listQuerySchema(states: readonly string[], extra: TProperties = {}): TObject {
  return Type.Object({ ...pagingProperties(states), ...extra }, { additionalProperties: false });
}

/**
 * Query parameters that page through a list (sort, order and status are bound normalised)
 * or say how it is read (a watch), rather than choose it.
 */
const PAGING_PARAMETERS = new Set(['cursor', 'limit', 'sort', 'order', 'status', 'watch', 'timeout_seconds']);

const NO_FILTERS: ReadonlyArray<[string, unknown]> = Object.freeze([]);

/** The query's parameters that choose the list, by name; most lists have none, and then nothing is allocated. */
function filtersOf(query: Record<string, unknown>): ReadonlyArray<[string, unknown]> {
  let filters: Array<[string, unknown]> | undefined;
  for (const name in query) if (!PAGING_PARAMETERS.has(name)) (filters ??= []).push([name, query[name]]);
  return filters ? filters.sort(([a], [b]) => (a < b ? -1 : 1)) : NO_FILTERS;
}

/** A request to a list route: its query has the paging parameters (listQuerySchema). */
type ListRequest = FastifyRequest & { query: PagingQuery };

/** The list a request reads: route, path parameters, team and every filter but the page's own. */
function scopeOf(request: ListRequest, sort: SortField, order: SortOrder, status: string | undefined): string {
  const filters = filtersOf(request.query);
  const identity = JSON.stringify([routeConfigOf(request).url, request.params, request.principal?.team ?? null, sort, order, status ?? null, filters]);
  return hash('sha256', identity, 'base64url').slice(0, 22);
}

/**
 * The paging part of a list request's (validated) query, with the defaults applied and the
 * scope its cursors are bound to. `defaults.order` overrides `desc` for lists read oldest first.
 */
export function listQueryOf(request: ListRequest, defaults: { order?: SortOrder } = {}): ListQuery {
  const raw = request.query;
  const sort = raw.sort ?? 'created_at';
  const order = raw.order ?? defaults.order ?? 'desc';
  return { cursor: raw.cursor, limit: raw.limit ?? 50, status: raw.status, sort, order, scope: scopeOf(request, sort, order, raw.status) };
}

/** Position after the last item of a page, and the list it belongs to. */
interface CursorPayload {
  /** scopeOf the list that handed the cursor out. */
  l: string;
  /** Sort value and id of the page's last item. */
  v: string;
  i: string;
}

const sign = (key: Buffer, payload: string) => createHmac('sha256', key).update(payload).digest('base64url').slice(0, 22);

/** `<base64url JSON>.<22 base64url characters of HMAC>`, nothing before, between or after. */
const CURSOR_FORMAT = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{22})$/;

export function encodeCursor(key: Buffer, payload: CursorPayload): string {
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `${body}.${sign(key, body)}`;
}

function isCursorPayload(value: unknown): value is CursorPayload {
  return (
    typeof value === 'object' &&
    value !== null &&
    'l' in value &&
    typeof value.l === 'string' &&
    'v' in value &&
    typeof value.v === 'string' &&
    'i' in value &&
    typeof value.i === 'string'
  );
}

export function decodeCursor(key: Buffer, cursor: string, query: ListQuery): CursorPayload {
  const invalid = () => domainError('invalid_cursor', 'The cursor is not one this list handed out for this sort and filter; start again without it.', 'cursor');
  const parts = CURSOR_FORMAT.exec(cursor);
  if (!parts) throw invalid();
  const [, body, signature] = parts;
  // Both are ASCII by the format, so equal lengths are equal byte lengths, as timingSafeEqual needs.
  const given = Buffer.from(signature, 'ascii');
  const expected = Buffer.from(sign(key, body), 'ascii');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid();
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (!isCursorPayload(payload) || payload.l !== query.scope) throw invalid();
  return payload;
}

/** What a list chooses besides the page's own parameters: spec fields by equality, a creation window. */
export type ListFilter = Pick<PageRequest, 'where' | 'created'>;

/**
 * One page of a family's objects of a team (undefined: a kind listed across teams) after the
 * cursor, read from the store's ordered indexes: a seek and a walk of the page, whatever
 * the team holds. Hidden states and the names sorted on are the family's (its `listing`).
 */
export async function listPage<Spec, Status extends BaseStatus>(
  store: Store,
  family: FamilyDefinition<Spec, Status>,
  team: string | undefined,
  query: ListQuery,
  cursorKey: Buffer,
  filter: ListFilter = {},
): Promise<{ page: Resource<Spec, Status>[]; nextCursor: string | null }> {
  const after = query.cursor === undefined ? undefined : decodeCursor(cursorKey, query.cursor, query);
  const { items, next } = await store.page(family.kind, team, {
    sort: query.sort,
    order: query.order,
    status: query.status,
    where: filter.where,
    created: filter.created,
    after: after && { value: after.v, id: after.i },
    limit: query.limit,
  });
  // The page holds the family's kind alone: the filter only tells the compiler so.
  return {
    page: items.filter((item) => isOfFamily(family, item)),
    nextCursor: next ? encodeCursor(cursorKey, { l: query.scope, v: next.value, i: next.id }) : null,
  };
}

/** One page of `items` (already filtered to the caller's team) after the cursor; for rows that are not store objects. */
export function paginate<T extends Listable>(
  items: T[],
  query: ListQuery,
  cursorKey: Buffer,
  hiddenByDefault: readonly string[] = ['deleted', 'destroyed'],
): { page: T[]; nextCursor: string | null } {
  const visible = query.status ? items.filter((i) => i.status === query.status) : items.filter((i) => !hiddenByDefault.includes(i.status));
  const direction = query.order === 'asc' ? 1 : -1;
  const keyOf = (item: T) => (query.sort === 'name' ? item.name : item.created_at);
  const compare = (av: string, ai: string, bv: string, bi: string) => direction * (av < bv ? -1 : av > bv ? 1 : ai < bi ? -1 : ai > bi ? 1 : 0);
  visible.sort((a, b) => compare(keyOf(a), a.id, keyOf(b), b.id));
  let start = 0;
  if (query.cursor !== undefined) {
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
  const last = page.at(-1);
  const nextCursor = start + query.limit < visible.length && last ? encodeCursor(cursorKey, { l: query.scope, v: keyOf(last), i: last.id }) : null;
  return { page, nextCursor };
}
