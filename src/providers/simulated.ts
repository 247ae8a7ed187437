/**
 * The simulated provider of the embedded default. Nothing runs for real, but it behaves
 * like a cloud: operations take a configurable time (with jitter), fail at a configurable
 * rate per family, hand out addresses, and VPN tunnels move bytes and handshake. Every
 * answer is a function of the operation's identity and the clock, so the simulation is
 * consistent across restarts of the operator and between replicas.
 */
import { createHash } from 'node:crypto';
import type { SimulationConfig } from '../config';
import type { JobExecutor, JobRun, JobSpecForRun, OperationRef, OperationResult, Provider, ProviderHealth, TunnelStats } from './types';

const HEALTH_WINDOW_MS = 5 * 60_000;
const HEALTH_CHECK_WINDOW_MS = 30_000;
const HANDSHAKE_INTERVAL_MS = 120_000;

/** A number in [0, 1) drawn from the hash of `parts`: the same parts, the same number. */
export function draw(...parts: Array<string | number>): number {
  const digest = createHash('sha256').update(parts.join('\u0000')).digest();
  return digest.readUInt32BE(0) / 2 ** 32;
}

const FAILURE_REASONS: Record<string, string> = {
  provision: 'the provider ran out of capacity in this region',
  configure: 'the provider rejected the configuration change',
  power_off: 'the hypervisor did not confirm the shutdown',
  power_on: 'the hypervisor could not start the machine',
  reboot: 'the hypervisor did not confirm the reboot',
};

export class SimulatedProvider implements Provider {
  private readonly outcomes = new Map<string, Array<{ at: number; ok: boolean }>>();
  private readonly recorded = new Set<string>();
  private readonly addresses = new Map<string, string>();
  private readonly addressOwners = new Map<string, string>();
  readonly jobs: JobExecutor;

  /** `jobs` replaces the simulated job executor (the batch/v1 Job driver in cluster mode); it gets the job family's health recorder. */
  constructor(
    private readonly sim: SimulationConfig,
    jobs: (recordOutcome: (ok: boolean) => void) => JobExecutor = (recordOutcome) => new SimulatedJobExecutor(sim, recordOutcome),
  ) {
    this.jobs = jobs((ok) => this.record('job', ok));
  }

  health(family: string): ProviderHealth {
    const now = Date.now();
    const recent = (this.outcomes.get(family) ?? []).filter((o) => now - o.at < HEALTH_WINDOW_MS);
    this.outcomes.set(family, recent);
    if (recent.length === 0 || recent.every((o) => o.ok)) return 'connected';
    const last = recent.slice(-5);
    return last.length === 5 && last.every((o) => !o.ok) ? 'unavailable' : 'degraded';
  }

  async operate<T extends Record<string, unknown>>(family: string, id: string, op: OperationRef, spec: Record<string, unknown>): Promise<OperationResult<T>> {
    const base = this.sim.delays[family] ?? this.sim.delayMs;
    const scale = op.name === 'provision' ? 1 : 0.5;
    const delay = Math.round(base * scale * (0.75 + 0.5 * draw(family, id, op.name, op.started_at, 'delay')));
    const wait = Date.parse(op.started_at) + delay - Date.now();
    if (wait > 0) return { state: 'pending', retryAfterMs: wait };
    // Releasing never fails: a stuck deletion helps nobody learn anything.
    const failed = op.name !== 'release' && draw(family, id, op.name, op.started_at, 'fail') < (this.sim.failures[family] ?? 0);
    const outcomeKey = `${family}/${id}/${op.name}/${op.started_at}`;
    if (!this.recorded.has(outcomeKey)) {
      this.recorded.add(outcomeKey);
      this.record(family, !failed);
    }
    if (failed) {
      return { state: 'failed', reason: `${FAILURE_REASONS[op.name] ?? 'the provider operation failed'} (simulated failure injected by CLOUDPLANE_SIM_FAILURES)` };
    }
    if (op.name === 'release') this.releaseAddress(id);
    return { state: 'succeeded', outputs: (op.name === 'provision' ? this.outputsOfProvision(family, id, spec) : {}) as T };
  }

  async checkBackend(loadBalancerId: string, serverId: string, port: number): Promise<boolean> {
    const window = Math.floor(Date.now() / HEALTH_CHECK_WINDOW_MS);
    return draw('backend', loadBalancerId, serverId, port, window) >= (this.sim.failures.backend ?? 0);
  }

  async tunnelStats(gatewayId: string, activeSince: string): Promise<TunnelStats> {
    const now = Date.now();
    const since = Date.parse(activeSince);
    const elapsedS = Math.max(0, (now - since) / 1000);
    const down = draw('tunnel', gatewayId, Math.floor(now / 60_000)) < (this.sim.failures.tunnel ?? 0);
    // Traffic of a few kB/s to some hundred kB/s per gateway, steady so counters only grow.
    const sendRate = 2_000 + Math.floor(draw('send', gatewayId) * 200_000);
    const receiveRate = 2_000 + Math.floor(draw('receive', gatewayId) * 200_000);
    const handshakes = Math.floor((now - since) / HANDSHAKE_INTERVAL_MS);
    return {
      tunnel_status: down ? 'down' : 'up',
      bytes_sent: Math.floor(elapsedS * sendRate),
      bytes_received: Math.floor(elapsedS * receiveRate),
      last_handshake: new Date(since + Math.max(0, handshakes) * HANDSHAKE_INTERVAL_MS).toISOString(),
    };
  }

  private record(family: string, ok: boolean): void {
    const list = this.outcomes.get(family) ?? [];
    list.push({ at: Date.now(), ok });
    this.outcomes.set(family, list.slice(-50));
  }

  private outputsOfProvision(family: string, id: string, spec: Record<string, unknown>): Record<string, unknown> {
    switch (family) {
      case 'load_balancer':
      case 'server':
        return { ipv4: this.allocateAddress(id) };
      case 'vpn_gateway':
        return {
          local_ip: this.allocateAddress(id),
          public_key: spec.tunnel_type === 'wireguard' ? createHash('sha256').update(`wg-public/${id}`).digest('base64') : null,
        };
      case 'bucket':
        return { endpoint: `https://${String(spec.name)}.${String(spec.region)}.objects.cloudplane.example` };
      case 'file_share':
        return { mount_target: `${this.allocateAddress(id, '10.200')}:/exports/${id}` };
      default:
        return {};
    }
  }

  /**
   * An address drawn from the id (100.64.0.0/10, or a /16 for private targets), probing
   * further on a collision with an address this process already handed out.
   */
  private allocateAddress(id: string, privatePrefix?: string): string {
    const known = this.addresses.get(id);
    if (known) return known;
    for (let attempt = 0; ; attempt++) {
      const n = Math.floor(draw('address', id, attempt) * 2 ** 22);
      const address = privatePrefix
        ? `${privatePrefix}.${(n >> 8) & 255}.${Math.max(1, n & 255)}`
        : `100.${64 + (n >> 16)}.${(n >> 8) & 255}.${Math.max(1, n & 255)}`;
      const owner = this.addressOwners.get(address);
      if (!owner || owner === id) {
        this.addresses.set(id, address);
        this.addressOwners.set(address, id);
        return address;
      }
    }
  }

  private releaseAddress(id: string): void {
    const address = this.addresses.get(id);
    if (address) this.addressOwners.delete(address);
    this.addresses.delete(id);
  }
}

/**
 * Simulated job execution: a job waits in a queue for a moment, then "runs" for as long
 * as its command's `sleep N` steps add up to (or the simulated default), and ends with
 * the code of a trailing `exit N` (0 otherwise). Nothing of the command is executed.
 */
export class SimulatedJobExecutor implements JobExecutor {
  constructor(
    private readonly sim: SimulationConfig,
    private readonly recordOutcome: (ok: boolean) => void,
  ) {}

  async submit(): Promise<void> {}

  async observe(team: string, id: string, spec: JobSpecForRun, submittedAt: string): Promise<JobRun> {
    const base = this.sim.delays.job ?? this.sim.delayMs;
    const queuedMs = Math.round(base * 0.25);
    const sleeps = [...spec.command.matchAll(/\bsleep\s+(\d+(?:\.\d+)?)/g)].reduce((sum, m) => sum + Number(m[1]) * 1000, 0);
    const runMs = Math.min(sleeps > 0 ? sleeps : base, 3_600_000);
    const start = Date.parse(submittedAt) + queuedMs;
    const end = start + runMs;
    const now = Date.now();
    if (now < start) return { state: 'queued', exit_code: null, started_at: null, finished_at: null, reason: null };
    const startedAt = new Date(start).toISOString();
    if (now < end) return { state: 'running', exit_code: null, started_at: startedAt, finished_at: null, reason: null };
    const exit = /\bexit\s+(\d{1,3})\s*;?\s*$/.exec(spec.command);
    const injected = draw('job', team, id, submittedAt) < (this.sim.failures.job ?? 0);
    const code = injected ? 1 : exit ? Number(exit[1]) % 256 : 0;
    this.recordOutcome(code === 0);
    return {
      state: code === 0 ? 'succeeded' : 'failed',
      exit_code: code,
      started_at: startedAt,
      finished_at: new Date(end).toISOString(),
      reason: code === 0 ? null : injected ? 'the job failed (simulated failure injected by CLOUDPLANE_SIM_FAILURES)' : `the command exited with code ${code}`,
    };
  }

  async cancel(): Promise<void> {}

  async cleanup(): Promise<void> {}
}
