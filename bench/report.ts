/** What every benchmark records beside its figures, and where it writes them. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { packageRoot } from '../src/lib/package-root';
import { Worker } from 'node:worker_threads';

/** bench/results of the repository, from bench/ (ts-node) or dist/bench/ (built). */
const RESULTS_DIR = path.resolve(__dirname, __dirname.includes(`${path.sep}dist${path.sep}`) ? '../..' : '..', 'bench', 'results');

/** The machine a run happened on, so figures are never read without it. */
export function machine() {
  const cpus = os.cpus();
  return {
    cpu_model: cpus[0]?.model ?? 'unknown',
    cpu_count: cpus.length,
    total_memory_gb: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    node: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
  };
}

/** Writes bench/results/<name>-<timestamp>.json and <name>-latest.md; returns their paths. */
export function writeResults(name: string, startedAt: Date, report: unknown, markdown: string): { jsonFile: string; markdownFile: string } {
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  const stamp = startedAt
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  const jsonFile = path.join(RESULTS_DIR, `${name}-${stamp}.json`);
  const markdownFile = path.join(RESULTS_DIR, `${name}-latest.md`);
  fs.writeFileSync(jsonFile, `${JSON.stringify(report, null, 2)}\n`);
  fs.writeFileSync(markdownFile, markdown);
  return { jsonFile: path.relative(process.cwd(), jsonFile), markdownFile: path.relative(process.cwd(), markdownFile) };
}

export const mb = (bytes: number) => Math.round((bytes / 1024 ** 2) * 10) / 10;

/** `n` to `digits` decimals, for a report. */
export const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

/**
 * The process's memory once it has been left idle for `idleMs` (no forced collection): V8's
 * memory reducer, which starts a few seconds after the allocation rate falls, compacts the
 * old generation and gives back the pages a burst of allocation left part empty. Right
 * after a burst, two forced collections still leave those pages committed (260,000 webhook
 * deliveries: 136 MB of old generation for 113 MB live, 2026-11-30), which is the burst's
 * cost, not what the process keeps.
 */
export async function memorySettled(idleMs: number) {
  await new Promise((resolve) => setTimeout(resolve, idleMs));
  return memoryNow();
}

/** The process's memory as it is, in MB. */
function memoryNow() {
  const m = process.memoryUsage();
  return { rss_mb: mb(m.rss), heap_used_mb: mb(m.heapUsed), heap_total_mb: mb(m.heapTotal), external_mb: mb(m.external), array_buffers_mb: mb(m.arrayBuffers) };
}

/**
 * The process's memory after two forced collections (node --expose-gc), with a turn of the
 * event loop between: weak references and finalizers of the first are freed by the second.
 */
export async function memoryAfterGc() {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  gc();
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  return memoryNow();
}

/** A forked child's next IPC reply of `type`; its `failed` reply, its exit or the timeout reject. */
export function nextReply<R extends { type: string }, T extends R['type']>(
  child: ChildProcess,
  who: string,
  type: T,
  timeoutMs: number,
): Promise<Extract<R, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      finish(new Error(`the ${who} did not answer ${type} within ${timeoutMs} ms`));
    }, timeoutMs);
    const onMessage = (reply: R) => {
      if (reply.type === type) finish(reply as Extract<R, { type: T }>);
      else if (reply.type === 'failed') finish(new Error(`${who}: ${(reply as { error?: string }).error}`));
    };
    const onExit = (code: number | null, signal: string | null) => {
      finish(new Error(`the ${who} exited (${code ?? signal}) while waiting for ${type}`));
    };
    // A reply comes over IPC as plain data, never as an Error: an Error is a failure.
    const finish = (outcome: Error | Extract<R, { type: T }>) => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/** A forked child's reply to the benchmark that forked it (which waits for it with nextReply). */
export function sendReply(reply: { type: string }): void {
  if (!process.send) throw new Error(`no IPC channel to send ${reply.type} on: this is a benchmark's child, to be forked by it`);
  process.send(reply);
}

/** What a failure says in a benchmark's log: an Error's stack (its message when it has none), anything else thrown written out. */
export const stackOf = (err: unknown): string => (err instanceof Error ? (err.stack ?? err.message) : String(err));

/**
 * Node flags of a forked service child: --expose-gc for memoryAfterGc, a CPU profile of the
 * child into BENCH_CPU_PROF_DIR when that is set (written when the child exits), and any
 * flags of BENCH_SERVICE_NODE_FLAGS (space-separated: --trace-gc, say).
 */
export function serviceExecArgv(): string[] {
  const profileDir = process.env.BENCH_CPU_PROF_DIR;
  const extra = (process.env.BENCH_SERVICE_NODE_FLAGS ?? '').split(' ').filter(Boolean);
  return ['--expose-gc', ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []), ...extra];
}

/** Linux's clock ticks per second (USER_HZ), the unit of /proc's CPU times: 100 on every common kernel. */
const CLOCK_TICKS_PER_S = 100;

/** CPU seconds (user + system) of a /proc `stat` file (a process's, or one thread's); undefined if unreadable (gone, not Linux). */
export function cpuSecondsOfStat(statFile: string): number | undefined {
  try {
    // Fields after the command, which sits in parentheses and may hold spaces: utime and stime are the 12th and 13th.
    const stat = fs.readFileSync(statFile, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_S;
  } catch {
    return undefined;
  }
}

/** CPU seconds (user + system) a process has used so far; 0 once it is gone. */
export const cpuSecondsOf = (pid: number): number => cpuSecondsOfStat(`/proc/${pid}/stat`) ?? 0;

/** The processes whose command line holds `text` (a directory only they were given). */
export function pidsWithArgument(text: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** The machine's busy and total CPU seconds so far, over every CPU, from /proc/stat. */
export function machineCpuSeconds(): { busy: number; total: number } {
  const [, ...ticks] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  // user nice system idle iowait irq softirq steal ...: idle and iowait are the only ones not busy.
  const total = ticks.slice(0, 8).reduce((a, b) => a + b, 0);
  const idle = ticks[3] + ticks[4];
  return { busy: (total - idle) / CLOCK_TICKS_PER_S, total: total / CLOCK_TICKS_PER_S };
}

/** Runs a benchmark's worker module (`file`, beside this one in dist/bench) on `data` and resolves with the one message it posts. */
export function resultOfWorker<T>(file: string, data: unknown, who: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(path.join(__dirname, file), { workerData: data });
    let result: T | undefined;
    worker.once('message', (message: T) => (result = message));
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (result !== undefined) resolve(result);
      else reject(new Error(`the ${who} exited (${code}) without a result`));
    });
  });
}

/** Which commit of Cloudplane was built, and which source files differed from it (others' work in progress). */
export function sourceState(): { commit: string; uncommitted_src: string[] } {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: packageRoot(__dirname), encoding: 'utf8' }).trim();
  try {
    return { commit: git('rev-parse', 'HEAD'), uncommitted_src: git('status', '--porcelain', '--', 'src').split('\n').filter(Boolean) };
  } catch {
    return { commit: 'unknown', uncommitted_src: [] };
  }
}
