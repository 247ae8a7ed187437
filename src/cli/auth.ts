/**
 * `cloudplane auth`: contexts (an endpoint and its key, by name) in the config file.
 * init verifies the key against the API before saving it; nothing prints a key back.
 */
import readline from 'node:readline';
import { Writable } from 'node:stream';
import { Command } from 'commander';
import { ApiClient } from './client';
import { configPath, normaliseApiUrl, readContexts, writeContexts } from './contexts';
import { CliError, EXIT, usageError } from './exit-codes';
import { globalsOf, note, print } from './session';
import { hasStrings } from '../lib/unknown-values';
import { entryOf } from '../lib/maps';

/** Reads answers line by line: from the terminal, with prompts (the key not echoed), or from a pipe. */
class Prompter {
  private readonly lines: string[] = [];
  private readonly waiting: ((line: string | undefined) => void)[] = [];
  private ended = false;
  private muted = false;
  private readonly rl: readline.Interface;

  constructor() {
    const interactive = Boolean(process.stdin.isTTY);
    const output = new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        if (!this.muted) process.stderr.write(chunk);
        done();
      },
    });
    this.rl = readline.createInterface({ input: process.stdin, output, terminal: interactive });
    this.rl.on('line', (line) => {
      const next = this.waiting.shift();
      if (next) next(line);
      else this.lines.push(line);
    });
    this.rl.on('close', () => {
      this.ended = true;
      for (const next of this.waiting.splice(0)) next(undefined);
    });
  }

  async ask(question: string, secret = false): Promise<string> {
    process.stderr.write(question);
    this.muted = secret;
    const line = this.lines.shift() ?? (this.ended ? undefined : await new Promise<string | undefined>((resolve) => this.waiting.push(resolve)));
    this.muted = false;
    if (secret) process.stderr.write('\n');
    if (line === undefined || line.trim() === '') throw usageError(`no answer to "${question.trim()}"; give --api-url and --api-key to run without questions`);
    return line.trim();
  }

  close(): void {
    this.rl.close();
  }
}

async function askMissing(url: string | undefined, key: string | undefined): Promise<{ url: string; key: string }> {
  if (url && key) return { url, key };
  const prompter = new Prompter();
  try {
    return {
      url: url ?? (await prompter.ask('API endpoint (e.g. http://127.0.0.1:8080): ')),
      key: key ?? (await prompter.ask('API key (cpk_..., not shown): ', true)),
    };
  } finally {
    prompter.close();
  }
}

interface Profile {
  email: string;
  team_id: string;
  role: string;
}

async function verify(apiUrl: string, apiKey: string, timeoutMs: number): Promise<Profile> {
  try {
    const profile = (await new ApiClient({ apiUrl, apiKey, timeoutMs }).request('GET', '/settings/profile')).body?.data;
    if (!hasStrings(profile, 'email', 'team_id', 'role')) throw new CliError(`the API at ${apiUrl} answered without a profile, nothing saved`, EXIT.apiError);
    return profile;
  } catch (err) {
    if (err instanceof CliError && err.exitCode === EXIT.auth) {
      throw new CliError(`the API at ${apiUrl} refused the key, nothing saved: ${err.message}`, EXIT.auth, err.code);
    }
    throw err;
  }
}

export function registerAuth(program: Command): void {
  const auth = program.command('auth').description('Contexts: API endpoints and their keys, in the config file');

  auth
    .command('init')
    .description('Add or replace a context (--context NAME, default "default") after checking its key, and make it current')
    .option('--api-url <url>', 'The API endpoint, e.g. https://cloudplane.example.com')
    .option('--api-key <key>', 'An API key (cpk_...); without it, it is asked for and not echoed')
    .action(async (_opts, command: Command) => {
      const opts = globalsOf(command);
      const name = opts.context ?? 'default';
      const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
      const answers = await askMissing(text(opts.apiUrl), text(opts.apiKey));
      const apiUrl = normaliseApiUrl(answers.url);
      const profile = await verify(apiUrl, answers.key, opts.timeout * 1000);
      const doc = readContexts();
      doc.contexts[name] = { api_url: apiUrl, api_key: answers.key };
      doc.current_context = name;
      writeContexts(doc);
      note(`Saved context ${name} in ${configPath()}: ${apiUrl}, ${profile.email} (${profile.role}) in team ${profile.team_id}. It is the current context.`);
    });

  auth
    .command('list')
    .description('List the contexts (the current one marked)')
    .action((_opts, command: Command) => {
      const doc = readContexts();
      const rows = Object.entries(doc.contexts).map(([name, c]) => ({ name, api_url: c.api_url, current: name === doc.current_context }));
      print(command, rows, ['name', 'api_url', 'current']);
    });

  auth
    .command('switch')
    .description('Make a context the current one')
    .argument('<name>')
    .action((name: string) => {
      const doc = readContexts();
      if (!entryOf(doc.contexts, name)) throw usageError(`no context named ${name} (cloudplane auth list)`);
      doc.current_context = name;
      writeContexts(doc);
      note(`Current context: ${name}.`);
    });

  auth
    .command('remove')
    .description('Remove a context and its key from the config file')
    .argument('<name>')
    .action((name: string) => {
      const doc = readContexts();
      if (!entryOf(doc.contexts, name)) throw usageError(`no context named ${name} (cloudplane auth list)`);
      delete doc.contexts[name];
      if (doc.current_context === name) doc.current_context = null;
      writeContexts(doc);
      note(`Removed context ${name}.`);
    });
}
