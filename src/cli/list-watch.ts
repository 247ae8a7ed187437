/**
 * `<family> list --watch`, as `kubectl get --watch`: the family's resources as they are,
 * then every change as it happens, by a watch of the family (docs/api.md, Watching
 * changes), until interrupted or `--watch-timeout`. A stream the service ends (its
 * timeout, a restart) is resumed from its last event with Last-Event-ID, so no change is
 * missed. A table prints one row per event, its first column the event; json prints one
 * line of JSON per event (`{"type", "object"}`, for jq), yaml one document per event.
 */
import YAML from 'yaml';
import type { ApiClient } from './client';
import { CliError, EXIT } from './exit-codes';
import { note } from './session';
import { streamedTable, type OutputFormat } from './output';
import { isRecord } from '../lib/unknown-values';

/** AbortSignal.timeout takes at most 2^31-1 ms; a watch without a timeout is cut into parts this long, each resumed. */
const LONGEST_PART_MS = 7 * 24 * 3600 * 1000;
const CHANGES = ['added', 'modified', 'deleted'];

/** Why the service ended a watch for good: connecting again would be refused too. */
const FINAL_REASON = /revoked|removed|session/;

export async function watchList(client: ApiClient, path: string, format: OutputFormat, columns: string[], timeoutSeconds: number | undefined): Promise<void> {
  const deadline = timeoutSeconds === undefined ? Number.POSITIVE_INFINITY : Date.now() + timeoutSeconds * 1000;
  const printer = eventPrinter(format, ['event', ...columns]);
  let lastEventId: string | undefined;
  while (Date.now() < deadline) {
    const events = await client.watch(path, { lastEventId, deadline: Math.min(deadline, Date.now() + LONGEST_PART_MS) });
    if (!events) {
      throw new CliError(
        `${path} cannot be watched here now (the team holds as many watches as it may, or a proxy does not pass the stream); list without --watch`,
        EXIT.unavailable,
        'watch_unavailable',
      );
    }
    for await (const event of events) {
      lastEventId = event.id ?? lastEventId;
      if (event.event === 'reset') note('The service no longer knew where the watch was: the resources follow afresh.');
      if (event.event === 'synced') printer.synced();
      if (event.event === 'closed') {
        const reason: unknown = JSON.parse(event.data);
        const text = isRecord(reason) && typeof reason.reason === 'string' ? reason.reason : '';
        if (FINAL_REASON.test(text)) throw new CliError(`the watch ended: ${text}`, EXIT.auth, 'watch_ended');
      }
      if (!CHANGES.includes(event.event)) continue;
      const object: unknown = JSON.parse(event.data);
      if (isRecord(object)) printer.change(event.event, object);
    }
  }
}

/** Prints each change as it comes; a table holds the rows before `synced` back to size its columns by them. */
function eventPrinter(format: OutputFormat, columns: string[]): { change(type: string, object: Record<string, unknown>): void; synced(): void } {
  const write = (text: string) => process.stdout.write(text);
  if (format === 'json') return { change: (type, object) => write(`${JSON.stringify({ type, object })}\n`), synced: () => undefined };
  if (format === 'yaml') return { change: (type, object) => write(`---\n${YAML.stringify({ type, object })}`), synced: () => undefined };
  let held: Record<string, unknown>[] | null = [];
  let table: ReturnType<typeof streamedTable> | undefined;
  return {
    change(type, object) {
      const row = { ...object, event: type.toUpperCase() };
      if (held) held.push(row);
      else write(`${(table ??= streamedTable([row], columns)).line(row)}\n`);
    },
    synced() {
      if (!held) return;
      if (!table) {
        table = streamedTable(held, columns);
        write(`${table.header}\n`);
      }
      for (const row of held) write(`${table.line(row)}\n`);
      held = null;
    },
  };
}
