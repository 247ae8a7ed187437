/** Printing what the API answered: a table (chosen columns), or its data exactly as JSON or YAML. */
import YAML from 'yaml';
import { isRecord, scalarText } from '../lib/unknown-values';

export const OUTPUT_FORMATS = ['table', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** A cell: ids of a list of objects (backends, mounts), values of a list, an object's status (endpoint_health), else its JSON. */
function cell(value: unknown): string {
  if (value === null || value === undefined || value === '') return '-';
  if (isRecord(value) && typeof value.status === 'string') return value.status;
  if (Array.isArray(value)) {
    if (value.length === 0) return '-';
    return value.map((item: unknown) => (isRecord(item) ? idOf(item) : String(item))).join(',');
  }
  // What the API answers holds objects and scalars, nothing else.
  return scalarText(value)?.replace(/\s+/g, ' ') ?? JSON.stringify(value);
}

function idOf(item: Record<string, unknown>): string {
  const key = Object.keys(item).find((k) => k === 'id' || k.endsWith('_id'));
  return key ? String(item[key]) : JSON.stringify(item);
}

export function renderTable(rows: Record<string, unknown>[], columns: string[]): string {
  const table = streamedTable(rows, columns);
  return [table.header, ...rows.map((row) => table.line(row))].join('\n') + '\n';
}

/**
 * A table whose rows come one by one (list --watch): its columns as wide as the header and
 * `first` rows need; a later, longer cell makes its line longer rather than the table move.
 */
export function streamedTable(first: Record<string, unknown>[], columns: string[]): { header: string; line(row: Record<string, unknown>): string } {
  const header = columns.map((c) => c.toUpperCase());
  const widths = header.map((h, i) => Math.max(h.length, ...first.map((row) => cell(row[columns[i]]).length)));
  const join = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]))).join('   ');
  return { header: join(header), line: (row) => join(columns.map((c) => cell(row[c]))) };
}

export function render(data: unknown, format: OutputFormat, columns: string[]): string {
  if (format === 'json') return `${JSON.stringify(data, null, 2)}\n`;
  if (format === 'yaml') return YAML.stringify(data);
  // A row that is no object (a bare value) has no columns: its cells are empty.
  const rows = (Array.isArray(data) ? data : [data]).map((row: unknown) => (isRecord(row) ? row : {}));
  // Columns the chosen ones miss but the answer holds once (a new key, a signing secret) are shown too.
  const shownOnce = ['key', 'secret'].filter((k) => rows.length === 1 && rows[0] && k in rows[0] && !columns.includes(k));
  return renderTable(rows, [...columns, ...shownOnce]);
}
