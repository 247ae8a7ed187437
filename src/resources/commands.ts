/**
 * A family's API calls beyond the generic list, get, create, update and delete, as the CLI
 * offers them: its actions and sub-resources (a server's `stop`, a webhook's deliveries).
 * Declared in the family's definition (FamilyDefinition.commands), so that what a family
 * is, how it is shown and what may be done with it are read in one place; the routes
 * that serve them are in its module. `api/operations.ts` turns each into a command (and an MCP tool).
 */
import type { TObject, TProperties } from '@sinclair/typebox';

export type CommandMethod = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

export interface FamilyCommand {
  /** The command's words after its group (by default the family's path segments): `['attach']`, `['backups', 'list']`. */
  words: readonly string[];
  summary: string;
  method: CommandMethod;
  /** Its path under the base, placeholders in braces: `/{id}/attach`; `''` for the base itself. */
  path: string;
  /** A base other than the family's own path (`/teams`), with the group its commands go in. */
  base?: { path: string; group: readonly string[] };
  body?: TObject;
  /** A body field taken from the last positional argument instead of a flag (ask's question). */
  bodyArgument?: { field: string; label: string };
  /** The query: a schema of its own, or `list`, a page of the answered family's records (with `filters`, more of them). */
  query?: TObject | { list: true; filters?: TProperties };
  /** A list that pages with meta.next_cursor. */
  paged?: boolean;
  /** The family whose records the answer holds (its columns and states, where --wait polls); this one by default. */
  answers?: string;
  /** Columns other than the answered family's. */
  columns?: readonly string[];
  /** --wait: the states of the answered resource that end it. */
  waitFor?: readonly string[];
  /**
   * The answer is a document of this media type, not an envelope (a cluster's kubeconfig):
   * printed as it is, or written to the file given by the flag `--<fileFlag>`.
   */
  document?: { mediaType: string; fileFlag: string };
  /**
   * The answer names the version of the resource at `{id}` (its ETag), and a change takes
   * If-Match on it (docs/api.md, Versions): `--show-version`, and `--if-match` on a change.
   */
  versioned?: boolean;
  /**
   * Its route takes `?dry_run=true` (docs/api.md, "Trying a change first"): judged as for
   * real, nothing changed. The CLI's `--dry-run`.
   */
  dryRun?: boolean;
}

/** A family's command group: its path's segments (`agent/threads` -> `agent threads`). */
export const commandGroupOf = (family: { path: string }): string[] => family.path.split('/');

/** The words of one of a family's own commands: its group (the family's, or its base's), then its words. */
export const commandWordsOf = (family: { path: string }, command: FamilyCommand): string[] => [
  ...(command.base?.group ?? commandGroupOf(family)),
  ...command.words,
];

/** The path of one of a family's own commands under /api/v1. */
export const commandPathOf = (family: { path: string }, command: FamilyCommand): string => `${command.base?.path ?? `/${family.path}`}${command.path}`;
