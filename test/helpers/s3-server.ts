/**
 * A real S3 server for tests: versitygw on its posix backend, on a free loopback port,
 * with its buckets in a temp directory, stoppable and restartable on the same port and
 * data so tests can take the endpoint away mid-run. `make test` builds versitygw
 * (scripts/build-s3-server.sh, called by scripts/ensure-tools.sh).
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { spawnTracked } from './processes';

const VERSITYGW_VERSION = 'v1.8.0';

export interface S3Server {
  /** http://127.0.0.1:<port>, path-style. */
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  dataDir: string;
  /** The CLOUDPLANE_S3_* settings that point the s3 driver at this server. */
  env: Record<string, string>;
  /** A client of this server that no one here wrote, signed with the root credentials, or an account's. */
  client(account?: S3Account): S3Client;
  /**
   * Adds an account that may create buckets (versitygw's role `userplus`), owning what it
   * creates: another tenant of the same endpoint. Needs `startS3Server({ accounts: true })`.
   */
  addAccount(): Promise<S3Account>;
  /** SIGKILL, as an outage would. */
  kill(): Promise<void>;
  /** Starts it again on the same port and data. */
  restart(): Promise<void>;
  /**
   * Restarts it sending a bucket notification of every change to `url` (its webhook event
   * sink, `--event-webhook-url`), from now on. versitygw refuses to start unless the URL
   * answers, hence after the service it points at has started.
   */
  sendNotificationsTo(url: string): Promise<void>;
  stop(): Promise<void>;
}

export interface S3Account {
  accessKeyId: string;
  secretAccessKey: string;
}

export function versitygwBinary(): string {
  const candidates = [process.env.VERSITYGW_BIN, path.join(os.homedir(), `.cache/cloudplane/versitygw-${VERSITYGW_VERSION}/versitygw`)];
  const found = candidates.find((c) => c && fs.existsSync(c));
  if (!found)
    throw new Error(`versitygw ${VERSITYGW_VERSION} not found: run \`make test\` (it builds it) or scripts/build-s3-server.sh, and see what that step said`);
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

/** Whether something accepts connections on the port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function launch(
  port: number,
  dataDir: string,
  accessKeyId: string,
  secretAccessKey: string,
  iamDir: string | null,
  notificationUrl: string | null,
): Promise<ChildProcess> {
  // The credentials (and the notification URL, which holds a secret) go by environment, not
  // argv, so no process listing shows them.
  const iam = iamDir ? ['--iam-dir', iamDir] : [];
  const notifications = notificationUrl ? { VGW_EVENT_WEBHOOK_URL: notificationUrl } : {};
  const child = spawnTracked(versitygwBinary(), ['--port', `127.0.0.1:${port}`, ...iam, '--quiet', 'posix', dataDir], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ROOT_ACCESS_KEY_ID: accessKeyId, ROOT_SECRET_ACCESS_KEY: secretAccessKey, ...notifications },
  });
  let output = '';
  let exit: string | null = null;
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.once('exit', (code, signal) => (exit = `exited with ${code ?? signal}`));
  child.once('error', (err) => (exit = `could not start: ${err.message}`));
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    if (exit) throw new Error(`versitygw ${exit}:\n${output}`);
    if (await listening(port)) return child;
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  throw new Error(`versitygw did not listen on 127.0.0.1:${port} within 15 s:\n${output}`);
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Runs versitygw's admin CLI against the server, signed by the root account. */
function admin(endpoint: string, root: S3Account, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawnTracked(versitygwBinary(), ['admin', '--endpoint-url', endpoint, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ADMIN_ACCESS_KEY_ID: root.accessKeyId, ADMIN_SECRET_ACCESS_KEY: root.secretAccessKey },
    });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`versitygw admin ${args[0]} exited with ${code}: ${output}`))));
  });
}

export async function startS3Server(options: { accounts?: boolean } = {}): Promise<S3Server> {
  const port = await freePort();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-s3-'));
  // Accounts live in an IAM directory beside the buckets' (versitygw keeps them in a file there).
  const iamDir = options.accounts ? fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-s3-iam-')) : null;
  const accessKeyId = `test${randomBytes(6).toString('hex')}`;
  const secretAccessKey = randomBytes(24).toString('base64url');
  const endpoint = `http://127.0.0.1:${port}`;
  const region = 'us-east-1';
  let notificationUrl: string | null = null;
  const start = () => launch(port, dataDir, accessKeyId, secretAccessKey, iamDir, notificationUrl);
  let child = await start();
  const clientOf = (credentials: S3Account) => new S3Client({ endpoint, region, forcePathStyle: true, credentials, maxAttempts: 1 });
  return {
    endpoint,
    region,
    accessKeyId,
    secretAccessKey,
    dataDir,
    env: {
      CLOUDPLANE_DRIVER_BUCKET: 's3',
      CLOUDPLANE_S3_ENDPOINT: endpoint,
      CLOUDPLANE_S3_REGION: region,
      CLOUDPLANE_S3_ACCESS_KEY_ID: accessKeyId,
      CLOUDPLANE_S3_SECRET_ACCESS_KEY: secretAccessKey,
      CLOUDPLANE_S3_FORCE_PATH_STYLE: 'true',
    },
    client: (account) => clientOf(account ?? { accessKeyId, secretAccessKey }),
    async addAccount() {
      if (!iamDir) throw new Error('start the S3 server with { accounts: true } to add accounts');
      const account = { accessKeyId: `acct${randomBytes(6).toString('hex')}`, secretAccessKey: randomBytes(24).toString('base64url') };
      await admin(endpoint, { accessKeyId, secretAccessKey }, [
        'create-user',
        '--access',
        account.accessKeyId,
        '--secret',
        account.secretAccessKey,
        '--role',
        'userplus',
      ]);
      return account;
    },
    async kill() {
      child.kill('SIGKILL');
      await exited(child);
    },
    async restart() {
      child = await start();
    },
    async sendNotificationsTo(url) {
      child.kill('SIGTERM');
      await exited(child);
      notificationUrl = url;
      child = await start();
    },
    async stop() {
      child.kill('SIGTERM');
      await exited(child);
      fs.rmSync(dataDir, { recursive: true, force: true });
      if (iamDir) fs.rmSync(iamDir, { recursive: true, force: true });
    },
  };
}
