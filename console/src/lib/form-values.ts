/**
 * What a SchemaForm holds for each field of an OpenAPI body (lib/openapi.ts), and the
 * body it sends. A scalar is held as typed (text, or a checkbox's boolean); an object as its
 * fields' values; a list as its items' values; a map (labels) as rows of key and value, so
 * that a row being typed keeps its place. The API's 422 details name a field by its path
 * (`node_pools[0].count`), and so does the form: each input's id is made from that path.
 */
import type { FormField } from './openapi';

export type FormValue = string | boolean | FormValue[] | { [name: string]: FormValue };
export type FormValues = { [name: string]: FormValue };

/** A map's row: one label. */
export interface MapRow extends FormValues {
  key: string;
  value: string;
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The element id of a field's input (`node_pools[0].count` → `field-node_pools-0-count`). */
export const fieldId = (path: string) => `field-${path.replace(/[[\].]+/g, '-').replace(/-$/, '')}`;

/** A field's value as the form starts it: from the record's value for an update, else empty. */
export function startValue(field: FormField, current: unknown): FormValue {
  switch (field.kind) {
    case 'boolean':
      return current === true;
    case 'object':
      return Object.fromEntries((field.fields ?? []).map((inner) => [inner.name, startValue(inner, isRecord(current) ? current[inner.name] : undefined)]));
    case 'list': {
      const item = field.item as FormField;
      // A list that needs items (a cluster's node pools) starts with as many empty ones.
      return Array.isArray(current)
        ? current.map((value) => startValue(item, value))
        : Array.from({ length: field.schema.minItems ?? 0 }, () => startValue(item, undefined));
    }
    case 'map':
      return isRecord(current) ? Object.entries(current).map(([key, value]) => ({ key, value: String(value) })) : [];
    default:
      // A secret is never there to start from.
      return field.kind === 'secret' || current === null || current === undefined ? '' : String(current);
  }
}

/** A new item of a list, or row of a map. */
export const newItemOf = (field: FormField): FormValue => (field.kind === 'map' ? { key: '', value: '' } : startValue(field.item as FormField, undefined));

/** Whether nothing was filled in: an empty text, an unticked box, an object of blanks, no items. */
export function isBlank(field: FormField, value: FormValue): boolean {
  if (field.kind === 'boolean') return value !== true;
  if (field.kind === 'object') return (field.fields ?? []).every((inner) => isBlank(inner, (value as FormValues)[inner.name]));
  if (field.kind === 'list' || field.kind === 'map') return (value as FormValue[]).length === 0;
  return value === '';
}

/**
 * The value the API is sent, or undefined to leave the field out (so that the API's default
 * applies). Inside an object that is sent, a checkbox says true or false; a number that does
 * not read as one is sent as typed, for the API to name it.
 */
export function bodyValue(field: FormField, value: FormValue, inObject = false): unknown {
  if (field.kind === 'boolean') return value === true ? true : inObject ? false : undefined;
  if (isBlank(field, value)) return undefined;
  switch (field.kind) {
    case 'object': {
      const body: Record<string, unknown> = {};
      for (const inner of field.fields ?? []) {
        const sent = bodyValue(inner, (value as FormValues)[inner.name], true);
        if (sent !== undefined) body[inner.name] = sent;
      }
      return body;
    }
    case 'list': {
      const item = field.item as FormField;
      // An item left blank is sent empty, so that the API names what it lacks.
      return (value as FormValue[]).map((inner) => bodyValue(item, inner, true) ?? (item.kind === 'object' ? {} : ''));
    }
    case 'map':
      return Object.fromEntries((value as MapRow[]).filter((row) => row.key !== '').map((row) => [row.key, row.value]));
    case 'integer':
    case 'number':
      return !Number.isNaN(Number(value)) ? Number(value) : value;
    default:
      return value;
  }
}

/** What an update sends for a field emptied: null where the API takes it (removes it), an empty list or map; else nothing. */
export function clearedValue(field: FormField): unknown {
  if (field.nullable) return null;
  if (field.kind === 'list') return [];
  if (field.kind === 'map') return {};
  return undefined;
}

/**
 * Every path the form shows an input or a group for, so that an error naming none of them
 * is listed apart. A map (labels) shows the errors `within` it too: the API names a label
 * by its key (`labels.<key>`), which has no input of its own.
 */
export function pathsOf(field: FormField, value: FormValue, path = field.name): { path: string; within: boolean }[] {
  if (field.kind === 'object')
    return [{ path, within: false }, ...(field.fields ?? []).flatMap((inner) => pathsOf(inner, (value as FormValues)[inner.name], `${path}.${inner.name}`))];
  if (field.kind === 'list')
    return [{ path, within: false }, ...(value as FormValue[]).flatMap((inner, i) => pathsOf(field.item as FormField, inner, `${path}[${i}]`))];
  return [{ path, within: field.kind === 'map' }];
}

/** Whether `field` (an error's) is `path` or, for a group that shows them, one of its parts. */
export const isPartOf = (field: string, path: string) => field.startsWith(`${path}.`) || field.startsWith(`${path}[`);

export const showsError = (shown: { path: string; within: boolean }[], field: string) =>
  shown.some((s) => s.path === field || (s.within && isPartOf(field, s.path)));
