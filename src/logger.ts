/** The process logger: JSON lines (pino), with every field that could hold a secret redacted. */
import pino, { Logger } from 'pino';

export const REDACTED_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  '*.pre_shared_key',
  'pre_shared_key',
  '*.token',
  '*.secret',
  '*.api_key',
  'body',
  'req.body',
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' }, base: { service: 'cloudplane' } }, destination);
}
