/** The agent's HTTP face, polled by the Kubernetes VPN driver: GET /status and GET /healthz. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface AgentStatus {
  applied_version: string | null;
  tunnel_status: 'up' | 'down';
  bytes_sent: number;
  bytes_received: number;
  last_handshake: string | null;
  error: string | null;
}

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
    if (req.method !== 'GET') return reply(405, { error: 'method not allowed' });
    if (route === '/healthz') return reply(200, { ok: true });
    if (route !== '/status') return reply(404, { error: 'not found' });
    status().then(
      (body) => reply(200, body),
      (err: Error) => reply(500, { error: err.message }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
