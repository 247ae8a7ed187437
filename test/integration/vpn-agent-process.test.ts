/**
 * `node dist/src/main.js vpn-agent` as the VPN driver meets it, before any tunnel: the
 * status it serves while its configuration is missing or wrong (the tunnel tests in
 * vpn-tunnels.test.ts cover the rest in network namespaces), its flags, and SIGTERM.
 * No test here writes a valid configuration: that would build a tunnel in the test's own
 * network namespace.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { spawnTracked } from '../helpers/processes';
import { eventually } from '../helpers/service';
import { Value } from '@sinclair/typebox/value';
import { AgentStatus, AgentStatusSchema } from '../../src/vpn-agent/status-server';

const MAIN = path.resolve(__dirname, '../../dist/src/main.js');
const PSK = 'never-to-be-shown psk';
const PRIVATE_KEY = 'yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=';

interface Agent {
  child: ChildProcess;
  url: Promise<string>;
  output: () => string;
  exit: Promise<number | null>;
}

function startAgent(args: string[]): Agent {
  const child = spawnTracked(process.execPath, [MAIN, 'vpn-agent', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const url = new Promise<string>((resolve) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      output += `${line}\n`;
      const match = /"url":"(http:\/\/[^"]+)"/.exec(line);
      if (match) resolve(match[1]);
    });
  });
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, url, output: () => output, exit };
}

async function statusOf(agent: Agent): Promise<AgentStatus> {
  const res = await fetch(`${await agent.url}/status`);
  expect(res.status).toBe(200);
  const body: unknown = await res.json();
  if (!Value.Check(AgentStatusSchema, body))
    throw new Error(`/status answered outside its schema: ${JSON.stringify([...Value.Errors(AgentStatusSchema, body)])}`);
  return body;
}

let dir: string;
let running: Agent | null = null;

beforeAll(() => {
  if (!fs.existsSync(MAIN)) throw new Error(`${MAIN} is missing: build first (npx tsc -p tsconfig.json)`);
});

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cloudplane-vpn-agent-'));
});

afterEach(() => {
  running?.child.kill('SIGKILL');
  running = null;
  fs.rmSync(dir, { recursive: true, force: true });
});

const flags = () => ['--config', path.join(dir, 'config.json'), '--listen', '127.0.0.1:0', '--state-dir', path.join(dir, 'state')];

it('serves /status and /healthz while its configuration is missing, and stops on SIGTERM', async () => {
  running = startAgent(flags());
  const status = await statusOf(running);
  expect(status).toEqual({
    applied_version: null,
    tunnel_status: 'down',
    bytes_sent: 0,
    bytes_received: 0,
    last_handshake: null,
    error: `cannot read ${path.join(dir, 'config.json')}: ENOENT`,
  });
  expect((await fetch(`${await running.url}/healthz`)).status).toBe(200);
  expect((await fetch(`${await running.url}/nothing`)).status).toBe(404);
  running.child.kill('SIGTERM');
  expect(await running.exit).toBe(0);
  running = null;
});

it('reports a wrong configuration by its fields, never its values, and picks up the file when it changes', async () => {
  const file = path.join(dir, 'config.json');
  const wrong = {
    version: '7',
    tunnel_type: 'ipsec',
    local_ip: '11.200.9.1',
    local_network_cidr: '10.20.9.0/24',
    remote_network_cidr: '10.20.9.128/25',
    remote_peer_ip: '11.200.9.2',
    ipsec: { pre_shared_key: PSK },
    wireguard: { private_key: PRIVATE_KEY, listen_port: 51820, remote_public_key: 'not a key' },
  };
  fs.writeFileSync(file, JSON.stringify(wrong));
  running = startAgent(flags());
  const agent = running;
  const first = await statusOf(agent);
  expect(first).toMatchObject({ applied_version: null, tunnel_status: 'down' });
  expect(first.error).toContain('/wireguard/remote_public_key');

  // The driver rewrites the Secret: the agent reads it again within its 2 s poll.
  fs.writeFileSync(file, JSON.stringify({ ...wrong, wireguard: undefined }));
  const second = await eventually(
    async () => {
      const status = await statusOf(agent);
      return status.error?.includes('overlap') ? status : null;
    },
    15_000,
    200,
  );
  expect(second.applied_version).toBeNull();

  fs.writeFileSync(file, '{"version": "8", "pre_shared_key": ');
  await eventually(async () => (await statusOf(agent)).error === 'configuration is not valid JSON', 15_000, 200);

  const said = JSON.stringify([first, second]) + agent.output();
  expect(said).not.toContain(PSK);
  expect(said).not.toContain(PRIVATE_KEY);
  expect(agent.output()).toContain('configuration not applied');
});

it('refuses bad flags, naming them', async () => {
  for (const [args, expected] of [
    [['--listen', 'nowhere'], '--listen must be HOST:PORT'],
    [['--interface', 'a-name-far-too-long'], '--interface must be'],
    [['--bogus'], "Unknown option '--bogus'"],
  ] as const) {
    const agent = startAgent([...args]);
    expect(await agent.exit).toBe(1);
    expect(agent.output()).toContain(expected);
  }
});
