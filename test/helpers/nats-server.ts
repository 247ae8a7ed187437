/**
 * Starts a real nats-server with JetStream for tests: on a free loopback port, with its
 * store in a temp directory, and restartable on the same port and store so tests can
 * kill it mid-stream. `make test` installs nats-server (scripts/ensure-tools.sh).
 */
import type { ChildProcess } from 'node:child_process';
import { spawnTracked } from './processes';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface NatsServer {
  url: string;
  storeDir: string;
  /** SIGKILL, as a crash would. */
  kill(): Promise<void>;
  /** Starts it again on the same port and store. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export function natsServerBinary(): string {
  const onPath = (process.env.PATH ?? '').split(path.delimiter).map((dir) => path.join(dir, 'nats-server'));
  const candidates = [process.env.NATS_SERVER_BIN, path.join(os.homedir(), '.cache/cloudplane/bin/nats-server'), ...onPath, '/usr/sbin/nats-server'];
  const found = candidates.find((c) => c && fs.existsSync(c));
  if (!found) throw new Error('nats-server not found: run `make test` (it installs it) or scripts/ensure-tools.sh');
  return found;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function launch(port: number, storeDir: string): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawnTracked(natsServerBinary(), ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const timer = setTimeout(() => reject(new Error(`nats-server did not start:\n${output}`)), 15_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Server is ready')) {
        clearTimeout(timer);
        resolve(child);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`nats-server exited with ${code}:\n${output}`));
    });
  });
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));
}

export async function startNatsServer(): Promise<NatsServer> {
  const port = await freePort();
  const storeDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-nats-'));
  let child = await launch(port, storeDir);
  return {
    url: `nats://127.0.0.1:${port}`,
    storeDir,
    async kill() {
      child.kill('SIGKILL');
      await exited(child);
    },
    async restart() {
      child = await launch(port, storeDir);
    },
    async stop() {
      child.kill('SIGTERM');
      await exited(child);
      fs.rmSync(storeDir, { recursive: true, force: true });
    },
  };
}
