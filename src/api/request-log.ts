/**
 * The request log: Fastify's own lines, reshaped. Its two info lines per request (arrival and
 * completion) become one line per answered request, at CLOUDPLANE_REQUEST_LOG_LEVEL (debug on
 * the embedded store, so a laptop's terminal keeps the banner and warnings; info on the
 * Kubernetes store, where an access log is collected). A request that errored is still logged
 * at error, whatever the level.
 */
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import type { RequestLogLevel } from '../config';

export class RequestLog extends LogController {
  constructor(private readonly level: RequestLogLevel) {
    super();
  }

  override incomingRequest(): void {
    // Said once, with its outcome, by requestCompleted.
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const line = { req: request, res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log[this.level](line, 'request completed');
  }
}
