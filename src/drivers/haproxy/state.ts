/**
 * HAProxy's own view of its backends, read from its stats: the CSV its stats endpoint
 * serves at `/stats;csv`, or `show stat` on its runtime API (the same format). Where the
 * text comes from is a StatsSource, so one parser serves a local HAProxy on loopback and
 * one in a Pod reached by its IP. Every read is bounded by a timeout.
 */
import net from 'node:net';
import type { BackendHealth, LoadBalancerDesired } from '../load-balancer';
import { BACKEND_NAME, serverName, STATS_PATH } from './render';

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

/** The server rows of stats CSV (the FRONTEND and BACKEND summary rows left out). */
export function parseServerStats(csv: string): ServerStat[] {
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
  const stats: ServerStat[] = [];
  for (const line of lines) {
    const fields = splitCsvLine(line);
    const server = fields.at(svname);
    if (server === undefined || server === 'FRONTEND' || server === 'BACKEND') continue;
    const w = Number(fields[weight] ?? '');
    const statusText = fields[status] ?? '';
    stats.push({
      proxy: fields[pxname],
      server,
      status: statusText,
      state: serverState(statusText, Number.isFinite(w) ? w : 0),
      weight: Number.isFinite(w) ? w : 0,
      checkStatus: fields[checkStatus] || null,
    });
  }
  return stats;
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
export async function readServerStats(source: StatsSource, timeoutMs = DEFAULT_STATS_TIMEOUT_MS): Promise<ServerStat[]> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    return parseServerStats(await source.read(signal));
  } catch (err) {
    if (signal.aborted) throw new Error(`no stats from ${source.description} within ${timeoutMs} ms`);
    throw err;
  }
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
