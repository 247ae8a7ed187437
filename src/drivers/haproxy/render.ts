/**
 * The HAProxy configuration of a load balancer, rendered from its desired state. Pure and
 * deterministic: the same input gives the same bytes (servers sorted, names derived from
 * server ids, no timestamps), so a configuration's hash says whether it changed, and the
 * text itself is the contract the tests read.
 *
 * Decisions the text encodes:
 * - A draining backend stays with `weight 0`: HAProxy sends it no new balanced traffic,
 *   but requests that carry its stickiness cookie and connections already open keep
 *   going until the reconciler drops it when its drain ends. `disabled` (maintenance)
 *   would refuse those sticky requests and stop its health checks, so its health could no
 *   longer be read.
 * - A backend without a usable address (its server is not running) is left out: HAProxy
 *   cannot check or reach it, and the state reader reports every desired backend it does
 *   not find as not up.
 * - Traffic reaches the backends in plain HTTP or TCP; https is terminated at the frontend.
 * - A separate HTTP endpoint serves the stats (CSV at `/stats;csv`, which the state
 *   reader parses) and a readiness answer at `/healthz`; it is never the public port.
 */
import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import type { DesiredBackend, LoadBalancerDesired } from '../load-balancer';
import { entryOf } from '../../lib/maps';

export const FRONTEND_NAME = 'public';
export const BACKEND_NAME = 'servers';
export const STATS_PATH = '/stats';
export const READY_PATH = '/healthz';
export const STICKY_COOKIE = 'cp_backend';

export interface HaproxyTimeouts {
  /** To open a connection to a backend. */
  connectMs: number;
  /** A client's inactivity. */
  clientMs: number;
  /** A backend's inactivity. */
  serverMs: number;
  /** To receive a complete HTTP request (http and https), which bounds slow clients. */
  httpRequestMs: number;
  /** An open connection with both sides idle once it has become a tunnel (WebSocket, CONNECT). */
  tunnelMs: number;
  /** One health check's answer. */
  checkMs: number;
  /** How long a stopping or replaced process may keep serving open connections. */
  hardStopAfterMs: number;
}

export const DEFAULT_TIMEOUTS: HaproxyTimeouts = {
  connectMs: 5_000,
  clientMs: 30_000,
  serverMs: 30_000,
  httpRequestMs: 10_000,
  tunnelMs: 3_600_000,
  checkMs: 2_000,
  hardStopAfterMs: 300_000,
};

export interface RenderOptions {
  /** Where the public frontend listens: all IPv4 addresses and the spec's port unless given. */
  listen?: { address?: string; port?: number };
  /** The certificate for https, a PEM file; its key in the same file or beside it as `<file>.key`. */
  certificateFile?: string | null;
  /** The stats and readiness endpoint. */
  stats: { address?: string; port: number };
  /** A unix socket for the runtime API (`show stat`), at admin level; none unless given. */
  runtimeSocket?: string | null;
  /** How often each backend is checked. */
  checkIntervalMs?: number;
  timeouts?: Partial<HaproxyTimeouts>;
}

const DEFAULT_CHECK_INTERVAL_MS = 2_000;
/** Consecutive failed (passed) checks before a backend is taken out (back in). */
const CHECK_FALL = 2;
const CHECK_RISE = 2;

const BALANCE: Record<string, string> = {
  round_robin: 'roundrobin',
  least_connections: 'leastconn',
  ip_hash: 'source',
};

const MODES: Record<string, { mode: 'http' | 'tcp'; tls: boolean }> = {
  http: { mode: 'http', tls: false },
  https: { mode: 'http', tls: true },
  tcp: { mode: 'tcp', tls: false },
};

/** A backend as HAProxy knows it. */
export interface RenderedServer {
  name: string;
  backend: DesiredBackend;
  /** The address as HAProxy's `server` line takes it. */
  target: string;
}

/** The server name HAProxy uses for a backend: stable across renders and readable in its stats. */
export function serverName(backend: Pick<DesiredBackend, 'server_id' | 'port'>): string {
  return `${backend.server_id}-${backend.port}`;
}

/**
 * The backends HAProxy is given, sorted by name: those with a usable address, one per
 * server and port (an attached one wins over a draining one of the same name).
 */
export function renderedServers(desired: LoadBalancerDesired): RenderedServer[] {
  const byName = new Map<string, RenderedServer>();
  for (const backend of desired.backends) {
    if (backend.address === null || isIP(backend.address) === 0) continue;
    const name = serverName(backend);
    const seen = byName.get(name);
    if (seen && !seen.backend.draining) continue;
    byName.set(name, { name, backend, target: hostPort(backend.address, backend.port) });
  }
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export function renderHaproxyConfig(desired: LoadBalancerDesired, options: RenderOptions): string {
  const protocol = entryOf(MODES, desired.protocol);
  if (!protocol) throw new Error(`no HAProxy mode for protocol '${desired.protocol}'`);
  const balance = BALANCE[desired.algorithm];
  if (!balance) throw new Error(`no HAProxy balance for algorithm '${desired.algorithm}'`);
  const certificate = protocol.tls ? options.certificateFile : null;
  if (protocol.tls && !certificate) throw new Error('an https load balancer needs a certificate file');
  const t = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
  const http = protocol.mode === 'http';
  const sticky = desired.sticky_sessions;

  const global = [
    // Backends going down and up, not a line per request: access logs (level info) are left out.
    'log stdout format raw local0 notice',
    `hard-stop-after ${duration(t.hardStopAfterMs)}`,
    ...(options.runtimeSocket ? [`stats socket ${quoted(options.runtimeSocket)} mode 600 level admin expose-fd listeners`] : []),
    ...(protocol.tls ? ['ssl-default-bind-options ssl-min-ver TLSv1.2 no-tls-tickets'] : []),
  ];
  const defaults = [
    `mode ${protocol.mode}`,
    'log global',
    `timeout connect ${duration(t.connectMs)}`,
    `timeout client ${duration(t.clientMs)}`,
    `timeout server ${duration(t.serverMs)}`,
    `timeout tunnel ${duration(t.tunnelMs)}`,
    `timeout check ${duration(t.checkMs)}`,
    ...(http ? [`timeout http-request ${duration(t.httpRequestMs)}`, `timeout http-keep-alive ${duration(t.httpRequestMs)}`] : []),
    `default-server inter ${duration(options.checkIntervalMs ?? DEFAULT_CHECK_INTERVAL_MS)} fall ${CHECK_FALL} rise ${CHECK_RISE}`,
  ];
  const stats = [
    'mode http',
    `bind ${hostPort(options.stats.address ?? '*', options.stats.port)}`,
    'no log',
    'stats enable',
    `stats uri ${STATS_PATH}`,
    `monitor-uri ${READY_PATH}`,
  ];
  const listen = options.listen ?? {};
  const bind = `bind ${hostPort(listen.address ?? '*', listen.port ?? desired.port)}`;
  const frontend = [
    certificate ? `${bind} ssl crt ${quoted(certificate)} alpn h2,http/1.1` : bind,
    ...(http ? ['option forwardfor', `http-request set-header X-Forwarded-Proto ${protocol.tls ? 'https' : 'http'}`] : []),
    `default_backend ${BACKEND_NAME}`,
  ];

  const servers = renderedServers(desired);
  const backend = [
    `balance ${balance}`,
    // A server added or removed moves only its share of the clients, not most of them.
    ...(balance === 'source' ? ['hash-type consistent'] : []),
    ...(sticky && http ? [`cookie ${STICKY_COOKIE} insert indirect nocache httponly${protocol.tls ? ' secure' : ''}`] : []),
    // Without HTTP there is no cookie: a client sticks to a backend by its address.
    ...(sticky && !http ? ['stick-table type ip size 1m expire 30m', 'stick on src'] : []),
    ...(http ? [`option httpchk GET ${checkPath(desired.health_check_path)}`] : []),
    // A request whose backend refuses it, or whose sticky backend is gone, goes to another.
    'option redispatch',
    'retries 3',
    ...servers.map((s) => serverLine(s, sticky && http)),
  ];

  return [
    "# Rendered by Cloudplane from the load balancer's spec; the operator overwrites any edit.",
    section('global', global),
    section('defaults', defaults),
    section('frontend stats', stats),
    section(`frontend ${FRONTEND_NAME}`, frontend),
    section(`backend ${BACKEND_NAME}`, backend),
  ].join('\n');
}

function serverLine(server: RenderedServer, cookie: boolean): string {
  const parts = [`server ${server.name} ${server.target} check`];
  if (cookie) parts.push(`cookie ${cookieValue(server.name)}`);
  if (server.backend.draining) parts.push('weight 0');
  return parts.join(' ');
}

/** An opaque, stable cookie value per backend: clients do not learn server ids. */
function cookieValue(name: string): string {
  return createHash('sha256').update(name).digest('hex').slice(0, 16);
}

function section(header: string, lines: string[]): string {
  return `${header}\n${lines.map((line) => `    ${line}\n`).join('')}`;
}

/** An address and port as HAProxy parses them; `*` is every IPv4 address. */
function hostPort(address: string, port: number): string {
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`invalid port ${port}`);
  if (address === '*') return `*:${port}`;
  const family = isIP(address);
  if (family === 0) throw new Error(`'${address}' is not an IP address`);
  return family === 6 ? `ipv6@${address}:${port}` : `${address}:${port}`;
}

/**
 * The check's path as one safe word: characters that could end the argument, start a
 * comment or a variable, or break the line (spaces, quotes, `#`, `$`, `\`, controls,
 * non-ASCII) are percent-encoded, so no spec can write configuration of its own.
 */
export function checkPath(path: string): string {
  const safe = /[A-Za-z0-9\-._~/!&()*+,;=:@?]/;
  let out = '';
  const bytes = Buffer.from(path, 'utf8');
  for (let i = 0; i < bytes.length; i += 1) {
    const ch = String.fromCharCode(bytes[i]);
    const escape = ch === '%' && /^[0-9A-Fa-f]{2}$/.test(bytes.subarray(i + 1, i + 3).toString('latin1'));
    out += bytes[i] < 0x80 && (safe.test(ch) || escape) ? ch : `%${bytes[i].toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** A file path as one quoted argument. */
function quoted(path: string): string {
  if (/["\\\n\r$]/.test(path)) throw new Error(`unsupported character in path '${path}'`);
  return `"${path}"`;
}

function duration(ms: number): string {
  if (!Number.isInteger(ms) || ms < 0) throw new Error(`invalid duration ${ms} ms`);
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}
