/**
 * Every API operation the CLI offers, as data: the command that runs it, the method and
 * path, the positional arguments (the path's placeholders), the body and query schemas
 * its flags are built from, the columns of its table (the family's presentation) and the
 * status --wait waits for.
 *
 * The families' CRUD comes from the service's own family registry (paths, states,
 * TypeBox create and update schemas), so a new family or field appears here by itself.
 * The route modules' actions are declared below; test/cli/operations.test.ts checks every
 * entry against the OpenAPI document the service serves (method, path, body and query
 * fields), and that every operation there has a command here.
 */
import { Type, TObject } from '@sinclair/typebox';
import { families } from '../resources/registry';
import type { AnyFamily } from '../resources/family';
import { presentationOf } from '../resources/presentation-of';
import { pluralOf } from '../lib/plural';
import { listQuerySchema } from '../api/list';
import { ROLES } from '../resources/accounts';
import { MESSAGE_ROLES } from '../resources/agent';

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
  /** Columns of the table output. */
  columns: string[];
  wait?: WaitSpec;
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
const groupOf = (f: AnyFamily) => f.path.split('/');
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

/** list, get, create, update and delete of a family, as the generic routes serve them. */
function crudOf(f: AnyFamily): Operation[] {
  const group = groupOf(f);
  const columns = columnsOf(f);
  const base = `/${f.path}`;
  const operations: Operation[] = [
    { command: [...group, 'list'], summary: `List ${pluralOf(f.title)}`, method: 'GET', path: base, query: listQuerySchema(f.states), paged: true, columns },
    { command: [...group, 'get'], summary: `Get ${aOrAn(f.title)}`, method: 'GET', path: `${base}/{id}`, columns },
    { command: [...group, 'create'], summary: `Create ${aOrAn(f.title)}`, method: 'POST', path: base, body: f.schemas.create, columns, wait: readyWait(f) },
  ];
  if (f.schemas.update) {
    operations.push({
      command: [...group, 'update'],
      summary: `Update ${aOrAn(f.title)}`,
      method: 'PATCH',
      path: `${base}/{id}`,
      body: f.schemas.update,
      columns,
      wait: readyWait(f),
    });
  }
  if (f.deletable !== false) {
    // A family that guards its users' data (a bucket's objects) takes --force to delete it with them.
    const query = f.deletionGuard
      ? Type.Object({ force: Type.Optional(Type.Boolean({ description: `Delete what the ${f.title} still holds with it` })) })
      : undefined;
    operations.push({
      command: [...group, 'delete'],
      summary: `Delete ${aOrAn(f.title)}`,
      method: 'DELETE',
      path: `${base}/{id}`,
      query,
      columns,
      wait: deletedWait(f),
    });
  }
  return operations;
}

const ServerId = (description: string) => Type.Object({ server_id: Type.String({ minLength: 1, description }) });

/** The actions and sub-resources of the route modules (src/api/routes/*.ts). */
function actions(): Operation[] {
  const lb = family('load_balancer');
  const server = family('server');
  const backup = family('backup');
  const share = family('file_share');
  const job = family('job');
  const vpn = family('vpn_gateway');
  const webhook = family('webhook');
  const delivery = family('delivery');
  const thread = family('thread');
  const message = family('message');
  const profile = family('profile');
  const team = family('team');
  const apiKey = family('api_key');
  const incident = family('incident');
  const serverPoll = (target: string[]): WaitSpec => ({ target, poll: `/${server.path}/{id}` });
  const power = (verb: string, summary: string, target: string): Operation => ({
    command: [...groupOf(server), verb],
    summary,
    method: 'POST',
    path: `/${server.path}/{id}/${verb}`,
    columns: columnsOf(server),
    wait: serverPoll([target]),
  });
  const shareAction = (verb: string, summary: string): Operation => ({
    command: [...groupOf(share), verb],
    summary: `${summary} (the answer is the server)`,
    method: 'POST',
    path: `/${share.path}/{id}/${verb}`,
    body: ServerId('The server (svr_...).'),
    columns: columnsOf(server),
    wait: serverPoll(['running']),
  });
  const members = '/settings/team/members';
  const memberColumns = columnsOf(profile);
  return [
    {
      command: [...groupOf(lb), 'attach'],
      summary: 'Attach a server as a backend',
      method: 'POST',
      path: `/${lb.path}/{id}/attach`,
      body: Type.Object({
        server_id: Type.String({ minLength: 1, description: 'The server to attach (svr_...).' }),
        port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: 'Backend port; defaults to the frontend port.' })),
      }),
      columns: columnsOf(lb),
    },
    {
      command: [...groupOf(lb), 'detach'],
      summary: 'Detach a backend server',
      method: 'POST',
      path: `/${lb.path}/{id}/detach`,
      body: ServerId('The attached server to detach.'),
      columns: columnsOf(lb),
    },
    power('stop', 'Stop a running server', 'stopped'),
    power('start', 'Start a stopped server', 'running'),
    power('reboot', 'Reboot a running server', 'running'),
    {
      command: [...groupOf(server), 'backups', 'list'],
      summary: "List a server's backups",
      method: 'GET',
      path: `/${server.path}/{id}/backups`,
      query: listQuerySchema(backup.states),
      paged: true,
      columns: columnsOf(backup),
    },
    {
      command: [...groupOf(server), 'backups', 'get'],
      summary: 'Get a backup of a server',
      method: 'GET',
      path: `/${server.path}/{id}/backups/{backup_id}`,
      columns: columnsOf(backup),
    },
    {
      command: [...groupOf(server), 'backups', 'create'],
      summary: 'Back up a server',
      method: 'POST',
      path: `/${server.path}/{id}/backups`,
      body: backup.schemas.create,
      columns: columnsOf(backup),
    },
    {
      command: [...groupOf(server), 'backups', 'delete'],
      summary: 'Delete a backup of a server',
      method: 'DELETE',
      path: `/${server.path}/{id}/backups/{backup_id}`,
      columns: columnsOf(backup),
    },
    {
      command: [...groupOf(server), 'restore'],
      summary: 'Restore a backup onto its server (the answer is the backup)',
      method: 'POST',
      path: `/${server.path}/{id}/restore`,
      body: Type.Object({ backup_id: Type.String({ minLength: 1, description: 'A completed backup of the server (bkp_...).' }) }),
      columns: columnsOf(backup),
    },
    shareAction('attach', 'Attach a file share to a server'),
    shareAction('detach', 'Detach a file share from a server'),
    {
      command: [...groupOf(incident), 'list'],
      summary: 'List incidents',
      method: 'GET',
      path: `/${incident.path}`,
      query: listQuerySchema(incident.states),
      paged: true,
      columns: columnsOf(incident),
    },
    { command: [...groupOf(incident), 'get'], summary: 'Get an incident', method: 'GET', path: `/${incident.path}/{id}`, columns: columnsOf(incident) },
    {
      command: [...groupOf(incident), 'acknowledge'],
      summary: 'Acknowledge an open incident',
      method: 'POST',
      path: `/${incident.path}/{id}/acknowledge`,
      columns: columnsOf(incident),
    },
    {
      command: [...groupOf(incident), 'resolve'],
      summary: 'Resolve an incident',
      method: 'POST',
      path: `/${incident.path}/{id}/resolve`,
      columns: columnsOf(incident),
    },
    {
      command: [...groupOf(job), 'cancel'],
      summary: 'Cancel a queued or running job',
      method: 'POST',
      path: `/${job.path}/{id}/cancel`,
      columns: columnsOf(job),
    },
    {
      command: [...groupOf(job), 'pause'],
      summary: 'Pause the schedule of a scheduled job',
      method: 'POST',
      path: `/${job.path}/{id}/pause`,
      columns: columnsOf(job),
    },
    {
      command: [...groupOf(job), 'resume'],
      summary: 'Resume the schedule of a paused job',
      method: 'POST',
      path: `/${job.path}/{id}/resume`,
      columns: columnsOf(job),
    },
    {
      command: [...groupOf(job), 'logs'],
      summary: "A run's output (the latest run unless --run-id)",
      method: 'GET',
      path: `/${job.path}/{id}/logs`,
      query: Type.Object({ run_id: Type.Optional(Type.String({ description: 'The run whose output to show; default the latest run.' })) }),
      columns: ['run_id', 'status', 'output'],
    },
    {
      command: [...groupOf(job), 'runs', 'list'],
      summary: 'List the runs of a job',
      method: 'GET',
      path: `/${job.path}/{id}/runs`,
      query: listQuerySchema(job.states),
      paged: true,
      columns: ['id', 'status', 'scheduled_at', 'exit_code', 'finished_at'],
    },
    {
      command: [...groupOf(job), 'runs', 'get'],
      summary: 'Get one run of a job',
      method: 'GET',
      path: `/${job.path}/{id}/runs/{run_id}`,
      columns: ['id', 'status', 'scheduled_at', 'exit_code', 'finished_at'],
    },
    {
      command: [...groupOf(vpn), 'status'],
      summary: 'Live tunnel status',
      method: 'GET',
      path: `/${vpn.path}/{id}/status`,
      columns: ['tunnel_status', 'bytes_sent', 'bytes_received', 'last_handshake'],
    },
    {
      command: [...groupOf(webhook), 'rotate-secret'],
      summary: 'Rotate the signing secret (the new one is shown once)',
      method: 'POST',
      path: `/${webhook.path}/{id}/rotate-secret`,
      columns: ['id', 'url', 'status', 'secret'],
    },
    {
      command: [...groupOf(webhook), 'ping'],
      summary: 'Send a test delivery (webhook.ping) to one subscription',
      method: 'POST',
      path: `/${webhook.path}/{id}/ping`,
      columns: columnsOf(delivery),
    },
    {
      command: [...groupOf(webhook), 'recover'],
      summary: 'Re-queue the failed deliveries created in [since, until)',
      method: 'POST',
      path: `/${webhook.path}/{id}/recover`,
      body: Type.Object({
        since: Type.String({ description: 'Deliveries created at or after this time (ISO 8601).' }),
        until: Type.String({ description: 'Deliveries created before this time (ISO 8601).' }),
      }),
      columns: columnsOf(delivery),
    },
    {
      command: ['webhook-deliveries', 'list'],
      summary: "Every delivery of the team's subscriptions, filtered",
      method: 'GET',
      path: '/webhook-deliveries',
      query: listQuerySchema(delivery.states, {
        event_type: Type.Optional(Type.String({ description: 'Only deliveries of this event type.' })),
        subscription_id: Type.Optional(Type.String({ description: 'Only deliveries of this subscription (wh_...).' })),
        since: Type.Optional(Type.String({ description: 'Only deliveries created at or after this time (ISO 8601).' })),
        until: Type.Optional(Type.String({ description: 'Only deliveries created before this time (ISO 8601).' })),
      }),
      paged: true,
      columns: columnsOf(delivery),
    },
    {
      command: [...groupOf(webhook), 'deliveries', 'list'],
      summary: 'Delivery history of a subscription',
      method: 'GET',
      path: `/${webhook.path}/{webhook_id}/deliveries`,
      query: listQuerySchema(delivery.states),
      paged: true,
      columns: columnsOf(delivery),
    },
    {
      command: [...groupOf(webhook), 'deliveries', 'get'],
      summary: 'Get a delivery',
      method: 'GET',
      path: `/${webhook.path}/{webhook_id}/deliveries/{delivery_id}`,
      columns: columnsOf(delivery),
    },
    {
      command: [...groupOf(webhook), 'deliveries', 'retry'],
      summary: 'Retry a delivery now',
      method: 'POST',
      path: `/${webhook.path}/{webhook_id}/deliveries/{delivery_id}/retry`,
      columns: columnsOf(delivery),
    },
    {
      command: [...groupOf(thread), 'read'],
      summary: 'Read the messages of a thread, oldest first',
      method: 'GET',
      path: `/${thread.path}/{thread_id}/messages`,
      query: Type.Object({
        cursor: Type.Optional(Type.String({ description: 'Pagination cursor from the previous page.' })),
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Results per page, 1-100, default 50.' })),
        role: Type.Optional(Type.String({ enum: [...MESSAGE_ROLES], description: 'Only messages of this role.' })),
        sort: Type.Optional(Type.String({ enum: ['created_at'], description: 'Sort field: created_at.' })),
        order: Type.Optional(Type.String({ enum: ['asc', 'desc'], description: 'Default asc (oldest first).' })),
      }),
      paged: true,
      columns: columnsOf(message),
    },
    {
      command: [...groupOf(thread), 'message'],
      summary: 'Get one message of a thread',
      method: 'GET',
      path: `/${thread.path}/{thread_id}/messages/{message_id}`,
      columns: columnsOf(message),
    },
    {
      command: [...groupOf(thread), 'ask'],
      summary: 'Ask the agent a question; prints the question and the answer',
      method: 'POST',
      path: `/${thread.path}/{thread_id}/messages`,
      body: message.schemas.create,
      bodyArgument: { field: 'content', label: 'question' },
      columns: columnsOf(message),
    },
    { command: [...groupOf(profile), 'get'], summary: 'Get your profile', method: 'GET', path: `/${profile.path}`, columns: columnsOf(profile) },
    {
      command: [...groupOf(profile), 'update'],
      summary: 'Update your profile',
      method: 'PATCH',
      path: `/${profile.path}`,
      body: profile.schemas.update,
      columns: columnsOf(profile),
    },
    { command: [...groupOf(team), 'get'], summary: 'Get the team', method: 'GET', path: `/${team.path}`, columns: columnsOf(team) },
    {
      command: [...groupOf(team), 'update'],
      summary: 'Update the team (owner or admin)',
      method: 'PATCH',
      path: `/${team.path}`,
      body: team.schemas.update,
      columns: columnsOf(team),
    },
    {
      command: ['settings', 'members', 'list'],
      summary: 'List team members',
      method: 'GET',
      path: members,
      query: listQuerySchema(profile.states),
      paged: true,
      columns: memberColumns,
    },
    { command: ['settings', 'members', 'get'], summary: 'Get a team member', method: 'GET', path: `${members}/{id}`, columns: memberColumns },
    {
      command: ['settings', 'members', 'invite'],
      summary: 'Invite a member (owner or admin)',
      method: 'POST',
      path: members,
      body: Type.Object({
        email: Type.String({ description: 'E-mail address of the member.' }),
        role: Type.String({ enum: [...ROLES], description: 'owner, admin, member or viewer.' }),
        name: Type.Optional(Type.String({ description: 'Display name; default the part of the e-mail before the @.' })),
      }),
      columns: memberColumns,
    },
    {
      command: ['settings', 'members', 'update'],
      summary: "Change a member's role",
      method: 'PATCH',
      path: `${members}/{id}`,
      body: Type.Object({ role: Type.String({ enum: [...ROLES], description: 'owner, admin, member or viewer.' }) }),
      columns: memberColumns,
    },
    {
      command: ['settings', 'members', 'remove'],
      summary: 'Remove a member (their keys are revoked)',
      method: 'DELETE',
      path: `${members}/{id}`,
      columns: memberColumns,
    },
    {
      command: [...groupOf(apiKey), 'list'],
      summary: 'List API keys',
      method: 'GET',
      path: `/${apiKey.path}`,
      query: listQuerySchema(apiKey.states),
      paged: true,
      columns: columnsOf(apiKey),
    },
    {
      command: [...groupOf(apiKey), 'create'],
      summary: 'Create an API key (the key is shown once)',
      method: 'POST',
      path: `/${apiKey.path}`,
      body: apiKey.schemas.create,
      columns: ['id', 'name', 'scope', 'expires_at', 'key'],
    },
    { command: [...groupOf(apiKey), 'revoke'], summary: 'Revoke an API key', method: 'DELETE', path: `/${apiKey.path}/{id}`, columns: [] },
    {
      command: [...groupOf(apiKey), 'rotate'],
      summary: 'Rotate an API key: a new key (shown once) replaces it, and it is revoked',
      method: 'POST',
      path: `/${apiKey.path}/{id}/rotate`,
      columns: ['id', 'name', 'scope', 'expires_at', 'key'],
    },
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
      columns: ['id', 'type', 'created_at', 'actor'],
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
      columns: ['since', 'until', 'resources', 'resource_hours', 'webhook_deliveries', 'api_requests'],
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
    {
      command: ['event-types', 'list'],
      summary: 'List the event types the service emits (what a webhook subscription can name)',
      method: 'GET',
      path: '/event-types',
      query: Type.Object({ category: Type.Optional(Type.String({ description: 'Only the types of this category (`server`, `load_balancer`, ...).' })) }),
      columns: ['type', 'category', 'description'],
    },
    {
      command: ['teams', 'list'],
      summary: 'List every team (installation admin)',
      method: 'GET',
      path: '/teams',
      query: listQuerySchema(team.states),
      paged: true,
      columns: columnsOf(team),
    },
    { command: ['teams', 'get'], summary: 'Get a team (installation admin)', method: 'GET', path: '/teams/{id}', columns: columnsOf(team) },
    {
      command: ['teams', 'create'],
      summary: "Create a team with its owner (installation admin); the owner's key is shown once",
      method: 'POST',
      path: '/teams',
      body: Type.Object({
        name: Type.String({ description: 'Team name.' }),
        owner_email: Type.String({ description: "The owner's e-mail address." }),
        owner_name: Type.Optional(Type.String({ description: "The owner's display name." })),
      }),
      columns: ['id', 'name', 'owner_id', 'api_key'],
    },
  ];
}

export function allOperations(): Operation[] {
  const generic = families.filter((f) => f.standardRoutes !== false || SAME_SHAPE_AS_GENERIC.includes(f.name));
  return [...generic.flatMap(crudOf), ...actions()];
}

/** The placeholders of a path, in order: `{webhook_id}` -> webhook_id. */
export function placeholdersOf(path: string): string[] {
  return [...path.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1]);
}
