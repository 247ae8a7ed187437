/**
 * Noisy-neighbour benchmark (`make bench-noisy`): one install, two teams. A quiet team reads,
 * creates and follows its creates to `running` (bench/noisy-probe.ts, in a worker thread)
 * alone, then while a noisy team runs each abuse an attacker with one ordinary key tried, one
 * phase each, then alone again. Every row is the quiet team's p99 over its own p99 when alone
 * in the same run. At the end it checks that nothing was lost: every create the noisy team
 * had acknowledged is `running`, and every webhook delivery is made or recorded as failed.
 *
 * The service is the real one, `node dist/src/main.js` as `make run` starts it, in a child
 * process on a fresh data directory, with the default limits (rate limit, quotas, fair
 * sharing); only the simulated provider's delay, the resync period and the webhook retry
 * schedule are shortened so that a phase sees several of each. See bench/README.md.
 */
import { spawn, spawnSync, ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { known } from '../src/lib/known';
import { fieldOf } from '../src/lib/unknown-values';
import { machine, writeResults } from './report';
import { runQuietProbe, percentilesOf, ProbeResult, Measure, GET_EVERY_MS, CREATE_EVERY_MS } from './noisy-probe';

/** 60 s: 600 creates a phase, so that a create p99 is its sixth-slowest sample. */
const PHASE_S = Number(process.env.BENCH_PHASE_S ?? 60);
/** Words: only the abuses whose name holds one (e.g. `BENCH_ABUSES="never,burst"`); every abuse without it. */
const ONLY = (process.env.BENCH_ABUSES ?? '')
  .split(',')
  .map((word) => word.trim())
  .filter(Boolean);
const ADMIN_KEY = 'cpk_Noisy0123456789abcdefghijABCDEFGHIJKLMNO';
const REGION = 'fra1';
const MAIN = path.resolve(__dirname, '../src/main.js');
const REFUSAL_PEER = path.resolve(__dirname, 'refusal-peer.js');
/** How long each flood runs against the refusal peer. */
const PEER_S = Number(process.env.BENCH_PEER_S ?? 20);

interface Api {
  (key: string, method: string, urlPath: string, body?: unknown, raw?: string): Promise<{ status: number; json: unknown }>;
}

function apiOf(url: string): Api {
  return async (key, method, urlPath, body, raw) => {
    try {
      const res = await fetch(`${url}${urlPath}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body !== undefined || raw !== undefined ? { 'content-type': 'application/json' } : {}) },
        body: raw ?? (body !== undefined ? JSON.stringify(body) : undefined),
        signal: AbortSignal.timeout(60_000),
      });
      const text = await res.text();
      let json: unknown = null;
      try {
        json = JSON.parse(text);
      } catch {
        json = null;
      }
      return { status: res.status, json };
    } catch {
      return { status: 0, json: null };
    }
  };
}

/** The string at `path` below an answer's `data` (an id, a key): the run cannot go on without it. */
function dataString(json: unknown, ...path: string[]): string {
  const value = path.reduce((at, key) => fieldOf(at, key), fieldOf(json, 'data'));
  if (typeof value !== 'string') throw new Error(`no data.${path.join('.')} in the answer ${JSON.stringify(json)}`);
  return value;
}

/** How many items an answer's `data` lists; -1 when it lists none (a refusal, a failed request). */
function listLength(json: unknown): number {
  const data = fieldOf(json, 'data');
  return Array.isArray(data) ? data.length : -1;
}

/**
 * On two CPUs or more, the service gets CPU 0 and this process (both teams' clients) the
 * rest: on a small machine the noisy client's own work would otherwise take the service's
 * CPU, and the ratio would measure the load generator rather than how the service shares
 * itself between teams. An attacker's client runs on the attacker's machine.
 */
function cpuPinning(): { service: string[]; note: string } {
  const cpus = os.availableParallelism();
  const taskset = ['/usr/bin/taskset', '/bin/taskset'].find((file) => fs.existsSync(file));
  if (cpus < 2 || !taskset || process.env.BENCH_PIN === '0') return { service: [], note: "not pinned: the service shares every CPU with both teams' clients" };
  const others = `1-${cpus - 1}`;
  spawnSync(taskset, ['-a', '-p', '-c', others, String(process.pid)], { stdio: 'ignore' });
  return { service: [taskset, '-c', '0'], note: `the service pinned to CPU 0, both teams' clients to CPUs ${others}` };
}

/** The URL a child process (the service, the refusal peer) prints once it listens. */
function listeningUrl(child: ChildProcess & { stdout: Readable }, what: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => {
      reject(new Error(`${what} did not start within 60 s`));
    }, 60_000);
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const match = /listening on (http:\/\/\S+?) /.exec(buffered);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once('exit', (code) => {
      reject(new Error(`${what} exited (${code}) before listening`));
    });
  });
}

/** The service as `make run` starts it; resolves with its URL once it listens. */
async function startService(dataDir: string, pinned: string[]): Promise<{ child: ChildProcess; url: string }> {
  // BENCH_CPU_PROF=<dir>: the service writes a V8 CPU profile there when it stops, to see where a phase's time goes.
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env.BENCH_CPU_PROF)}`] : [];
  const [command, ...args] = [...pinned, process.execPath, ...profile, MAIN];
  const child = spawn(command, args, {
    env: {
      PATH: process.env.PATH ?? '',
      CLOUDPLANE_HOST: '127.0.0.1',
      CLOUDPLANE_PORT: '0',
      CLOUDPLANE_DATA_DIR: dataDir,
      CLOUDPLANE_BOOTSTRAP_API_KEY: ADMIN_KEY,
      CLOUDPLANE_LOG_LEVEL: 'warn',
      CLOUDPLANE_SIM_DELAY_MS: '50',
      CLOUDPLANE_RESYNC_SECONDS: '5',
      // The black-hole receiver is on loopback over http.
      CLOUDPLANE_WEBHOOK_ALLOW_HTTP: 'true',
      CLOUDPLANE_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      // The spec's retry schedule (hours) in seconds, so that "made or recorded as failed" is reached in the run.
      CLOUDPLANE_WEBHOOK_TIME_SCALE: '0.0005',
      CLOUDPLANE_WEBHOOK_TIMEOUT_MS: '2000',
      // Room for the quiet team's creates (four a second, every phase); the noisy burst of 900 is under either limit.
      CLOUDPLANE_QUOTAS: 'load_balancer=20000',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr.on('data', (chunk: Buffer) => process.stderr.write(chunk));
  const url = await listeningUrl(child, 'the service');
  return { child, url };
}

/** The refusal peer (bench/refusal-peer.ts) on the CPU the service had; resolves with its URL once it listens. */
async function startRefusalPeer(pinned: string[]): Promise<{ child: ChildProcess; url: string }> {
  const [command, ...args] = [...pinned, process.execPath, REFUSAL_PEER];
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await listeningUrl(child, 'the refusal peer');
  return { child, url };
}

interface FloodCost {
  phase: string;
  /** What the abuse sent the peer in PEER_S, and the CPU the peer used meanwhile. */
  peer_operations: number;
  peer_cpu_ms: number | null;
}

/** Each flood that ran, against the refusal peer, one after the other. */
async function floodsAgainstPeer(abuses: Abuse[], noisy: NoisyTeam, pinned: string[]): Promise<FloodCost[]> {
  const costs: FloodCost[] = [];
  for (const abuse of abuses.filter((a) => a.flood)) {
    const peer = await startRefusalPeer(pinned);
    try {
      const stop = { done: false };
      const peerPid = known(peer.child.pid, "the refusal peer's pid");
      const cpuBefore = cpuMs(peerPid);
      const work = abuse.run({ ...noisy, url: peer.url, api: apiOf(peer.url) }, stop);
      await new Promise((resolve) => setTimeout(resolve, PEER_S * 1000));
      stop.done = true;
      const counts = await work;
      const cpuAfter = cpuMs(peerPid);
      costs.push({
        phase: abuse.name,
        peer_operations: operationsOf(counts),
        peer_cpu_ms: cpuBefore === null || cpuAfter === null ? null : cpuAfter - cpuBefore,
      });
      console.log(`refusal peer, ${abuse.name}: ${JSON.stringify(counts)}`);
    } finally {
      peer.child.kill('SIGKILL');
    }
  }
  return costs;
}

/** A receiver that accepts connections and never answers, until told to; counts what it holds. */
function blackHole() {
  const sockets = new Set<net.Socket>();
  let answering = false;
  let peak = 0;
  const answer = (socket: net.Socket) => socket.write('HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n');
  const server = net.createServer((socket) => {
    sockets.add(socket);
    peak = Math.max(peak, sockets.size);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    socket.on('data', () => (answering ? answer(socket) : undefined));
  });
  return {
    listen: () =>
      new Promise<number>((resolve) =>
        server.listen(0, '127.0.0.1', () => {
          resolve((server.address() as net.AddressInfo).port);
        }),
      ),
    open: () => sockets.size,
    peak: () => peak,
    startAnswering: () => {
      answering = true;
      for (const socket of sockets) answer(socket);
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Runs `work` again and again, `parallel` at a time, until `stop` is set. */
async function loop(parallel: number, stop: { done: boolean }, work: () => Promise<unknown>): Promise<number> {
  let runs = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (!stop.done) {
        await work();
        runs += 1;
      }
    }),
  );
  return runs;
}

interface NoisyTeam {
  key: string;
  api: Api;
  url: string;
  blackHolePort: number;
  acknowledged: string[];
}

interface Abuse {
  name: string;
  /** What the noisy team does while the quiet team's probe runs; returns what it counted. */
  run(team: NoisyTeam, stop: { done: boolean }): Promise<Record<string, number>>;
  /**
   * A flood: as many requests or connections as the service answers, all refused. It is run
   * against the refusal peer too (bench/refusal-peer.ts), for the floor of what refusing costs.
   */
  flood?: boolean;
}

/** What the noisy team sent in a phase: its requests (every status counted), or the connections it opened. */
const operationsOf = (counts: Record<string, number>) =>
  'opened' in counts ? counts.opened : Object.entries(counts).reduce((n, [name, count]) => n + (name.startsWith('status_') ? count : 0), 0);

const statusCounter = () => {
  const counts: Record<string, number> = {};
  return { counts, add: (status: number) => (counts[`status_${status}`] = (counts[`status_${status}`] ?? 0) + 1) };
};

const ABUSES: Abuse[] = [
  {
    name: 'scheduled jobs with a rare schedule (0 0 29 2 *)',
    async run(team, stop) {
      const c = statusCounter();
      for (let i = 0; i < 20; i += 1)
        c.add((await team.api(team.key, 'POST', '/api/v1/jobs', { name: `rare-${i}`, command: 'true', schedule: '0 0 29 2 *' })).status);
      // The controller resyncs them every 5 s while the phase runs.
      while (!stop.done) await new Promise((resolve) => setTimeout(resolve, 200));
      return c.counts;
    },
  },
  {
    name: 'schedules that never fire (* * * 30 2 *), four at a time',
    flood: true,
    async run(team, stop) {
      const c = statusCounter();
      await loop(4, stop, async () =>
        c.add((await team.api(team.key, 'POST', '/api/v1/jobs', { name: 'never', command: 'true', schedule: '* * * 30 2 *' })).status),
      );
      return c.counts;
    },
  },
  {
    name: 'bodies of invalid array items (200 KB, and the most the route takes), two at a time',
    flood: true,
    async run(team, stop) {
      const c = statusCounter();
      // 200 KB as the attacker sent it, and a body just inside the route's limit (16 KiB), which is read and validated.
      const bodies = [100_000, 8_000].map((items) =>
        JSON.stringify({ url: `http://127.0.0.1:${team.blackHolePort}/`, events: Array.from({ length: items }, () => 1) }),
      );
      let n = 0;
      await loop(2, stop, async () => c.add((await team.api(team.key, 'POST', '/api/v1/webhooks', undefined, bodies[(n += 1) % 2])).status));
      return c.counts;
    },
  },
  {
    name: 'a job of its own that exits with code 3',
    async run(team, stop) {
      const c = statusCounter();
      while (!stop.done) {
        c.add((await team.api(team.key, 'POST', '/api/v1/jobs', { name: 'fails', command: 'exit 3' })).status);
        await new Promise((resolve) => setTimeout(resolve, 2000));
      }
      return c.counts;
    },
  },
  {
    name: '1,010 idle connections without credentials (from 127.0.0.2, reconnecting)',
    flood: true,
    async run(team, stop) {
      const { hostname, port } = new URL(team.url);
      const open = new Set<net.Socket>();
      let opened = 0;
      let closedByServer = 0;
      const connect = () => {
        if (stop.done) return;
        const socket = net.connect({ host: hostname, port: Number(port), localAddress: '127.0.0.2' });
        opened += 1;
        open.add(socket);
        socket.on('error', () => undefined);
        socket.on('close', () => {
          open.delete(socket);
          closedByServer += stop.done ? 0 : 1;
          setTimeout(connect, 10);
        });
      };
      for (let i = 0; i < 1010; i += 1) connect();
      while (!stop.done) await new Promise((resolve) => setTimeout(resolve, 200));
      for (const socket of open) socket.destroy();
      return { opened, closed_by_server: closedByServer };
    },
  },
  {
    name: 'a burst of 900 load balancer creates, 16 at a time',
    async run(team, stop) {
      const c = statusCounter();
      let n = 0;
      await loop(
        16,
        {
          get done() {
            return stop.done || n >= 900;
          },
        },
        async () => {
          const r = await team.api(team.key, 'POST', '/api/v1/load-balancers', { name: `burst-${(n += 1)}`, region: REGION });
          c.add(r.status);
          if (r.status === 201) team.acknowledged.push(dataString(r.json, 'id'));
        },
      );
      while (!stop.done) await new Promise((resolve) => setTimeout(resolve, 200));
      return c.counts;
    },
  },
  {
    name: '100 webhook subscriptions to a receiver that never answers, then 16 creates',
    async run(team, stop) {
      const c = statusCounter();
      for (let i = 0; i < 100; i += 1)
        c.add(
          (await team.api(team.key, 'POST', '/api/v1/webhooks', { url: `http://127.0.0.1:${team.blackHolePort}/hook-${i}`, events: ['load_balancer.*'] }))
            .status,
        );
      for (let i = 0; i < 16; i += 1) {
        const r = await team.api(team.key, 'POST', '/api/v1/load-balancers', { name: `hooked-${i}`, region: REGION });
        c.add(r.status);
        if (r.status === 201) team.acknowledged.push(dataString(r.json, 'id'));
      }
      while (!stop.done) await new Promise((resolve) => setTimeout(resolve, 200));
      return c.counts;
    },
  },
];

/** Open file descriptors of a process (Linux), or null. */
function openFds(pid: number): number | null {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return null;
  }
}

/** Bytes a process has written so far, to files and sockets alike (Linux `wchar`), or null. */
function writtenBytes(pid: number): number | null {
  try {
    const match = /^wchar:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/io`, 'utf8'));
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

/** CPU time a process has used so far, all its threads, user and system (Linux, in clock ticks of 10 ms), or null. */
function cpuMs(pid: number): number | null {
  try {
    // The fields after the command name, which is in parentheses and may hold spaces.
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

/** The service's event-loop lag since the last scrape (prom-client resets its histogram on each). */
async function eventLoopLagMaxMs(url: string): Promise<number | null> {
  try {
    const text = await (await fetch(`${url}/metrics`)).text();
    const match = /^nodejs_eventloop_lag_max_seconds\s+(\S+)/m.exec(text);
    return match ? Math.round(Number(match[1]) * 1000) : null;
  } catch {
    return null;
  }
}

interface PhaseRow {
  phase: string;
  quiet: ProbeResult;
  noisy: Record<string, number>;
  service_event_loop_lag_max_ms: number | null;
  service_open_fds_peak: number | null;
  service_written_mb: number | null;
  /** CPU the service used in the phase, and what the noisy team sent it (requests, or connections opened). */
  service_cpu_ms: number | null;
  noisy_operations: number;
  black_hole_connections_peak: number;
  /** Over the quiet team's p99 alone (both alone phases pooled); set once the run has ended. */
  ratio_get_one_p99: number | null;
  ratio_create_p99: number | null;
  ratio_create_to_running_p99: number | null;
}

const MEASURES: Measure[] = ['get_one', 'create', 'create_to_running'];

const ratio = (value: number, baseline: number) => (baseline > 0 && value > 0 ? Math.round((value / baseline) * 100) / 100 : null);

async function main() {
  const startedAt = new Date();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-noisy-'));
  const pinning = cpuPinning();
  const { child, url } = await startService(dataDir, pinning.service);
  const api = apiOf(url);
  const hole = blackHole();
  const blackHolePort = await hole.listen();
  try {
    const servicePid = known(child.pid, "the service's pid");
    const team = async (name: string) => {
      const r = await api(ADMIN_KEY, 'POST', '/api/v1/teams', { name, owner_email: `${name}@example.com` });
      if (r.status !== 201) throw new Error(`creating team ${name}: ${r.status} ${JSON.stringify(r.json)}`);
      return dataString(r.json, 'api_key', 'key');
    };
    const quietKey = await team('quiet');
    // The noisy team may have spent its team-wide rate limit in the phase before (429: wait out
    // the minute), or left the client a pooled connection the service had closed (0: try again).
    const newKey = async (ownerKey: string, name: string) => {
      for (const giveUpAt = Date.now() + 90_000; ;) {
        const r = await api(ownerKey, 'POST', '/api/v1/settings/api-keys', { name });
        if (r.status === 201) return dataString(r.json, 'key');
        if ((r.status !== 429 && r.status !== 0) || Date.now() > giveUpAt)
          throw new Error(`could not make the key ${name}: ${r.status} ${JSON.stringify(r.json)}`);
        await new Promise((resolve) => setTimeout(resolve, 2000));
      }
    };
    const quietWriteKey = await newKey(quietKey, 'writes');
    const quietReadKeys = [quietKey, ...(await Promise.all([1, 2, 3].map((n) => newKey(quietKey, `reads-${n}`))))];
    const quietPollKeys = await Promise.all([1, 2, 3, 4].map((n) => newKey(quietKey, `polls-${n}`)));
    const noisyOwnerKey = await team('noisy');
    const noisy: NoisyTeam = { key: noisyOwnerKey, api, url, blackHolePort, acknowledged: [] };

    const lb = await api(quietKey, 'POST', '/api/v1/load-balancers', { name: 'quiet-read', region: REGION });
    const job = await api(quietKey, 'POST', '/api/v1/jobs', { name: 'quiet-job', command: 'true' });
    if (lb.status !== 201 || job.status !== 201) throw new Error(`quiet team's setup: ${lb.status} ${job.status}`);
    const probeOptions = {
      url,
      readKeys: quietReadKeys,
      writeKey: quietWriteKey,
      pollKeys: quietPollKeys,
      loadBalancerId: dataString(lb.json, 'id'),
      jobId: dataString(job.json, 'id'),
      durationMs: PHASE_S * 1000,
      region: REGION,
    };

    const rows: PhaseRow[] = [];
    const phase = async (name: string, abuse?: Abuse) => {
      process.stdout.write(`phase: ${name} ... `);
      await eventLoopLagMaxMs(url);
      const stop = { done: false };
      let fdsPeak = openFds(servicePid) ?? 0;
      const writtenBefore = writtenBytes(servicePid);
      const cpuBefore = cpuMs(servicePid);
      const fdSampler = setInterval(() => (fdsPeak = Math.max(fdsPeak, openFds(servicePid) ?? 0)), 250);
      const noisyWork = abuse ? abuse.run(noisy, stop) : Promise.resolve({});
      const quiet = await runQuietProbe(probeOptions);
      stop.done = true;
      const noisyCounts = await noisyWork;
      clearInterval(fdSampler);
      const row: PhaseRow = {
        phase: name,
        quiet,
        noisy: noisyCounts,
        service_event_loop_lag_max_ms: await eventLoopLagMaxMs(url),
        service_open_fds_peak: fdsPeak || null,
        service_written_mb: writtenBefore === null ? null : Math.round(((writtenBytes(servicePid) ?? writtenBefore) - writtenBefore) / 10_000) / 100,
        service_cpu_ms: cpuBefore === null ? null : (cpuMs(servicePid) ?? cpuBefore) - cpuBefore,
        noisy_operations: operationsOf(noisyCounts),
        black_hole_connections_peak: hole.peak(),
        ratio_get_one_p99: null,
        ratio_create_p99: null,
        ratio_create_to_running_p99: null,
      };
      rows.push(row);
      console.log(
        `get p99 ${quiet.get_one.p99_ms} ms, create p99 ${quiet.create.p99_ms} ms, to running p99 ${quiet.create_to_running.p99_ms} ms, refused ${JSON.stringify(quiet.refused)}, provider ${JSON.stringify(quiet.provider_states)}`,
      );
    };

    // A first round thrown away: the quiet team's first phase would otherwise carry the service's warm-up.
    await runQuietProbe({ ...probeOptions, durationMs: 5000 });
    await phase('alone');
    const abuses = ABUSES.filter((a) => ONLY.length === 0 || ONLY.some((word) => a.name.includes(word)));
    for (const abuse of abuses) {
      // A fresh key each phase, as an attacker holding many keys would: one phase's rate limit does not blunt the next.
      noisy.key = await newKey(noisyOwnerKey, `noisy-${rows.length}`);
      await phase(abuse.name, abuse);
    }

    // Nothing lost: the receiver answers again, and every delivery ends made or failed; every acknowledged create runs.
    hole.startAnswering();
    noisy.key = await newKey(noisyOwnerKey, 'noisy-settle');
    const settleDeadline = Date.now() + 300_000;
    let pending = -1;
    let notRunning = -1;
    while (Date.now() < settleDeadline) {
      pending = listLength((await api(noisy.key, 'GET', '/api/v1/webhook-deliveries?status=pending&limit=100')).json);
      // Every load balancer the noisy team holds was acknowledged to it: none may stay creating or end failed.
      const inState = async (state: string) => listLength((await api(noisy.key, 'GET', `/api/v1/load-balancers?status=${state}&limit=100`)).json);
      const [creating, failed] = [await inState('creating'), await inState('failed')];
      notRunning = creating < 0 || failed < 0 ? -1 : creating + failed;
      if (pending === 0 && notRunning === 0) break;
      process.stdout.write(`settling: ${pending} deliveries pending, ${notRunning} creates not running\n`);
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
    await phase('alone again, after the noisy team settled');
    const peerCosts = await floodsAgainstPeer(abuses, noisy, pinning.service);
    const quietLost = rows.reduce((n, row) => n + row.quiet.not_running, 0);

    // The baseline pools both alone phases: one 20-second p99 moves by half between runs of the
    // same build on a shared machine, and the two phases bracket the run.
    const alone = [rows[0], rows[rows.length - 1]];
    const baseline = Object.fromEntries(MEASURES.map((m) => [m, percentilesOf(alone.flatMap((row) => row.quiet.samples_us[m]))]));
    for (const row of rows) {
      row.ratio_get_one_p99 = ratio(row.quiet.get_one.p99_ms, baseline.get_one.p99_ms);
      row.ratio_create_p99 = ratio(row.quiet.create.p99_ms, baseline.create.p99_ms);
      row.ratio_create_to_running_p99 = ratio(row.quiet.create_to_running.p99_ms, baseline.create_to_running.p99_ms);
      console.log(`${row.phase}: get ×${row.ratio_get_one_p99}, create ×${row.ratio_create_p99}, to running ×${row.ratio_create_to_running_p99}`);
    }
    // What each flood cost the service above its CPU alone, per request or connection, beside the peer's cost for the same flood.
    const aloneCpu = alone.map((row) => row.service_cpu_ms).filter((ms): ms is number => ms !== null);
    const aloneCpuMs = aloneCpu.length === alone.length ? aloneCpu.reduce((a, b) => a + b, 0) / aloneCpu.length : null;
    const perOperationUs = (cpu: number | null, operations: number) => (cpu === null || operations <= 0 ? null : Math.round((cpu * 1000) / operations));
    const floodCosts = peerCosts.map((peer) => {
      const row = rows.find((r) => r.phase === peer.phase);
      const operations = row?.noisy_operations ?? 0;
      const aboveAlone = row?.service_cpu_ms != null && aloneCpuMs !== null ? row.service_cpu_ms - aloneCpuMs : null;
      const serviceUs = perOperationUs(aboveAlone, operations);
      const peerUs = perOperationUs(peer.peer_cpu_ms, peer.peer_operations);
      return {
        ...peer,
        service_operations_per_s: Math.round(operations / PHASE_S),
        service_cpu_above_alone_ms: aboveAlone,
        service_us_per_operation: serviceUs,
        peer_operations_per_s: Math.round(peer.peer_operations / PEER_S),
        peer_us_per_operation: peerUs,
        ratio_to_peer: serviceUs !== null && peerUs !== null ? ratio(serviceUs, peerUs) : null,
      };
    });
    for (const cost of floodCosts)
      console.log(`${cost.phase}: ${cost.service_us_per_operation} µs an operation, the peer ${cost.peer_us_per_operation} µs (×${cost.ratio_to_peer})`);

    // The raw samples made the baseline; the results keep the percentiles.
    const rowsReported = rows.map((row) => ({ ...row, quiet: { ...row.quiet, samples_us: undefined } }));

    const report = {
      benchmark: 'noisy-neighbours',
      started_at: startedAt.toISOString(),
      machine: machine(),
      settings: {
        phase_s: PHASE_S,
        get_every_ms: GET_EVERY_MS,
        create_every_ms: CREATE_EVERY_MS,
        cpus: pinning.note,
        service: 'node dist/src/main.js, embedded store, simulated provider (50 ms), resync 5 s, default limits (load balancer quota 20000)',
      },
      baseline_alone_pooled: baseline,
      rows: rowsReported,
      flood_costs: floodCosts,
      nothing_lost: {
        noisy_creates_acknowledged: noisy.acknowledged.length,
        noisy_creates_not_running: notRunning,
        noisy_deliveries_still_pending: pending,
        quiet_creates_not_running: quietLost,
      },
    };
    const cell = (r: number | null) => (r === null ? '–' : `${r}×`);
    const markdown = [
      `# Noisy-neighbour benchmark, ${startedAt.toISOString()}`,
      '',
      `Machine: ${report.machine.cpu_count} × ${report.machine.cpu_model}, Node ${report.machine.node}. Phases of ${PHASE_S} s; the quiet team reads every ${GET_EVERY_MS} ms and creates every ${CREATE_EVERY_MS} ms; ${pinning.note}.`,
      `Each ratio is the quiet team's p99 in that phase over its p99 alone in the same run, both alone phases pooled (GET ${baseline.get_one.p99_ms} ms, create ${baseline.create.p99_ms} ms, to running ${baseline.create_to_running.p99_ms} ms). Done when: within 2× under every abuse.`,
      '',
      `Samples per phase: about ${Math.round((PHASE_S * 1000) / GET_EVERY_MS)} GETs and ${Math.round((PHASE_S * 1000) / CREATE_EVERY_MS)} creates; "worst" is the single slowest create, shown beside the p99 it does not decide.`,
      '',
      '| phase | GET one p99 | × alone | create p99 | × alone | create worst | create → running p99 | × alone | quiet refused | quiet provider | service lag max | fds peak | written | black-hole conns peak |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|',
      ...rows.map(
        (r) =>
          `| ${r.phase} | ${r.quiet.get_one.p99_ms} ms | ${cell(r.ratio_get_one_p99)} | ${r.quiet.create.p99_ms} ms | ${cell(r.ratio_create_p99)} | ${r.quiet.create.max_ms} ms | ${r.quiet.create_to_running.p99_ms} ms | ${cell(r.ratio_create_to_running_p99)} | ${JSON.stringify(r.quiet.refused)} | ${JSON.stringify(r.quiet.provider_states)} | ${r.service_event_loop_lag_max_ms ?? '–'} ms | ${r.service_open_fds_peak ?? '–'} | ${r.service_written_mb ?? '–'} MB | ${r.black_hole_connections_peak} |`,
      ),
      '',
      `What a flood costs: the service's CPU in the phase above its CPU alone (the mean of the alone phases), per request or connection the noisy team sent, beside the same flood for ${PEER_S} s against the refusal peer (bench/refusal-peer.ts: bare Fastify answering every request 429 before reading it, resetting every connection from the flooding address), pinned to the same CPU. On one CPU a flood's rate is set by what each refusal costs: the quiet team's p99 under a flood follows from it.`,
      '',
      '| flood | service: sent per s | service CPU per operation | peer: sent per s | peer CPU per operation | × peer |',
      '|---|---:|---:|---:|---:|---:|',
      ...floodCosts.map(
        (c) =>
          `| ${c.phase} | ${c.service_operations_per_s} | ${c.service_us_per_operation ?? '–'} µs | ${c.peer_operations_per_s} | ${c.peer_us_per_operation ?? '–'} µs | ${cell(c.ratio_to_peer)} |`,
      ),
      '',
      `Nothing lost: the noisy team's ${noisy.acknowledged.length} acknowledged creates, ${notRunning === 0 ? 'all running' : `${notRunning} not running (up to 100 counted)`}; its deliveries still pending after the receiver recovered: ${pending}; the quiet team's creates not running: ${quietLost}.`,
      '',
      'What the noisy team got, per phase (status → count):',
      '',
      ...rows.slice(1).map((r) => `- ${r.phase}: ${JSON.stringify(r.noisy)}`),
      '',
    ].join('\n');
    const files = writeResults('noisy-neighbours', startedAt, report, markdown);
    console.log(`results: ${files.jsonFile}, ${files.markdownFile}`);
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 15_000))]);
    await hole.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
