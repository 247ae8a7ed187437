/**
 * Every process a test starts (etcd, kube-apiserver, nats-server, a child service) is
 * spawned through here, so that none outlives the jest run: each pid is recorded in the
 * run's registry directory (made by jest-global-setup.ts), and jest-global-teardown.ts
 * kills whatever is still recorded when the run ends, even when an afterAll timed out
 * or a test file crashed before its cleanup.
 */
import { ChildProcess, spawn, SpawnOptions } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export const REGISTRY_ENV = 'CLOUDPLANE_TEST_PROCESS_DIR';

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

function registryFile(pid: number): string | null {
  const dir = process.env[REGISTRY_ENV];
  return dir ? path.join(dir, String(pid)) : null;
}

export function spawnTracked(command: string, args: readonly string[], options: SpawnOptions): ChildProcess {
  const child = spawn(command, args, options);
  if (child.pid === undefined) return child; // failed to spawn: its 'error' event says why
  const file = registryFile(child.pid);
  // The names its command line may show: a wrapper such as prlimit execs the program after it.
  const names = [command, ...args.filter((a) => a.startsWith('/'))].map((p) => path.basename(p));
  if (file) fs.writeFileSync(file, `${names.join('\n')}\n`);
  live.add(child);
  child.once('exit', () => {
    live.delete(child);
    if (file) fs.rmSync(file, { force: true });
  });
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // A worker that exits normally takes its children with it; the teardown covers the rest.
    process.once('exit', () => {
      for (const c of live) c.kill('SIGKILL');
    });
  }
  return child;
}

/** Kills every process still recorded in `dir`; returns what it killed, for the log. */
export function killRecorded(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  const killed: string[] = [];
  for (const entry of fs.readdirSync(dir)) {
    const pid = Number(entry);
    const names = fs.readFileSync(path.join(dir, entry), 'utf8').split('\n').filter(Boolean);
    try {
      // Only if the pid still runs a program recorded for it: pids are reused.
      const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (names.some((name) => cmdline.includes(name))) {
        process.kill(pid, 'SIGKILL');
        killed.push(`${names[0]} (${pid})`);
      }
    } catch {
      // Already gone.
    }
    fs.rmSync(path.join(dir, entry), { force: true });
  }
  return killed;
}
