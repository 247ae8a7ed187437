/**
 * The last resort for an error that nothing else caught (`uncaughtException`,
 * `unhandledRejection`). Every known I/O failure is handled where it happens; this is for
 * the ones that were missed.
 * - An operational error, a system call that failed (ENOSPC, EACCES, EMFILE, EPIPE,
 *   ECONNRESET, ...), is about the environment, which the service is built to live
 *   through: it is logged and the service keeps serving.
 * - Anything else (TypeError, ReferenceError, a thrown string) is a bug, after which the
 *   process's state cannot be trusted: it is logged with its stack, and the process exits
 *   non-zero for its supervisor to restart it. Nothing acknowledged is lost by that: every
 *   acknowledged write is on disk (or in the API server) before it is acknowledged.
 */
import { types } from 'node:util';
import type { Logger } from 'pino';
import { fieldOf } from './unknown-values';

/** How long the log may take to reach its destination before the process exits anyway. */
const FLUSH_TIMEOUT_MS = 2_000;

/** A failed system call: Node gives it an `E...` code, the negative errno and the syscall's name. */
export function isOperationalError(err: unknown): err is NodeJS.ErrnoException {
  if (!types.isNativeError(err)) return false;
  const [code, errno, syscall] = [fieldOf(err, 'code'), fieldOf(err, 'errno'), fieldOf(err, 'syscall')];
  return typeof code === 'string' && /^E[A-Z0-9]+$/.test(code) && typeof errno === 'number' && typeof syscall === 'string';
}

export function installLastResort(logger: Logger): void {
  let exiting = false;
  const handle = (err: unknown, origin: string) => {
    if (isOperationalError(err)) {
      logger.error({ err, origin }, `uncaught operational error (${err.code}): logged, and the service keeps serving`);
      return;
    }
    if (exiting) return;
    exiting = true;
    logger.fatal({ err, origin }, 'uncaught programming error: the process exits');
    const exit = () => process.exit(1);
    setTimeout(exit, FLUSH_TIMEOUT_MS);
    logger.flush(exit);
  };
  process.on('uncaughtException', (err, origin) => {
    handle(err, origin);
  });
  process.on('unhandledRejection', (reason) => {
    handle(reason, 'unhandledRejection');
  });
}
