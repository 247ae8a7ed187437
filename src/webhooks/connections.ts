/**
 * The dispatcher's connections to receivers. An attempt's connection is kept open for the
 * next attempt to the same receiver, as a browser or Svix would, within a cap of idle
 * connections over all receivers: opening and closing a connection per attempt cost the
 * dispatcher about a tenth of its CPU per delivery (and the receiver its accept and close).
 *
 * What stays bounded: the connections in use are at most the attempts under way (the
 * dispatcher's in-flight caps); the idle ones at most `idle` in all and `idlePerReceiver`
 * per receiver, each closed after IDLE_MS or the receiver's own `Keep-Alive: timeout`
 * hint, whichever is shorter. An idle connection holds no event-loop reference. A kept
 * connection goes to the address the target guard approved when it was opened.
 */
import http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';

/** Under Node's own server keep-alive timeout (5 s), so a kept connection is seldom closed under a request. */
export const IDLE_MS = 4_000;

export interface IdleLimits {
  /** Idle connections kept over all receivers; 0: a connection per attempt. */
  idle: number;
  /** Idle connections kept to one receiver (scheme, host and port). */
  idlePerReceiver: number;
}

/** The idle cap both agents share: a connection is kept only while fewer than `idle` are. */
class IdleCap {
  readonly agents: http.Agent[] = [];
  constructor(private readonly idle: number) {}

  count(): number {
    let kept = 0;
    for (const agent of this.agents) for (const sockets of Object.values(agent.freeSockets)) kept += sockets?.length ?? 0;
    return kept;
  }

  /** Keeps a connection that fell idle if the cap has room and Node's own keepSocketAlive agrees (typed void there, it answers false when the receiver asked for no keep-alive). */
  keep(socket: Duplex, nodeKeepSocketAlive: (socket: Duplex) => unknown): boolean {
    return this.count() < this.idle && nodeKeepSocketAlive(socket) !== false;
  }
}

/** The agent, keeping a socket that falls idle only within the cap. */
function capped<A extends http.Agent>(agent: A, cap: IdleCap): A {
  const nodeKeepSocketAlive = agent.keepSocketAlive.bind(agent);
  agent.keepSocketAlive = (socket: Duplex) => cap.keep(socket, nodeKeepSocketAlive);
  return agent;
}

export class DeliveryConnections {
  private readonly cap: IdleCap;
  private readonly kept: { 'http:': http.Agent; 'https:': https.Agent };
  /**
   * A connection of its own, never kept: the second try of an attempt whose kept
   * connection the receiver had closed. No maxSockets on either: a queue inside an agent
   * would spend the attempt's timeout; the dispatcher's queue waits instead.
   */
  private readonly fresh = { 'http:': new http.Agent({ keepAlive: false }), 'https:': new https.Agent({ keepAlive: false }) };

  constructor(limits: IdleLimits) {
    this.cap = new IdleCap(limits.idle);
    // `timeout` is how long a kept connection may stay idle (on one in use it only emits an
    // event no one listens to: the attempt's own timer bounds it).
    const options = { keepAlive: limits.idle > 0, maxFreeSockets: Math.max(1, limits.idlePerReceiver), timeout: IDLE_MS };
    this.kept = { 'http:': capped(new http.Agent(options), this.cap), 'https:': capped(new https.Agent(options), this.cap) };
    this.cap.agents.push(this.kept['http:'], this.kept['https:']);
  }

  /** The agent of an attempt: a kept connection when one is idle, unless `fresh` asks for a new one. */
  agentFor(url: URL, fresh = false): http.Agent {
    const agents = fresh ? this.fresh : this.kept;
    return url.protocol === 'https:' ? agents['https:'] : agents['http:'];
  }

  /** Closes the idle connections (the dispatcher stopping); attempts under way end on their own. */
  close(): void {
    for (const agent of Object.values(this.kept)) agent.destroy();
  }
}
