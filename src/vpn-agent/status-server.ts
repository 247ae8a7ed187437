/** The agent's HTTP face, polled by the Kubernetes VPN driver: GET /status and GET /healthz. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Static, Type } from '@sinclair/typebox';
import { textOf } from '../lib/unknown-values';

/** The answer of GET /status: the schema a poller can check what it reads against. */
export const AgentStatusSchema = Type.Object({
  /** The config's `version` once applied; null before the first good configuration. */
  applied_version: Type.Union([Type.String(), Type.Null()]),
  tunnel_status: Type.Union([Type.Literal('up'), Type.Literal('down')]),
  bytes_sent: Type.Integer({ minimum: 0, format: 'int64' }),
  bytes_received: Type.Integer({ minimum: 0, format: 'int64' }),
  /** ISO 8601. */
  last_handshake: Type.Union([Type.String(), Type.Null()]),
  /** Why the file is not applied or the tunnel cannot be read; never a key. */
  error: Type.Union([Type.String(), Type.Null()]),
});
export type AgentStatus = Static<typeof AgentStatusSchema>;

export interface StatusServer {
  url: string;
  close(): Promise<void>;
}

export async function startStatusServer(host: string, port: number, status: () => Promise<AgentStatus>): Promise<StatusServer> {
  const server = http.createServer((req, res) => {
    const reply = (code: number, body: unknown) => {
      res.writeHead(code, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(body));
    };
    const route = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET') {
      reply(405, { error: 'method not allowed' });
      return;
    }
    if (route === '/healthz') {
      reply(200, { ok: true });
      return;
    }
    if (route !== '/status') {
      reply(404, { error: 'not found' });
      return;
    }
    status().then(
      (body) => {
        reply(200, body);
      },
      (err: unknown) => {
        reply(500, { error: textOf(err) });
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}
