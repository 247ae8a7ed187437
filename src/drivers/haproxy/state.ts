/**
 * HAProxy's own view of its backends, read from its stats: the CSV its stats endpoint
 * serves at `/stats;csv`, or `show stat` on its runtime API (the same format). Where the
 * text comes from is a StatsSource, so one parser serves a local HAProxy on loopback and
 * one in a Pod reached by its IP. Every read is bounded by a timeout.
 */
import net from 'node:net';
import type { BackendHealth, BackendTraffic, LoadBalancerDesired, TrafficCounters } from '../load-balancer';
import { BACKEND_NAME, FRONTEND_NAME, serverName, STATS_PATH } from './render';

/** Where stats CSV is read from; the signal aborts the read when its time is up. */
export interface StatsSource {
  /** What the reads are made from, for error messages. */
  readonly description: string;
  read(signal: AbortSignal): Promise<string>;
}

/** The stats endpoint over HTTP, e.g. `http://10.1.2.3:8404`. */
export function httpStatsSource(baseUrl: string): StatsSource {
  const url = `${baseUrl.replace(/\/$/, '')}${STATS_PATH};csv`;
  return {
    description: url,
    async read(signal) {
      const res = await fetch(url, { signal });
      const body = await res.text();
      if (res.status !== 200) throw new Error(`stats endpoint ${url} answered ${res.status}`);
      return body;
    },
  };
}

/** The runtime API on a unix socket: `show stat`, answered and closed. */
export function runtimeSocketStatsSource(socketPath: string): StatsSource {
  return {
    description: socketPath,
    read(signal) {
      return new Promise((resolve, reject) => {
        const socket = net.createConnection(socketPath);
        const chunks: Buffer[] = [];
        const onAbort = () => socket.destroy(new Error(`no answer from ${socketPath} in time`));
        signal.addEventListener('abort', onAbort, { once: true });
        socket.on('connect', () => socket.end('show stat\n'));
        socket.on('data', (chunk: Buffer) => chunks.push(chunk));
        socket.on('error', (err) => {
          signal.removeEventListener('abort', onAbort);
          reject(err);
        });
        socket.on('close', (hadError) => {
          signal.removeEventListener('abort', onAbort);
          if (!hadError) resolve(Buffer.concat(chunks).toString('utf8'));
        });
      });
    },
  };
}

/**
 * How HAProxy treats a server: `up` takes traffic, `drain` is alive but takes no new
 * balanced traffic (weight 0, drain or NOLB), `down` fails its checks, `maint` is in
 * maintenance.
 */
export type ServerState = 'up' | 'drain' | 'down' | 'maint';

export interface ServerStat {
  proxy: string;
  server: string;
  /** HAProxy's own words: `UP`, `DOWN 1/2`, `MAINT (via ...)`, `no check`... */
  status: string;
  state: ServerState;
  weight: number;
  /** The last check's result (`L7OK`, `L4CON`...), or null without checks. */
  checkStatus: string | null;
  /** What went through this server (its row's stot, bin, bout, scur). */
  traffic: TrafficCounters;
}

/** A FRONTEND row: what clients sent through one of HAProxy's frontends. */
export interface FrontendStat {
  proxy: string;
  traffic: TrafficCounters;
}

/** One HAProxy process's stats: its frontends and the servers of its backends. */
export interface HaproxyStats {
  frontends: FrontendStat[];
  servers: ServerStat[];
}

/**
 * What a status says. A transitional `UP 1/2` (failing, not yet down) is still up and
 * `DOWN 1/2` (recovering) still down, as HAProxy routes them.
 */
export function serverState(status: string, weight: number): ServerState {
  const word = status.split(' ')[0];
  if (word === 'MAINT') return 'maint';
  if (word === 'DRAIN' || word === 'NOLB') return 'drain';
  if (word === 'UP' || status === 'no check') return weight === 0 ? 'drain' : 'up';
  return 'down';
}

export const NO_TRAFFIC: TrafficCounters = { sessions_total: 0, bytes_in: 0, bytes_out: 0, current_sessions: 0 };

/**
 * The FRONTEND rows and the server rows of stats CSV (the BACKEND summary rows left out).
 * Counters are HAProxy's: `stot` the sessions since the process started, `bin` and `bout`
 * the bytes from and to the clients (on a server row: to and from that server), `scur` the
 * sessions open now. An empty counter is 0.
 */
export function parseStats(csv: string): HaproxyStats {
  const lines = csv.split('\n').filter((line) => line.trim() !== '');
  const header = lines.shift();
  if (!header || !header.startsWith('# ')) throw new Error('not HAProxy stats CSV: no header line');
  const columns = splitCsvLine(header.slice(2));
  const index = (name: string) => {
    const i = columns.indexOf(name);
    if (i < 0) throw new Error(`HAProxy stats CSV lacks the column '${name}'`);
    return i;
  };
  const [pxname, svname, status, weight, checkStatus] = ['pxname', 'svname', 'status', 'weight', 'check_status'].map(index);
  const [stot, bin, bout, scur] = ['stot', 'bin', 'bout', 'scur'].map(index);
  const stats: HaproxyStats = { frontends: [], servers: [] };
  for (const line of lines) {
    const fields = splitCsvLine(line);
    const server = fields.at(svname);
    if (server === undefined || server === 'BACKEND') continue;
    const counter = (i: number) => counterOf(fields[i], columns[i], line);
    const traffic = { sessions_total: counter(stot), bytes_in: counter(bin), bytes_out: counter(bout), current_sessions: counter(scur) };
    if (server === 'FRONTEND') {
      stats.frontends.push({ proxy: fields[pxname], traffic });
      continue;
    }
    const w = Number(fields[weight] ?? '');
    const statusText = fields[status] ?? '';
    stats.servers.push({
      proxy: fields[pxname],
      server,
      status: statusText,
      state: serverState(statusText, Number.isFinite(w) ? w : 0),
      weight: Number.isFinite(w) ? w : 0,
      checkStatus: fields[checkStatus] || null,
      traffic,
    });
  }
  return stats;
}

/** The server rows of stats CSV (the FRONTEND and BACKEND summary rows left out). */
export function parseServerStats(csv: string): ServerStat[] {
  return parseStats(csv).servers;
}

/** A counter field: empty is 0; anything but a non-negative integer is not HAProxy's stats. */
function counterOf(field: string | undefined, column: string, line: string): number {
  if (field === undefined || field === '') return 0;
  const value = Number(field);
  if (!/^\d+$/.test(field) || !Number.isSafeInteger(value)) throw new Error(`HAProxy stats CSV has '${field}' as ${column} in: ${line.slice(0, 200)}`);
  return value;
}

/** One CSV line, with HAProxy's quoting of fields that hold commas or quotes. */
function splitCsvLine(line: string): string[] {
  const fields: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < line.length; i += 1) {
    const ch = line[i];
    if (quoted) {
      if (ch === '"' && line[i + 1] === '"') {
        field += '"';
        i += 1;
      } else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      fields.push(field);
      field = '';
    } else field += ch;
  }
  fields.push(field);
  return fields;
}

export const DEFAULT_STATS_TIMEOUT_MS = 3_000;

/** Reads the stats, failing after `timeoutMs`. */
export async function readStats(source: StatsSource, timeoutMs = DEFAULT_STATS_TIMEOUT_MS): Promise<HaproxyStats> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    return parseStats(await source.read(signal));
  } catch (err) {
    if (signal.aborted) throw new Error(`no stats from ${source.description} within ${timeoutMs} ms`);
    throw err;
  }
}

/** The server rows only, failing after `timeoutMs`. */
export async function readServerStats(source: StatsSource, timeoutMs = DEFAULT_STATS_TIMEOUT_MS): Promise<ServerStat[]> {
  return (await readStats(source, timeoutMs)).servers;
}

/**
 * Each desired backend's health as HAProxy's checks see it: up while its server passes
 * them (draining included: it is alive, only out of the rotation). A backend HAProxy does
 * not list (no address, not rendered yet) is not up.
 */
export function backendHealth(desired: LoadBalancerDesired, stats: ServerStat[]): BackendHealth[] {
  const byName = new Map(stats.filter((s) => s.proxy === BACKEND_NAME).map((s) => [s.server, s]));
  const seen = new Set<string>();
  const health: BackendHealth[] = [];
  for (const backend of desired.backends) {
    const name = serverName(backend);
    if (seen.has(name)) continue;
    seen.add(name);
    const state = byName.get(name)?.state;
    health.push({ server_id: backend.server_id, port: backend.port, up: state === 'up' || state === 'drain' });
  }
  return health;
}

export async function readBackendHealth(source: StatsSource, desired: LoadBalancerDesired, timeoutMs = DEFAULT_STATS_TIMEOUT_MS): Promise<BackendHealth[]> {
  return backendHealth(desired, await readServerStats(source, timeoutMs));
}

/** The load balancer's traffic summed over HAProxy processes (`instances`: how many were summed). */
export interface SummedTraffic extends TrafficCounters {
  instances: number;
  backends: BackendTraffic[];
}

const plus = (a: TrafficCounters, b: TrafficCounters): TrafficCounters => ({
  sessions_total: a.sessions_total + b.sessions_total,
  bytes_in: a.bytes_in + b.bytes_in,
  bytes_out: a.bytes_out + b.bytes_out,
  current_sessions: a.current_sessions + b.current_sessions,
});

/**
 * The load balancer's traffic from the stats of each of its HAProxy processes: the public
 * frontend's counters (what clients sent and got; the stats endpoint's own frontend left
 * out) and each desired backend's server row, summed over the processes. A backend is up
 * where every process sees it up (as backendHealth has it); one that no process lists (no
 * address, not rendered yet) has no traffic and is not up. With no process there is no
 * traffic at all.
 */
export function summedTraffic(desired: LoadBalancerDesired, instances: HaproxyStats[]): SummedTraffic {
  let total = NO_TRAFFIC;
  for (const stats of instances) {
    const frontend = stats.frontends.find((f) => f.proxy === FRONTEND_NAME);
    if (frontend) total = plus(total, frontend.traffic);
  }
  const rows = instances.map((stats) => new Map(stats.servers.filter((s) => s.proxy === BACKEND_NAME).map((s) => [s.server, s])));
  const seen = new Set<string>();
  const backends: BackendTraffic[] = [];
  for (const backend of desired.backends) {
    const name = serverName(backend);
    if (seen.has(name)) continue;
    seen.add(name);
    const listed = rows.map((byName) => byName.get(name));
    const traffic = listed.reduce((sum: TrafficCounters, row) => (row ? plus(sum, row.traffic) : sum), NO_TRAFFIC);
    const up = listed.length > 0 && listed.every((row) => row?.state === 'up' || row?.state === 'drain');
    backends.push({ server_id: backend.server_id, port: backend.port, up, ...traffic });
  }
  return { ...total, instances: instances.length, backends };
}
