/**
 * HTTP the way an attacker sends it: node:http with the path exactly as given (fetch and
 * WHATWG URLs would resolve `..` and `//` before the service ever saw them), and raw TCP
 * sockets for requests no HTTP client would send.
 */
import http from 'node:http';
import net from 'node:net';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** One request with `path` sent verbatim on a fresh connection. */
export function rawRequest(
  baseUrl: string,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string } = {},
): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: hostname, port, method, path, headers: options.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        try {
          body = text ? JSON.parse(text) : null;
        } catch {
          // not JSON; keep the text
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A raw TCP connection to the service that records what comes back and when it closes. */
export class RawConnection {
  readonly socket: net.Socket;
  received = '';
  closed = false;
  /** Bytes of our writes the kernel accepted. */
  written = 0;
  readonly ready: Promise<void>;
  readonly whenClosed: Promise<void>;

  /** `localAddress`: the client's own address (any 127.x on Linux), to be another client on loopback. */
  constructor(baseUrl: string, localAddress?: string) {
    const { hostname, port } = new URL(baseUrl);
    this.socket = net.connect({ host: hostname, port: Number(port), localAddress });
    this.ready = new Promise((resolve, reject) => {
      this.socket.once('connect', () => resolve());
      this.socket.once('error', reject);
    });
    this.socket.on('data', (chunk: Buffer) => (this.received += chunk.toString('latin1')));
    // Writes after the service hung up fail with EPIPE/ECONNRESET: that is what we observe.
    this.socket.on('error', () => {});
    this.whenClosed = new Promise((resolve) => this.socket.once('close', () => ((this.closed = true), resolve())));
  }

  /** Writes and resolves once the kernel took the bytes; false if the connection is gone. */
  write(data: string | Buffer): Promise<boolean> {
    if (this.socket.destroyed || !this.socket.writable) return Promise.resolve(false);
    return new Promise((resolve) => {
      this.socket.write(data, (err) => {
        if (!err) this.written += Buffer.byteLength(data);
        resolve(!err);
      });
    });
  }

  destroy(): void {
    this.socket.destroy();
  }

  /** The first response's status line and headers (lower-cased names), once it has arrived. */
  head(): { status: number; headers: Record<string, string> } | null {
    const end = this.received.indexOf('\r\n\r\n');
    if (end < 0) return null;
    const [statusLine, ...lines] = this.received.slice(0, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    return { status: Number(statusLine.split(' ')[1]), headers };
  }

  /** The first response's body parsed as JSON (Content-Length framed), or null if incomplete. */
  json(): any {
    const head = this.head();
    if (!head) return null;
    const start = this.received.indexOf('\r\n\r\n') + 4;
    const length = Number(head.headers['content-length'] ?? NaN);
    const text = Number.isFinite(length) ? this.received.slice(start, start + length) : this.received.slice(start);
    if (Number.isFinite(length) && Buffer.byteLength(text, 'latin1') < length) return null;
    try {
      return JSON.parse(Buffer.from(text, 'latin1').toString('utf8'));
    } catch {
      return null;
    }
  }
}
