/**
 * Connection limits Node's HTTP server does not have, so that one client cannot hold the
 * listener for everyone else:
 * - a cap on the connections open at once from one client address: past it, a new
 *   connection from that address is closed as it arrives, before it is read;
 * - a short time for a new connection to send its first complete request: a connection
 *   that only holds a place is answered 408 and closed long before the headers timeout
 *   (which counts per request) or the idle timeout would end it.
 * The global cap (server.maxConnections) stays as the last bound, above the per-address one.
 *
 * The address is the TCP peer's: no header has arrived when a connection is accepted, and
 * X-Forwarded-For is not trusted anyway (trustProxy is off). Behind a proxy the peer is
 * the proxy, so its connections share one place (see docs/api.md).
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import ipaddr from 'ipaddr.js';

export interface ConnectionLimits {
  /** Connections open at once from one client address; 0: no cap. */
  maxPerAddress: number;
  /** How long a new connection may take to send its first complete request's headers. */
  firstRequestTimeoutMs: number;
}

/**
 * What one client counts as: an IPv4 address (also written IPv4-mapped), or an IPv6
 * address's /64, the smallest block a host is given: every address in it is as cheap
 * to its holder as one.
 */
export function clientOf(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  return `${parsed.toNormalizedString().split(':').slice(0, 4).join(':')}::/64`;
}

/** The error Node gives a request that did not arrive in time: the 408 its clientError handler answers. */
function firstRequestTimedOut(): NodeJS.ErrnoException {
  return Object.assign(new Error('No request arrived in time on a new connection.'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' });
}

export function limitConnections(server: Server, limits: ConnectionLimits): void {
  const openFrom = new Map<string, number>();
  const waiting = new WeakMap<Socket, NodeJS.Timeout>();

  /** Whether a new connection from this address has a place; counts it if so. */
  const admit = (socket: Socket, address: string): boolean => {
    if (limits.maxPerAddress === 0) return true;
    const client = clientOf(address);
    const open = openFrom.get(client) ?? 0;
    if (open >= limits.maxPerAddress) return false;
    openFrom.set(client, open + 1);
    socket.once('close', () => {
      const left = (openFrom.get(client) ?? 1) - 1;
      if (left > 0) openFrom.set(client, left);
      else openFrom.delete(client);
    });
    return true;
  };

  // The gate stands in front of Node's own HTTP connection listener, which would otherwise
  // give every connection a parser and its listeners before it could be refused: a client
  // reconnecting as fast as it is refused (thousands a second) cost the process that much
  // more for each. A refused connection is reset, as a firewall's REJECT would: nothing of
  // it is kept, on either side, past the refusal.
  const accept = server.listeners('connection');
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress;
    // Reset before it was accepted: nothing to count, it is gone.
    if (address === undefined) return void socket.destroy();
    if (!admit(socket, address)) return void socket.resetAndDestroy();
    for (const listener of accept) listener.call(server, socket);
    const timer = setTimeout(() => server.emit('clientError', firstRequestTimedOut(), socket), limits.firstRequestTimeoutMs);
    timer.unref();
    waiting.set(socket, timer);
    socket.once('close', () => {
      clearTimeout(timer);
    });
  });

  // A request whose headers arrived: from here on the per-request timeouts apply.
  const arrived = (socket: Socket) => {
    const timer = waiting.get(socket);
    if (timer === undefined) return;
    clearTimeout(timer);
    waiting.delete(socket);
  };
  // Only 'request': a listener of 'upgrade' or 'checkContinue' would change what Node does
  // with those requests (it drops an upgrade and answers 100 Continue itself without one).
  server.on('request', (request) => {
    arrived(request.socket);
  });
}
