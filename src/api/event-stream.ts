/**
 * A server-sent event stream (text/event-stream) on a hijacked reply. The status and
 * headers go out at once; each event is written as it comes; a comment keeps an idle
 * stream from being cut by a proxy. It is bounded: a client that reads more slowly than
 * its events come is cut off, with a last `closed` event saying why, once more than
 * `bufferBytes` wait for it, instead of those bytes piling up in the service's memory.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RequestLogLevel } from '../config';

export interface EventStreamOptions {
  /** A comment every this often (0: none; the owner calls keepAlive itself). */
  keepAliveMs: number;
  /** How many written bytes may wait for the client before the stream is cut off. */
  bufferBytes: number;
  /**
   * The request log's level (CLOUDPLANE_REQUEST_LOG_LEVEL): a stream's line is written when
   * it ends, as request-log.ts writes every other request's (Fastify writes none for a
   * reply handed over to its route).
   */
  logLevel: RequestLogLevel;
}

/** What the client is told when it read too slowly. */
export const TOO_SLOW = 'the client read too slowly; connect again (with Last-Event-ID to resume)';

export class EventStream {
  private readonly raw: FastifyReply['raw'];
  private readonly timer: NodeJS.Timeout | undefined;
  private readonly ended = new Set<() => void>();
  private done = false;

  constructor(
    private readonly request: FastifyRequest,
    private readonly reply: FastifyReply,
    private readonly options: EventStreamOptions,
  ) {
    reply.hijack();
    this.raw = reply.raw;
    // The stream's own keep-alives show a dead peer; the idle timeout would cut a quiet stream.
    request.raw.socket.setTimeout(0);
    this.raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
      'x-request-id': String(request.id),
    });
    this.raw.on('close', () => {
      this.finish();
    });
    if (options.keepAliveMs > 0)
      this.timer = setInterval(() => {
        this.keepAlive();
      }, options.keepAliveMs).unref();
  }

  /** Whether the stream is over (ended here, or the client went away). */
  get closed(): boolean {
    return this.done || this.raw.destroyed || this.raw.writableEnded;
  }

  /** Calls `listener` once the stream is over, whichever side ended it. */
  onClose(listener: () => void): void {
    if (this.closed) listener();
    else this.ended.add(listener);
  }

  /** An event of `data`, JSON-serialised. */
  send(event: string, data: unknown, id?: string): void {
    this.sendJson(event, JSON.stringify(data), id);
  }

  /** An event whose data is JSON text already (one line: JSON.stringify never writes a newline). */
  sendJson(event: string, json: string, id?: string): void {
    this.write(`${id ? `id: ${id}\n` : ''}event: ${event}\ndata: ${json}\n\n`);
  }

  /** A comment line, which keeps proxies from closing an idle stream. */
  keepAlive(): void {
    this.write(': keep-alive\n\n');
  }

  /** Says why with a last `closed` event, and ends the connection. */
  end(reason: string): void {
    if (this.closed) return;
    this.raw.write(`event: closed\ndata: ${JSON.stringify({ reason })}\n\n`);
    this.raw.end();
    this.finish();
  }

  /** Resolves once the socket takes more (at once, unless a write filled its buffer), or the stream is over. */
  drained(): Promise<void> {
    if (this.closed || !this.raw.writableNeedDrain) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.raw.off('drain', done);
        this.raw.off('close', done);
        resolve();
      };
      this.raw.on('drain', done);
      this.raw.on('close', done);
    });
  }

  private write(text: string): void {
    if (this.closed) return;
    this.raw.write(text);
    if (this.raw.writableLength > this.options.bufferBytes) this.end(TOO_SLOW);
  }

  private finish(): void {
    if (this.done) return;
    this.done = true;
    clearInterval(this.timer);
    const line = { req: this.request, res: { statusCode: this.raw.statusCode }, responseTime: this.reply.elapsedTime };
    this.request.log[this.options.logLevel](line, 'request completed');
    for (const listener of this.ended) listener();
    this.ended.clear();
  }
}
