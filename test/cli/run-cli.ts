/**
 * Runs the built CLI (`node dist/src/main.js ...`, rebuilt with `npx tsc -p tsconfig.json`)
 * as a child process, as a user's shell would, and collects what it printed and its exit code.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';

const MAIN = path.resolve(__dirname, '../../dist/src/main.js');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env?: Record<string, string | undefined>;
  /** Written to the CLI's stdin, which is then closed. */
  input?: string;
}

/** A fresh config file path (its directory does not exist yet). */
export function freshConfigPath(): string {
  return path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-cli-')), 'nested', 'config.yaml');
}

/** The environment of a CLI run: none of the caller's CLOUDPLANE_ variables leak in. */
function cliEnv(extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('CLOUDPLANE_')) env[name] = value;
  for (const [name, value] of Object.entries(extra)) if (value !== undefined) env[name] = value;
  return env;
}

export function cli(args: string[], options: CliOptions = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], { env: cliEnv(options.env ?? {}), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

/** A CLI bound to one endpoint and key through the environment; `json` parses `-o json` output. */
export function boundCli(url: string, key: string, env: Record<string, string> = {}) {
  const base = { CLOUDPLANE_API_URL: url, CLOUDPLANE_API_KEY: key, CLOUDPLANE_CONFIG: freshConfigPath(), ...env };
  const run = (args: string[], options: CliOptions = {}) => cli(args, { ...options, env: { ...base, ...options.env } });
  const json = async (args: string[], options: CliOptions = {}): Promise<any> => {
    const result = await run([...args, '-o', 'json'], options);
    if (result.code !== 0) throw new Error(`cloudplane ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
    return JSON.parse(result.stdout);
  };
  return { run, json };
}

/** No stack trace: no `    at ` frame lines, no `node:internal`. */
export const hasStackTrace = (text: string) => /^\s+at\s/m.test(text) || text.includes('node:internal');

/** A line typed into the terminal once the output so far matches `after` (a prompt). */
export interface Typed {
  after: RegExp;
  line: string;
}

/**
 * Runs the CLI with a terminal as stdin, stdout and stderr (util-linux `script`); its
 * output is both streams mixed. Each `typed` line is typed once its prompt has appeared.
 */
export function cliInTerminal(args: string[], env: Record<string, string>, typed: Typed[] = []): Promise<CliRun> {
  const quoted = [process.execPath, MAIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qfec', quoted, '/dev/null'], { env: cliEnv(env), stdio: ['pipe', 'pipe', 'pipe'] });
    const pending = [...typed];
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      while (pending.length > 0 && pending[0].after.test(stdout)) child.stdin.write(`${pending.shift()!.line}\r`);
      if (pending.length === 0) child.stdin.end();
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    if (pending.length === 0) child.stdin.end();
  });
}
