/**
 * Real HAProxy for tests: checks rendered configurations with the binary itself, and runs
 * one in master-worker mode (-W) on loopback, reloading it gracefully the way an operator
 * would (a new file, then SIGUSR2 to the master: a new worker takes the listening sockets,
 * the old one finishes its connections). `make test` installs Debian's haproxy
 * (scripts/ensure-tools.sh).
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnTracked } from './processes';

export function haproxyBinary(): string {
  const onPath = (process.env.PATH ?? '').split(path.delimiter).map((dir) => path.join(dir, 'haproxy'));
  const candidates = [process.env.HAPROXY_BIN, ...onPath, '/usr/sbin/haproxy'];
  const found = candidates.find((c) => c && fs.existsSync(c));
  if (!found) throw new Error('haproxy not found: run `make test` (it installs it) or scripts/ensure-tools.sh');
  return found;
}

interface Run {
  code: number | null;
  output: string;
}

/** Runs a short command to its end, through the process registry. */
export function run(command: string, args: string[], timeoutMs = 30_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawnTracked(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** `haproxy -c` on a configuration: whether the binary accepts it, and what it said (warnings included). */
export async function checkHaproxyConfig(text: string): Promise<Run & { valid: boolean }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-haproxy-check-'));
  try {
    const file = path.join(dir, 'haproxy.cfg');
    fs.writeFileSync(file, text);
    const result = await run(haproxyBinary(), ['-c', '-f', file]);
    return { ...result, valid: result.code === 0 };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A self-signed certificate for `localhost` and 127.0.0.1, made for the test (no private
 * key is committed): the certificate at `file`, its key beside it as `<file>.key`, where
 * HAProxy looks for it (as a kubernetes.io/tls Secret mounted by the driver lays it out).
 */
export async function makeTestCertificate(dir: string): Promise<{ certificateFile: string; certificatePem: string }> {
  const certificateFile = path.join(dir, 'tls.pem');
  const result = await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=localhost',
    '-addext',
    'subjectAltName=DNS:localhost,IP:127.0.0.1',
    '-keyout',
    `${certificateFile}.key`,
    '-out',
    certificateFile,
  ]);
  if (result.code !== 0) throw new Error(`openssl could not make a certificate:\n${result.output}`);
  return { certificateFile, certificatePem: fs.readFileSync(certificateFile, 'utf8') };
}

export interface LocalHaproxy {
  readonly configFile: string;
  /** Everything the master and its workers printed. */
  output(): string;
  /** Writes the new configuration and reloads gracefully; resolves once the master loaded it. */
  reload(text: string): Promise<void>;
  stop(): Promise<void>;
}

const LOADED = /Loading success/g;
const SIGUSR2 = 12;

/**
 * Whether process `pid` has a handler for signal `signo` (Linux: SigCgt in /proc). HAProxy
 * 2.6's master says "Loading success" and then re-executes itself with SIGUSR2 ignored
 * until the new image installs its handler: a reload signal sent in that window is
 * discarded (seen: a SIGUSR2 sent just after the message was lost every time).
 */
function catches(pid: number, signo: number): boolean {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const caught = /^SigCgt:\s*([0-9a-f]+)$/m.exec(status)?.[1];
    return caught !== undefined && ((BigInt(`0x${caught}`) >> BigInt(signo - 1)) & 1n) === 1n;
  } catch {
    return false;
  }
}
const LOAD_FAILED = /Loading failure|Fatal errors found in configuration/;

function loadCount(output: string): number {
  return output.match(LOADED)?.length ?? 0;
}

/** Starts HAProxy in master-worker mode on `text`; resolves once its first worker runs. */
export async function startHaproxy(text: string): Promise<LocalHaproxy> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-haproxy-'));
  const configFile = path.join(dir, 'haproxy.cfg');
  fs.writeFileSync(configFile, text);
  const child: ChildProcess = spawnTracked(haproxyBinary(), ['-W', '-f', configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (chunk: Buffer) => (output += chunk.toString());
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const loaded = (count: number) =>
    new Promise<void>((resolve, reject) => {
      const timer = setInterval(() => {
        if (loadCount(output) >= count) done(resolve);
        else if (LOAD_FAILED.test(output.slice(-2000)) || child.exitCode !== null)
          done(() => reject(new Error(`haproxy did not load its configuration:\n${output}`)));
      }, 20);
      const deadline = setTimeout(() => done(() => reject(new Error(`haproxy did not load its configuration within 20 s:\n${output}`))), 20_000);
      const done = (then: () => void) => {
        clearInterval(timer);
        clearTimeout(deadline);
        then();
      };
    });

  /** Until the master (re-executed after each load) handles SIGUSR2 again. */
  const masterListens = async () => {
    const deadline = Date.now() + 20_000;
    while (!catches(child.pid!, SIGUSR2)) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`haproxy's master does not take reloads:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };

  await loaded(1);
  return {
    configFile,
    output: () => output,
    async reload(next: string) {
      const before = loadCount(output);
      // Written whole, then renamed: the master never reads half a file.
      fs.writeFileSync(`${configFile}.new`, next);
      fs.renameSync(`${configFile}.new`, configFile);
      await masterListens();
      child.kill('SIGUSR2');
      await loaded(before + 1);
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
