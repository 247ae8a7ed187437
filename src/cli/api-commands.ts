/** The API's commands, built from the operation table (operations.ts). */
import fs from 'node:fs';
import { Command } from 'commander';
import YAML from 'yaml';
import { presentationOf } from '../resources/presentation-of';
import { allOperations, Operation, placeholdersOf } from '../api/operations';
import { addSchemaFlags, kebab, parseSeconds, readBodyFile, schemaValues } from './flags';
import { clientFor, globalsOf, note, print } from './session';
import { isResource, waitFor } from './wait';
import { watchList } from './list-watch';
import { CliError, EXIT, usageError } from './exit-codes';
import type { ApiClient, Query } from './client';
import { families } from '../resources/registry';
import { fieldOf, textOf } from '../lib/unknown-values';

/** Descriptions of the command groups that are not a family of their own. */
const GROUP_DESCRIPTIONS: Record<string, string> = {
  settings: 'Your profile, the team, its members and API keys',
  agent: "The team's agent: threads of questions and answers",
  deliveries: "A subscription's delivery history, and retries",
  members: "The team's members and their roles",
  'audit-log': "Search the team's events",
  regions: 'Regions resources can be created in',
  teams: 'Every team of the installation (installation admin)',
  profile: 'Your profile',
  team: 'The team',
  'api-keys': "The team's API keys",
};

function describeGroup(words: string[]): string {
  const described = GROUP_DESCRIPTIONS[words[words.length - 1]];
  if (described) return described;
  const family = families.find((f) => f.path === words.join('/'));
  return family ? presentationOf(family).title : '';
}

/** The group command for `words`, made on first use. */
function groupCommand(root: Command, words: string[]): Command {
  let parent = root;
  words.forEach((word, i) => {
    const existing = parent.commands.find((c) => c.name() === word);
    parent = existing ?? parent.command(word).description(describeGroup(words.slice(0, i + 1)));
  });
  return parent;
}

function bodyOf(operation: Operation, opts: Record<string, unknown>, args: string[]): Record<string, unknown> | undefined {
  if (!operation.body) return undefined;
  const fromFile = typeof opts.file === 'string' ? readBodyFile(opts.file) : {};
  const body = { ...fromFile, ...schemaValues(opts, 'body', operation.body) };
  if (operation.bodyArgument) body[operation.bodyArgument.field] = args[args.length - 1];
  return body;
}

/** The query flags given, as the client sends them: scalars as they are, anything else as its text (the client's String()). */
function queryOf(values: Record<string, unknown>): Query {
  const query: Query = {};
  for (const [name, value] of Object.entries(values)) {
    query[name] = typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? value : String(value);
  }
  return query;
}

async function listPages(client: ApiClient, path: string, query: Query, all: boolean): Promise<unknown[]> {
  const rows: unknown[] = [];
  let cursor = query.cursor;
  for (;;) {
    const answer = await client.request('GET', path, { query: { ...query, cursor } });
    const data = answer.body?.data;
    const page: unknown[] = Array.isArray(data) ? data : [];
    rows.push(...page);
    const next = answer.body?.meta?.next_cursor;
    if (!next) return rows;
    if (!all) {
      note(`More results: add --cursor ${next}, or --all for every page.`);
      return rows;
    }
    cursor = next;
  }
}

const DEFAULT_WAIT_SECONDS = 300;

/**
 * A document the API answers as it is (a kubeconfig): printed unchanged (as JSON with `-o
 * json`), or written to the file the command's flag names, mode 0600, as it may hold a
 * credential; the note saying so goes to stderr.
 */
async function runDocument(operation: Operation, document: NonNullable<Operation['document']>, command: Command, path: string): Promise<void> {
  const opts = globalsOf(command);
  const text = await clientFor(command).document(operation.method, path, document.mediaType);
  const file = opts[camel(document.fileFlag)];
  if (typeof file === 'string') {
    try {
      fs.writeFileSync(file, text, { mode: 0o600 });
      // A file that was there keeps its mode on a write: the credential must not stay readable by others.
      fs.chmodSync(file, 0o600);
    } catch (err) {
      throw usageError(`cannot write ${file}: ${textOf(err)}`);
    }
    note(`Wrote ${file}.`);
    return;
  }
  process.stdout.write(opts.output === 'json' ? `${JSON.stringify(YAML.parse(text), null, 2)}\n` : text);
}

const camel = (flag: string) => flag.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());

async function run(operation: Operation, command: Command, args: string[]): Promise<void> {
  // Besides its schema's fields, an API command may declare --file, --all, --wait and --wait-timeout (registerOperations).
  const opts = globalsOf(command);
  const client = clientFor(command);
  const ids = args.slice(0, placeholdersOf(operation.path).length);
  let index = 0;
  const path = operation.path.replace(/\{[a-z_]+\}/g, () => encodeURIComponent(ids[index++]));
  if (operation.document) {
    await runDocument(operation, operation.document, command, path);
    return;
  }
  const query = operation.query ? queryOf(schemaValues(opts, 'query', operation.query)) : undefined;
  if (operation.watchable && opts.watch === true) {
    // A watch streams the whole family: a page or filter would be silently dropped.
    const paging = [...Object.keys(query ?? {}), ...(opts.all === true ? ['all'] : [])];
    if (paging.length > 0) throw usageError(`--watch takes no --${kebab(paging[0])}: a watch streams every resource of the family`);
    const timeout = typeof opts.watchTimeout === 'number' ? opts.watchTimeout : undefined;
    await watchList(client, path, opts.output, operation.columns, timeout);
    return;
  }
  if (operation.paged) {
    print(command, await listPages(client, path, query ?? {}, opts.all === true), operation.columns);
    return;
  }
  const ifMatch = typeof opts.ifMatch === 'string' ? opts.ifMatch : undefined;
  const answer = await client.request(operation.method, path, { query, body: bodyOf(operation, opts, args), ...(ifMatch === undefined ? {} : { ifMatch }) });
  if (opts.showVersion === true)
    note(
      answer.version === null
        ? 'The answer names no version.'
        : `Version: ${answer.version} (a change with --if-match '${answer.version}' is made only while it holds)`,
    );
  let data = answer.body?.data;
  if (data === undefined) {
    // 204: done, nothing to show (an API key revoked).
    note(`Done: ${[...operation.command, ...ids].join(' ')}.`);
    return;
  }
  // A dry run (docs/api.md): the resource as the change would leave it; nothing to wait for.
  const dryRun = fieldOf(answer.body?.meta, 'dry_run') === true;
  if (dryRun) note('Dry run: nothing was changed. This is the resource as the change would leave it.');
  if (operation.wait && opts.wait === true && !dryRun) {
    if (!isResource(data)) throw new CliError('the API answered without the resource to wait for', EXIT.apiError, 'wait_failed');
    const waitSeconds = typeof opts.waitTimeout === 'number' ? opts.waitTimeout : DEFAULT_WAIT_SECONDS;
    data = await waitFor(client, operation.wait, data, waitSeconds * 1000);
  }
  print(command, data, operation.columns, operation.tableRows);
}

/**
 * The changes that take If-Match (docs/api.md, Versions): those of a versioned resource,
 * but its create (a POST whose path names no resource).
 */
export const takesIfMatch = (operation: Operation) =>
  operation.versioned === true && operation.method !== 'GET' && (operation.method !== 'POST' || placeholdersOf(operation.path).length > 0);

export function registerOperations(root: Command, operations: Operation[] = allOperations()): void {
  for (const operation of operations) {
    const words = operation.command;
    const command = groupCommand(root, words.slice(0, -1))
      .command(words[words.length - 1])
      .description(operation.summary);
    for (const placeholder of placeholdersOf(operation.path)) command.argument(`<${kebab(placeholder)}>`);
    if (operation.bodyArgument) command.argument(`<${operation.bodyArgument.label}>`);
    if (operation.body) {
      addSchemaFlags(command, 'body', operation.body, operation.bodyArgument ? [operation.bodyArgument.field] : []);
      command.option('-f, --file <path>', 'Request body from a JSON or YAML file (- for stdin); flags override its fields');
    }
    if (operation.query) addSchemaFlags(command, 'query', operation.query);
    if (operation.paged) command.option('--all', 'Follow the cursor through every page');
    if (operation.watchable) {
      command.option('-w, --watch', 'Print the resources, then every change as it happens, until interrupted (docs/cli.md)');
      command.option('--watch-timeout <seconds>', 'Stop watching after this long', parseSeconds);
    }
    if (operation.document) command.option(`--${operation.document.fileFlag} <path>`, 'Write it to this file (mode 0600) instead of printing it');
    if (takesIfMatch(operation)) {
      command.option(
        '--if-match <version>',
        'Make the change only while the resource is at this version (--show-version of get prints it); else exit 1, precondition_failed',
      );
    }
    if (operation.versioned) command.option('--show-version', 'Print the version of the resource the answer shows (its ETag) to stderr');
    if (operation.wait) {
      command.option('--wait', `Wait until the resource is ${operation.wait.target.join(' or ')}`);
      command.option('--wait-timeout <seconds>', 'Give up waiting after this long (exit code 6)', parseSeconds, DEFAULT_WAIT_SECONDS);
    }
    // Commander calls an action with the command as `this`; its arguments have no parsers, so they are strings.
    command.action(async function (this: Command) {
      await run(operation, this, this.processedArgs.map(String));
    });
  }
}
