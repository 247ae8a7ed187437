/**
 * Every API operation the CLI and the MCP server offer, as data: the command that runs it,
 * the method and path, the positional arguments (the path's placeholders), the body and
 * query schemas its flags (or a tool's arguments) are built from, the columns of its table
 * (the family's presentation) and the status --wait waits for. It lives in the api layer so
 * that the service's MCP endpoint (api/mcp.ts) derives its tools from the same list as the
 * CLI its commands (cli/api-commands.ts).
 *
 * The families' CRUD comes from the service's own family registry (paths, states,
 * TypeBox create and update schemas), so a new family or field appears here by itself.
 * The route modules' actions are declared below; test/cli/resources.test.ts checks every
 * entry against the OpenAPI document the service serves (method, path, body and query
 * fields), and that every operation there has a command here.
 */
import { Type, TObject, TProperties } from '@sinclair/typebox';
import { families } from '../resources/registry';
import type { AnyFamily } from '../resources/family';
import { presentationOf } from '../resources/presentation-of';
import { commandGroupOf, commandPathOf, commandWordsOf } from '../resources/commands';
import { pluralOf } from '../lib/plural';
import { fieldOf, recordAt, scalarText } from '../lib/unknown-values';
import { listQuerySchema } from './list';
import { DRY_RUN_PROPERTIES, DryRunQuery } from './dry-run';
import { FaultCreate } from '../drivers/simulated/faults';

export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

export interface WaitSpec {
  /** Statuses that end the wait successfully. */
  target: readonly string[];
  /** GET path of what the answer shows, `{id}` being the answer's id; default the operation's family. */
  poll: string;
}

export interface Operation {
  /** Command words: ['load-balancers', 'attach'], ['webhooks', 'deliveries', 'retry']. */
  command: string[];
  summary: string;
  method: Method;
  /** Under /api/v1, placeholders in braces: /webhooks/{webhook_id}/deliveries/{delivery_id}/retry. */
  path: string;
  body?: TObject;
  /** A body field taken from the last positional argument instead of a flag, and the argument's name (ask's question). */
  bodyArgument?: { field: string; label: string };
  query?: TObject;
  /** A list that pages with meta.next_cursor. */
  paged?: boolean;
  /** A list that can be watched instead (`?watch=true`, docs/api.md Watching changes): `list --watch`. */
  watchable?: boolean;
  /** Columns of the table output. */
  columns: string[];
  /** The table's rows, for an answer that is no record or list of them (usage: a row per metric); json and yaml print the answer. */
  tableRows?: (data: unknown) => Array<Record<string, unknown>>;
  wait?: WaitSpec;
  /**
   * The answer is one resource of a family's generic routes, with its version (ETag); a
   * PATCH or DELETE of it takes If-Match (docs/api.md, Versions).
   */
  versioned?: boolean;
  /** The answer is a document of this media type, printed as it is or written to `--<fileFlag>` (a kubeconfig). */
  document?: { mediaType: string; fileFlag: string };
  /** Served only with this setting on (the simulation API): a CLI command, not one of the MCP server's tools. */
  servedWith?: string;
}

/** Statuses after which a wait for another status cannot succeed. */
export const DEAD_END_STATES = ['failed', 'cancelled', 'deleted', 'destroyed'];

const family = (name: string): AnyFamily => {
  const found = families.find((f) => f.name === name);
  if (!found) throw new Error(`unknown family ${name}`);
  return found;
};
/** `a load balancer`, `an agent thread`. */
const aOrAn = (title: string) => `${/^[aeiou]/i.test(title) ? 'an' : 'a'} ${title}`;
/** The columns of the family's tables: those of its presentation the CLI shows. */
const columnsOf = (f: AnyFamily) =>
  presentationOf(f)
    .columns.filter((column) => column.shownIn !== 'console')
    .map((column) => column.key);
/**
 * --wait for a family whose resources have work to finish after the answer (a new one is
 * not ready at once: `creating`, `queued`); none for those settled within the request
 * (webhooks, threads), where there is nothing to wait for.
 */
const worksInBackground = (f: AnyFamily) => !f.readyStates.includes(f.states[0]);
const readyWait = (f: AnyFamily): WaitSpec | undefined => (worksInBackground(f) ? { target: f.readyStates, poll: `/${f.path}/{id}` } : undefined);
const deletedWait = (f: AnyFamily): WaitSpec | undefined => (worksInBackground(f) ? { target: ['deleted'], poll: `/${f.path}/{id}` } : undefined);

/**
 * Families whose own route modules serve the generic pattern (webhooks, agent threads);
 * the rest of the families outside the generic routes have routes of their own below.
 */
const SAME_SHAPE_AS_GENERIC = ['webhook', 'thread'];
/** Of those, the families whose answers name no version: a thread changes only by messages appended, with nothing to make If-Match on. */
const UNVERSIONED = ['thread'];

const CONDITION_COLUMNS = ['type', 'status', 'reason', 'message', 'last_transition_time'];

/** The conditions of a record (schema-kit.ts reconcileRecord), a row each. */
function conditionRows(data: unknown): Array<Record<string, unknown>> {
  const conditions = fieldOf(data, 'conditions');
  return Array.isArray(conditions) ? conditions.map((condition) => recordAt(condition) ?? {}) : [];
}

/** list, get, create, update and delete of a family, as the generic routes serve them. */
function crudOf(f: AnyFamily): Operation[] {
  const group = commandGroupOf(f);
  const columns = columnsOf(f);
  const base = `/${f.path}`;
  // Served by the generic routes (families.ts) or routes of the same shape, whose answers name the version (threads' do not).
  const versioned = !UNVERSIONED.includes(f.name);
  // The generic routes take ?dry_run on their changes (dry-run.ts): --dry-run.
  const dryRunProperties = f.standardRoutes === undefined ? DRY_RUN_PROPERTIES : {};
  const dryRun = f.standardRoutes === undefined ? { query: DryRunQuery } : {};
  const operations: Operation[] = [
    {
      command: [...group, 'list'],
      summary: `List ${pluralOf(f.title)}`,
      method: 'GET',
      path: base,
      query: listQuerySchema(f.states),
      paged: true,
      watchable: f.standardRoutes !== false,
      columns,
    },
    { command: [...group, 'get'], summary: `Get ${aOrAn(f.title)}`, method: 'GET', path: `${base}/{id}`, columns, versioned },
    {
      command: [...group, 'create'],
      summary: `Create ${aOrAn(f.title)}`,
      method: 'POST',
      path: base,
      ...dryRun,
      body: f.schemas.create,
      columns,
      wait: readyWait(f),
      versioned,
    },
  ];
  if (f.schemas.update) {
    operations.push({
      command: [...group, 'update'],
      summary: `Update ${aOrAn(f.title)}`,
      method: 'PATCH',
      path: `${base}/{id}`,
      ...dryRun,
      body: f.schemas.update,
      columns,
      wait: readyWait(f),
      versioned,
    });
  }
  if (f.providerBacked) {
    operations.push({
      command: [...group, 'describe'],
      summary: `Why ${aOrAn(f.title)} is or is not ready: its conditions, the reconcile error among them`,
      method: 'GET',
      path: `${base}/{id}`,
      columns: CONDITION_COLUMNS,
      tableRows: conditionRows,
      versioned,
    });
    operations.push({
      command: [...group, 'reconcile'],
      summary: `Reconcile ${aOrAn(f.title)} now`,
      method: 'POST',
      path: `${base}/{id}/reconcile`,
      columns,
      versioned,
    });
  }
  if (f.deletable !== false) {
    // A family that guards its users' data (a bucket's objects) takes --force to delete it with them.
    const properties: TProperties = { ...dryRunProperties };
    if (f.deletionGuard) properties.force = Type.Optional(Type.Boolean({ description: `Delete what the ${f.title} still holds with it` }));
    const query = Object.keys(properties).length > 0 ? Type.Object(properties) : undefined;
    operations.push({
      command: [...group, 'delete'],
      summary: `Delete ${aOrAn(f.title)}`,
      method: 'DELETE',
      path: `${base}/{id}`,
      query,
      columns,
      wait: deletedWait(f),
      versioned,
    });
  }
  return operations;
}

/** A family's commands beyond the generic ones, as its definition declares them (resources/commands.ts). */
function commandsOf(f: AnyFamily): Operation[] {
  return (f.commands ?? []).map((c): Operation => {
    const answered = c.answers ? family(c.answers) : f;
    const asked = c.query && 'list' in c.query ? listQuerySchema(answered.states, c.query.filters) : c.query;
    // A route that takes dry_run takes nothing else in its query (its command declares no query).
    const query = c.dryRun ? DryRunQuery : asked;
    return {
      command: commandWordsOf(f, c),
      summary: c.summary,
      method: c.method,
      path: commandPathOf(f, c),
      ...(c.body ? { body: c.body } : {}),
      ...(c.bodyArgument ? { bodyArgument: c.bodyArgument } : {}),
      ...(query ? { query } : {}),
      ...(c.paged ? { paged: true } : {}),
      columns: c.columns ? [...c.columns] : columnsOf(answered),
      ...(c.waitFor ? { wait: { target: c.waitFor, poll: `/${answered.path}/{id}` } } : {}),
      ...(c.document ? { document: c.document } : {}),
      ...(c.versioned ? { versioned: true } : {}),
    };
  });
}

/**
 * The usage report as a table: the total resource-hours, each family and plan's, then the
 * deliveries and requests, each row with the report's window.
 */
function usageRows(data: unknown): Array<Record<string, unknown>> {
  const window = { since: fieldOf(data, 'since'), until: fieldOf(data, 'until') };
  const total = (metric: string) => ({ metric, plan: null, ...recordAt(data, metric), resources: null, ...window });
  const plans = fieldOf(data, 'resources');
  const perPlan = (Array.isArray(plans) ? plans : []).map((row: unknown) => ({
    metric: `${scalarText(fieldOf(row, 'family')) ?? 'resource'}_hours`,
    plan: fieldOf(row, 'plan'),
    quantity: fieldOf(row, 'quantity'),
    unit: fieldOf(row, 'unit'),
    resources: fieldOf(row, 'resources'),
    ...window,
  }));
  return [total('resource_hours'), ...perPlan, total('webhook_deliveries'), total('api_requests')];
}

/** The calls that belong to no family: the audit log, usage, regions, the event catalog. */
function serviceOperations(): Operation[] {
  return [
    {
      command: ['audit-log', 'search'],
      summary: "Search the team's events, newest first",
      method: 'GET',
      path: '/audit-log',
      query: Type.Object({
        type: Type.Optional(Type.String({ description: 'An exact event type, or `category.*`.' })),
        resource_id: Type.Optional(Type.String({ description: 'Only events about this resource.' })),
        actor: Type.Optional(Type.String({ description: 'Only events caused by this API key id, or `system`.' })),
        since: Type.Optional(Type.String({ description: 'Only events at or after this time (ISO 8601).' })),
        until: Type.Optional(Type.String({ description: 'Only events before this time (ISO 8601).' })),
        q: Type.Optional(Type.String({ description: 'Case-insensitive text anywhere in the event.' })),
        cursor: Type.Optional(Type.String({ description: 'Pagination cursor from the previous page.' })),
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Results per page, 1-100, default 50.' })),
        order: Type.Optional(Type.String({ enum: ['asc', 'desc'], description: 'By time; default desc.' })),
      }),
      paged: true,
      columns: ['created_at', 'type', 'resource_id', 'resource_name', 'actor_name'],
    },
    {
      command: ['usage', 'get'],
      summary: "Get the team's usage: resource-hours per family and plan, webhook deliveries, API requests",
      method: 'GET',
      path: '/usage',
      query: Type.Object({
        since: Type.Optional(Type.String({ description: 'Start of the window (RFC 3339); default the start of the calendar month.' })),
        until: Type.Optional(Type.String({ description: 'End of the window (RFC 3339); default now.' })),
      }),
      columns: ['metric', 'plan', 'quantity', 'unit', 'resources', 'since', 'until'],
      tableRows: usageRows,
    },
    { command: ['usage', 'limits', 'get'], summary: "Get the team's usage limits", method: 'GET', path: '/usage/limits', columns: ['limits', 'period'] },
    {
      command: ['usage', 'limits', 'set'],
      summary: 'Set the usage limits (replaces all): --limits \'{"api_requests":{"soft":1000,"hard":5000}}\'',
      method: 'PUT',
      path: '/usage/limits',
      body: Type.Object({
        limits: Type.Object(
          {},
          { additionalProperties: true, description: 'Per metric, {soft, hard}: api_requests, webhook_deliveries, resource_hours, <family>_hours.' },
        ),
      }),
      columns: ['limits', 'period'],
    },
    { command: ['regions', 'list'], summary: 'List regions', method: 'GET', path: '/regions', columns: ['id', 'name', 'available'] },
    ...simulationOperations(),
    {
      command: ['event-types', 'list'],
      summary: 'List the event types the service emits (what a webhook subscription can name)',
      method: 'GET',
      path: '/event-types',
      query: Type.Object({ category: Type.Optional(Type.String({ description: 'Only the types of this category (`server`, `load_balancer`, ...).' })) }),
      columns: ['type', 'category', 'description'],
    },
  ];
}

export function allOperations(): Operation[] {
  const generic = (f: AnyFamily) => f.standardRoutes === undefined || SAME_SHAPE_AS_GENERIC.includes(f.name);
  return [...families.flatMap((f) => [...(generic(f) ? crudOf(f) : []), ...commandsOf(f)]), ...serviceOperations()];
}

/** The placeholders of a path, in order: `{webhook_id}` -> webhook_id. */
export function placeholdersOf(path: string): string[] {
  return [...path.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1]);
}

/** The simulation API's (docs/api.md, "The simulation API"), served with CLOUDPLANE_SIMULATION_API=true only. */
function simulationOperations(): Operation[] {
  const columns = ['id', 'family', 'operation', 'remaining', 'error', 'delay_ms'];
  const servedWith = 'CLOUDPLANE_SIMULATION_API';
  const path = '/simulation/faults';
  return [
    { command: ['simulation', 'faults', 'list'], summary: "List the team's faults still waiting", method: 'GET', path, columns, servedWith },
    {
      command: ['simulation', 'faults', 'add'],
      summary: 'Make the next operations of a simulated family fail (--error) or take a set time (--delay-ms)',
      method: 'POST',
      path,
      body: FaultCreate,
      columns,
      servedWith,
    },
    { command: ['simulation', 'faults', 'remove'], summary: 'Remove a fault', method: 'DELETE', path: `${path}/{id}`, columns, servedWith },
    { command: ['simulation', 'faults', 'clear'], summary: 'Remove every fault of the team', method: 'DELETE', path, columns, servedWith },
  ];
}
