/**
 * A real webhook receiver for tests: a node http server on 127.0.0.1 that records every
 * request (raw body and headers) and answers as the test tells it to.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  body: string;
  headers: http.IncomingHttpHeaders;
  at: number;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  /** Wait this long before answering (a slow receiver). */
  delayMs?: number;
  /** The answer's body; `ok`, or `answer <status>` from 300 on, by default. */
  body?: string;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** Decides the answer to each request; 200 by default. */
  answer: (request: Received, index: number) => Answer;
  close(): Promise<void>;
}

export async function startReceiver(answer: Receiver['answer'] = () => ({ status: 200 })): Promise<Receiver> {
  const received: Received[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const receiver: Receiver = { url: '', received, answer, close: async () => undefined };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request: Received = { body: Buffer.concat(chunks).toString('utf8'), headers: req.headers, at: Date.now() };
      const index = received.push(request) - 1;
      const { status, headers = {}, delayMs = 0, body } = receiver.answer(request, index);
      const reply = () => {
        if (res.destroyed) return;
        res.writeHead(status, headers);
        res.end(body ?? (status >= 300 ? `answer ${status}` : 'ok'));
      };
      if (delayMs <= 0) return reply();
      const timer = setTimeout(() => {
        timers.delete(timer);
        reply();
      }, delayMs);
      timers.add(timer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}

/** The events a receiver got, parsed. */
export const eventsOf = (receiver: Receiver) => receiver.received.map((r) => JSON.parse(r.body));

/**
 * Events in the order they happened, as CONTRACT.md tells receivers to read them: delivery
 * order is best effort (events become deliveries concurrently), so a test that asserts a
 * sequence sorts by created_at first. The sort is stable: arrival order breaks a tie.
 */
export const inCreatedOrder = <E extends { created_at: string }>(events: E[]): E[] => [...events].sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0));

/** A test file's receivers: `receiver()` starts one, and all of them are closed after the file. */
export function receiversOfThisFile(): (answer?: Receiver['answer']) => Promise<Receiver> {
  const started: Receiver[] = [];
  afterAll(async () => {
    await Promise.all(started.splice(0).map((r) => r.close()));
  });
  return async (answer) => {
    const r = await startReceiver(answer);
    started.push(r);
    return r;
  };
}
