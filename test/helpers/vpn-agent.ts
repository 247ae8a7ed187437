/**
 * The VPN agent as its Deployment runs it, but in a test's network namespace:
 * `node dist/src/main.js vpn-agent` with a /run of its own (its charon's pid file), its
 * output in a log file the test can search, and its /status read over HTTP with
 * AgentStatusSchema checked. `make test` builds dist/ first; when iterating,
 * `npx tsc -p tsconfig.json`.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { AgentStatus, AgentStatusSchema } from '../../src/vpn-agent/status-server';
import type { Netns } from './netns';
import { wireguardGoBinary } from './vpn-peer';
import { packageRoot } from '../../src/lib/package-root';

export const AGENT_MAIN = path.join(packageRoot(__dirname), 'dist', 'src', 'main.js');
/**
 * The handshake window the agents here run with: 30 s rather than 180 s, so a test sees a
 * silent peer's tunnel turn down in half a minute. Each test's tunnel is up for less.
 */
export const HANDSHAKE_WINDOW_S = 30;

export interface RunningAgent {
  child: ChildProcess;
  /** Everything the agent has logged so far. */
  log(): string;
  /** GET /status, checked against its schema. */
  status(): Promise<AgentStatus>;
  /** Resolves with the exit code. */
  exit: Promise<number | null>;
  /** Runs `step`; a failure carries the end of the agent's log, to say what the agent saw. */
  explain<T>(step: Promise<T>): Promise<T>;
}

export interface AgentOptions {
  netns: Netns;
  configFile: string;
  /** An address of the gateway namespace the test's own namespace reaches (its "Pod IP"). */
  statusAddress: string;
  statusPort?: number;
  /** Holds the agent's state directory and its log. */
  dir: string;
}

export function startAgentInNetns(options: AgentOptions): RunningAgent {
  if (!fs.existsSync(AGENT_MAIN)) throw new Error(`${AGENT_MAIN} is missing: build first (npx tsc -p tsconfig.json)`);
  const port = options.statusPort ?? 9180;
  const logFile = path.join(options.dir, 'agent.log');
  const out = fs.openSync(logFile, 'a');
  const child = options.netns.spawn(
    process.execPath,
    [
      AGENT_MAIN,
      'vpn-agent',
      '--config',
      options.configFile,
      '--listen',
      `${options.statusAddress}:${port}`,
      '--state-dir',
      path.join(options.dir, 'agent-state'),
    ],
    {
      privateRun: true,
      env: {
        ...process.env,
        CLOUDPLANE_WIREGUARD_GO: wireguardGoBinary(),
        CLOUDPLANE_LOG_LEVEL: 'info',
        CLOUDPLANE_VPN_HANDSHAKE_WINDOW_SECONDS: String(HANDSHAKE_WINDOW_S),
      },
      stdio: ['ignore', out, out],
    },
  );
  fs.closeSync(out);
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    log: () => fs.readFileSync(logFile, 'utf8'),
    exit,
    explain: (step) =>
      step.catch((err: Error) => {
        const tail = fs.readFileSync(logFile, 'utf8').trim().split('\n').slice(-40).join('\n');
        throw new Error(`${err.message}\n--- the agent's last log lines ---\n${tail}`);
      }),
    status: async () => {
      const res = await fetch(`http://${options.statusAddress}:${port}/status`, { signal: AbortSignal.timeout(10_000) }).catch(
        (err: Error & { cause?: { code?: string } }) => {
          const state =
            child.exitCode !== null || child.signalCode !== null ? `the agent exited (${child.signalCode ?? child.exitCode})` : 'the agent is running';
          throw new Error(`GET /status failed (${err.cause?.code ?? err.message}); ${state}`);
        },
      );
      if (res.status !== 200) throw new Error(`GET /status answered ${res.status}`);
      const body: unknown = await res.json();
      if (!Value.Check(AgentStatusSchema, body))
        throw new Error(`/status answered outside its schema: ${JSON.stringify([...Value.Errors(AgentStatusSchema, body)])}`);
      return body;
    },
  };
}

/** The running children of a process with this command name (e.g. the agent's charon). */
export function childrenNamed(parent: number, name: string): number[] {
  return fs
    .readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        // /proc/<pid>/stat: pid (comm) state ppid ...
        const stat = /^\d+ \((.*)\) \S+ (\d+)/.exec(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
        return stat !== null && stat[1] === name && Number(stat[2]) === parent;
      } catch {
        return false; // gone meanwhile
      }
    })
    .map(Number);
}
