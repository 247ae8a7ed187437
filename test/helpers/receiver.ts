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
 * Events in the order they happened, as docs/api.md tells receivers to read them: delivery
 * order is best effort (events become deliveries concurrently), so a test that asserts a
 * sequence sorts by created_at first. The sort is stable: arrival order breaks a tie.
 */
export const inCreatedOrder = <E extends { created_at: string }>(events: E[]): E[] =>
  [...events].sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0));

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

/** A request a black hole holds: what it asked, not answered yet. */
export interface HeldRequest {
  path: string;
  body: string;
  headers: http.IncomingHttpHeaders;
}

export interface BlackHole {
  /** `http://127.0.0.1:<port>/hook`; any path below it is served too (one per subscription). */
  url: string;
  /** Requests received and not answered, oldest first. */
  held: HeldRequest[];
  /** Requests answered (after `recover`). */
  answered: HeldRequest[];
  /** Connections open now, and the most that were open at once. */
  connections(): { open: number; peak: number };
  /** The most requests held at once, in total and per group (`groupsOf` names a request's groups). */
  peaks(): { total: number; byGroup: Map<string, number> };
  /**
   * From now on answers 200: every held request at once, and every later one after
   * `delayMs` (held meanwhile and counted, so the peaks cover a queue draining too).
   */
  recover(delayMs?: number): void;
  close(): Promise<void>;
}

/**
 * A receiver that accepts connections and reads requests but never answers (until told
 * to), as an attacker's or a dead endpoint would: it counts the connections and requests
 * it holds open, on the server, so a test sees how many the service keeps to it at once.
 */
export async function startBlackHole(groupsOf: (request: HeldRequest) => string[] = () => []): Promise<BlackHole> {
  const held: HeldRequest[] = [];
  const answered: HeldRequest[] = [];
  const responses = new Map<HeldRequest, http.ServerResponse>();
  const current = new Map<string, number>();
  const byGroup = new Map<string, number>();
  let peakTotal = 0;
  let open = 0;
  let peakOpen = 0;
  /** Once recovered: how long a request is held before its answer (null: never answered). */
  let answerAfterMs: number | null = null;
  const timers = new Set<NodeJS.Timeout>();
  const release = (request: HeldRequest) => {
    const res = responses.get(request);
    if (!res) return;
    responses.delete(request);
    held.splice(held.indexOf(request), 1);
    for (const group of groupsOf(request)) current.set(group, (current.get(group) ?? 1) - 1);
    return res;
  };
  const answer = (request: HeldRequest) => {
    const res = release(request);
    if (!res) return;
    answered.push(request);
    if (!res.destroyed) res.end('ok');
  };
  const answerLater = (request: HeldRequest, delayMs: number) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      answer(request);
    }, delayMs);
    timers.add(timer);
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request: HeldRequest = { path: req.url ?? '', body: Buffer.concat(chunks).toString('utf8'), headers: req.headers };
      held.push(request);
      responses.set(request, res);
      peakTotal = Math.max(peakTotal, held.length);
      for (const group of groupsOf(request)) {
        const now = (current.get(group) ?? 0) + 1;
        current.set(group, now);
        byGroup.set(group, Math.max(byGroup.get(group) ?? 0, now));
      }
      // The sender gave up (its timeout): no longer held.
      res.on('close', () => release(request));
      if (answerAfterMs !== null) answerLater(request, answerAfterMs);
    });
  });
  server.on('connection', (socket) => {
    open++;
    peakOpen = Math.max(peakOpen, open);
    socket.on('close', () => open--);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    held,
    answered,
    connections: () => ({ open, peak: peakOpen }),
    peaks: () => ({ total: peakTotal, byGroup: new Map(byGroup) }),
    recover(delayMs = 0) {
      answerAfterMs = delayMs;
      for (const request of [...held]) answer(request);
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
