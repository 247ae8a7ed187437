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

export function createLogger(level: string, destination: pino.DestinationStream = stdoutDestination()): Logger {
  return pino({ level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' }, base: { service: 'cloudplane' } }, destination);
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
