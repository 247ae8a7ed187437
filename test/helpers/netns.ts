/**
 * Network namespaces for tests that run real tunnels: named `cpt<pid>-<n>-<role>`, joined
 * by veth pairs (one end may stay in the test's own namespace, as a Pod's network reaches
 * the operator), each command run inside with `ip netns exec`. They are removed by
 * `destroy()`, by the exit of the test process, and, should that process die before
 * either, by the next run (namespaces whose creating pid is gone, and what still runs in them).
 */
import { ChildProcess, execFileSync, SpawnOptions } from 'node:child_process';
import fs from 'node:fs';
import { run } from './haproxy';
import { spawnTracked } from './processes';

const PREFIX = 'cpt';
const live = new Set<string>();
let counter = 0;
let exitHookInstalled = false;

function ip(args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function removeNamespace(name: string): void {
  try {
    ip(['netns', 'del', name]);
  } catch {
    // Already gone.
  }
  live.delete(name);
}

/** Namespaces left by a test process that died before its cleanup. */
function removeOrphans(): void {
  const names = fs.existsSync('/run/netns') ? fs.readdirSync('/run/netns') : [];
  for (const name of names) {
    const owner = new RegExp(`^${PREFIX}(\\d+)-`).exec(name);
    if (!owner) continue;
    const pid = Number(owner[1]);
    let alive = true;
    try {
      process.kill(pid, 0);
    } catch {
      alive = false;
    }
    if (!alive) {
      // Its processes (a proxy, a tunnel) would hold the namespace, its veth pair and its
      // addresses after the name is gone, and a new run giving out the same ones would collide.
      killProcessesIn(name);
      removeNamespace(name);
    }
  }
}

function killProcessesIn(name: string): void {
  let pids: string[] = [];
  try {
    pids = execFileSync('ip', ['netns', 'pids', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
      .split(/\s+/)
      .filter(Boolean);
  } catch {
    // Already gone.
  }
  for (const pid of pids) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // Ended meanwhile.
    }
  }
}

/**
 * A command line that runs `command` with a /run of its own (a tmpfs in a private mount
 * namespace): charon's pid file is compiled in as /var/run/charon.pid, so two charons on
 * one machine need two /run directories; wireguard-go's sockets (/var/run/wireguard) follow.
 */
export function withPrivateRun(command: string, args: readonly string[]): [string, string[]] {
  return ['unshare', ['--mount', '--propagation', 'private', 'sh', '-c', 'mount -t tmpfs cloudplane-test-run /run && exec "$@"', 'sh', command, ...args]];
}

export class Netns {
  constructor(readonly name: string) {}

  /** Runs a command inside to its end; rejects with its output when it fails. */
  async exec(command: string, args: readonly string[], timeoutMs = 30_000): Promise<string> {
    const result = await run('ip', ['netns', 'exec', this.name, command, ...args], timeoutMs);
    if (result.code !== 0) throw new Error(`in ${this.name}: ${command} ${args.join(' ')} exited ${result.code}: ${result.output.trim()}`);
    return result.output;
  }

  /** Whether a command inside succeeds, with what it said. */
  async attempt(command: string, args: readonly string[], timeoutMs = 30_000): Promise<{ ok: boolean; output: string }> {
    const result = await run('ip', ['netns', 'exec', this.name, command, ...args], timeoutMs);
    return { ok: result.code === 0, output: result.output };
  }

  /** Starts a long-running process inside (through the test process registry). */
  spawn(command: string, args: readonly string[], options: SpawnOptions & { privateRun?: boolean } = {}): ChildProcess {
    const [program, programArgs] = options.privateRun ? withPrivateRun(command, args) : [command, [...args]];
    return spawnTracked('ip', ['netns', 'exec', this.name, program, ...programArgs], options);
  }
}

export interface NetnsSet {
  make(role: string): Netns;
  /** A veth pair between two namespaces (or a namespace and the test's own, `null`), each end with its address (CIDR form). */
  link(a: Netns | null, addressA: string, b: Netns, addressB: string): void;
  destroy(): void;
}

export function netnsSet(): NetnsSet {
  removeOrphans();
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => [...live].forEach(removeNamespace));
  }
  const id = ++counter;
  const mine: string[] = [];
  let links = 0;
  return {
    make(role) {
      const name = `${PREFIX}${process.pid}-${id}-${role}`;
      removeNamespace(name);
      ip(['netns', 'add', name]);
      live.add(name);
      mine.push(name);
      ip(['-n', name, 'link', 'set', 'lo', 'up']);
      return new Netns(name);
    },
    link(a, addressA, b, addressB) {
      // Interface names are at most 15 bytes.
      const base = `cpt${process.pid % 100_000}${id}${++links}`.slice(0, 13);
      const [endA, endB] = [`${base}a`, `${base}b`];
      ip(['link', 'add', endA, 'type', 'veth', 'peer', 'name', endB]);
      ip(['link', 'set', endB, 'netns', b.name]);
      ip(['-n', b.name, 'addr', 'add', addressB, 'dev', endB]);
      ip(['-n', b.name, 'link', 'set', endB, 'up']);
      if (a) ip(['link', 'set', endA, 'netns', a.name]);
      const inA = a ? ['-n', a.name] : [];
      ip([...inA, 'addr', 'add', addressA, 'dev', endA]);
      ip([...inA, 'link', 'set', endA, 'up']);
    },
    destroy() {
      // A veth pair goes with the namespace holding either end.
      for (const name of mine.splice(0)) removeNamespace(name);
    },
  };
}
