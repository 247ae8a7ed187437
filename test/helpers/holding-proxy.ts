/**
 * A TLS proxy in front of a test kube-apiserver that holds back the requests a test picks
 * until it lets them go, while every other request (watches too) passes at once. It lets
 * a test put an API server's answers in the order a busy machine may give them: a write
 * still in flight while the watch has already brought what happened meanwhile.
 */
import fs from 'node:fs';
import https from 'node:https';
import { AddressInfo } from 'node:net';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import type { KubeApiServer } from './kube-apiserver';

export interface HoldingProxy {
  /** A kubeconfig whose calls go through the proxy. */
  kubeConfig: KubeConfig;
  /** Holds back every request `matches` accepts from now on, until release(). */
  hold(matches: (method: string, url: string) => boolean): void;
  /** How many requests are held back now. */
  held(): number;
  /** Sends the held requests on, and holds no more. */
  release(): void;
  close(): Promise<void>;
}

export async function startHoldingProxy(server: KubeApiServer): Promise<HoldingProxy> {
  const target = new URL(server.url);
  let matches: ((method: string, url: string) => boolean) | undefined;
  let waiting: Array<() => void> = [];
  // kube-apiserver's own serving certificate and key (made in its cert dir) serve the proxy too.
  const certs = path.join(server.workDir, 'certs');
  const proxy = https.createServer({ cert: fs.readFileSync(path.join(certs, 'apiserver.crt')), key: fs.readFileSync(path.join(certs, 'apiserver.key')) });
  proxy.on('request', (req, res) => {
    const forward = () => {
      const upstream = https.request(
        { hostname: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers, rejectUnauthorized: false },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          // A watch's client waits for the headers, which Node would hold until the first event.
          res.flushHeaders();
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    };
    if (matches?.(req.method ?? 'GET', req.url ?? '/')) waiting.push(forward);
    else forward();
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(server.kubeconfigYaml.replace(server.url, `https://127.0.0.1:${(proxy.address() as AddressInfo).port}`));
  return {
    kubeConfig,
    hold: (accept) => {
      matches = accept;
    },
    held: () => waiting.length,
    release: () => {
      matches = undefined;
      const go = waiting;
      waiting = [];
      for (const forward of go) forward();
    },
    close: () =>
      new Promise((resolve) => {
        proxy.closeAllConnections();
        proxy.close(() => resolve());
      }),
  };
}
