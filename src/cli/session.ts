/** What every API command shares: its client from the context and flags, and printing its answer. */
import type { Command } from 'commander';
import { ApiClient } from './client';
import { resolveCredentials } from './contexts';
import { OutputFormat, render } from './output';

export interface GlobalOptions {
  context?: string;
  output: OutputFormat;
  timeout: number;
}

/** The global options with the command's own: the flags it declares, as their parsers make them, each read by its type. */
export const globalsOf = (command: Command) => command.optsWithGlobals<GlobalOptions & Record<string, unknown>>();

export function clientFor(command: Command): ApiClient {
  const { context, timeout } = globalsOf(command);
  const { apiUrl, apiKey } = resolveCredentials(context);
  return new ApiClient({ apiUrl, apiKey, timeoutMs: timeout * 1000 });
}

/** `tableRows`: what a table shows of an answer that is no record or list of them (operations.ts). */
export function print(command: Command, data: unknown, columns: string[], tableRows?: (data: unknown) => Array<Record<string, unknown>>): void {
  const format = globalsOf(command).output;
  process.stdout.write(render(format === 'table' && tableRows ? tableRows(data) : data, format, columns));
}

/** A note for people (more pages, what was done), on stderr so stdout stays parseable. */
export const note = (text: string) => process.stderr.write(`${text}\n`);
