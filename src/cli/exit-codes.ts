/**
 * The CLI's exit codes, which scripts rely on (docs/cli.md, Exit codes). Every failure is a
 * CliError carrying one of them; nothing else decides how the process ends.
 */
export const EXIT = {
  ok: 0,
  /** The API refused the request (4xx other than below), or a waited-for resource failed. */
  apiError: 1,
  /** The command line is wrong: unknown command or option, missing argument, unreadable --file. */
  usage: 2,
  /** The resource does not exist (404). */
  notFound: 3,
  /** No credentials, or the API refused them (401, 403). */
  auth: 4,
  /** The API could not answer: unreachable, timed out, 429, 5xx. Worth retrying later. */
  unavailable: 5,
  /** --wait gave up before the resource reached its status. */
  waitTimedOut: 6,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export const isExitCode = (code: unknown): code is ExitCode => Object.values(EXIT).some((known) => known === code);

export interface FieldDetail {
  field: string;
  message: string;
}

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode,
    /** The API's error code, when the API gave one. */
    readonly code?: string,
    readonly details: FieldDetail[] = [],
  ) {
    super(message);
  }

  /** `Error: validation_failed: port: must be <= 65535` (one line per field). */
  render(): string {
    const head = this.code ? `${this.code}: ` : '';
    if (this.details.length === 0) return `Error: ${head}${this.message}`;
    return this.details.map((d) => `Error: ${head}${d.field}: ${d.message}`).join('\n');
  }
}

export const usageError = (message: string) => new CliError(message, EXIT.usage);

/** The exit code of an API error answer. */
export function exitCodeOfStatus(status: number): ExitCode {
  if (status === 404) return EXIT.notFound;
  if (status === 401 || status === 403) return EXIT.auth;
  if (status === 429 || status >= 500) return EXIT.unavailable;
  return EXIT.apiError;
}
