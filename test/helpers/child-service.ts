/**
 * Runs the real service as a child process (`node dist/src/main.js`, as `make run`
 * does), so that a test can kill it with SIGKILL and start it again on the same data
 * directory. `make test` builds dist/ first; when iterating, run `npx tsc -p .`.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { spawnTracked } from './processes';
import { freePort } from './kube-apiserver';
import { request, eventually, ApiResponse, RequestOptions } from './service';
import { packageRoot } from '../../src/lib/package-root';

/** The built service's entry point (make build). */
export const MAIN = path.join(packageRoot(__dirname), 'dist', 'src', 'main.js');
const LISTENING = /listening on (http:\/\/\S+?) /;

export interface ChildService {
  child: ChildProcess;
  url: string;
  api: (method: string, path: string, body?: unknown, options?: RequestOptions) => Promise<ApiResponse>;
  /** SIGKILL: no shutdown code runs, as in a crash or an OOM kill. Resolves once it is gone. */
  kill(): Promise<void>;
  /** SIGTERM: the graceful shutdown of main.ts. Resolves with the exit code. */
  stop(): Promise<number | null>;
  /** The last lines the process printed, for failure messages. */
  output(): string;
}

export interface ChildOptions {
  dataDir: string;
  /** The API key of the first team (CLOUDPLANE_BOOTSTRAP_API_KEY), used by `api`. */
  key: string;
  env?: Record<string, string>;
  startTimeoutMs?: number;
  /** A command the service runs under, e.g. `['prlimit', '--nofile=96:96']` (it must exec the rest). */
  prefix?: string[];
  /**
   * A file descriptor for the service's stdout instead of a pipe (e.g. one of /dev/full).
   * The service then cannot tell the test its address there, so it listens on a port
   * picked here and is ready once /healthz answers.
   */
  stdoutFd?: number;
  /** The node executable; by default the one running the tests. */
  node?: string;
}

export async function startChildService(options: ChildOptions): Promise<ChildService> {
  if (!fs.existsSync(MAIN)) throw new Error(`${MAIN} is missing: build first (make build, or npx tsc -p .)`);
  const port = options.stdoutFd === undefined ? 0 : await freePort();
  const [command, ...args] = [...(options.prefix ?? []), options.node ?? process.execPath, MAIN];
  const child = spawnTracked(command, args, {
    env: {
      PATH: process.env.PATH ?? '',
      CLOUDPLANE_PORT: String(port),
      CLOUDPLANE_HOST: '127.0.0.1',
      CLOUDPLANE_DATA_DIR: options.dataDir,
      CLOUDPLANE_BOOTSTRAP_API_KEY: options.key,
      CLOUDPLANE_LOG_LEVEL: 'warn',
      ...options.env,
    },
    stdio: ['ignore', options.stdoutFd ?? 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const lines: string[] = [];
  const remember = (chunk: Buffer) => {
    lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    if (lines.length > 200) lines.splice(0, lines.length - 200);
  };
  child.stderr!.on('data', remember);

  // A guard against a service that hangs, not a measure: a busy CI machine (two CPUs, every
  // worker starting services) took over 20 s to start one.
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;
  const url = await new Promise<string>((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => fail(new Error(`the service did not start within ${startTimeoutMs} ms`)), startTimeoutMs);
    const listening = (address: string) => {
      clearTimeout(timer);
      resolve(address);
    };
    const fail = (err: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`${err.message}\n${lines.join('\n')}`));
    };
    if (child.stdout) {
      child.stdout.on('data', (chunk: Buffer) => {
        remember(chunk);
        buffered += chunk.toString('utf8');
        const match = LISTENING.exec(buffered);
        if (match) listening(match[1]);
      });
    } else {
      const address = `http://127.0.0.1:${port}`;
      eventually(async () => (await fetch(`${address}/healthz`)).ok, startTimeoutMs, 100).then(
        () => listening(address),
        () => undefined,
      );
    }
    child.once('error', (err) => fail(new Error(`could not start ${command}: ${err.message}`)));
    void exited.then((code) => fail(new Error(`the service exited with code ${code} before listening`)));
  });

  return {
    child,
    url,
    api: (method, urlPath, body, opts = {}) => request(url, method, urlPath, body, { key: opts.key === undefined ? options.key : opts.key, ...opts }),
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
    output: () => lines.join('\n'),
  };
}

/**
 * `writers` loops creating buckets back to back against whichever service `current` gives,
 * through kills and restarts: a create that fails on the wire may or may not exist, so
 * only the 201s are `acknowledged`; any other answer is `unexpected`.
 */
export function createBucketStream(current: () => ChildService, writers: number, namePrefix: string) {
  const acknowledged = new Set<string>();
  const unexpected: string[] = [];
  let stopped = false;
  let n = 0;
  const writer = async () => {
    while (!stopped) {
      let res;
      try {
        res = await current().api('POST', '/api/v1/object-storage', { name: `${namePrefix}-${n++}`, region: 'fra1' });
      } catch {
        // The service is down (or died with this create on the wire).
        await new Promise((resolve) => setTimeout(resolve, 50));
        continue;
      }
      if (res.status === 201) acknowledged.add(res.body.data.id);
      else unexpected.push(`POST -> ${res.status} ${JSON.stringify(res.body)}`);
    }
  };
  const done = Promise.all(Array.from({ length: writers }, writer));
  return {
    acknowledged,
    unexpected,
    async stop() {
      stopped = true;
      await done;
    },
  };
}
