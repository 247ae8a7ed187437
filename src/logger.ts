/** The process logger: JSON lines (pino), with every field that could hold a secret redacted. */
import pino, { Logger } from 'pino';

export const REDACTED_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  'req.headers.cookie',
  'headers.cookie',
  'res.headers["set-cookie"]',
  'authorization',
  '*.pre_shared_key',
  'pre_shared_key',
  '*.token',
  '*.secret',
  '*.api_key',
  '*.secretAccessKey',
  '*.*.secretAccessKey',
  'body',
  'req.body',
];

/** Log bytes held while stdout refuses them; past this, new lines are dropped. */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

/** Query parameters that carry a credential: the identity provider's one-time code on /auth/callback. */
const REDACTED_QUERY = ['code'];

/** A request's URL for the log, without the value of a credential in its query. */
export function loggableUrl(url: string): string {
  const at = url.indexOf('?');
  if (at === -1) return url;
  const query = new URLSearchParams(url.slice(at + 1));
  if (!REDACTED_QUERY.some((name) => query.has(name))) return url;
  for (const name of REDACTED_QUERY) if (query.has(name)) query.set(name, '[redacted]');
  return `${url.slice(0, at)}?${query.toString()}`;
}

interface LoggedRequest {
  method: string;
  url: string;
  host?: string;
  ip?: string;
  headers?: Record<string, unknown>;
  socket?: { remotePort?: number };
}

/** Fastify's request fields, with the URL made loggable (Fastify uses this in place of its own). */
const serializers = {
  req: (req: LoggedRequest) => ({
    method: req.method,
    url: loggableUrl(req.url),
    version: req.headers?.['accept-version'],
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  }),
};

export function createLogger(level: string, destination: pino.DestinationStream = stdoutDestination()): Logger {
  return pino({ level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' }, base: { service: 'cloudplane' }, serializers }, destination);
}

/**
 * stdout, best-effort: a stdout that fails (ENOSPC on a full disk under a redirect, EPIPE
 * once the reader has gone) must not stop the service. Without a listener, pino's
 * stream throws such an error out of an I/O callback, which ends the process. SonicBoom
 * tries the held lines again with the next one (pino stops writing for good after EPIPE:
 * a pipe's reader does not come back); the first failure of a run is said on stderr.
 */
function stdoutDestination(): pino.DestinationStream {
  const stream = pino.destination({ dest: 1, sync: false, maxLength: MAX_BUFFERED_BYTES });
  let failing = false;
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (failing) return;
    failing = true;
    process.stderr.write(`cloudplane: log output failed (${err.code ?? err.message}); log lines are dropped until it works again\n`);
  });
  stream.on('write', () => {
    failing = false;
  });
  return stream;
}
